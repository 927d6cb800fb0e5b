//! buildah, skopeo, the CNCF distribution registry (Debian's `docker-registry`), podman and
//! docker, driven as the external tools they are.
//!
//! Every child runs in its own process group and is killed and reaped on every path out
//! (a timeout, an error, a drop): its output is captured up to a bound (the head of stdout,
//! the tail of stderr, which a failure's error carries). A builder's storage is a temporary
//! directory of ours (`--root`, `--runroot`, the `vfs` driver, which needs neither fuse nor
//! overlay and works as root in a container), with `HOME`, `XDG_*`, `TMPDIR` and the
//! `CONTAINERS_*` files pointed into it, so an ephemeral build leaves nothing on disk, with
//! one exception no flag reaches: run as root, the containers library records which
//! registry holds which blob digest in `/var/lib/containers/cache/blob-info-cache-v1.boltdb`
//! (a small shared cache, not an image; as another user it goes under `HOME`, which is ours).

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use checkfu_wire_sandbox::budget::{Budget, Cancel, Stopped};
use checkfu_wire_sandbox::process::{Group, Signal};

use super::reference::{sha256_digest, ImageReference};
use super::TempDir;

/// The most of a tool's stdout kept (a digest, an inspect answer: small).
const MAX_STDOUT: usize = 1 << 20;
/// The most of a tool's stderr kept, from its end: where a failure's reason is.
const MAX_STDERR: usize = 16 * 1024;
/// How long a build, push or pull may take: a large base on a slow disk takes minutes.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long a quick command (removing an image) may take.
pub const QUICK_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the registry may take to answer `GET /v2/` (it takes about 0.3 s).
pub const REGISTRY_START_TIMEOUT: Duration = Duration::from_secs(10);
/// Between SIGTERM and SIGKILL when the registry is stopped.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// Ports tried when another process took the one we picked before the registry bound it.
const PORT_ATTEMPTS: usize = 5;

/// An external tool the image lane drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Buildah,
    Skopeo,
    /// The CNCF distribution registry, `docker-registry serve CONFIG`.
    Registry,
    Podman,
    Docker,
    /// bubblewrap, which runs an unpacked image's root filesystem (`image::run`).
    Bubblewrap,
}

impl Tool {
    /// The program's name on `PATH`.
    pub fn program(self) -> &'static str {
        match self {
            Tool::Buildah => "buildah",
            Tool::Skopeo => "skopeo",
            Tool::Registry => "docker-registry",
            Tool::Podman => "podman",
            Tool::Docker => "docker",
            Tool::Bubblewrap => "bwrap",
        }
    }

    /// The Debian package that installs it.
    pub fn debian_package(self) -> &'static str {
        match self {
            Tool::Docker => "docker.io",
            Tool::Bubblewrap => "bubblewrap",
            other => other.program(),
        }
    }

    /// Its path on `PATH`.
    pub fn find(self) -> Result<PathBuf, ToolError> {
        on_path(self.program()).into_iter().next().ok_or(ToolError::Missing { tool: self })
    }
}

/// Every executable file named `program` on `PATH`, in `PATH`'s order.
pub fn on_path(program: &str) -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join(program)).filter(|candidate| is_executable(candidate)).collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why a tool could not do its part.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// Not on `PATH`: the message names the package to install.
    #[error("`{}` is not on PATH: install it (apt-get install {})", tool.program(), tool.debian_package())]
    Missing { tool: Tool },
    /// It ran and failed: its own stderr (the tail) says why.
    #[error("{} failed to {action} ({status}): {}", tool.program(), stderr.trim())]
    Failed { tool: Tool, action: String, status: String, stderr: String },
    #[error("{} did not {action} within {:.1} s, and was killed: {}", tool.program(), after.as_secs_f64(), stderr.trim())]
    TimedOut { tool: Tool, action: String, after: Duration, stderr: String },
    /// Running it, or preparing for it, failed on our side.
    #[error("{context}: {source}")]
    Io { context: String, source: io::Error },
    /// The registry did not come up, or answered something unexpected.
    #[error("the temporary registry: {0}")]
    Registry(String),
    /// The probe's own pull from a loopback registry failed: the message names the blob,
    /// the host or the deadline.
    #[error("{0}")]
    Pull(String),
    /// The run's budget was cancelled (a signal) while it ran: its group was killed.
    #[error(transparent)]
    Stopped(#[from] Stopped),
}

fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> ToolError {
    let context = context.into();
    move |source| ToolError::Io { context, source }
}

/// A tool's child in its own process group ([`Group`], which never signals a group whose
/// leader it has reaped), killed (the whole group) and reaped when dropped.
struct Reaped {
    group: Group,
}

impl Reaped {
    /// Spawns `command` under `cancel` (its budget's token): a signal that cancels it stops
    /// the tool's whole group too, and a cancelled token starts nothing.
    fn spawn(mut command: Command, tool: Tool, cancel: &Cancel) -> Result<Reaped, ToolError> {
        cancel.check(&format!("start {}", tool.program()))?;
        let group = Group::spawn(&mut command, cancel).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ToolError::Missing { tool },
            _ => ToolError::Io { context: format!("starting {}", tool.program()), source: e },
        })?;
        Ok(Reaped { group })
    }

    /// Kills what is left of the group (stragglers of an exited leader included: nothing
    /// the tool started stays), then reaps the leader.
    fn reap(&mut self) -> io::Result<ExitStatus> {
        self.group.signal(Signal::KILL);
        self.group.reap()
    }

    /// Waits until `deadline`, or until `cancel` is cancelled; `None` when either came
    /// first. An exited leader is reaped, its group killed first.
    fn wait_until(&mut self, deadline: Instant, cancel: Option<&Cancel>) -> io::Result<Option<ExitStatus>> {
        loop {
            if self.group.is_reaped() || self.group.exit_status()?.is_some() {
                return self.reap().map(Some);
            }
            let now = Instant::now();
            if now >= deadline || cancel.is_some_and(|c| c.cancelled().is_some()) {
                return Ok(None);
            }
            std::thread::sleep((deadline - now).min(Duration::from_millis(10)));
        }
    }

    /// SIGTERM, then SIGKILL after `grace`, to the whole group; then reaped.
    fn stop(&mut self, grace: Duration) {
        if !self.group.is_reaped() {
            self.group.signal(Signal::TERM);
            let _ = self.wait_until(Instant::now() + grace, None);
        }
        if !self.group.is_reaped() {
            let _ = self.reap();
        }
    }
}

/// Reads `stream` to its end on a thread, keeping the first `head` bytes or the last `tail`.
fn capture(mut stream: impl Read + Send + 'static, keep_tail: bool, limit: usize) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buffer = [0u8; 8192];
        loop {
            let n = match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if keep_tail {
                kept.extend_from_slice(&buffer[..n]);
                if kept.len() > 2 * limit {
                    kept.drain(..kept.len() - limit);
                }
            } else if kept.len() < limit {
                let room = limit - kept.len();
                kept.extend_from_slice(&buffer[..n.min(room)]);
            }
        }
        if keep_tail && kept.len() > limit {
            kept.drain(..kept.len() - limit);
        }
        let _ = sender.send(kept);
    });
    receiver
}

/// What a tool printed.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    /// The tail of its stderr.
    pub stderr: String,
}

/// Runs `command` to completion within `budget` (the run's, or a teardown's grace budget)
/// and at most `limit` (the tool's own), killing and reaping it (and its group) otherwise:
/// past the deadline it is [`ToolError::TimedOut`], on the budget's cancellation
/// [`ToolError::Stopped`], and a budget already spent or cancelled starts nothing. A non-zero
/// exit is [`ToolError::Failed`] with the stderr's tail.
pub fn run(tool: Tool, mut command: Command, action: &str, budget: &Budget, limit: Duration) -> Result<Output, ToolError> {
    let deadline = budget.min_with(limit);
    let started = Instant::now();
    let timeout = deadline.saturating_duration_since(started);
    budget.cancel.check(&format!("{} ({action})", tool.program()))?;
    if timeout.is_zero() {
        return Err(ToolError::TimedOut { tool, action: action.to_owned(), after: timeout, stderr: String::from("(not started)") });
    }
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Reaped::spawn(command, tool, &budget.cancel)?;
    let (_, stdout, stderr) = child.group.take_stdio();
    let stdout = capture(stdout.expect("piped"), false, MAX_STDOUT);
    let stderr = capture(stderr.expect("piped"), true, MAX_STDERR);
    let status = child.wait_until(deadline, Some(&budget.cancel)).map_err(io_error(format!("waiting for {}", tool.program())))?;
    if status.is_none() {
        child.stop(Duration::ZERO);
    }
    // The group is killed before the pipes are read out: a straggler holding them open
    // would otherwise keep the readers waiting.
    drop(child);
    let collect = |r: mpsc::Receiver<Vec<u8>>| r.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
    let (stdout, stderr) = (collect(stdout), String::from_utf8_lossy(&collect(stderr)).into_owned());
    if status.is_none() {
        budget.cancel.check(&format!("{} ({action})", tool.program()))?;
    }
    match status {
        None => Err(ToolError::TimedOut { tool, action: action.to_owned(), after: timeout, stderr }),
        Some(status) if !status.success() => Err(ToolError::Failed { tool, action: action.to_owned(), status: status.to_string(), stderr }),
        Some(_) => Ok(Output { stdout, stderr }),
    }
}

/// Where a temporary registry listens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegistryOptions {
    /// Bind every interface (`0.0.0.0`) instead of 127.0.0.1: only when the user asked
    /// (`--allow-registry-all-interfaces`), since anyone who reaches the machine can then
    /// read and write the images.
    pub all_interfaces: bool,
}

/// A CNCF distribution registry serving for one run from a temporary store. Dropping it
/// stops it (SIGTERM, then SIGKILL after a grace) and removes its store and config.
#[derive(Debug)]
pub struct Registry {
    child: Option<ReapedDebug>,
    port: u16,
    dir: Option<TempDir>,
}

/// [`Reaped`] for a `Debug` holder.
struct ReapedDebug(Reaped);

impl fmt::Debug for ReapedDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "registry pid {}", self.0.group.id())
    }
}

impl Registry {
    /// Starts `docker-registry serve` on a free port and waits until `GET /v2/` answers,
    /// within `budget` (the run's: a signal stops it, as it stops the wait).
    pub fn start(options: RegistryOptions, budget: &Budget) -> Result<Registry, ToolError> {
        let program = Tool::Registry.find()?;
        let dir = TempDir::new("checkfu-registry").map_err(io_error("making the registry's directory"))?;
        let bind = if options.all_interfaces { IpAddr::V4(Ipv4Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::LOCALHOST) };
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            // Not every registry version takes port 0: pick a free port, release it, and
            // try another if something took it in between.
            let port =
                TcpListener::bind(SocketAddr::new(bind, 0)).and_then(|l| l.local_addr()).map_err(io_error("finding a free port"))?.port();
            let config = dir.path().join("config.yml");
            let store = dir.path().join("store");
            let yaml = format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  \
                 delete:\n    enabled: true\nhttp:\n  addr: {}\n",
                yaml_string(&store.to_string_lossy()),
                SocketAddr::new(bind, port)
            );
            std::fs::write(&config, yaml).map_err(io_error("writing the registry's config"))?;
            let mut command = super::host_env::tool(&program);
            command.arg("serve").arg(&config).current_dir(dir.path());
            command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
            let mut child = Reaped::spawn(command, Tool::Registry, &budget.cancel)?;
            let stderr = capture(child.group.take_stdio().2.expect("piped"), true, MAX_STDERR);
            let deadline = budget.min_with(REGISTRY_START_TIMEOUT);
            loop {
                if answers_v2(port) {
                    return Ok(Registry { child: Some(ReapedDebug(child)), port, dir: Some(dir) });
                }
                match child.wait_until((Instant::now() + Duration::from_millis(20)).min(deadline), Some(&budget.cancel)) {
                    Ok(Some(status)) => {
                        drop(child);
                        last = format!("it exited ({status}): {}", tail_text(&stderr));
                        break;
                    }
                    Ok(None) if Instant::now() >= deadline || budget.cancelled().is_some() => {
                        child.stop(Duration::ZERO);
                        drop(child);
                        budget.cancel.check("start the temporary registry")?;
                        return Err(ToolError::Registry(format!(
                            "it did not answer GET /v2/ within {} s: {}",
                            REGISTRY_START_TIMEOUT.as_secs(),
                            tail_text(&stderr)
                        )));
                    }
                    Ok(None) => {}
                    Err(e) => return Err(ToolError::Io { context: "waiting for the registry".to_owned(), source: e }),
                }
            }
            if !last.contains("address already in use") {
                return Err(ToolError::Registry(last));
            }
        }
        Err(ToolError::Registry(format!("no free port after {PORT_ATTEMPTS} attempts: {last}")))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// How this machine's tools reach it: `127.0.0.1:PORT` (a loopback registry, so plain
    /// HTTP), whichever interfaces it listens on.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The registry process's id (also its process group's), while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.0.group.id())
    }

    /// Its store and config (removed when it stops).
    pub fn directory(&self) -> Option<&Path> {
        self.dir.as_ref().map(TempDir::path)
    }

    /// Stops it and removes its directory, reporting a removal that failed.
    pub fn stop(mut self) -> Result<(), ToolError> {
        if let Some(mut child) = self.child.take() {
            child.0.stop(STOP_GRACE);
        }
        match self.dir.take() {
            Some(dir) => dir.remove().map_err(io_error("removing the registry's store")),
            None => Ok(()),
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.0.stop(STOP_GRACE);
        }
        // The store goes with `dir`, after the registry stopped writing to it.
        self.dir.take();
    }
}

fn tail_text(receiver: &mpsc::Receiver<Vec<u8>>) -> String {
    let bytes = receiver.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

/// A YAML double-quoted string.
fn yaml_string(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

/// Whether `GET /v2/` on 127.0.0.1:PORT answers 200 (the distribution API's version check).
fn answers_v2(port: u16) -> bool {
    let address = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let Ok(mut stream) = TcpStream::connect_timeout(&address, Duration::from_millis(200)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let request = format!("GET /v2/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    let mut read = 0;
    while read < head.len() {
        match stream.read(&mut head[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
    }
    head[..read].starts_with(b"HTTP/1.1 200") || head[..read].starts_with(b"HTTP/1.0 200")
}

/// Which builder makes the image; a report names it by its program (`buildah`, `podman`,
/// `docker`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BuilderKind {
    Buildah,
    Podman,
    Docker,
}

impl BuilderKind {
    pub fn tool(self) -> Tool {
        match self {
            BuilderKind::Buildah => Tool::Buildah,
            BuilderKind::Podman => Tool::Podman,
            BuilderKind::Docker => Tool::Docker,
        }
    }
}

/// A builder found on `PATH`, with (for buildah and podman) storage of its own in a
/// temporary directory, removed when it is dropped. docker builds through its daemon,
/// whose storage is the daemon's: there [`remove_image`] is what cleans up.
#[derive(Debug)]
pub struct Builder {
    kind: BuilderKind,
    program: PathBuf,
    storage: Option<TempDir>,
}

impl Builder {
    /// `kind` from `PATH`.
    pub fn new(kind: BuilderKind) -> Result<Builder, ToolError> {
        let program = kind.tool().find()?;
        let storage = match kind {
            BuilderKind::Docker => None,
            BuilderKind::Buildah | BuilderKind::Podman => Some(ephemeral_storage()?),
        };
        Ok(Builder { kind, program, storage })
    }

    /// The first of buildah, podman and docker on `PATH`.
    pub fn detect() -> Result<Builder, ToolError> {
        for kind in [BuilderKind::Buildah, BuilderKind::Podman, BuilderKind::Docker] {
            if kind.tool().find().is_ok() {
                return Builder::new(kind);
            }
        }
        Err(ToolError::Missing { tool: Tool::Buildah })
    }

    pub fn kind(&self) -> BuilderKind {
        self.kind
    }

    /// Its storage directory (buildah and podman).
    pub fn storage(&self) -> Option<&Path> {
        self.storage.as_ref().map(TempDir::path)
    }

    /// The builder's command with its storage flags and environment.
    fn command(&self) -> Command {
        let mut command = super::host_env::tool(&self.program);
        if let Some(storage) = self.storage() {
            command.arg("--root").arg(storage.join("root")).arg("--runroot").arg(storage.join("runroot")).args(["--storage-driver", "vfs"]);
            if self.kind == BuilderKind::Podman {
                // libpod's own state (`/run/libpod` for root) and its event log go with
                // the storage too.
                command.arg("--tmpdir").arg(storage.join("runroot").join("libpod")).args(["--events-backend", "none"]);
            }
            contained_env(&mut command, storage);
        }
        command
    }

    /// Removes its storage now, reporting a failure that dropping would swallow.
    pub fn remove_storage(mut self) -> Result<(), ToolError> {
        match self.storage.take() {
            Some(storage) => storage.remove().map_err(io_error("removing the builder's storage")),
            None => Ok(()),
        }
    }
}

/// A temporary directory for a builder: storage, home, runtime and config files.
fn ephemeral_storage() -> Result<TempDir, ToolError> {
    let storage = TempDir::new("checkfu-build").map_err(io_error("making the builder's storage"))?;
    let root = storage.path();
    for dir in ["root", "runroot", "home", "run", "tmp", "config", "data"] {
        std::fs::create_dir(root.join(dir)).map_err(io_error("making the builder's storage"))?;
    }
    let conf = format!(
        "[storage]\ndriver = \"vfs\"\ngraphroot = {}\nrunroot = {}\n",
        yaml_string(&root.join("root").to_string_lossy()),
        yaml_string(&root.join("runroot").to_string_lossy())
    );
    std::fs::write(root.join("storage.conf"), conf).map_err(io_error("writing storage.conf"))?;
    // No search registries: an unqualified name never reaches out to a public registry.
    std::fs::write(root.join("registries.conf"), "unqualified-search-registries = []\n").map_err(io_error("writing registries.conf"))?;
    // No credentials: the build pushes only to our loopback registry (buildah refuses an
    // auth file that does not exist).
    std::fs::write(root.join("auth.json"), "{\"auths\":{}}\n").map_err(io_error("writing auth.json"))?;
    Ok(storage)
}

/// Points everything a containers tool reads or writes by default into `dir`.
fn contained_env(command: &mut Command, dir: &Path) {
    command
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("TMPDIR", dir.join("tmp"))
        .env("CONTAINERS_STORAGE_CONF", dir.join("storage.conf"))
        .env("CONTAINERS_REGISTRIES_CONF", dir.join("registries.conf"))
        .env("REGISTRY_AUTH_FILE", dir.join("auth.json"))
        // crun and runc need cgroup controllers this kind of machine may not delegate
        // ("cgroups in hybrid mode not supported"); a build's RUN steps need only a chroot.
        .env("BUILDAH_ISOLATION", "chroot");
}

/// Builds `context_dir` (with `dockerfile`, or the context's own `Dockerfile`) into the
/// local image `tag`, reproducibly (`--timestamp 0`, one layer for the build's steps).
/// A failure carries the builder's own error. It ends by `budget` (the run's: its deadline,
/// or its cancellation by a signal).
pub fn build(builder: &Builder, context_dir: &Path, dockerfile: Option<&Path>, tag: &str, budget: &Budget) -> Result<(), ToolError> {
    let mut command = builder.command();
    match builder.kind {
        BuilderKind::Buildah => command.args(["bud", "--isolation", "chroot", "--timestamp", "0", "--layers=false"]),
        BuilderKind::Podman => command.args(["build", "--isolation", "chroot", "--timestamp", "0", "--layers=false"]),
        BuilderKind::Docker => command.args(["build", "--quiet"]),
    };
    if let Some(dockerfile) = dockerfile {
        command.arg("-f").arg(dockerfile);
    }
    command.args(["-t", tag]).arg(context_dir);
    run(builder.kind.tool(), command, &format!("build {}", context_dir.display()), budget, TOOL_TIMEOUT).map(|_| ())
}

/// The repository a local tag is pushed as: the tag without its registry (`localhost/`)
/// and without `:TAG`.
fn remote_repository(tag: &str) -> &str {
    let name = match tag.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => tag,
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[last_slash..].rfind(':') {
        Some(i) => &name[..last_slash + i],
        None => name,
    }
}

/// Pushes the local image `tag` to `registry` and returns the pushed image pinned by the
/// digest the builder reports (`127.0.0.1:PORT/NAME@sha256:…`), by `budget` (the run's).
pub fn push(builder: &Builder, tag: &str, registry: &Registry, budget: &Budget) -> Result<ImageReference, ToolError> {
    let repository = remote_repository(tag);
    let destination = format!("{}/{repository}:latest", registry.address());
    let action = format!("push {tag} to {destination}");
    let digest = match builder.kind {
        BuilderKind::Buildah | BuilderKind::Podman => {
            let storage = builder.storage().ok_or_else(|| ToolError::Registry("the builder has no storage directory".to_owned()))?;
            let digest_file = storage.join("tmp").join("pushed.digest");
            let mut command = builder.command();
            command
                .arg("push")
                .arg("--digestfile")
                .arg(&digest_file)
                .args(["--tls-verify=false", tag])
                .arg(format!("docker://{destination}"));
            run(builder.kind.tool(), command, &action, budget, TOOL_TIMEOUT)?;
            let text = std::fs::read_to_string(&digest_file).map_err(io_error("reading the pushed digest"))?;
            let _ = std::fs::remove_file(&digest_file);
            sha256_digest(text.trim()).map_err(|e| ToolError::Registry(format!("the pushed digest `{}`: {e}", text.trim())))?
        }
        BuilderKind::Docker => {
            // docker pushes a name, so the image is tagged with the registry first; the
            // daemon treats 127.0.0.0/8 as an insecure registry by default.
            let mut tag_command = builder.command();
            tag_command.args(["tag", tag, &destination]);
            run(Tool::Docker, tag_command, &action, budget, QUICK_TIMEOUT)?;
            let mut command = builder.command();
            command.args(["push", &destination]);
            let pushed = run(Tool::Docker, command, &action, budget, TOOL_TIMEOUT);
            let mut untag = builder.command();
            untag.args(["rmi", &destination]);
            // The tag is removed after a signal too: under a grace budget of its own.
            let _ = run(Tool::Docker, untag, "untag", &budget.grace(QUICK_TIMEOUT), QUICK_TIMEOUT);
            let pushed = pushed?;
            // docker push ends with `latest: digest: sha256:… size: N`.
            let stdout = String::from_utf8_lossy(&pushed.stdout);
            let digest = stdout.split_whitespace().skip_while(|w| *w != "digest:").nth(1).unwrap_or_default();
            sha256_digest(digest).map_err(|e| ToolError::Registry(format!("docker push printed no digest ({e}): {}", stdout.trim())))?
        }
    };
    ImageReference::parse(&format!("{}/{repository}@{digest}", registry.address()))
        .map_err(|e| ToolError::Registry(format!("the pushed reference: {e}")))
}

/// Pulls `reference` by its digest into a new OCI layout at `dir` (which must not exist
/// yet, or be empty) by `budget`. A loopback registry is pulled by the probe itself over
/// plain HTTP ([`super::distribution`]: every blob capped and checked as it streams, never
/// a byte to another host); any other registry by skopeo with TLS verified, which checks
/// the manifest against the digest. A digest the registry does not have fails with the
/// registry's answer.
pub fn pull_to_layout(reference: &ImageReference, dir: &Path, budget: &Budget) -> Result<(), ToolError> {
    if reference.is_loopback_registry() {
        return super::distribution::pull(reference, dir, budget).map_err(|e| ToolError::Pull(e.to_string()));
    }
    let source = format!("docker://{}", reference.pull_name());
    copy_to_layout(&source, dir, Copy::default(), budget)
}

/// How skopeo reaches a copy's source. There is no plain-HTTP or unverified-TLS option:
/// the only plain-HTTP registries the lane reads are loopback ones, which the probe pulls
/// itself.
#[derive(Debug, Default)]
pub struct Copy {
    /// The source is the user's own containers storage, found through their real `HOME`
    /// and storage configuration, which skopeo must see.
    pub user_storage: bool,
    /// The docker daemon's address (`DOCKER_HOST`), which skopeo does not read itself.
    pub daemon_host: Option<String>,
}

/// Copies `source` (a skopeo transport and reference) into a new OCI layout at `dir`, by
/// `budget` (skopeo's group is killed at its deadline or its cancellation).
pub fn copy_to_layout(source: &str, dir: &Path, how: Copy, budget: &Budget) -> Result<(), ToolError> {
    let program = Tool::Skopeo.find()?;
    let scratch = TempDir::new("checkfu-skopeo").map_err(io_error("making skopeo's home"))?;
    for sub in ["home", "run", "tmp", "config", "data"] {
        std::fs::create_dir(scratch.path().join(sub)).map_err(io_error("making skopeo's home"))?;
    }
    let mut command = super::host_env::tool(program);
    command.arg("copy");
    if let Some(host) = &how.daemon_host {
        command.arg("--src-daemon-host").arg(host);
    }
    command.arg(source).arg(format!("oci:{}", dir.display()));
    // skopeo's own cache and temporary files go to a directory removed afterwards; the
    // user's registry credentials stay readable (a published image may need them). Reading
    // the user's own storage needs their HOME, where rootless storage lives.
    command.env("TMPDIR", scratch.path().join("tmp"));
    if !how.user_storage {
        command.env("HOME", scratch.path().join("home")).env("XDG_RUNTIME_DIR", scratch.path().join("run"));
    }
    if let Some(auth) = user_auth_file() {
        command.env("REGISTRY_AUTH_FILE", auth);
    }
    run(Tool::Skopeo, command, &format!("copy {source}"), budget, TOOL_TIMEOUT).map(|_| ())
}

/// What the docker daemon holds under a reference: `docker image inspect`'s answer, bounded.
pub fn docker_inspect(reference: &str, budget: &Budget) -> Result<Vec<u8>, ToolError> {
    let mut command = super::host_env::tool(Tool::Docker.find()?);
    command.args(["image", "inspect", reference]);
    run(Tool::Docker, command, &format!("inspect {reference}"), budget, QUICK_TIMEOUT).map(|o| o.stdout)
}

/// The user's registry credentials, found where the containers tools look with the real
/// `HOME` (which skopeo does not see here).
fn user_auth_file() -> Option<PathBuf> {
    if let Some(file) = std::env::var_os("REGISTRY_AUTH_FILE") {
        return Some(PathBuf::from(file));
    }
    let runtime = std::env::var_os("XDG_RUNTIME_DIR").map(|d| PathBuf::from(d).join("containers/auth.json"));
    let config = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config/containers/auth.json"));
    [runtime, config].into_iter().flatten().find(|p| p.is_file())
}

/// Removes the local image `tag` from the builder's storage, within `grace` (a teardown's
/// budget, which no signal cancels).
pub fn remove_image(builder: &Builder, tag: &str, grace: &Budget) -> Result<(), ToolError> {
    let mut command = builder.command();
    match builder.kind {
        BuilderKind::Buildah => command.args(["rmi", "--force", tag]),
        BuilderKind::Podman | BuilderKind::Docker => command.args(["rmi", "--force", tag]),
    };
    run(builder.kind.tool(), command, &format!("remove {tag}"), grace, QUICK_TIMEOUT).map(|_| ())
}

/// The local images in a builder's storage, as the builder lists them (one per line), within
/// `budget`.
pub fn list_images(builder: &Builder, budget: &Budget) -> Result<Vec<String>, ToolError> {
    let mut command = builder.command();
    match builder.kind {
        BuilderKind::Buildah => command.args(["images", "--quiet", "--all"]),
        BuilderKind::Podman | BuilderKind::Docker => command.args(["images", "--quiet", "--all"]),
    };
    let output = run(builder.kind.tool(), command, "list images", budget, QUICK_TIMEOUT)?;
    Ok(String::from_utf8_lossy(&output.stdout).lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect())
}

#[cfg(test)]
mod tests;
