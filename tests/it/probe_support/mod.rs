//! Running `checkfu-wire probe` from a test, and asserting that it left nothing behind: no
//! process of the harness's group (checked with kill(2), independently of the probe's own
//! reading of /proc) and no workspace or home directory of the probe's.

#![allow(dead_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const PROBE: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");
pub const AGENT: &str = env!("CARGO_BIN_EXE_checkfu-fixture-agent");

pub struct Run {
    pub status: i32,
    pub json: Value,
    pub stderr: String,
}

impl Run {
    pub fn step(&self, name: &str) -> (&str, &str) {
        let step = &self.json["steps"][name];
        (step["status"].as_str().unwrap_or("?"), step["reason"].as_str().unwrap_or(""))
    }

    pub fn check(&self, name: &str) -> &str {
        self.json["checks"][name]["status"].as_str().unwrap_or("?")
    }

    pub fn check_reason(&self, name: &str) -> &str {
        self.json["checks"][name]["reason"].as_str().unwrap_or("")
    }

    pub fn plane(&self) -> &Value {
        &self.json["model_plane"]
    }

    pub fn pretty(&self) -> String {
        format!("{}\n{}", serde_json::to_string_pretty(&self.json).unwrap_or_default(), self.stderr)
    }
}

/// Runs the probe (`--format json`) with `options` and `harness` (after `--`, if any), with
/// extra variables for the probe's own process.
pub fn probe_env(options: &[&str], harness: &[&str], env: &[(&str, OsString)]) -> Run {
    probe_with(Command::new(PROBE), options, harness, env)
}

/// [`probe_env`] run [`unprivileged`], its temporary files in `/tmp` (where that user may
/// write), from a [`Staged`] copy of the probe.
pub fn probe_unprivileged(options: &[&str], harness: &[&str], env: &[(&str, OsString)]) -> Run {
    let staged = Staged::new("probe");
    let mut command = unprivileged(&staged.file(PROBE));
    command.env("TMPDIR", "/tmp");
    probe_with(command, options, harness, env)
}

/// `command` (the probe, directly or through `setpriv`) with `probe --format json`, the
/// options, the harness and the variables; then nothing of the run may be left.
fn probe_with(mut command: Command, options: &[&str], harness: &[&str], env: &[(&str, OsString)]) -> Run {
    command.args(["probe", "--format", "json", "--kill-grace", "0.5"]);
    command.args(options);
    if !harness.is_empty() {
        command.arg("--").args(harness);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("probe starts");
    let probe_pid = child.id();
    let output = child.wait_with_output().expect("probe runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let json: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    if let Some(pid) = json["harness"]["pid"].as_u64() {
        assert_no_process_in_group(pid as i32);
        assert_eq!(json["harness"]["leftover_processes"], serde_json::json!([]));
    }
    // A one-shot run reports each run of the CLI, each in a group of its own.
    for run in json["runs"].as_array().into_iter().flatten() {
        if let Some(pid) = run["pid"].as_u64() {
            assert_no_process_in_group(pid as i32);
            assert_eq!(run["leftover_processes"], serde_json::json!([]));
        }
    }
    assert_nothing_left(probe_pid);
    Run { status: output.status.code().unwrap_or(-1), json, stderr }
}

pub fn probe(options: &[&str], harness: &[&str]) -> Run {
    probe_env(options, harness, &[])
}

pub fn assert_no_process_in_group(pgid: i32) {
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        if !u32::try_from(pgid).is_ok_and(checkfu_wire_sandbox::process::group_exists) {
            return;
        }
        assert!(Instant::now() < until, "a process of the harness's group {pgid} is still alive");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No workspace (`checkfu-probe-PID-…`), home (`checkfu-probe-home-PID-…`) or one-shot
/// prompt directory (`checkfu-oneshot-PID-…`) of that probe.
pub fn assert_nothing_left(probe_pid: u32) {
    let prefixes =
        [format!("checkfu-probe-{probe_pid}-"), format!("checkfu-probe-home-{probe_pid}-"), format!("checkfu-oneshot-{probe_pid}-")];
    let left: Vec<PathBuf> = std::fs::read_dir(std::env::temp_dir())
        .expect("temp dir")
        .flatten()
        .filter(|e| prefixes.iter().any(|p| e.file_name().to_string_lossy().starts_with(p.as_str())))
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "directories left behind: {left:?}");
}

/// A directory of the test's own, removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("checkfu-test-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies of what an [`unprivileged`] command runs or reads, in a directory of the test's own
/// that any user can read and search, removed when dropped.
///
/// The clone may sit under a directory only its owner can enter (root's home is mode 0700 on
/// Debian), so uid 65534 cannot run `target/debug/…` or read `tests/…` where they are. A test
/// stages each such file first: a hard link where the file system allows one (the binaries
/// are large), a copy otherwise, either way keeping its mode.
pub struct Staged(Scratch);

impl Staged {
    pub fn new(name: &str) -> Staged {
        static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch = Scratch::new(&format!("staged-{name}-{n}"));
        std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod 755");
        Staged(scratch)
    }

    /// `path` staged under its file name; the staged path.
    pub fn file(&self, path: &str) -> String {
        let from = std::path::Path::new(path);
        let to = self.0 .0.join(from.file_name().expect("a file name"));
        if std::fs::hard_link(from, &to).is_err() {
            std::fs::copy(from, &to).unwrap_or_else(|e| panic!("staging {path}: {e}"));
        }
        to.to_string_lossy().into_owned()
    }

    /// The directory `path` staged whole under its name (a recipe with the shims it names
    /// relative to itself); the staged directory.
    pub fn tree(&self, path: &std::path::Path) -> PathBuf {
        let to = self.0 .0.join(path.file_name().expect("a directory name"));
        crate::support::project::copy_dir(path, &to);
        to
    }
}

/// The uid the probe runs as under `setpriv` when the tests run as root.
pub const NOBODY: &str = "65534";

/// A command run unprivileged: through `setpriv` as uid [`NOBODY`] when the tests run as
/// root (as in CI), as the user running them otherwise.
pub fn unprivileged(program: &str) -> Command {
    if running_as_root() {
        let mut command = Command::new("setpriv");
        command.args(["--reuid", NOBODY, "--regid", NOBODY, "--clear-groups", program]);
        command
    } else {
        Command::new(program)
    }
}

pub fn running_as_root() -> bool {
    checkfu_wire_sandbox::identity::is_root()
}

/// The uid an [`unprivileged`] command runs as.
pub fn unprivileged_uid() -> String {
    if running_as_root() {
        NOBODY.to_owned()
    } else {
        checkfu_wire_sandbox::identity::euid().to_string()
    }
}
