//! One supervisor for every child the probe starts (a harness, an image tool, a terminal's
//! command): [`Group`] spawns it as the leader of a process group of its own, kept by the
//! token of the budget it runs in ([`crate::budget::Cancel`], which a signal cancels), and
//! signals, observes and reaps it.
//!
//! A process group is named by its leader's pid, which the kernel may give to another
//! process once the leader is reaped and the group is empty (after the pid counter wraps:
//! `pid_max` is often 32768). So a [`Group`] never signals once it has reaped: it observes
//! the leader's exit without reaping it (`waitid` with `WNOWAIT`, which leaves a zombie
//! holding the pid, and with it the group's id), signals the group as long as its caller
//! needs (the stragglers an exited leader left), and reaps only when told to, the token
//! forgetting the group in the same step ([`crate::budget::Cancel`]).
//!
//! Not a pidfd: `pidfd_send_signal` reaches one process, not its group (the flag that
//! reaches a group needs Linux 6.9), and the unreaped leader already pins the group's id.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};

/// A signal to send, by name (`Signal::TERM`, `Signal::KILL`).
pub use rustix::process::Signal;
use rustix::process::{Pid, WaitId, WaitIdOptions, WaitIdStatus};

/// A child leading a process group of its own, killed (the whole group) and reaped when
/// dropped.
#[derive(Debug)]
pub struct Group {
    child: Child,
    /// The token it was spawned under, which keeps the group until it is reaped.
    cancel: crate::budget::Cancel,
    /// The leader's status, once observed (its exit) or reaped.
    exit: Option<ExitStatus>,
    reaped: bool,
}

impl Group {
    /// Spawns `command` as the leader of a new process group (whose id is its pid) under
    /// `cancel`, the token of the budget it runs in: a signal that cancels that token stops
    /// the group too; a teardown's command, spawned under a grace budget's token, no signal
    /// stops. Refused, starting nothing, once `cancel` is cancelled.
    pub fn spawn(command: &mut Command, cancel: &crate::budget::Cancel) -> io::Result<Group> {
        cancel.check("start a process")?;
        command.process_group(0);
        let child = command.spawn()?;
        cancel.adopt(child.id());
        Ok(Group { child, cancel: cancel.clone(), exit: None, reaped: false })
    }

    /// The leader's pid, which is also the group's id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's piped stdin, stdout and stderr (each once).
    pub fn take_stdio(&mut self) -> (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>) {
        (self.child.stdin.take(), self.child.stdout.take(), self.child.stderr.take())
    }

    /// Sends `signal` to every process of the group, only while the leader is unreaped (see
    /// the module's doc); nothing once it is.
    pub fn signal(&self, signal: Signal) {
        if self.reaped {
            return;
        }
        if let Some(group) = pid(self.id()) {
            // The group may be empty but for the zombie leader: nothing to deliver then.
            let _ = rustix::process::kill_process_group(group, signal);
        }
    }

    /// The leader's status once it has exited, observed without reaping it (the group's id
    /// stays its own); `None` while it runs.
    pub fn exit_status(&mut self) -> io::Result<Option<ExitStatus>> {
        if self.exit.is_some() {
            return Ok(self.exit);
        }
        let Some(leader) = pid(self.id()) else { return Err(io::Error::other("a pid out of range")) };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        let observed = loop {
            match rustix::process::waitid(WaitId::Pid(leader), options) {
                Err(rustix::io::Errno::INTR) => continue,
                other => break other?,
            }
        };
        self.exit = observed.as_ref().map(status_of);
        Ok(self.exit)
    }

    /// Reaps the leader, waiting for it to exit (the caller signals it first if it must),
    /// and forgets the group: nothing signals it afterwards.
    pub fn reap(&mut self) -> io::Result<ExitStatus> {
        if self.reaped {
            return self.exit.ok_or_else(|| io::Error::other("reaped without a status"));
        }
        // Wait for the exit without reaping, outside the token's lock, so that a leader
        // slow to exit never holds off the signal that would stop its siblings; the reap
        // under the lock is then immediate.
        self.wait_exit()?;
        let child = &mut self.child;
        let status = self.cancel.reaping(child.id(), || {
            let status = child.wait();
            let reaped = status.is_ok();
            (status, reaped)
        })?;
        self.reaped = true;
        self.exit = Some(status);
        Ok(status)
    }

    /// Waits for the leader to exit, observing it without reaping it.
    fn wait_exit(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.exit {
            return Ok(status);
        }
        let Some(leader) = pid(self.id()) else { return Err(io::Error::other("a pid out of range")) };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
        let observed = loop {
            match rustix::process::waitid(WaitId::Pid(leader), options) {
                Err(rustix::io::Errno::INTR) => continue,
                other => break other?,
            }
        };
        let status = observed.as_ref().map(status_of).ok_or_else(|| io::Error::other("waitid observed no exit"))?;
        self.exit = Some(status);
        Ok(status)
    }

    /// Whether the leader is reaped.
    pub fn is_reaped(&self) -> bool {
        self.reaped
    }

    /// Live processes of the group (its leader, while it runs, and what it left), by pid;
    /// empty once the leader is reaped, whose id may then name another group.
    pub fn members(&self) -> Vec<u32> {
        if self.reaped {
            return Vec::new();
        }
        group_members(self.id())
    }
}

impl Drop for Group {
    /// A group dropped unreaped (an error path, a panic) still leaves no process.
    fn drop(&mut self) {
        if !self.reaped {
            self.signal(Signal::KILL);
            let _ = self.reap();
        }
    }
}

fn pid(id: u32) -> Option<Pid> {
    i32::try_from(id).ok().filter(|&raw| raw > 1).and_then(Pid::from_raw)
}

/// The `ExitStatus` `wait` would give for what `waitid` observed: an exit code, or the
/// signal that ended the process (and whether it dumped core).
fn status_of(observed: &WaitIdStatus) -> ExitStatus {
    let raw = match (observed.exit_status(), observed.terminating_signal()) {
        (Some(code), _) => (code & 0xff) << 8,
        (None, Some(signal)) if observed.dumped() => signal | 0x80,
        (None, Some(signal)) => signal,
        (None, None) => 0,
    };
    ExitStatus::from_raw(raw)
}

/// Live (non-zombie) processes whose process group is `pgid`, read from `/proc`. Empty where
/// there is no `/proc`.
fn group_members(pgid: u32) -> Vec<u32> {
    // kill(2) with signal 0 says at once whether the group has any process at all (zombies
    // included); only then is /proc read to tell the live ones.
    match pid(pgid) {
        Some(group) if rustix::process::test_kill_process_group(group).is_err() => return Vec::new(),
        None => return Vec::new(),
        _ => {}
    }
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // The command name may hold spaces and parentheses: fields start after the last ')'.
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else { continue };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let _ppid = fields.next();
        let pgrp = fields.next().and_then(|f| f.parse::<u32>().ok());
        if pgrp == Some(pgid) && state != Some("Z") && state != Some("X") {
            members.push(pid);
        }
    }
    members
}

/// Keeps `fd` (opened close-on-exec, so no other child inherits it) open across the exec
/// of `command`. The caller keeps the descriptor open until the spawn has happened, so the
/// child's copy is the same file.
pub fn inherit_on_exec(command: &mut Command, fd: RawFd) {
    // SAFETY: the closure makes one async-signal-safe call (fcntl, on a descriptor number:
    // no memory of the parent is touched, and a closed one is an error, EBADF).
    unsafe {
        command.pre_exec(move || {
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    };
}

/// Limits the child `command` starts to `nofile` open files (its soft and hard
/// `RLIMIT_NOFILE`), as a test of a descriptor-bound walk needs.
pub fn limit_open_files_on_exec(command: &mut Command, nofile: u64) {
    // SAFETY: the closure makes one async-signal-safe call (setrlimit, on a value it owns).
    unsafe {
        command.pre_exec(move || {
            let limit = rustix::process::Rlimit { current: Some(nofile), maximum: Some(nofile) };
            rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).map_err(io::Error::from)
        })
    };
}

/// Sends `signal` to the one process `pid` (not its group): for a caller that holds that
/// process unreaped (its own child), or itself.
pub fn signal_process(pid: u32, signal: Signal) -> io::Result<()> {
    let Some(target) = i32::try_from(pid).ok().and_then(Pid::from_raw) else { return Err(io::Error::other("a pid out of range")) };
    Ok(rustix::process::kill_process(target, signal)?)
}

/// Whether any process (a zombie included) is in the group `pgid`.
pub fn group_exists(pgid: u32) -> bool {
    pid(pgid).is_some_and(|group| rustix::process::test_kill_process_group(group).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn an_exit_is_observed_without_reaping_and_the_group_is_killed_before_the_reap() {
        // The leader exits at once; the sleeper it left stays in the group.
        let mut command = Command::new("sh");
        command.args(["-c", "sleep 30 & exit 3"]);
        let mut group = Group::spawn(&mut command, &crate::budget::Cancel::new()).expect("sh starts");
        let until = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = group.exit_status().expect("waitid") {
                break status;
            }
            assert!(Instant::now() < until, "sh did not exit");
            std::thread::sleep(Duration::from_millis(5));
        };
        assert_eq!(status.code(), Some(3));
        assert!(!group.is_reaped() && group_exists(group.id()), "the zombie leader holds the group's id");
        assert_eq!(group.members().len(), 1, "the sleeper");
        group.signal(Signal::KILL);
        let until = Instant::now() + Duration::from_secs(10);
        while !group.members().is_empty() {
            assert!(Instant::now() < until, "the sleeper survived SIGKILL");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(group.reap().expect("reaped").code(), Some(3));
        assert!(group.members().is_empty());
    }

    #[test]
    fn a_signal_is_observed_as_the_status_wait_gives() {
        let mut group = Group::spawn(Command::new("sleep").arg("30"), &crate::budget::Cancel::new()).expect("sleep starts");
        group.signal(Signal::TERM);
        let until = Instant::now() + Duration::from_secs(10);
        while group.exit_status().expect("waitid").is_none() {
            assert!(Instant::now() < until, "sleep outlived SIGTERM");
            std::thread::sleep(Duration::from_millis(5));
        }
        let observed = group.exit_status().unwrap();
        assert_eq!(observed.and_then(|s| s.signal()), Some(libc::SIGTERM));
        assert_eq!(Some(group.reap().unwrap()), observed);
    }
}
