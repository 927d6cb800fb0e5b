//! The probe's peak memory under a hostile harness, beside its peak on a plain turn, and the
//! time from `--deadline` to the report. Not a timing loop: each figure is one process, run
//! a few times, sampled from `/proc/PID/status` (`VmHWM`, the probe's own high-water mark,
//! not its harness's) every 10 ms until it exits.
//!
//! - `plain`: the fixture CLI (`tests/fixture-oneshot/cli.py`), one text turn;
//! - `hostile`: `tests/fixture-oneshot/hostile.py` in `flood` mode: three 29 MB bodies at
//!   once, six calls with a 30 MB model name, 5,000 refused requests with 60 KB paths, 300
//!   idle connections, a schema bomb and a `$ref` cycle, then a proper turn;
//! - `deadline`: the fixture CLI in `hang` mode with `--deadline 3`: the wall time of the
//!   probe's run past the 3 s, which is the time from the deadline to the written report.
//!
//! `cargo bench --bench hostile` prints the figures and the ratios against `plain`.

#[path = "whole_runs.rs"]
mod whole_runs;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use whole_runs::{machine, median};

const PROBE: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");
const CLI: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-oneshot/cli.py");
const HOSTILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-oneshot/hostile.py");

/// One probe run: its peak RSS in KiB, its wall time, and its exit status.
fn run(harness: &str, env: &[(&str, &str)], extra: &[&str]) -> (u64, Duration, i32) {
    let mut command = Command::new(PROBE);
    command.args(["probe", "--format", "json", "--protocol", "oneshot-v1", "--prompt-transport", "stdin", "--output-mode", "text"]);
    command.args(extra).arg("--").arg(harness);
    command.envs(env.iter().copied()).stdout(Stdio::null()).stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("the probe starts");
    let status = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = std::fs::read_to_string(&status) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        if let Ok(Some(exit)) = child.try_wait() {
            return (peak, started.elapsed(), exit.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run only then.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    println!("machine: {}", machine());
    let plain: Vec<(u64, Duration, i32)> = (0..5).map(|_| run(CLI, &[("CHECKFU_FIXTURE_MODE", "good")], &[])).collect();
    assert!(plain.iter().all(|r| r.2 == 0), "a plain turn passes: {plain:?}");
    let plain_rss = median(plain.iter().map(|r| r.0).collect());
    println!("plain turn:     peak RSS {:>8} KiB (median of 5)", plain_rss);
    let hostile: Vec<(u64, Duration, i32)> =
        (0..3).map(|_| run(HOSTILE, &[("CHECKFU_HOSTILE", "flood")], &["--step-timeout", "300", "--deadline", "400"])).collect();
    let hostile_rss = median(hostile.iter().map(|r| r.0).collect());
    let worst = hostile.iter().map(|r| r.0).max().unwrap_or(0);
    println!(
        "hostile flood:  peak RSS {:>8} KiB (median of 3; worst {worst} KiB), {:.1}x the plain turn; runs took {:?}, exit {:?}",
        hostile_rss,
        hostile_rss as f64 / plain_rss as f64,
        hostile.iter().map(|r| r.1.as_secs()).collect::<Vec<_>>(),
        hostile.iter().map(|r| r.2).collect::<Vec<_>>()
    );
    let deadline: Vec<(u64, Duration, i32)> = (0..3)
        .map(|_| run(CLI, &[("CHECKFU_FIXTURE_MODE", "hang")], &["--deadline", "3", "--step-timeout", "60", "--kill-grace", "1"]))
        .collect();
    let past: Vec<u128> = deadline.iter().map(|r| r.1.saturating_sub(Duration::from_secs(3)).as_millis()).collect();
    let plain_ms = median(plain.iter().map(|r| r.1.as_millis() as u64).collect());
    println!(
        "deadline 3 s:   report written {past:?} ms after the deadline (a plain turn takes {plain_ms} ms end to end); exit {:?}",
        deadline.iter().map(|r| r.2).collect::<Vec<_>>()
    );
}
