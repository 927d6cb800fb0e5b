//! The bound on a generated check's work: chains of definitions that each refer to the
//! next from two places (`anyOf: [next, {allOf: [next]}]`), at depths 8, 16, 24 and 48,
//! against plain chains of the same depths (each definition referring to the next once),
//! checking one string that every path rejects. A check that re-evaluated shared
//! definitions would cost 2^depth; the memoized checks must grow polynomially.
//!
//! The checks are generated, built in release mode in a crate of their own (as the tests
//! build generated code, under `target/compile-tests/`) and timed there: the median of 31
//! samples. Run with `cargo bench --bench check_bound`.

#[path = "../it/support/mod.rs"]
mod support;

use checkfu_wire_codegen::rust::{format_file, schemas};
use serde_json::{json, Map, Value};
use support::compile::{build_with, Module, TIMING_MAIN};
use support::graphs::shared_chain;

const DEPTHS: [usize; 4] = [8, 16, 24, 48];

/// The baseline: the same depth, each definition referring to the next once.
fn plain_chain(depth: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..depth {
        let def = if i + 1 == depth {
            json!({"type": "integer", "minimum": 0})
        } else {
            json!({"anyOf": [{"$ref": format!("#/$defs/d{}", i + 1)}]})
        };
        defs.insert(format!("d{i}"), def);
    }
    json!({"$ref": "#/$defs/d0", "$defs": defs})
}

fn main() {
    let mut modules = Vec::new();
    let mut cases = Vec::new();
    for depth in DEPTHS {
        for (kind, schema) in [("shared", shared_chain(depth)), ("plain", plain_chain(depth))] {
            let file = format!("{kind}{depth}.json");
            let generated = schemas::generate(&file, &schema).unwrap_or_else(|d| panic!("{file}: {}", d[0].message));
            let (name, root) = schemas::names(&file);
            modules.push(Module {
                name: name.clone(),
                source: format_file("// generated for a benchmark", generated.tokens).expect("formats"),
            });
            cases.push((kind, depth, json!({"module": name, "def": root, "instance": "not a number", "per_sample": 2000})));
        }
    }
    eprintln!("building {} generated modules in release mode…", modules.len());
    let binary = build_with("check_bound", &modules, TIMING_MAIN, true).unwrap_or_else(|e| panic!("does not build:\n{e}"));
    let input: String = cases.iter().map(|(_, _, case)| format!("{case}\n")).collect();
    let output = std::process::Command::new(&binary)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(input.as_bytes())?;
            child.wait_with_output()
        })
        .expect("run the timing binary");
    let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).expect("answer")).collect();
    let ns = |kind: &str, depth: usize| -> f64 {
        let at = cases.iter().position(|(k, d, _)| *k == kind && *d == depth).expect("case");
        assert_eq!(answers[at]["ok"], json!(false), "a string fails the chain");
        answers[at]["ns"].as_f64().expect("time")
    };
    println!("check_bound: one rejected string, median of 31 samples (ns per check)");
    println!("{:>6} {:>12} {:>12} {:>16} {:>18}", "depth", "shared", "plain", "shared / plain", "shared / depth 8");
    let first = ns("shared", DEPTHS[0]);
    for depth in DEPTHS {
        let (shared, plain) = (ns("shared", depth), ns("plain", depth));
        println!("{depth:>6} {shared:>12.0} {plain:>12.0} {:>16.2} {:>18.2}", shared / plain, shared / first);
    }
    // Growth from depth 24 to 48: 2^24 for re-evaluation, 2 for linear work.
    let growth = ns("shared", 48) / ns("shared", 24);
    println!("growth from depth 24 to 48: {growth:.2}× (linear work: 2×; re-evaluation: 2^24×)");
}
