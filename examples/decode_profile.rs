//! A profiling harness for the decoder: decodes the real SDK turn that
//! `benches/decode.rs` measures (`ts-turn` and `ts-concurrent`, 101 messages) a given
//! number of times, or skips it with `IgnoredAny` as the parse floor does.
//!
//!     cargo build --release --example decode_profile
//!     valgrind --tool=callgrind target/release/examples/decode_profile decode 250
//!
//! Under callgrind, the difference between two counts of iterations (say 250 and 50) is
//! what the loop costs without the start-up (reading the captures, building the decoder),
//! so instructions per iteration are repeatable on a loaded machine, where time is not.

use checkfu_wire::decode::{Decoder, WireDirection};
use serde_json::Value;

/// The turn as the bench reads it: each recorded message's bytes with its direction.
fn sdk_turn() -> Vec<(Vec<u8>, WireDirection)> {
    let mut out = Vec::new();
    for file in ["ts-turn", "ts-concurrent"] {
        let path = format!("{}/tests/data/sdk-traffic/{file}.capture.jsonl", env!("CARGO_MANIFEST_DIR"));
        let captured = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        for line in captured.lines() {
            let record: Value = serde_json::from_str(line).expect("a capture record");
            let direction =
                if record["direction"] == "client_to_agent" { WireDirection::RunnerToAgent } else { WireDirection::AgentToRunner };
            out.push((record["message"].to_string().into_bytes(), direction));
        }
    }
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "decode".into());
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1000);
    let messages = sdk_turn();
    let mut accepted = 0;
    for _ in 0..rounds {
        match mode.as_str() {
            "floor" => {
                for (m, _) in &messages {
                    let _ = std::hint::black_box(serde_json::from_slice::<serde::de::IgnoredAny>(m));
                }
            }
            "decode" => {
                // A fresh decoder per round, as the bench makes one per iteration.
                let mut decoder = Decoder::new();
                for (m, direction) in &messages {
                    accepted += usize::from(decoder.decode(std::hint::black_box(m), Some(*direction)).accepted);
                }
            }
            other => panic!("unknown mode {other}: floor or decode"),
        }
    }
    if mode == "decode" {
        assert_eq!(accepted, rounds * messages.len(), "every message of the turn is accepted");
    }
}
