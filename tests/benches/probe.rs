//! The probe's time overhead over the harness's own run, measured in the same run on the
//! fixture agent (`checkfu-fixture-agent`) with turns of 20, 200 and 2000 rounds (`--turns N`: N subagents started and
//! completed, N tool calls and settlements, about 4N updates) and no idle waits (`--settle 0`,
//! `--mid-turn-wait-ms 0`):
//!
//! - `harness_alone`: the agent fed the runner's recorded messages (initialize, session/new,
//!   prompt, steer, and the answers to its permission and `fs/*` requests) on stdin, its
//!   stdout read until the prompt's answer, then stdin closed and the exit awaited: the
//!   agent's own run with the least a client can do;
//! - `probe_run`: `checkfu_wire_probe::run` (the spine) on the same agent: spawn in a process group,
//!   every message decoded and checked, the client side answered live, observations
//!   normalized and judged, teardown with the group check.
//! - `compaction`: the cost of `context_compaction` on the fixture agent opening its
//!   conversation with 8 earlier exchanges (`--history 8`, about 1100 tokens by the relay's
//!   estimate): `windowed`, under `--context-window 400 --compaction truncate_oldest` (the
//!   first call answered with a context overflow, the agent's compaction and second call, the
//!   claim judged against the record), against `unwindowed`, the same agent without a window
//!   (one call).
//! - `drain`: what `--interrupt` adds to a run of the fixture agent (`drained`: the first
//!   turn's answer paced, the interrupt sent while it streams, the drain judged against the
//!   record), against the same run without it (`undrained`). Both run the cancellation step.
//! - `fresh_process`: the full requirement run (`with`: the default run, whose requirement
//!   probes put the registry's fresh-process requirements to one more agent process: its
//!   `initialize`, two sessions, the extension requests, the two turns with their permission
//!   answers held back, the prompts of each content type, the informational probes, its
//!   shutdown) against the same run with them turned off (`without`), on the fixture agent
//!   with and without `--sessions` (which advertises the session methods, their modes and
//!   config options, and the image, audio and embedded-context prompts).
//! - `fresh_process_claude_code`: the same pair of runs on `claude-code-acp` (its recipe, the
//!   `nonce` script, offline against the relay, as `tests/it/real_agents.rs` runs it), built
//!   only with `CHECKFU_REAL_AGENTS=DIR` set (`tests/real-agents/install.sh DIR`). The run
//!   is not required to pass: the adapter declares nothing the catalog records for its
//!   entry (a mismatch, exit 1), and its measured misses stand.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use checkfu_wire_probe::acp::report::AcpReport;
use checkfu_wire_probe::acp::AcpOptions;
use checkfu_wire_probe::plan::{LanePlan, Plan};
use checkfu_wire_probe::{self as probe, RunOptions};

const AGENT: &str = env!("CARGO_BIN_EXE_checkfu-fixture-agent");
/// Turn lengths: the fixed cost of a session shows at 20, the per-message cost at 2000.
const TURNS: [usize; 3] = [20, 200, 2000];

fn agent_args(turns: usize) -> Vec<String> {
    vec!["--turns".into(), turns.to_string(), "--mid-turn-wait-ms".into(), "0".into()]
}

fn main() {
    divan::main();
}

/// The plan of one run; made per run, since its deadline counts from when it is made.
fn plan(turns: usize) -> Plan {
    let mut command = vec![AGENT.into()];
    command.extend(agent_args(turns).into_iter().map(Into::into));
    let mut options = AcpOptions::new(command);
    options.settle = Duration::ZERO;
    let run = RunOptions { kill_grace: Duration::from_secs(2), ..RunOptions::default() };
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

fn run(turns: usize) -> probe::Report {
    probe::run(&plan(turns), &mut |_| {}).expect("probe runs")
}

/// The runner's side of one probe run, as recorded: what the harness alone is fed.
fn script(turns: usize) -> Vec<u8> {
    let result = run(turns);
    assert!(result.passed(), "{}", result.to_text());
    let mut script = Vec::new();
    let mut launches = 0;
    for line in result.wire_record().unwrap_or_default().split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let record: serde_json::Value = serde_json::from_slice(line).expect("record line");
        // The main process's wire alone: the requirement probes' process opens with a
        // launch line of its own.
        launches += usize::from(record.get("launch").is_some());
        if launches > 1 {
            break;
        }
        if record["direction"] == "runner_to_agent" {
            script.extend_from_slice(record["message"].to_string().as_bytes());
            script.push(b'\n');
        }
    }
    script
}

#[divan::bench(sample_count = 30, args = TURNS)]
fn harness_alone(bencher: divan::Bencher, turns: usize) {
    let script = script(turns);
    bencher.bench(|| {
        let mut child = Command::new(AGENT)
            .args(agent_args(turns))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("agent starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&script).expect("script written");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut lines = 0usize;
        for line in stdout.lines() {
            let line = line.expect("line");
            lines += 1;
            if line.contains("\"stopReason\"") {
                break;
            }
        }
        drop(stdin);
        child.wait().expect("agent exits");
        lines
    });
}

#[divan::bench(sample_count = 30, args = TURNS)]
fn probe_run(bencher: divan::Bencher, turns: usize) {
    bencher.bench(|| {
        let result = run(turns);
        assert!(result.passed());
        result.lane.as_any().downcast_ref::<AcpReport>().map_or(0, |acp| acp.wire.messages_in)
    });
}

/// A plan of one turn of the agent with 8 earlier exchanges, with a window of 400 and a
/// `truncate_oldest` policy or without.
fn compaction_plan(windowed: bool) -> Plan {
    let command = [AGENT, "--history", "8", "--mid-turn-wait-ms", "0"].iter().map(Into::into).collect();
    let mut options = AcpOptions::new(command);
    options.settle = Duration::ZERO;
    let mut run = RunOptions { kill_grace: Duration::from_secs(2), ..RunOptions::default() };
    if windowed {
        options.runtime_config =
            Some(serde_json::json!({"context_window": 400, "compaction": {"strategy": "truncate_oldest", "trigger_tokens": 400}}));
        run.context_window = Some(400);
    }
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

#[divan::bench(sample_count = 100, args = ["unwindowed", "windowed"])]
fn compaction(bencher: divan::Bencher, case: &str) {
    let windowed = case == "windowed";
    bencher.bench(|| {
        let result = probe::run(&compaction_plan(windowed), &mut |_| {}).expect("probe runs");
        assert!(result.passed(), "{}", result.to_text());
        result.model_plane.calls.len()
    });
}

/// One turn of the fixture agent, with the cooperative interrupt or without it.
fn drain_plan(drained: bool) -> Plan {
    let command = [AGENT, "--mid-turn-wait-ms", "0"].iter().map(Into::into).collect();
    let mut options = AcpOptions::new(command);
    options.settle = Duration::ZERO;
    options.interrupt = drained;
    let run = RunOptions { kill_grace: Duration::from_secs(2), ..RunOptions::default() };
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

#[divan::bench(sample_count = 10, args = ["undrained", "drained"])]
fn drain(bencher: divan::Bencher, case: &str) {
    let drained = case == "drained";
    bencher.bench(|| {
        let result = probe::run(&drain_plan(drained), &mut |_| {}).expect("probe runs");
        assert!(result.passed(), "{}", result.to_text());
        result.model_plane.calls.len()
    });
}

/// One default run of the fixture agent (`--sessions` when `sessions`), with the
/// requirement probes' fresh process or without it.
fn fresh_plan(probes: bool, sessions: bool) -> Plan {
    let mut command: Vec<std::ffi::OsString> = [AGENT, "--mid-turn-wait-ms", "0"].iter().map(Into::into).collect();
    if sessions {
        command.push("--sessions".into());
    }
    let mut options = AcpOptions::new(command);
    options.settle = Duration::ZERO;
    options.requirement_probes = probes;
    let run = RunOptions { kill_grace: Duration::from_secs(2), ..RunOptions::default() };
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

#[divan::bench(sample_count = 10, args = ["without", "with", "without --sessions", "with --sessions"])]
fn fresh_process(bencher: divan::Bencher, case: &str) {
    let probes = case.starts_with("with ") || case == "with";
    let sessions = case.ends_with("--sessions");
    bencher.bench(|| {
        let result = probe::run(&fresh_plan(probes, sessions), &mut |_| {}).expect("probe runs");
        assert!(result.passed(), "{}", result.to_text());
        let acp = result.lane.as_any().downcast_ref::<AcpReport>().expect("the ACP lane's report");
        // The fresh process ran exactly when asked for.
        assert_eq!(acp.requirement_probe.is_some(), probes);
        acp.requirement_probe.as_ref().map_or(0, |p| p.messages_in)
    });
}

/// One run of the installed `claude-code-acp` as its recipe launches it, the requirement
/// probes' fresh process with it or not; the step's time and the deadline are the real-agent
/// tests'.
#[cfg(checkfu_real_agents)]
fn claude_code_plan(probes: bool) -> Plan {
    let dir = std::path::PathBuf::from(std::env::var_os("CHECKFU_REAL_AGENTS").expect("CHECKFU_REAL_AGENTS names the agents' directory"));
    let recipe = concat!(env!("CARGO_MANIFEST_DIR"), "/../recipes/claude-code.json");
    let recipe = checkfu_wire_probe::recipe::Recipe::load(std::path::Path::new(recipe)).expect("the recipe loads");
    let mut options = AcpOptions::new(vec![dir.join("node_modules/.bin/claude-code-acp").into()]);
    options.recipe_env = recipe.env.clone();
    options.recipe_home_files = recipe.home_files.clone();
    options.settle = Duration::ZERO;
    options.requirement_probes = probes;
    let run = RunOptions {
        kill_grace: Duration::from_secs(2),
        step_timeout: Duration::from_secs(90),
        harness: Some(checkfu_wire_probe::options::harness("claude-code").expect("the catalog's entry")),
        budget: probe::Budget::after(Duration::from_secs(180)),
        ..RunOptions::default()
    };
    Plan { run, lane: LanePlan::Acp(options), image: None, registration: None }
}

#[cfg(checkfu_real_agents)]
#[divan::bench(sample_count = 3, args = ["without", "with"])]
fn fresh_process_claude_code(bencher: divan::Bencher, case: &str) {
    let probes = case == "with";
    bencher.bench(|| {
        let result = probe::run(&claude_code_plan(probes), &mut |_| {}).expect("probe runs");
        let acp = result.lane.as_any().downcast_ref::<AcpReport>().expect("the ACP lane's report");
        // The main turn went through, and the fresh process ran exactly when asked for.
        assert!(acp.exercised.turn, "{}", result.to_text());
        assert_eq!(acp.requirement_probe.is_some(), probes, "{}", result.to_text());
        acp.requirement_probe.as_ref().map_or(0, |p| p.messages_in)
    });
}
