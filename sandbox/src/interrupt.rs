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
//! Spawning stops too: after a signal, [`check`] refuses to start anything new but the
//! teardown's own commands, which are not refused.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use rustix::process::{Pid, Signal};

/// The signal received, 0 until one is.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The process groups whose leaders are spawned and not yet reaped.
static GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// How long the groups have after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

/// Listens for SIGINT, SIGTERM and SIGHUP for the rest of the process (once; later calls do
/// nothing). Only the `probe` command calls it: a library user keeps their own handling.
pub fn install() -> io::Result<()> {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM, libc::SIGHUP])?;
    std::thread::Builder::new().name("interrupt".into()).spawn(move || {
        for signal in signals.forever() {
            let first = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst).is_ok();
            signal_groups(Signal::TERM);
            if first {
                std::thread::sleep(GRACE);
                signal_groups(Signal::KILL);
            }
        }
    })?;
    let _ = INSTALLED.set(());
    Ok(())
}

fn signal_groups(signal: Signal) {
    let groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    // Only registered groups, whose leaders are not reaped (see above).
    for group in groups.iter().filter(|&&group| group > 1).filter_map(|&group| Pid::from_raw(group)) {
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

/// The signal that interrupted the run, if one did.
pub fn received() -> Option<i32> {
    match RECEIVED.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
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

/// `Err` once the run was interrupted: nothing new is to start.
pub fn check(what: &str) -> io::Result<()> {
    match received() {
        None => Ok(()),
        Some(signal) => Err(io::Error::new(io::ErrorKind::Interrupted, format!("{what}: interrupted by {}", name(signal)))),
    }
}

/// Registers the group `pgid` (a child just spawned in a group of its own) for the watcher.
/// One registered after a signal is not signalled (the teardown's own commands run then);
/// [`check`] is what keeps anything else from starting.
pub fn register(pgid: u32) {
    let Ok(group) = i32::try_from(pgid) else { return };
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    groups.push(group);
}

/// Runs `reap`, which may reap the leader of `pgid` (it says whether it did), with the
/// watcher held off: a reaped leader's group is forgotten before anyone could signal it.
pub fn reaping<T>(pgid: u32, reap: impl FnOnce() -> (T, bool)) -> T {
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    let (value, reaped) = reap();
    if reaped {
        if let Ok(group) = i32::try_from(pgid) {
            groups.retain(|g| *g != group);
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_group_is_forgotten() {
        register(999_999);
        assert!(GROUPS.lock().unwrap().contains(&999_999));
        let kept = reaping(999_999, || ("not yet", false));
        assert_eq!(kept, "not yet");
        assert!(GROUPS.lock().unwrap().contains(&999_999));
        reaping(999_999, || ((), true));
        assert!(!GROUPS.lock().unwrap().contains(&999_999));
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
    }
}
