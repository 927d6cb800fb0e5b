//! A run's budget, passed as a value ([`Budget`]): its deadline ([`Deadline`]) and its
//! cancellation ([`Cancel`]), made once by the plan and handed to every blocking call (a
//! pull, an unpack, a build, the session, a relay's wait). No process-global flag: a signal
//! cancels the token [`crate::interrupt::install`] was given, and whoever holds a clone of
//! it sees that. The token also knows the process groups spawned under it
//! ([`crate::process::Group::spawn`]), so what a cancellation stops is the token's own, not
//! a registry of the whole process. Teardown runs under [`Budget::grace`], a deadline of its own and a token no
//! signal reaches, so a container, a home and a workspace are removed after Ctrl-C as after
//! a deadline.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::process::{Pid, Signal};
use std::time::{Duration, Instant};

/// What [`Cancel::cancel`] records: a cancellation that is not a signal's.
const REQUESTED: i32 = -1;

/// How long a teardown may take under its grace budget ([`Budget::grace`]): the harness's
/// end (its grace twice and a last wait), `podman rm`/`docker rm` and `rmi`, and the
/// directories' removal, on a loaded machine. Bounded, so a runtime that hangs cannot
/// hold the probe past it; each command keeps its own smaller limit inside it.
pub const TEARDOWN_GRACE: Duration = Duration::from_secs(120);

/// A cancellation token, cheap to clone: every clone sees the first cancellation of any.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<Token>);

/// What the clones of a [`Cancel`] share.
#[derive(Debug, Default)]
struct Token {
    /// 0 while not cancelled, then [`REQUESTED`] or the signal's number.
    why: AtomicI32,
    /// The process groups spawned under the token whose leaders are not yet reaped. A group
    /// is named by its leader's pid, which the kernel may hand on once the leader is reaped
    /// (after the pid counter wraps), so a group is added when its leader is spawned and
    /// removed under this lock in the step that reaps it ([`Cancel::reaping`]); whoever
    /// signals the token's groups ([`Cancel::signal_groups`]) takes the same lock.
    groups: Mutex<Vec<i32>>,
}

/// Why a token was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancelled {
    /// A signal, by number (`libc::SIGINT`).
    Signal(i32),
    /// [`Cancel::cancel`], asked for by the program itself.
    Requested,
}

impl Cancel {
    /// A token no one has cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Cancels it (the first cancellation is the one kept).
    pub fn cancel(&self) {
        let _ = self.0.why.compare_exchange(0, REQUESTED, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Cancels it by `signal`; whether this was the first cancellation.
    pub fn cancel_by(&self, signal: i32) -> bool {
        self.0.why.compare_exchange(0, signal.max(1), Ordering::SeqCst, Ordering::SeqCst).is_ok()
    }

    /// Why it was cancelled, once it is.
    pub fn cancelled(&self) -> Option<Cancelled> {
        match self.0.why.load(Ordering::SeqCst) {
            0 => None,
            REQUESTED => Some(Cancelled::Requested),
            signal => Some(Cancelled::Signal(signal)),
        }
    }

    /// The signal that cancelled it, if a signal did.
    pub fn signal(&self) -> Option<i32> {
        match self.cancelled() {
            Some(Cancelled::Signal(signal)) => Some(signal),
            _ => None,
        }
    }

    /// Whether `other` is a clone of this token.
    pub fn same(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// `Err` once cancelled, naming `what` was stopped: nothing new is to start.
    pub fn check(&self, what: &str) -> Result<(), Stopped> {
        match self.cancelled() {
            None => Ok(()),
            Some(why) => Err(Stopped::Cancelled { what: what.to_owned(), why }),
        }
    }

    fn groups(&self) -> MutexGuard<'_, Vec<i32>> {
        // A panic elsewhere while holding the lock leaves the list as it was: keep using it.
        self.0.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the group `pgid` (a child just spawned in a group of its own) to the token's.
    /// A signal that cancelled the token between the spawner's check and this call found
    /// no group to stop: this one is stopped now, under the lock the signaller takes.
    pub(crate) fn adopt(&self, pgid: u32) {
        let Ok(group) = i32::try_from(pgid) else { return };
        let mut groups = self.groups();
        groups.push(group);
        if self.signal().is_some() {
            if let Some(pid) = Pid::from_raw(group).filter(|_| group > 1) {
                let _ = rustix::process::kill_process_group(pid, Signal::TERM);
            }
        }
    }

    /// Runs `reap`, which may reap the leader of `pgid` (it says whether it did), with the
    /// token's signaller held off: a reaped leader's group is forgotten before anyone could
    /// signal it. `reap` must not block: the caller waits for the exit before.
    pub(crate) fn reaping<T>(&self, pgid: u32, reap: impl FnOnce() -> (T, bool)) -> T {
        let mut groups = self.groups();
        let (value, reaped) = reap();
        if reaped {
            if let Ok(group) = i32::try_from(pgid) {
                groups.retain(|g| *g != group);
            }
        }
        value
    }

    /// Sends `signal` to every group spawned under the token whose leader is not reaped.
    pub fn signal_groups(&self, signal: Signal) {
        let groups = self.groups();
        for group in groups.iter().copied().filter(|&group| group > 1).filter_map(Pid::from_raw) {
            let _ = rustix::process::kill_process_group(group, signal);
        }
    }

    /// How many groups spawned under the token are not reaped yet.
    pub fn live_groups(&self) -> usize {
        self.groups().len()
    }
}

/// When the whole run must end (`--deadline`): an image's build, pull and unpack spend the
/// same budget the harness then runs in, so no part of the run turns what is left of it back
/// into an instant of its own (which would move it by the time that took).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    /// The budget as given, for what a report says of it.
    given: Duration,
}

impl Deadline {
    /// `given` from `start`.
    pub fn from(start: Instant, given: Duration) -> Deadline {
        Deadline { at: start + given, given }
    }

    /// `given` from now.
    pub fn after(given: Duration) -> Deadline {
        Deadline::from(Instant::now(), given)
    }

    /// The budget as given (`--deadline`).
    pub fn given(&self) -> Duration {
        self.given
    }

    /// What is left of it.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The end of a wait of at most `within` from now that never outlasts the run: a step's
    /// bound.
    pub fn min_with(&self, within: Duration) -> Instant {
        (Instant::now() + within).min(self.at)
    }

    /// The earlier of `until` and the deadline: a wait's bound.
    pub fn bound(&self, until: Instant) -> Instant {
        until.min(self.at)
    }

    /// Whether a wait until `until` reaches the deadline, so its end is the run's and not
    /// the wait's own.
    pub fn reached_by(&self, until: Instant) -> bool {
        until >= self.at
    }

    /// The instant itself, for waits on instants like the standard library's own.
    pub fn instant(&self) -> Instant {
        self.at
    }
}

/// Why a budget stopped the work: its deadline passed, or its token was cancelled.
#[derive(Debug, thiserror::Error)]
pub enum Stopped {
    #[error("{what}: the run's deadline (--deadline) passed")]
    Deadline { what: String },
    #[error("{what}: interrupted by {}", describe(*why))]
    Cancelled { what: String, why: Cancelled },
}

/// What a report says of a cancellation: the signal's name, or that it was asked for.
pub fn describe(why: Cancelled) -> &'static str {
    match why {
        Cancelled::Signal(signal) => crate::interrupt::name(signal),
        Cancelled::Requested => "a cancellation",
    }
}

impl From<Stopped> for io::Error {
    fn from(stopped: Stopped) -> io::Error {
        let kind = match stopped {
            Stopped::Deadline { .. } => io::ErrorKind::TimedOut,
            Stopped::Cancelled { .. } => io::ErrorKind::Interrupted,
        };
        io::Error::new(kind, stopped)
    }
}

/// A deadline and a cancellation token: what every blocking call of a run is given.
#[derive(Clone, Debug)]
pub struct Budget {
    pub deadline: Deadline,
    pub cancel: Cancel,
}

impl Budget {
    /// A budget of `deadline`, cancelled with `cancel`.
    pub fn new(deadline: Deadline, cancel: Cancel) -> Budget {
        Budget { deadline, cancel }
    }

    /// `given` from now, with a token of its own.
    pub fn after(given: Duration) -> Budget {
        Budget::new(Deadline::after(given), Cancel::new())
    }

    /// A teardown's budget: `given` from now, with a fresh token that no signal watcher
    /// holds, so a signal cannot cut the teardown short (its own deadline still does).
    pub fn grace(&self, given: Duration) -> Budget {
        Budget::after(given)
    }

    /// What is left of the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.remaining()
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        self.deadline.expired()
    }

    /// Why the token was cancelled, once it is.
    pub fn cancelled(&self) -> Option<Cancelled> {
        self.cancel.cancelled()
    }

    /// The signal that cancelled it, if a signal did.
    pub fn signal(&self) -> Option<i32> {
        self.cancel.signal()
    }

    /// `Err` once cancelled or past the deadline (the cancellation named first).
    pub fn check(&self, what: &str) -> Result<(), Stopped> {
        self.cancel.check(what)?;
        if self.expired() {
            return Err(Stopped::Deadline { what: what.to_owned() });
        }
        Ok(())
    }

    /// The deadline as an instant, for waits on instants.
    pub fn instant(&self) -> Instant {
        self.deadline.instant()
    }

    /// The budget as given (`--deadline`).
    pub fn given(&self) -> Duration {
        self.deadline.given()
    }

    /// A step's bound: at most `within` from now, never past the deadline.
    pub fn min_with(&self, within: Duration) -> Instant {
        self.deadline.min_with(within)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancellation_is_seen_by_every_clone_and_the_first_is_kept() {
        let budget = Budget::after(Duration::from_secs(60));
        let clone = budget.clone();
        assert!(budget.check("x").is_ok());
        assert!(clone.cancel.cancel_by(libc::SIGINT));
        assert!(!budget.cancel.cancel_by(libc::SIGTERM));
        budget.cancel.cancel();
        assert_eq!(budget.cancelled(), Some(Cancelled::Signal(libc::SIGINT)));
        assert_eq!(budget.check("the pull").unwrap_err().to_string(), "the pull: interrupted by SIGINT");
        let error = io::Error::from(budget.check("y").unwrap_err());
        assert_eq!(error.kind(), io::ErrorKind::Interrupted);
    }

    #[test]
    fn a_grace_budget_is_not_cancelled_with_the_run() {
        let run = Budget::after(Duration::ZERO);
        run.cancel.cancel_by(libc::SIGINT);
        let grace = run.grace(Duration::from_secs(5));
        assert!(!grace.cancel.same(&run.cancel));
        assert!(grace.check("teardown").is_ok());
        assert!(grace.remaining() > Duration::from_secs(4));
        let late = Budget::after(Duration::ZERO);
        assert_eq!(late.check("the store").unwrap_err().to_string(), "the store: the run's deadline (--deadline) passed");
        assert_eq!(Cancel::new().check("z").map_err(|e| e.to_string()), Ok(()));
        let plain = Cancel::new();
        plain.cancel();
        assert_eq!(plain.signal(), None);
        assert_eq!(plain.cancelled(), Some(Cancelled::Requested));
    }
}
