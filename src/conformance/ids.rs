//! Interned ids: every tool-use id, steer event and subagent id a trace names, mapped once by
//! the reader to a dense [`Id`], so that the checks keep their per-id state in vectors indexed
//! by it instead of in hash maps keyed by strings.
//!
//! Why: a long trace holds hundreds of thousands of distinct ids. Keyed by `String`, each
//! check's map hashed and compared every key on every lookup, copied every key it stored, and
//! rehashed every key (a pointer chase per key) each time it grew; the per-observation cost
//! rose as the maps outgrew the caches. Interned, each id occurrence costs one string lookup in
//! one table, and the checks' state is indexed by small integers handed out in first-seen
//! order, so a check's writes land near the end of its vector.
//!
//! The trace is untrusted input, so the one table that hashes id strings uses std's randomly
//! keyed hasher: chosen ids cannot force collisions. The ids it hands out are not attacker-chosen
//! (they count up from zero), which is what lets the checks index by them directly.
//!
//! One namespace serves tool ids, steer events and subagent ids alike: the same string in two
//! roles gets the same [`Id`], which is harmless because each check keeps a separate
//! [`IdMap`] per role.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

/// A dense index naming one distinct id string of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Id(u32);

impl Id {
    fn index(self) -> usize {
        // A `u32` always fits the `usize` of the targets this crate builds for (32 and 64 bit).
        self.0 as usize
    }
}

/// The reader's table of id strings: string → [`Id`] and back.
///
/// The table is keyed by each string's 64-bit hash under std's randomly keyed hasher rather
/// than by the string: growing it then moves integers and never reads the strings again
/// (rehashing string keys chases a pointer per key, which dominated once the table outgrew the
/// caches). A hash hit is confirmed against the string it stands for; a string whose hash an
/// earlier, different string already holds goes to `collided`, an ordinary string-keyed map
/// with the same randomized hasher. Without the hasher's key such collisions cannot be chosen,
/// so `collided` stays empty in practice and bounded by chance, not by the input.
#[derive(Default)]
pub struct Interner {
    hasher: RandomState,
    by_hash: HashMap<u64, Id, BuildHasherDefault<Prehashed>>,
    collided: HashMap<Box<str>, Id>,
    /// Indexed by [`Id`]: the string it stands for.
    names: Vec<Box<str>>,
}

impl Interner {
    /// The id of `name`, handing out the next one when the string is new. `None` only once
    /// the trace has named more than `u32::MAX` distinct ids, which the reader reports as an
    /// invalid trace rather than wrapping around.
    pub fn intern(&mut self, name: &str) -> Option<Id> {
        let hash = self.hasher.hash_one(name);
        match self.by_hash.get(&hash) {
            Some(id) if self.name(*id) == name => Some(*id),
            Some(_) => match self.collided.get(name) {
                Some(id) => Some(*id),
                None => {
                    let id = self.push(name)?;
                    self.collided.insert(Box::from(name), id);
                    Some(id)
                }
            },
            None => {
                let id = self.push(name)?;
                self.by_hash.insert(hash, id);
                Some(id)
            }
        }
    }

    /// Records a new string under the next id.
    fn push(&mut self, name: &str) -> Option<Id> {
        let id = Id(u32::try_from(self.names.len()).ok()?);
        self.names.push(Box::from(name));
        Some(id)
    }

    /// The string `id` stands for. Every [`Id`] comes from this interner, so the fallback is
    /// unreachable; it keeps a message readable instead of panicking.
    pub fn name(&self, id: Id) -> &str {
        self.names.get(id.index()).map_or("<unknown id>", |name| name)
    }
}

/// The hasher of `by_hash`, whose keys are already uniformly distributed hashes: it passes
/// the key through instead of hashing it a second time.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys reach this hasher (through `write_u64`); fold anything else in so
        // the hasher stays total rather than silently constant.
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

/// Per-id state of one check: a map from [`Id`] to `V`, stored as a vector indexed by the id.
/// Ids are dense and counted up in first-seen order, so the vector is at most as long as the
/// trace has distinct ids, and lookups touch no hash table.
pub struct IdMap<V> {
    slots: Vec<Option<V>>,
    /// How many slots hold a value.
    len: usize,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap { slots: Vec::new(), len: 0 }
    }
}

impl<V> IdMap<V> {
    pub fn get(&self, id: Id) -> Option<&V> {
        self.slots.get(id.index()).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, id: Id) -> Option<&mut V> {
        self.slots.get_mut(id.index()).and_then(Option::as_mut)
    }

    pub fn contains(&self, id: Id) -> bool {
        self.get(id).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `id`, inserting `value()` first when it has none.
    pub fn get_or_insert_with(&mut self, id: Id, value: impl FnOnce() -> V) -> &mut V {
        let index = id.index();
        if index >= self.slots.len() {
            // `resize_with` grows through `reserve`, so the vector doubles: amortized O(1).
            self.slots.resize_with(index + 1, || None);
        }
        let len = &mut self.len;
        // The slot exists past the resize above, so indexing cannot panic.
        self.slots[index].get_or_insert_with(|| {
            *len += 1;
            value()
        })
    }

    /// Every id with a value, in id order (first-seen order in the trace).
    pub fn iter(&self) -> impl Iterator<Item = (Id, &V)> {
        self.slots.iter().enumerate().filter_map(|(index, slot)| {
            // `index` < `slots.len()`, and the vector only grows to the index of an `Id`.
            let id = Id(u32::try_from(index).ok()?);
            slot.as_ref().map(|value| (id, value))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_distinct_string_gets_one_dense_id() {
        let mut ids = Interner::default();
        let names = ["t1", "a", "t1", "e1", "a", ""];
        let got: Vec<u32> = names.iter().map(|name| ids.intern(name).expect("an id").0).collect();
        assert_eq!(got, [0, 1, 0, 2, 1, 3]);
        assert_eq!(ids.names.len(), 4);
        for name in names {
            let id = ids.intern(name).expect("an id");
            assert_eq!(ids.name(id), name);
        }
    }

    #[test]
    fn a_hash_collision_still_tells_the_strings_apart() {
        let mut ids = Interner::default();
        let a = ids.intern("a").expect("an id");
        // Forge the collision no caller can choose: "b" hashes to the entry of "a".
        let hash = ids.hasher.hash_one("b");
        ids.by_hash.insert(hash, a);
        let b = ids.intern("b").expect("an id");
        assert_ne!(a, b);
        assert_eq!(ids.intern("b"), Some(b));
        assert_eq!(ids.intern("a"), Some(a));
        assert_eq!((ids.name(a), ids.name(b)), ("a", "b"));
    }

    #[test]
    fn an_id_map_holds_values_by_id() {
        let mut ids = Interner::default();
        let [x, y, z] = ["x", "y", "z"].map(|name| ids.intern(name).expect("an id"));
        let mut map = IdMap::default();
        assert!(map.is_empty());
        assert_eq!(*map.get_or_insert_with(z, || 3), 3);
        assert_eq!(*map.get_or_insert_with(z, || 9), 3, "an existing value is kept");
        map.get_or_insert_with(x, || 1);
        assert_eq!((map.get(x), map.get(y), map.get(z)), (Some(&1), None, Some(&3)));
        assert!(!map.contains(y));
        if let Some(value) = map.get_mut(x) {
            *value = 2;
        }
        let all: Vec<(Id, i32)> = map.iter().map(|(id, v)| (id, *v)).collect();
        assert_eq!(all, [(x, 2), (z, 3)]);
    }
}
