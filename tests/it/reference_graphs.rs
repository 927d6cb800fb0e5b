//! Every reference graph is built or diagnosed: chains and cycles of 1,000 definitions
//! generate, build in a crate of their own (in the dev profile, with full debug info, on
//! rustc's default stack) and agree with the `jsonschema` crate; a chain whose definitions
//! each refer to the next from two places is checked with bounded work.

use crate::support;

use checkfu_wire_codegen::rust::{format_file, schemas};
use checkfu_wire_codegen::schema::normalize::normalize;
use serde_json::{json, Value};
use support::compile::{build, verdicts, Module};
use support::graphs::{chain, cycle, shared_chain};
use support::oracle::{cases, compare, Case};

fn module(file: &str, schema: &Value) -> Module {
    let generated = schemas::generate(file, schema)
        .unwrap_or_else(|d| panic!("{file} must generate: {}", d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n")));
    let source = format_file("// generated for a test", generated.tokens).expect("formats");
    Module { name: schemas::names(file).0, source }
}

/// A nested instance of the chain or cycle: `depth` objects, each holding the next.
fn nested(depth: usize, last: Value) -> Value {
    (0..depth).fold(last, |inner, i| json!({"n": i, "next": inner}))
}

/// How many definitions the long chain and the long cycle have.
const GRAPH: usize = 1000;

#[test]
fn chains_and_cycles_of_a_thousand_definitions_build_and_agree_with_jsonschema() {
    let inputs = [("chain1000.json", chain(GRAPH)), ("cycle1000.json", cycle(GRAPH))];
    let modules: Vec<Module> = inputs.iter().map(|(file, schema)| module(file, schema)).collect();
    let binary = build("reference_graphs", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let mut all = Vec::new();
    let mut module_of_case = Vec::new();
    for ((file, schema), module) in inputs.iter().zip(&modules) {
        let (_, root) = schemas::names(file);
        let normalized = normalize(&root, schema);
        assert!(normalized.defs.len() >= GRAPH, "{file}: every definition is one");
        // Every definition is built; the oracle judges a sample of them, because judging
        // all costs time that grows faster than the graph (each definition's oracle takes
        // longer in a larger document: about 25 ms at 250 definitions, 50 ms at 1,000, so
        // nearly three minutes for both graphs). The sample is every seventh definition,
        // which meets every position between two cuts (seven and `MAX_HEIGHT`, 24, share
        // no factor), the last one and the root.
        let named: Vec<(String, String)> =
            normalized.origins.iter().filter(|(_, o)| sampled(o, GRAPH)).map(|(n, o)| (n.clone(), o.clone())).collect();
        assert!(named.len() > GRAPH / 7, "{file}: {} definitions sampled", named.len());
        let mut file_cases = cases(schema, &named, 40);
        // Deep instances the generator does not make: through 100 levels (serde_json's
        // recursion limit, 128, bounds what the harness reads), valid and broken at the
        // bottom (the chain ends in a string; the cycle needs `n` everywhere).
        for (instance, last) in [(100, json!("end")), (100, json!(7))] {
            let value = nested(instance, last);
            file_cases.push(Case { def: root.clone(), expected: oracle_says(schema, &value), instance: value });
        }
        module_of_case.extend(std::iter::repeat_n(module.name.clone(), file_cases.len()));
        all.extend(file_cases);
    }
    let verdicts = verdicts(&binary, &module_of_case, &all);
    let (tally, disagreements) = compare(&all, &verdicts);
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.iter().take(10).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(tally.accepted > 100 && tally.rejected > 100, "{tally:?}");
}

/// Whether the definition at `origin` (`/$defs/d<i>`, or the root) of a graph of `n` is
/// one the oracle judges.
fn sampled(origin: &str, n: usize) -> bool {
    match origin.strip_prefix("/$defs/d").map(str::parse::<usize>) {
        Some(Ok(i)) => i % 7 == 0 || i + 1 == n,
        _ => origin.is_empty(),
    }
}

fn oracle_says(schema: &Value, instance: &Value) -> bool {
    jsonschema::options().should_validate_formats(false).build(schema).expect("the oracle compiles the schema").is_valid(instance)
}

#[test]
fn definitions_shared_along_a_chain_are_checked_once_per_node() {
    // At depth 16 the oracle (which re-evaluates, 2^16 times) still answers quickly: the
    // verdicts agree with it. At depth 48 a re-evaluating check would take 2^48 steps;
    // the generated one answers, because each definition is checked once per node.
    let inputs = [("shared16.json", shared_chain(16)), ("shared48.json", shared_chain(48))];
    let modules: Vec<Module> = inputs.iter().map(|(file, schema)| module(file, schema)).collect();
    let binary = build("shared_chains", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let instances = [json!("a string"), json!(3), json!(-1), json!([1]), json!({"a": 1}), json!(2.5)];
    let root = schemas::names("shared16.json").1;
    let shallow: Vec<Case> =
        instances.iter().map(|i| Case { def: root.clone(), expected: oracle_says(&inputs[0].1, i), instance: i.clone() }).collect();
    let names = vec![modules[0].name.clone(); shallow.len()];
    let (tally, disagreements) = compare(&shallow, &verdicts(&binary, &names, &shallow));
    assert!(disagreements.is_empty(), "{disagreements:?}");
    assert_eq!((tally.accepted, tally.rejected), (1, 5), "only a non-negative integer passes");
    // Depth 48: the same verdicts (the chain's meaning does not change with its length).
    let root = schemas::names("shared48.json").1;
    let deep: Vec<Case> = shallow.iter().map(|c| Case { def: root.clone(), expected: c.expected, instance: c.instance.clone() }).collect();
    let names = vec![modules[1].name.clone(); deep.len()];
    let (_, disagreements) = compare(&deep, &verdicts(&binary, &names, &deep));
    assert!(disagreements.is_empty(), "{disagreements:?}");
}
