//! Memoized definition checks: the bound on a generated check's work.
//!
//! A definition that several places of a schema refer to can be asked about the same
//! instance node more than once: `anyOf: [{$ref: D}, {allOf: [{$ref: D}]}]` asks twice,
//! and a chain of such definitions asks 2^depth times. The generator wraps each
//! definition that is referred to from two or more places, and itself refers to others,
//! in [`memoized`], which answers a repeated (definition, node) question from a table.
//! Every other definition has one caller, so it is asked at most as often as that caller.
//! Each definition is then evaluated at most once per instance node and caller, and a
//! check costs at most a polynomial of instance size × schema size.
//!
//! The table lives as long as the outermost memoized check is running and is emptied when
//! it returns, so no answer outlives the tree it was about: a node's address is its
//! identity only while the tree stands.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{Invalid, Json};

/// A node's identity for the table: its address, or for a string the address and length
/// of its text. Property names checked against `propertyNames` are strings built for the
/// moment on the stack, whose address the next name reuses; their text stays put, and two
/// strings with one text have one answer.
fn identity(v: &Json<'_>) -> (usize, usize) {
    match v {
        Json::String(s) => (s.as_ptr() as usize, s.len()),
        other => (other as *const Json<'_> as usize, usize::MAX),
    }
}

/// A question: the definition's number and the node's identity.
type Key = (u32, usize, usize);

/// Answers held in a short list before a table: most messages ask a memoized definition
/// a handful of times, and a linear search over a few keys costs less than hashing one.
const LISTED: usize = 16;

struct Table {
    listed: Vec<(Key, Result<(), Invalid>)>,
    /// Every answer once there are more than [`LISTED`] (the list is then empty).
    hashed: HashMap<Key, Result<(), Invalid>, BuildHasherDefault<AddressHasher>>,
}

impl Table {
    fn get(&self, key: &Key) -> Option<&Result<(), Invalid>> {
        if self.hashed.is_empty() {
            self.listed.iter().find(|(k, _)| k == key).map(|(_, answer)| answer)
        } else {
            self.hashed.get(key)
        }
    }

    fn insert(&mut self, key: Key, answer: Result<(), Invalid>) {
        if self.hashed.is_empty() && self.listed.len() < LISTED {
            self.listed.push((key, answer));
            return;
        }
        self.hashed.extend(self.listed.drain(..));
        self.hashed.insert(key, answer);
    }

    fn clear(&mut self) {
        self.listed.clear();
        self.hashed.clear();
    }
}

thread_local! {
    // Built constant, so an access needs no check that it was initialized.
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table { listed: Vec::new(), hashed: HashMap::with_hasher(BuildHasherDefault::new()) })
    };
    /// Memoized checks running on this thread, outermost included. Kept apart from the
    /// table, in a `Cell` without a destructor (read without the registration check the
    /// table's thread-local needs): the outermost check, most of them, asks nothing of
    /// the table, which is empty then.
    static RUNNING: Cell<usize> = const { Cell::new(0) };
    /// Whether the table may hold answers, so an outermost check that asked no nested
    /// question leaves the table alone.
    static FILLED: Cell<bool> = const { Cell::new(false) };
}

/// `check(v)` for definition number `definition`, answered from the table when it was
/// asked about this node before during the same outermost check.
pub fn memoized(definition: u32, v: &Json<'_>, check: impl FnOnce(&Json<'_>) -> Result<(), Invalid>) -> Result<(), Invalid> {
    let running = RUNNING.with(Cell::get);
    if running == 0 {
        // The outermost check: the table is empty, and is emptied again when it returns,
        // or when it unwinds (see `Outermost`).
        RUNNING.with(|r| r.set(1));
        let _outermost = Outermost;
        return check(v);
    }
    let (at, len) = identity(v);
    let key = (definition, at, len);
    if let Some(answer) = TABLE.with(|table| table.borrow().get(&key).cloned()) {
        return answer;
    }
    RUNNING.with(|r| r.set(running + 1));
    let answer = check(v);
    RUNNING.with(|r| r.set(running));
    TABLE.with(|table| table.borrow_mut().insert(key, answer.clone()));
    FILLED.with(|f| f.set(true));
    answer
}

/// Ends the outermost check however it ends. Were a check to panic and a caller to catch
/// it, a count left raised would make every later check on the thread a nested one, and
/// the table's answers about the dead tree's addresses would answer questions about the
/// next tree built at the same addresses.
struct Outermost;

impl Drop for Outermost {
    fn drop(&mut self) {
        RUNNING.with(|r| r.set(0));
        if FILLED.with(|f| f.replace(false)) {
            // No borrow of the table is held across a check, so none is held here.
            TABLE.with(|table| table.borrow_mut().clear());
        }
    }
}

/// The keys are a small number and two addresses: SipHash's resistance to chosen keys
/// buys nothing here (an instance cannot choose its addresses) and costs most of a lookup.
#[derive(Default)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.write_u64(u64::from(*byte));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        // Fibonacci hashing: multiply by 2^64/φ and fold, so nearby addresses spread out.
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bumpalo::Bump;
    use std::cell::Cell;

    #[test]
    fn a_repeated_question_is_answered_from_the_table_until_the_outermost_check_returns() {
        let arena = Bump::new();
        let tree = Json::parse(r#"{"a": "x", "b": "x"}"#, &arena).expect("JSON");
        let runs = Cell::new(0);
        let inner = |v: &Json<'_>| {
            memoized(2, v, |_| {
                runs.set(runs.get() + 1);
                Err(Invalid::new("no"))
            })
        };
        let outer = memoized(1, &tree, |v| {
            let members = v.as_object().expect("object");
            let a = &members[0].1;
            // The same node three times, and another node with an equal text.
            assert!(inner(a).is_err() && inner(a).is_err() && inner(a).is_err());
            let b = &members[1].1;
            inner(b).and(Ok(()))
        });
        assert!(outer.is_err());
        assert_eq!(runs.get(), 2, "once for `a`, once for `b` (strings with their own texts)");
        // Emptied when the outermost check returned: the next check asks again.
        assert!(inner(&tree).is_err());
        assert_eq!(runs.get(), 3);
        TABLE.with(|table| {
            let table = table.borrow();
            assert!(table.listed.is_empty() && table.hashed.is_empty() && RUNNING.with(Cell::get) == 0);
        });
    }

    /// A check that panics, caught by its caller, leaves no answer behind: the next
    /// outermost check asks afresh about a node at the same address.
    #[test]
    fn a_caught_panic_leaves_the_table_empty_and_no_check_running() {
        let arena = Bump::new();
        let tree = Json::parse(r#"{"a": 1}"#, &arena).expect("JSON");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            memoized(1, &tree, |v| {
                let _ = memoized(2, v, |_| Err(Invalid::new("stale")));
                panic!("a check that panics");
            })
        }));
        assert!(caught.is_err());
        assert_eq!(RUNNING.with(Cell::get), 0);
        assert!(memoized(2, &tree, |_| Ok(())).is_ok(), "asked afresh, not answered from the dead check's table");
        TABLE.with(|table| assert!(table.borrow().listed.is_empty()));
    }

    #[test]
    fn answers_past_the_list_are_kept_in_the_table() {
        let arena = Bump::new();
        let text = format!("[{}]", vec!["[]"; 3 * LISTED].join(","));
        let tree = Json::parse(&text, &arena).expect("JSON");
        let runs = Cell::new(0);
        let _ = memoized(1, &tree, |v| {
            let items = v.as_array().expect("array");
            for _ in 0..3 {
                for item in items {
                    let _ = memoized(2, item, |_| {
                        runs.set(runs.get() + 1);
                        Ok(())
                    });
                }
            }
            Ok(())
        });
        assert_eq!(runs.get(), 3 * LISTED, "each item once, though asked three times");
    }

    #[test]
    fn names_built_on_the_stack_are_told_apart_by_their_text() {
        let names = ["one", "two"];
        let seen = RefCell::new(Vec::new());
        let _ = memoized(1, &Json::Null, |_| {
            for name in names {
                let temporary = Json::String(name);
                let _ = memoized(2, &temporary, |v| {
                    seen.borrow_mut().push(v.as_str().unwrap_or_default().to_string());
                    Ok(())
                });
            }
            Ok(())
        });
        assert_eq!(*seen.borrow(), ["one", "two"]);
    }
}
