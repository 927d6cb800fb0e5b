//! Where a generated type holds another as `crate::exact::Deferred` (checked JSON, decoded
//! into the type when asked) rather than by value, in a `Box` or in a `Vec`: so that long
//! chains and cycles of definitions compile.
//!
//! To rustc a chain of definitions is a chain of nested types, and several of its passes
//! walk it to the end: proving a type `Sized` (E0275 past its recursion limit, a chain of
//! 64 structs each holding the next), collecting drop-check rules, which it follows
//! through `Box`, `Option` and `Vec` (E0320, a cycle of 100 boxed structs), and
//! instantiating drop glue, `Deserialize` and `Serialize` one inside the other (past 250,
//! and with the limit raised, rustc's own stack overflows), and describing each type in
//! full debug info, which follows fields and type arguments alike (a cycle of 1,000
//! overflowed rustc's stack there, in the dev profile). `Deferred<T>` nests no `T` and
//! names it only inside a trait object, which none of these passes look into, so each
//! stretch between two of them compiles on its own. It goes on every edge inside a
//! cycle longer than [`LONG_CYCLE`], and on an edge into a definition whose own nesting is
//! already [`MAX_HEIGHT`] deep. Every other schema keeps its types as before (by value, or
//! boxed where a short cycle closes).

use std::collections::{BTreeMap, BTreeSet};

/// Cycles of more definitions than this hold each other as `Deferred`.
pub const LONG_CYCLE: usize = 16;

/// How many definitions deep a type may nest before the next edge is `Deferred`.
pub const MAX_HEIGHT: usize = 24;

/// The edges `(owner, target)` whose target is held as `Deferred`, given every definition's
/// references in its field types (by value, in an `Option`, a `Vec` or a `Box`).
pub fn cuts(edges: &BTreeMap<String, Vec<String>>) -> BTreeSet<(String, String)> {
    let components = strongly_connected(edges);
    let mut component_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, members) in components.iter().enumerate() {
        for member in members {
            component_of.insert(member.as_str(), i);
        }
    }
    let mut height = vec![0usize; components.len()];
    let mut cut = BTreeSet::new();
    // Components come out successors first, so every target's height is known.
    for (i, members) in components.iter().enumerate() {
        let long = members.len() > LONG_CYCLE;
        let mut below = 0;
        for owner in members {
            for target in edges.get(owner).into_iter().flatten() {
                let Some(&j) = component_of.get(target.as_str()) else { continue };
                if j == i {
                    if long {
                        cut.insert((owner.clone(), target.clone()));
                    }
                } else if height[j] >= MAX_HEIGHT {
                    cut.insert((owner.clone(), target.clone()));
                } else {
                    below = below.max(height[j]);
                }
            }
        }
        height[i] = below + if long { 1 } else { members.len() };
    }
    cut
}

/// Tarjan's strongly connected components, iteratively (a chain of thousands of
/// definitions must not exhaust the generator's stack), successors first.
fn strongly_connected(edges: &BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    let names: Vec<&String> = edges.keys().collect();
    let index_of: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let successors: Vec<Vec<usize>> =
        names.iter().map(|n| edges[*n].iter().filter_map(|t| index_of.get(t.as_str()).copied()).collect()).collect();
    let (mut index, mut low, mut on_stack) = (vec![usize::MAX; names.len()], vec![0; names.len()], vec![false; names.len()]);
    let (mut stack, mut components, mut next) = (Vec::new(), Vec::new(), 0);
    for root in 0..names.len() {
        if index[root] != usize::MAX {
            continue;
        }
        // (node, how many of its successors have been looked at)
        let mut work = vec![(root, 0usize)];
        index[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (node, ref mut seen)) = work.last_mut() {
            if let Some(&successor) = successors[node].get(*seen) {
                *seen += 1;
                if index[successor] == usize::MAX {
                    index[successor] = next;
                    low[successor] = next;
                    next += 1;
                    stack.push(successor);
                    on_stack[successor] = true;
                    work.push((successor, 0));
                } else if on_stack[successor] {
                    low[node] = low[node].min(index[successor]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut members = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    members.push(names[member].clone());
                    if member == node {
                        break;
                    }
                }
                components.push(members);
            }
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(pairs: &[(usize, usize)], n: usize) -> BTreeMap<String, Vec<String>> {
        let mut edges: BTreeMap<String, Vec<String>> = (0..n).map(|i| (format!("d{i:04}"), Vec::new())).collect();
        for (from, to) in pairs {
            edges.get_mut(&format!("d{from:04}")).expect("node").push(format!("d{to:04}"));
        }
        edges
    }

    #[test]
    fn short_graphs_are_left_alone() {
        let edges = graph(&[(0, 1), (1, 2), (2, 0), (2, 3), (3, 3)], 4);
        assert!(cuts(&edges).is_empty());
    }

    #[test]
    fn long_chains_are_cut_every_so_often() {
        let n = 1000;
        let edges = graph(&(0..n - 1).map(|i| (i, i + 1)).collect::<Vec<_>>(), n);
        let cut = cuts(&edges);
        assert_eq!(cut.len(), (n - 1) / MAX_HEIGHT, "{cut:?}");
    }

    #[test]
    fn long_cycles_are_cut_on_every_edge() {
        let n = 1000;
        let edges = graph(&(0..n).map(|i| (i, (i + 1) % n)).collect::<Vec<_>>(), n);
        assert_eq!(cuts(&edges).len(), n);
        let short = graph(&(0..LONG_CYCLE).map(|i| (i, (i + 1) % LONG_CYCLE)).collect::<Vec<_>>(), LONG_CYCLE);
        assert!(cuts(&short).is_empty());
    }
}
