//! The harness process: spawned with piped stdio in a process group of its own, read and
//! written on threads so that a harness which floods, hangs or stops reading never blocks
//! the runner, and always torn down (stdin closed, then the group terminated, then killed).
//!
//! Threads rather than an async runtime: a session has exactly three blocking streams
//! (stdin, stdout, stderr), each gets one thread, and the runner's own loop waits on one
//! channel with a timeout. That is all tokio's child-process support would give here; it
//! would add six crates and a runtime (tokio with `rt`, `process`, `io-util`, `time`: tokio,
//! mio, bytes, errno, pin-project-lite, signal-hook-registry) to a tree of 78. The probe
//! benchmark measures this design's overhead over the harness's own run; a tokio version was
//! not built to compare.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::budget::Cancel;
use checkfu_wire_sandbox::process::{inherit_on_exec, Group, Signal};

/// The longest line the runner reads from a harness (the same limit as `decode`); a longer
/// line is a fault, reported without ever holding it in memory.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// How much of a harness's stderr is kept (its last bytes), whatever it writes: what a
/// report shows of it, in either lane, and no more is held.
pub const STDERR_TAIL: usize = 4096;

/// Lines read ahead of the runner. Bounded, so a flooding harness waits on its pipe instead
/// of growing the runner's memory.
const READ_AHEAD: usize = 256;

/// What the stdout thread saw.
#[derive(Debug)]
pub enum Event {
    /// One line, without its line terminator.
    Line(Vec<u8>),
    /// A line longer than [`MAX_LINE`]; `bytes` is how much had been read when it was refused.
    Oversize { bytes: usize },
    /// stdout closed: the harness exited or closed it.
    Closed,
    /// Reading failed.
    Failed(String),
}

/// The last `limit` bytes a stream wrote, and how many it wrote in all: the harness's
/// stderr, and a terminal's output. The front is cut on a UTF-8 character boundary, so the
/// text kept never starts inside a character (ACP asks this of terminal output).
#[derive(Debug)]
pub struct Tail {
    pub total: u64,
    bytes: Vec<u8>,
    limit: usize,
}

impl Tail {
    pub(super) fn new(limit: usize) -> Tail {
        Tail { total: 0, bytes: Vec::new(), limit }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > self.limit {
            let mut cut = self.bytes.len() - self.limit;
            // Skip continuation bytes, never to start inside a character.
            while cut < self.bytes.len() && (self.bytes[cut] & 0b1100_0000) == 0b1000_0000 {
                cut += 1;
            }
            self.bytes.drain(..cut);
        }
    }

    /// Whether anything was cut from the front.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// How the harness ended at teardown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It had exited before teardown began (a crash, or it quit on its own).
    ExitedEarly,
    /// It exited once its stdin closed, as an ACP agent over stdio should.
    ExitedOnEof,
    /// It exited on SIGTERM to its process group.
    Terminated,
    /// It ignored SIGTERM and was killed.
    Killed,
    /// Even SIGKILL did not reap it in time (it should not happen; reported, not hidden).
    Unreaped,
}

impl Ending {
    pub fn name(self) -> &'static str {
        match self {
            Ending::ExitedEarly => "exited_before_teardown",
            Ending::ExitedOnEof => "exited_on_eof",
            Ending::Terminated => "terminated",
            Ending::Killed => "killed",
            Ending::Unreaped => "unreaped",
        }
    }
}

/// What teardown found and did.
#[derive(Clone, Debug)]
pub struct Teardown {
    pub ending: Ending,
    pub status: Option<ExitStatus>,
    /// Members of the harness's process group still alive after teardown (pids).
    pub leftover: Vec<u32>,
    /// Group members (children of the harness) that teardown had to terminate or kill.
    pub reaped_children: usize,
}

/// A running harness.
pub struct Harness {
    group: Group,
    pid: u32,
    stdin: Option<Sender<Vec<u8>>>,
    events: Receiver<Event>,
    stderr: Arc<Mutex<Tail>>,
    exited: Option<ExitStatus>,
    /// Its stdout reached its end before teardown: it left (or closed it) on its own.
    stdout_closed: std::sync::atomic::AtomicBool,
}

/// Turns a command, its directory (as the harness sees it) and its own variables (a
/// terminal's `env`) into what runs it in the harness's image.
pub type InImage =
    Box<dyn Fn(&[std::ffi::OsString], &Path, &[(std::ffi::OsString, std::ffi::OsString)]) -> io::Result<InImageCommand> + Send + Sync>;

/// A command that runs in the harness's image: the runtime client's argv, and a descriptor
/// the client reads its further arguments from (bubblewrap's `--args`: the harness's
/// variables, kept off every command line), which the child inherits.
pub struct InImageCommand {
    pub argv: Vec<std::ffi::OsString>,
    pub inherit: Option<std::os::fd::OwnedFd>,
}

/// How a terminal's command runs when the harness runs in an image: in the same image, as
/// the harness would run it there, not on the machine running the probe.
pub struct Inside {
    /// The argv that runs `command` in the image with `cwd` (as the harness sees it) as its
    /// directory.
    pub argv: InImage,
    /// Variables for the command's client, in place of the caller's: the runtime's own
    /// configuration and the caller's allow-listed ones, never the image's
    /// ([`crate::image::host_env`]).
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl std::fmt::Debug for Inside {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inside").field("env", &self.env).finish_non_exhaustive()
    }
}

/// How the harness is started beyond its command: variables set in its environment (over
/// the runner's own), and the network namespace it joins, if any.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    pub netns: Option<checkfu_wire_sandbox::fence::Join>,
    /// The directory it starts in, which its `PWD` names too; `None`: the caller's.
    pub cwd: Option<std::path::PathBuf>,
    /// Start from an empty environment: only `env` (and `PWD`) reach the process. An image's
    /// harness sees its image's variables and the probe's, as a container runtime gives
    /// them, never the caller's (their `PATH`, certificates or tokens).
    pub clear_env: bool,
    /// The image the harness runs in: its `terminal/*` commands run there too.
    pub inside: Option<std::sync::Arc<Inside>>,
    /// A descriptor the process inherits (bubblewrap's `--args`); taken by the spawn.
    pub inherit: Option<std::sync::Arc<std::sync::Mutex<Option<std::os::fd::OwnedFd>>>>,
}

impl Harness {
    /// Starts `program` with `args` in the launch's directory, by default the caller's (so
    /// relative paths in the command mean what they mean to the person typing it), with a
    /// `PWD` that names it ([`working_directory`]), in a new process group whose id is its pid.
    /// Refused once `cancel` (the run's) is; the harness's group is stopped when a signal
    /// cancels it.
    pub fn spawn(program: &std::ffi::OsStr, args: &[std::ffi::OsString], launch: &Launch, cancel: &Cancel) -> io::Result<Harness> {
        cancel.check("start the harness")?;
        let mut command = Command::new(program);
        command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(dir) = &launch.cwd {
            command.current_dir(dir);
        }
        if launch.clear_env {
            command.env_clear();
        }
        // Before the launch's own variables, so an author's explicit `PWD` still wins.
        working_directory(&mut command, launch.cwd.as_deref());
        for (key, value) in &launch.env {
            command.env(key, value);
        }
        if let Some(fd) = launch.netns {
            checkfu_wire_sandbox::fence::join_on_exec(&mut command, fd);
        }
        // Held until the spawn has happened, then closed: the child has its own copy.
        let inherited = launch.inherit.as_ref().and_then(|slot| slot.lock().ok()?.take());
        if let Some(fd) = &inherited {
            inherit_on_exec(&mut command, std::os::fd::AsRawFd::as_raw_fd(fd));
        }
        // In a process group of its own, registered with `crate::interrupt`.
        let mut group = Group::spawn(&mut command, cancel)?;
        drop(inherited);
        let pid = group.id();
        let (Some(stdin), Some(stdout), Some(stderr)) = group.take_stdio() else {
            // Piped stdio is always present after a successful spawn; dropping the group
            // kills and reaps it.
            return Err(io::Error::other("the harness's stdio was not piped"));
        };
        let (to_stdin, from_runner) = mpsc::channel::<Vec<u8>>();
        thread::Builder::new().name("harness-stdin".into()).spawn(move || {
            let mut stdin = stdin;
            for line in from_runner {
                if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                    break;
                }
            }
            // Dropping stdin here closes the pipe: the harness sees EOF.
        })?;
        let (to_runner, events) = mpsc::sync_channel(READ_AHEAD);
        thread::Builder::new().name("harness-stdout".into()).spawn(move || read_lines(stdout, to_runner))?;
        let tail = Arc::new(Mutex::new(Tail::new(STDERR_TAIL)));
        let sink = Arc::clone(&tail);
        thread::Builder::new().name("harness-stderr".into()).spawn(move || drain(stderr, sink))?;
        Ok(Harness { group, pid, stdin: Some(to_stdin), events, stderr: tail, exited: None, stdout_closed: Default::default() })
    }

    /// The harness's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Queues bytes for the harness's stdin. False once stdin is closed.
    pub fn write(&self, bytes: Vec<u8>) -> bool {
        self.stdin.as_ref().is_some_and(|s| s.send(bytes).is_ok())
    }

    /// Closes the harness's stdin (it sees EOF once what was queued is written).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout event, waiting at most until `until`; `None` on timeout.
    pub fn next_event(&self, until: Instant) -> Option<Event> {
        let wait = until.saturating_duration_since(Instant::now());
        let event = match self.events.recv_timeout(wait) {
            Ok(event) => Some(event),
            Err(mpsc::RecvTimeoutError::Timeout) => None,
            Err(mpsc::RecvTimeoutError::Disconnected) => Some(Event::Closed),
        };
        if matches!(event, Some(Event::Closed)) {
            self.stdout_closed.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        event
    }

    /// Whether the harness has exited, without waiting. It is not reaped yet: its group's
    /// id stays its own until teardown has emptied the group.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.group.exit_status().ok().flatten();
        }
        self.exited
    }

    pub fn stderr(&self) -> (u64, String) {
        let tail = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        (tail.total, tail.text())
    }

    /// Ends the harness: closes stdin and waits `grace` for it to exit, then sends SIGTERM to
    /// its process group and waits `grace` again, then SIGKILL. Whatever the harness did,
    /// its group is then emptied the same way (children it left behind are terminated, then
    /// killed), so no process of the group outlives the session.
    pub fn teardown(&mut self, grace: Duration) -> Teardown {
        self.end(grace, true)
    }

    /// Teardown without the wait on EOF: for a harness whose time is up (its stdin already
    /// closed, or a deadline passed), where a grace for a clean exit would only delay the report.
    pub fn terminate(&mut self, grace: Duration) -> Teardown {
        self.end(grace, false)
    }

    fn end(&mut self, grace: Duration, eof_first: bool) -> Teardown {
        // A harness whose stdout ended before teardown left on its own, however soon its
        // exit is seen: waiting for that exit (bounded by the grace) keeps the ending from
        // turning on the race between its exit and this check.
        let early =
            self.exit_status().is_some() || (self.stdout_closed.load(std::sync::atomic::Ordering::Relaxed) && self.wait_exit(grace));
        self.stdin = None;
        let mut ending = if early { Ending::ExitedEarly } else { Ending::ExitedOnEof };
        let exited_on_eof = !early && eof_first && self.wait_exit(grace);
        if !early && !exited_on_eof {
            self.group.signal(Signal::TERM);
            ending = Ending::Terminated;
            if !self.wait_exit(grace) {
                self.group.signal(Signal::KILL);
                ending = Ending::Killed;
                if !self.wait_exit(Duration::from_secs(5)) {
                    ending = Ending::Unreaped;
                }
            }
        }
        // The harness is gone (or unreapable); now its group: children it spawned and left.
        let mut reaped_children = 0;
        let members = self.group.members();
        if !members.is_empty() {
            reaped_children = members.len();
            self.group.signal(Signal::TERM);
            if !wait_until(grace, || self.group.members().is_empty()) {
                self.group.signal(Signal::KILL);
                wait_until(Duration::from_secs(5), || self.group.members().is_empty());
            }
        }
        let leftover = self.group.members();
        // Reaped only once nothing of its group is left: until then its zombie keeps the
        // group's id, which drop may still have to signal.
        if self.exited.is_some() && leftover.is_empty() {
            if let Ok(status) = self.group.reap() {
                self.exited = Some(status);
            }
        }
        Teardown { ending, status: self.exited, leftover, reaped_children }
    }

    fn wait_exit(&mut self, within: Duration) -> bool {
        wait_until(within, || self.exit_status().is_some())
    }
}

/// Makes the environment agree with the directory `command` starts in (`dir`, or the
/// runner's own when `None`): `PWD` names it and `OLDPWD` is removed. A child inherits the
/// runner's environment, where `PWD` names the directory the probe was started from (or
/// even an older one, when the probe was started without updating it); a program that
/// takes its project from `PWD` (kilo does, and so does a shell whose `PWD` names its
/// current directory) would work there, and `OLDPWD` would tell it where the user was.
/// `PWD` is absolute, as POSIX requires of it; where the runner's own directory cannot be
/// read (it was removed), `PWD` is removed too rather than left naming another one.
pub(super) fn working_directory(command: &mut Command, dir: Option<&Path>) {
    command.env_remove("OLDPWD");
    let absolute = match dir {
        Some(dir) => std::path::absolute(dir),
        None => std::env::current_dir(),
    };
    match absolute {
        Ok(dir) => command.env("PWD", dir),
        Err(_) => command.env_remove("PWD"),
    };
}

fn wait_until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    // Polls fast at first (an agent usually exits within a millisecond of EOF), then backs
    // off to 5 ms so a long wait costs little.
    let mut pause = Duration::from_micros(100);
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
}

fn read_lines(stdout: ChildStdout, to_runner: SyncSender<Event>) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let event = match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) => {
                let _ = to_runner.send(Event::Closed);
                return;
            }
            Ok(_) if line.last() == Some(&b'\n') => {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                Event::Line(std::mem::take(&mut line))
            }
            // No terminator within the limit: an oversize line. Say so at once, then skip the
            // rest of it without keeping it.
            Ok(n) if n > MAX_LINE => {
                if to_runner.send(Event::Oversize { bytes: n }).is_err() || skip_line(&mut reader).is_err() {
                    return;
                }
                continue;
            }
            // The last line, without a terminator, then EOF.
            Ok(_) => Event::Line(std::mem::take(&mut line)),
            Err(e) => {
                let _ = to_runner.send(Event::Failed(e.to_string()));
                return;
            }
        };
        if to_runner.send(event).is_err() {
            return;
        }
    }
}

fn skip_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        if let Some(at) = memchr::memchr(b'\n', buffer) {
            reader.consume(at + 1);
            return Ok(());
        }
        let n = buffer.len();
        reader.consume(n);
    }
}

/// Reads `stream` to its end into `sink`.
pub(super) fn drain(mut stream: impl Read, sink: Arc<Mutex<Tail>>) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => sink.lock().unwrap_or_else(|e| e.into_inner()).push(&buffer[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The variables naming directories that a child started through [`Harness::spawn`]
    /// gets: (`PWD`, `OLDPWD`). Read with `env`, not a shell, which would mend a `PWD` that
    /// does not name its directory.
    fn seen(launch: &Launch) -> (Option<String>, Option<String>) {
        let mut harness = Harness::spawn("env".as_ref(), &[], launch, &Cancel::new()).expect("env starts");
        let until = Instant::now() + Duration::from_secs(20);
        let (mut pwd, mut oldpwd) = (None, None);
        while let Some(Event::Line(line)) = harness.next_event(until) {
            let line = String::from_utf8_lossy(&line).into_owned();
            if let Some(value) = line.strip_prefix("PWD=") {
                pwd = Some(value.to_owned());
            } else if let Some(value) = line.strip_prefix("OLDPWD=") {
                oldpwd = Some(value.to_owned());
            }
        }
        harness.teardown(Duration::from_secs(1));
        (pwd, oldpwd)
    }

    #[test]
    fn pwd_names_the_directory_the_harness_starts_in_and_oldpwd_is_gone() {
        let workspace = super::super::workspace::Workspace::create().expect("workspace");
        let root = workspace.root().to_string_lossy().into_owned();
        let here = std::env::current_dir().expect("the test's directory").to_string_lossy().into_owned();
        assert_ne!(root, here, "the workspace is not the runner's own directory");
        // The one-shot lane: the workspace, whatever the runner's own `PWD` and `OLDPWD` say.
        let launch = Launch { cwd: Some(workspace.root().to_path_buf()), ..Launch::default() };
        assert_eq!(seen(&launch), (Some(root), None));
        // The ACP lane: the runner's own directory, as it really is.
        assert_eq!(seen(&Launch::default()), (Some(here), None));
        // An author's explicit variables (`--env`) are theirs to set.
        let env = vec![("PWD".into(), "/chosen".into()), ("OLDPWD".into(), "/before".into())];
        let launch = Launch { env, cwd: Some(workspace.root().to_path_buf()), ..Launch::default() };
        assert_eq!(seen(&launch), (Some("/chosen".into()), Some("/before".into())));
    }
}
