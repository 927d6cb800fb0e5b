//! What exercising a full declaration costs (issue 51): `checkfu-wire probe`'s run of the
//! fixture agent declaring every value of `checkfu.capabilities` and advertising HTTP MCP
//! servers (`full`: the steer held in the prompt's turn, every declared step, a resumed process
//! for `native_checkpoint`, and both platform tool steps, the stdio server being the `checkfu-wire` binary as the command line
//! grants it), against the same agent declaring nothing and granted no MCP server
//! (`minimal`: the prompt and the cancellation alone), in the same run. Every step of both
//! passes (the bench asserts it). Both run the
//! cancellation step and settle for no time; the ratio is what the declared surface adds.

use std::time::Duration;

use checkfu_wire_probe::acp::AcpOptions;
use checkfu_wire_probe::plan::{LanePlan, Plan};
use checkfu_wire_probe::{self as probe, RunOptions};

const AGENT: &str = env!("CARGO_BIN_EXE_checkfu-fixture-agent");
/// The probe's own binary, which serves the stdio MCP server (`checkfu-wire mcp-tool`).
const PROBE: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");
/// Every member of `checkfu.capabilities` (the fixture's default declares the three axes alone).
const FULL: &str = "subagents,steer,interrupt,builtin_tool_scoping,structured_output,staged_files,native_checkpoint";

fn main() {
    divan::main();
}

/// The plan of one run; made per run, since its deadline counts from when it is made.
fn plan(full: bool) -> Plan {
    let switches: &[&str] = if full { &["--mcp-http", "--declare", FULL] } else { &["--declare", "none"] };
    let command = std::iter::once(AGENT).chain(switches.iter().copied()).map(Into::into).collect();
    let mut options = AcpOptions::new(command);
    options.settle = Duration::ZERO;
    let mcp_server = full.then(|| PROBE.into());
    let run = RunOptions { kill_grace: Duration::from_secs(2), mcp_server, ..RunOptions::default() };
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

#[divan::bench(sample_count = 10, args = ["minimal", "full"])]
fn declared(bencher: divan::Bencher, case: &str) {
    let full = case == "full";
    bencher.bench(|| {
        let result = probe::run(&plan(full), &mut |_| {}).expect("probe runs");
        assert!(result.passed(), "{}", result.to_text());
        result.model_plane.calls.len()
    });
}
