//! Ctrl-C, SIGTERM and SIGHUP end a run as its deadline does: every process group the run
//! started (the harness's, a terminal's, each tool's: skopeo, buildah, the registry, a
//! runtime's client) is terminated, then killed, and the run goes on to its teardown, which
//! removes every container and temporary directory and reports. The command then exits
//! with 128 plus the signal's number (130 for SIGINT, 143 for SIGTERM).
//!
//! A process group is signalled only while its leader is not yet reaped: once reaped, its
//! id may name another group after the pid counter wraps. So the token a group is spawned
//! under keeps it from its leader's spawn to the step that reaps the leader, under the
//! token's lock ([`Cancel::signal_groups`]), and the watcher signals only what the token it
//! cancelled keeps. There is no process-global cancellation flag and no global registry: a signal cancels the run's [`Cancel`]
//! token (the one [`install`] was given, which the run's [`crate::budget::Budget`] holds),
//! and every wait of the run reads that token from the budget it was handed; its `check`
//! refuses to start anything new. Every group is spawned under a token
//! ([`crate::process::Group::spawn`]). The teardown runs under a grace budget ([`crate::budget::Budget::grace`])
//! whose token no signal reaches: its commands (`podman rm`, `docker rm`) are neither
//! refused nor signalled, however many signals come.
//!
//! The handler itself is `signal-hook`'s: it writes to a pipe (async-signal-safe), and the
//! watcher thread reads the pipe and does the rest (the token's atomic store, the kills).

use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use rustix::process::Signal;

use crate::budget::Cancel;

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
            cancel.signal_groups(Signal::TERM);
            if first {
                std::thread::sleep(GRACE);
                cancel.signal_groups(Signal::KILL);
            }
        }
    })?;
    let _ = INSTALLED.set(());
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_group_is_forgotten_by_its_token_alone() {
        let (token, other) = (Cancel::new(), Cancel::new());
        token.adopt(999_999);
        assert_eq!((token.live_groups(), other.live_groups()), (1, 0));
        let kept = token.reaping(999_999, || ("not yet", false));
        assert_eq!(kept, "not yet");
        assert_eq!(token.live_groups(), 1);
        token.reaping(999_999, || ((), true));
        assert_eq!(token.live_groups(), 0);
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
    }
}
