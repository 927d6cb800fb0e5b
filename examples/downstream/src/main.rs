//! Decodes one line of real SDK traffic (a `session/update` tool call the official
//! TypeScript SDK's agent sent) with the checkfu-wire runtime, and prints the report.
//! Exits 1 when the decoder rejects it.

use checkfu_wire::decode::{Decoder, WireDirection};

/// Recorded agent → client traffic (tests/sdk-traffic/README.md says how).
const TRAFFIC: &str = include_str!("../../../tests/data/sdk-traffic/ts-turn.agent_to_client.jsonl");

/// The line decoded: the first tool call announced in the recording.
const MARKER: &str = r#""sessionUpdate":"tool_call","#;

fn main() {
    let Some(line) = TRAFFIC.lines().find(|line| line.contains(MARKER)) else {
        eprintln!("error: no line with {MARKER} in the recording");
        std::process::exit(2);
    };
    let report = Decoder::new().decode(line.as_bytes(), Some(WireDirection::AgentToRunner));
    match serde_json::to_string(&report) {
        Ok(json) => println!("{json}"),
        Err(e) => eprintln!("error: the report does not serialize: {e}"),
    }
    if !report.accepted {
        std::process::exit(1);
    }
}
