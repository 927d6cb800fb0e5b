//! Ctrl-C, SIGTERM and SIGHUP end a run as its deadline does: every process group the run
//! started (the harness's, a terminal's, each tool's: skopeo, buildah, the registry, a
//! runtime's client) is terminated, then killed, and the run goes on to its teardown, which
//! removes every container and temporary directory and reports. The command then exits
//! with 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM).
//!
//! A process group is signalled only while its leader is not yet reaped: once reaped, its
//! id may name another group after the pid counter wraps. So a group is registered when
//! its leader is spawned, and forgotten under the same lock in the same step that reaps the
//! leader ([`reaping`]), and the watcher signals only what is registered, under that lock.
//! There is no process-global cancellation flag: a signal cancels the run's [`Cancel`]
//! token (the one [`install`] was given, which the run's [`crate::budget::Budget`] holds),
//! and every wait of the run reads that token from the budget it was handed; its `check`
//! refuses to start anything new. Every group is spawned under a token
//! ([`crate::process::Group::spawn`]), and the watcher signals only the groups of the token
//! it cancelled. The teardown runs under a grace budget ([`crate::budget::Budget::grace`])
//! whose token no signal reaches: its commands (`podman rm`, `docker rm`) are neither
//! refused nor signalled, however many signals come.
//!
//! The handler itself is `signal-hook`'s: it writes to a pipe (async-signal-safe), and the
//! watcher thread reads the pipe and does the rest (the token's atomic store, the kills).

use std::io;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rustix::process::{Pid, Signal};

use crate::budget::Cancel;

/// The process groups whose leaders are spawned and not yet reaped, each with the token it
/// was spawned under. Not a cancellation flag (no wait reads it): only the watcher does, to
/// signal the groups of the token a signal cancelled, and only while their leaders are
/// unreaped.
static GROUPS: Mutex<Vec<(i32, Cancel)>> = Mutex::new(Vec::new());

/// How long the groups have after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Listens for SIGINT, SIGTERM and SIGHUP for the rest of the process: a signal cancels
/// `cancel` (the run's budget's token) and stops the groups spawned under it. Once: later calls do nothing (their token is not cancelled by a signal). Only the
/// `probe` command calls it: a library user keeps their own handling.
pub fn install(cancel: Cancel) -> io::Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    std::thread::Builder::new().name("interrupt".into()).spawn(move || {
        for signal in signals.forever() {
            let first = cancel.cancel_by(signal);
            signal_groups(Signal::TERM, &cancel);
            if first {
                std::thread::sleep(GRACE);
                signal_groups(Signal::KILL, &cancel);
            }
        }
    })?;
    let _ = INSTALLED.set(());
    Ok(())
}

/// Sends `signal` to the groups spawned under `cancel`: not a teardown's, whose token is a
/// grace budget's own.
fn signal_groups(signal: Signal, cancel: &Cancel) {
    let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    // Only registered groups, whose leaders are not reaped (see above).
    let covered = groups.iter().filter(|(_, under)| under.same(cancel));
    for group in covered.map(|(group, _)| *group).filter(|&group| group > 1).filter_map(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(group, signal);
    }
}

/// Ignores `signal` for the rest of the process (and, through exec, its children): what a
/// test's harness that must outlive SIGTERM does.
pub fn ignore(signal: i32) -> io::Result<()> {
    // SAFETY: setting a disposition to "ignore" installs no handler, so no code of ours
    // runs in a signal's context; signal(2) reads nothing of our memory.
    if unsafe { libc::signal(signal, libc::SIG_IGN) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The exit status of an interrupted run: 128 plus the signal's number.
pub fn exit_code(signal: i32) -> i32 {
    128 + signal
}

/// The signal's name, for the report.
pub fn name(signal: i32) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Registers the group `pgid` (a child just spawned in a group of its own) for the watcher,
/// under `cancel`. One spawned under a grace budget's token is never signalled: the
/// teardown's own commands run to their end.
pub(crate) fn register(pgid: u32, cancel: &Cancel) {
    let Ok(group) = i32::try_from(pgid) else { return };
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    groups.push((group, cancel.clone()));
    // A signal that came between the spawner's check and this push found no group to stop:
    // this one is stopped now, under the same lock the watcher takes.
    if cancel.signal().is_some() {
        if let Some(pid) = Pid::from_raw(group).filter(|_| group > 1) {
            let _ = rustix::process::kill_process_group(pid, Signal::TERM);
        }
    }
}

/// Runs `reap`, which may reap the leader of `pgid` (it says whether it did), with the
/// watcher held off: a reaped leader's group is forgotten before anyone could signal it.
pub(crate) fn reaping<T>(pgid: u32, reap: impl FnOnce() -> (T, bool)) -> T {
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    let (value, reaped) = reap();
    if reaped {
        if let Ok(group) = i32::try_from(pgid) {
            groups.retain(|(g, _)| *g != group);
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_group_is_forgotten() {
        let registered = || GROUPS.lock().unwrap().iter().any(|(g, _)| *g == 999_999);
        register(999_999, &Cancel::new());
        assert!(registered());
        let kept = reaping(999_999, || ("not yet", false));
        assert_eq!(kept, "not yet");
        assert!(registered());
        reaping(999_999, || ((), true));
        assert!(!registered());
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
    }
}
