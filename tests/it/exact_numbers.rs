//! Numbers exactly as the JSON text says: each schema and instance the issue found decided
//! on a rounded value, generated, built in a crate of its own, and checked against both
//! the `jsonschema` crate (with `arbitrary-precision`) and the decimal arithmetic that
//! says what the answer is.

use crate::support;

use checkfu_wire_codegen::rust::{format_file, schemas};
use serde_json::Value;
use support::compile::{build, verdicts, Module};
use support::oracle::{compare, Case};

/// (schema, instance, valid): the instance's text is kept exactly (`arbitrary_precision`).
const CASES: &[(&str, &str, bool)] = &[
    (r#"{"exclusiveMaximum": 0.1}"#, "0.09999999999999999", true),
    (r#"{"exclusiveMaximum": 0.1}"#, "0.1000000000000000055511151231257827", false),
    (r#"{"const": 0.09999999999999999}"#, "0.1", false),
    (r#"{"const": 0.09999999999999999}"#, "0.099999999999999990", true),
    (r#"{"minimum": 9007199254740991}"#, "9007199254740991.0", true),
    (r#"{"minimum": 9007199254740991}"#, "9007199254740990.9999", false),
    (r#"{"exclusiveMinimum": 18446744073709551616}"#, "18446744073709551617", true),
    (r#"{"exclusiveMinimum": 18446744073709551616}"#, "18446744073709551616", false),
    (r#"{"const": 18446744073709551617}"#, "18446744073709551616", false),
    (r#"{"const": 18446744073709551617}"#, "1.8446744073709551617e19", true),
    (r#"{"type": "integer", "multipleOf": 3}"#, "18446744073709551618", true),
    (r#"{"type": "integer", "multipleOf": 3}"#, "18446744073709551617", false),
    (r#"{"multipleOf": 0.5}"#, "1e308", true),
    (r#"{"multipleOf": 0.5}"#, "123456789012345678901234567890.25", false),
    (r#"{"enum": [1, 18446744073709551617]}"#, "18446744073709551617.000", true),
    (r#"{"enum": [1, 18446744073709551617]}"#, "18446744073709551618", false),
    (r#"{"type": "integer"}"#, "1e30", true),
    (r#"{"maximum": -18446744073709551617}"#, "-18446744073709551618", true),
    (r#"{"maximum": -18446744073709551617}"#, "-18446744073709551616", false),
];

#[test]
fn bounds_constants_enums_and_multiples_are_decided_on_the_texts_values() {
    let mut modules = Vec::new();
    let mut cases = Vec::new();
    let mut names = Vec::new();
    for (i, (schema, instance, valid)) in CASES.iter().enumerate() {
        let schema: Value = serde_json::from_str(schema).expect("schema JSON");
        let instance: Value = serde_json::from_str(instance).expect("instance JSON");
        let file = format!("number{i}.json");
        let generated = schemas::generate(&file, &schema).unwrap_or_else(|d| panic!("{file}: {}", d[0].message));
        let (module, root) = schemas::names(&file);
        let oracle = jsonschema::validator_for(&schema).expect("the oracle compiles the schema").is_valid(&instance);
        assert_eq!(oracle, *valid, "the oracle on {schema} and {instance}");
        modules.push(Module { name: module.clone(), source: format_file("// generated for a test", generated.tokens).expect("formats") });
        names.push(module);
        cases.push(Case { def: root, instance, expected: *valid });
    }
    let binary = build("exact_numbers", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let verdicts = verdicts(&binary, &names, &cases);
    // `compare` also holds each accepted value's round trip to the same number.
    let (tally, disagreements) = compare(&cases, &verdicts);
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    assert_eq!(tally.accepted + tally.rejected, CASES.len());
}

#[test]
fn accepted_numbers_re_encode_with_their_texts_value() {
    // Through the generated type and back: `Number` keeps the text.
    use checkfu_wire_typed::schemas::acp_v1::checks::DEFINITIONS;
    let cost = DEFINITIONS.iter().find(|d| d.name == "Cost").expect("ACP defines Cost");
    for amount in ["0.44999999999999996", "18446744073709551617", "123456789012345678901234567890.125", "1e-30"] {
        let value: Value = serde_json::from_str(&format!(r#"{{"amount":{amount},"currency":"USD"}}"#)).expect("JSON");
        (cost.check)(&value).expect("a valid Cost");
        let again = (cost.roundtrip)(&value).expect("round trip");
        let (written, read) = (again["amount"].to_string(), amount.to_string());
        assert_eq!(
            checkfu_wire::exact::Decimal::parse(&written),
            checkfu_wire::exact::Decimal::parse(&read),
            "{amount} came back as {written}"
        );
    }
}

/// Counts, per thread, the bytes allocated and not yet freed, so a test can see what a
/// decode leaves behind. (Per thread, because the harness runs tests side by side.)
mod live {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
    }

    fn add(bytes: isize) {
        // `try_with`: an allocation during the thread's teardown is not counted.
        let _ = LIVE.try_with(|live| live.set(live.get() + bytes));
    }

    pub fn bytes() -> isize {
        LIVE.with(Cell::get)
    }

    pub struct Counting;

    // The one `unsafe` of the workspace outside the sandbox crate: `GlobalAlloc` is an
    // unsafe trait, and a counting allocator is how this test measures what decoding holds.
    #[allow(unsafe_code)]
    unsafe impl GlobalAlloc for Counting {
        // Each method forwards to `System` with the caller's own arguments, so the
        // caller's guarantees are `System`'s.
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            add(layout.size() as isize);
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            add(-(layout.size() as isize));
            unsafe { System.dealloc(ptr, layout) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            add(new_size as isize - layout.size() as isize);
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static ALLOCATOR: live::Counting = live::Counting;

/// The decoder's trees live in an arena that runs no destructors, so a number that owned
/// its text (`serde_json::Number` under `arbitrary_precision` is a `String`) was never
/// freed: every decoded number leaked. Decoding the same messages again must leave the
/// live bytes where they were, on the direct reader's path and on serde's.
#[test]
fn decoding_numbers_leaves_nothing_behind() {
    use checkfu_wire::decode::Decoder;
    let turn = r#""checkfu.turn": {"execution": "shell", "shell_commands": 12, "filesystem_commands": 30, "mcp_calls": 2, "model_calls": 9, "wall_time_ms": 84210}"#;
    let messages = [
        // The direct reader's path.
        format!(r#"{{"jsonrpc": "2.0", "id": 2, "result": {{"stopReason": "end_turn", "_meta": {{{turn}}}}}}}"#),
        // A duplicate key sends the text through serde's visitors instead.
        format!(r#"{{"jsonrpc": "2.0", "id": 2, "result": {{"stopReason": "end_turn", "_meta": {{{turn}, "x": 1, "x": 2}}}}}}"#),
        // Numbers beyond a `u64`, long decimals and exponents, in a checked ACP member.
        r#"{"jsonrpc": "2.0", "id": 18446744073709551617, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a", "line": 0.44999999999999996, "limit": 1e300}}"#.to_string(),
        r#"{"jsonrpc": "2.0", "id": -3, "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/a", "line": 18446744073709551617, "limit": 2.5E+3, "line": 7}}"#.to_string(),
    ];
    let decode_all = || {
        let mut decoder = Decoder::new();
        let accepted: usize = messages.iter().map(|m| usize::from(decoder.decode(m.as_bytes(), None).accepted)).sum();
        assert!(accepted >= 2, "the `checkfu.turn` responses are accepted");
    };
    // Once first: tables built on first use stay for the process.
    decode_all();
    let before = live::bytes();
    for _ in 0..20 {
        decode_all();
    }
    assert_eq!(live::bytes() - before, 0, "bytes left allocated by 20 rounds of decoding");
}
