//! The conformance checker over generated traces of 100k and 1M observations, against a
//! baseline measured in the same run: splitting the same trace into lines and parsing each
//! into a `serde_json::Value`, the least any JSON Lines reader does. Per-observation time that
//! stays flat from 100k to 1M shows the checker is linear; the ratio to the baseline shows
//! what the seven checks cost on top of parsing.
//!
//! Run: `cargo bench --bench conformance`.

use std::sync::OnceLock;

use divan::counter::ItemsCount;
use divan::Bencher;

fn main() {
    divan::main();
}

const SIZES: [usize; 2] = [100_000, 1_000_000];

/// A passing trace of exactly `n` observations: the full declaration, a ready, then blocks of
/// subagent lifecycle with attributed tool calls, primary-loop output and tools, steers with
/// their acknowledgements, and a drained terminal. Every id is distinct, so the checks' maps
/// grow with the trace: the worst case for memory, and the honest one for time.
fn trace(n: usize) -> String {
    let mut lines = vec![
        String::from(
            r#"{"trace": 1, "declared": {"subagents": "observed", "mid_run_input": "native", "interrupt": "cooperative"}, "opt_in": ["cooperative_interrupt_drained"]}"#,
        ),
        String::from(r#"{"kind": "ready"}"#),
    ];
    let tail = 3; // interrupt_request, interrupt_ack, terminal
    let mut block = 0usize;
    while lines.len() - 1 + 10 + tail <= n {
        let b = block;
        lines.push(format!(r#"{{"kind": "subagent_started", "subagent": "s{b}", "name": "researcher"}}"#));
        lines.push(format!(r#"{{"kind": "tool_use", "id": "a{b}", "name": "bash", "subagent": "s{b}"}}"#));
        lines.push(format!(r#"{{"kind": "output", "text": "step {b} of the plan", "subagent": "s{b}"}}"#));
        lines.push(format!(r#"{{"kind": "steer_input", "event": "e{b}"}}"#));
        lines.push(format!(r#"{{"kind": "steering", "event": "e{b}", "disposition": "queued"}}"#));
        lines.push(format!(r#"{{"kind": "subagent_completed", "subagent": "s{b}", "disposition": "completed"}}"#));
        lines.push(format!(r#"{{"kind": "tool_result", "id": "a{b}", "subagent": "s{b}"}}"#));
        lines.push(format!(r#"{{"kind": "tool_use", "id": "p{b}", "name": "read"}}"#));
        lines.push(format!(r#"{{"kind": "tool_result", "id": "p{b}"}}"#));
        lines.push(String::from(r#"{"kind": "output", "text": "primary loop progress"}"#));
        block += 1;
    }
    while lines.len() - 1 + tail < n {
        lines.push(String::from(r#"{"kind": "output", "text": "padding"}"#));
    }
    lines.push(String::from(r#"{"kind": "interrupt_request"}"#));
    lines.push(String::from(r#"{"kind": "interrupt_ack", "disposition": "draining"}"#));
    lines.push(String::from(r#"{"kind": "terminal", "outcome": "success", "stop_reason": "interrupted"}"#));
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

/// Each size's trace, generated once and checked to be the size it claims and to pass.
fn cached(n: usize) -> &'static str {
    static TRACES: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = SIZES.iter().position(|s| *s == n).expect("a benchmarked size");
    TRACES[slot].get_or_init(|| {
        let text = trace(n);
        let report = checkfu_wire::conformance::check_str(&text).expect("the generated trace is valid");
        assert_eq!(report.observations, n);
        assert!(!report.failed(), "the generated trace passes: {}", report.to_text());
        text
    })
}

/// Baseline: split into lines and parse each into a `Value`.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn parse_lines_into_values(bencher: Bencher, n: usize) {
    let text = cached(n);
    bencher.counter(ItemsCount::new(n)).bench(|| {
        let mut objects = 0usize;
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).expect("valid JSON");
            objects += usize::from(value.is_object());
        }
        objects
    });
}

/// The checker: read, validate and run all seven checks.
#[divan::bench(args = SIZES, sample_count = 10, sample_size = 1)]
fn check_trace(bencher: Bencher, n: usize) {
    let text = cached(n);
    bencher.counter(ItemsCount::new(n)).bench(|| checkfu_wire::conformance::check_str(text).expect("valid trace"));
}
