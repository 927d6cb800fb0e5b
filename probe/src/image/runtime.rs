//! The runtimes that run an image's harness (`--runtime`): bubblewrap over the unpacked
//! root, podman over the same root (`--rootfs`), or docker over that root imported into the
//! user's daemon (so every runtime runs the same verified files, wherever the image was read
//! from). One shape for all three: [`Runtime::start`] prepares what the runtime
//! needs and hands back the argv the lane spawns as it spawns any harness (piped stdio, its
//! own process group, the lane's deadline and teardown); [`RunningContainer::finish`] then removes
//! whatever the runtime keeps after its client is gone (a container, an image, storage),
//! whether the harness exited or the probe killed the client on a timeout.
//!
//! How each keeps the fence:
//! - bubblewrap and podman are started inside the fence (the lane's `setns` before exec),
//!   and neither makes a network namespace of its own (bubblewrap does not unshare it;
//!   podman runs `--network host`, and its host is the fence), so 127.0.0.1 is the relay;
//! - docker runs containers from its daemon, which the fence does not hold and which cannot
//!   join a namespace by path. A pause container with no network (`--network none`: a
//!   loopback only) holds the namespace; the probe binds the relay's port on its
//!   127.0.0.1 ([`super::forward`]), and the harness joins it (`--network
//!   container:<pause>`), so the relay URL works unchanged and nothing else is reachable.

use std::ffi::OsString;
use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use super::forward::Forwarder;
use super::host_env;
use super::tools::{self, Tool, ToolError};
use super::TempDir;
use crate::budget::{Budget, TEARDOWN_GRACE};
use crate::session::process::{InImageCommand, Inside, Launch};
use checkfu_wire_sandbox::fence::Join;

/// Why a run could not be prepared, or what its teardown left behind.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// A mount point or the working directory could not be made inside the image.
    #[error(transparent)]
    InRoot(#[from] super::in_root::InRootError),
    #[error("the working directory {0} is not a directory of its own inside the image")]
    WorkingDirectory(String),
    /// The runtime could not be prepared: what failed, in the tool's own words.
    #[error(transparent)]
    Start(#[from] StartError),
    /// Removing what the runtime keeps failed: the first failure, naming what is left.
    #[error(transparent)]
    Teardown(#[from] TeardownError),
}

/// Why podman or docker could not be made ready for the harness.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A directory or file of the run's own could not be made.
    #[error("cannot {doing}: {source}")]
    Io { doing: String, source: std::io::Error },
    /// The runtime's own tool failed, in its words.
    #[error(transparent)]
    Tool(#[from] ToolError),
    #[error("the pause container has no process: docker inspect said `{0}`")]
    NoPauseProcess(String),
    /// The relay's port could not be forwarded into docker's pause container.
    #[error("--runtime docker: {0}")]
    Forward(#[source] super::forward::ForwardError),
    #[error("the harness has no command")]
    NoCommand,
}

/// A [`StartError::Io`] for `doing`.
fn cannot(doing: impl Into<String>) -> impl FnOnce(std::io::Error) -> StartError {
    let doing = doing.into();
    move |source| StartError::Io { doing, source }
}

/// What removing a runtime's leftovers could not do.
#[derive(Debug, thiserror::Error)]
pub enum TeardownError {
    /// `rm --force` of a container or an image failed, in the tool's words.
    #[error(transparent)]
    Removal(#[from] ToolError),
    #[error("processes of {name} are still running: {}", .pids.join(", "))]
    StillRunning { name: String, pids: Vec<String> },
    #[error("cannot remove {what}: {source}")]
    Storage { what: &'static str, source: std::io::Error },
}

/// Which runtime runs the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    Bubblewrap,
    Podman,
    Docker,
}

impl RuntimeKind {
    pub const ALL: [RuntimeKind; 3] = [RuntimeKind::Bubblewrap, RuntimeKind::Podman, RuntimeKind::Docker];

    pub fn name(self) -> &'static str {
        match self {
            RuntimeKind::Bubblewrap => "bubblewrap",
            RuntimeKind::Podman => "podman",
            RuntimeKind::Docker => "docker",
        }
    }

    pub fn tool(self) -> Tool {
        match self {
            RuntimeKind::Bubblewrap => Tool::Bubblewrap,
            RuntimeKind::Podman => Tool::Podman,
            RuntimeKind::Docker => Tool::Docker,
        }
    }
}

/// The static busybox the docker pause container runs (`busybox sleep`), bind-mounted: an
/// image need not hold any program that waits.
pub const PAUSE_PROGRAM: &str = "/bin/busybox";

/// A runtime found on `PATH`, and whether it was asked for or detected.
#[derive(Clone, Debug)]
pub struct Runtime {
    pub kind: RuntimeKind,
    program: PathBuf,
    /// Chosen because it was the first found, not asked for (`--runtime`).
    pub detected: bool,
}

impl Runtime {
    /// `kind` from `PATH`, with what it needs besides: for docker, `CAP_SYS_ADMIN` (to enter
    /// the pause container's namespace) and a static busybox for the pause container.
    pub fn find(kind: RuntimeKind) -> Result<Runtime, ToolError> {
        let program = kind.tool().find()?;
        if kind == RuntimeKind::Docker {
            if !has_cap_sys_admin() {
                return Err(ToolError::Io {
                    context: String::from(
                        "docker keeps the fence only through a pause container's network namespace, which the probe enters \
                         (setns) to put the relay's port there; that takes CAP_SYS_ADMIN (root), which this process lacks: \
                         run as root, or use --runtime bubblewrap or podman, which keep the fence as an ordinary user",
                    ),
                    source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                });
            }
            if !Path::new(PAUSE_PROGRAM).is_file() {
                return Err(ToolError::Io {
                    context: format!("docker's pause container runs {PAUSE_PROGRAM} (apt-get install busybox-static)"),
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                });
            }
        }
        Ok(Runtime { kind, program, detected: false })
    }

    /// The first of bubblewrap, podman and docker on `PATH`.
    pub fn detect() -> Result<Runtime, ToolError> {
        for kind in RuntimeKind::ALL {
            if kind.tool().find().is_ok() {
                return Runtime::find(kind).map(|r| Runtime { detected: true, ..r });
            }
        }
        Err(ToolError::Missing { tool: Tool::Bubblewrap })
    }

    /// Prepares one run of `spec` and returns its argv, within `budget` (the run's: docker's
    /// import and pause container stop at its deadline or a signal). `Err`: what failed, in
    /// the tool's own words, with whatever was made removed.
    pub fn start(&self, spec: &RunSpec<'_>, budget: &Budget) -> Result<RunningContainer, RuntimeError> {
        match self.kind {
            RuntimeKind::Bubblewrap => {
                let fence = if spec.fence.is_some() { ImageFence::Bubblewrap } else { ImageFence::None };
                let exec = Exec::Bubblewrap {
                    bwrap: self.program.clone(),
                    rootfs: spec.rootfs.to_owned(),
                    read_only_root: spec.read_only_root,
                    workspace: spec.workspace.to_owned(),
                    working_directory: spec.working_directory.to_owned(),
                    shared: spec.shared.iter().map(|p| p.to_path_buf()).collect(),
                    env: spec.env.to_vec(),
                };
                let (argv, inherit) =
                    bubblewrap_argv(&self.program, spec).map_err(|e| RuntimeError::Start(cannot("pass the variables to bubblewrap")(e)))?;
                Ok(RunningContainer::plain(argv, inherit, fence, exec))
            }
            RuntimeKind::Podman => podman(&self.program, spec).map_err(RuntimeError::Start),
            RuntimeKind::Docker => docker(&self.program, spec, budget).map_err(RuntimeError::Start),
        }
    }
}

/// Which fence held an image's harness, and how it reached the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFence {
    /// bubblewrap joined the probe's network namespace.
    Bubblewrap,
    /// podman joined the probe's network namespace (`--network host` inside it).
    Podman,
    /// podman joined the probe's user and network namespaces (rootless inside them).
    PodmanUser,
    /// docker's pause container's loopback, to which the probe forwards the relay's port.
    DockerPause,
    /// Where no network namespace could be made, bubblewrap and podman share the probe's
    /// own network; the proxy variables are then the only fence, as in the process lane.
    None,
}

impl ImageFence {
    /// The fence in a sentence, as the report says it.
    pub fn describe(self) -> &'static str {
        match self {
            ImageFence::Bubblewrap => "the probe's network namespace, joined by bubblewrap",
            ImageFence::Podman => "the probe's network namespace, joined by podman (--network host inside it)",
            ImageFence::PodmanUser => "the probe's user and network namespaces, joined by podman (rootless inside them, --network host)",
            ImageFence::DockerPause => "docker pause container's loopback, forwarded to the relay",
            ImageFence::None => "none: the probe's own network (no namespace could be made), the proxy variables only",
        }
    }
}

impl serde::Serialize for ImageFence {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.describe())
    }
}

/// Whether this process has `CAP_SYS_ADMIN` in its effective set (`/proc/self/status`),
/// which `setns` into another network namespace of the initial user namespace asks.
fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| status.lines().find_map(|l| l.strip_prefix("CapEff:").map(|v| v.trim().to_owned())))
        .and_then(|hex| u64::from_str_radix(&hex, 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// What a run of the image needs.
pub struct RunSpec<'a> {
    /// The entrypoint and its arguments, as inside the image.
    pub command: &'a [OsString],
    /// The image's verified, unpacked root filesystem.
    pub rootfs: &'a Path,
    /// The root is a stored entry ([`super::store`]), bound read-only from the start (every
    /// mount point already in it, or on the run's tmpfs); else it is the run's own copy.
    pub read_only_root: bool,
    pub workspace: &'a Path,
    pub working_directory: &'a str,
    /// The directories mounted at their own paths: the workspace, the home, the lane's
    /// scratch directory.
    pub shared: &'a [&'a Path],
    /// The harness's variables (the probe's, then the image's). They reach the harness
    /// only, never the runtime's client on the host, and no value (the relay's key
    /// included) is on a command line: bubblewrap reads them from a descriptor
    /// (`--args`), podman and docker from a file of the run's own (`--env-file`).
    pub env: &'a [(OsString, OsString)],
    /// The relay's listener, in the fence when there is one.
    pub relay: SocketAddr,
    /// The fence, when there is one.
    pub fence: Option<Join>,
}

/// One run, prepared: the argv to spawn, and what to remove once its client has ended.
#[derive(Debug)]
pub struct RunningContainer {
    pub argv: Vec<OsString>,
    /// The descriptor bubblewrap reads the harness's variables from, which the client
    /// inherits.
    inherit: Option<OwnedFd>,
    /// Variables for the client itself (the runtime's configuration), beside the caller's
    /// allow-listed ones ([`RunningContainer::client_launch`]).
    client_env: Vec<(OsString, OsString)>,
    /// Whether the client is started inside the fence (bubblewrap, podman), or outside it
    /// (docker's client talks to its daemon, which the fence would cut off over TCP).
    joins_fence: bool,
    /// Which fence held the harness, and how it reached the relay.
    pub fence: ImageFence,
    /// The container's name (podman, docker): `checkfu-probe-<16 hex>`.
    pub container: Option<String>,
    /// How a further command runs in the same container ([`RunningContainer::terminals`]).
    exec: Exec,
    cleanup: Cleanup,
}

/// How a further command runs in a started image, beside its harness: what a harness's
/// `terminal/*` commands run through, so they run where the harness does.
#[derive(Clone, Debug)]
enum Exec {
    /// Another bubblewrap over the same root, with the same mounts, inside the same fence.
    Bubblewrap {
        bwrap: PathBuf,
        rootfs: PathBuf,
        read_only_root: bool,
        workspace: PathBuf,
        working_directory: String,
        shared: Vec<PathBuf>,
        /// The harness's variables, which its commands start from.
        env: Vec<(OsString, OsString)>,
    },
    /// `exec` in the named container through the runtime's client: podman (its global flags,
    /// in the run's own namespaces) or docker.
    Client { prefix: Vec<OsString>, user: String, name: String },
}

impl Exec {
    /// What runs `command` in the container, from `directory` (a path as the harness sees
    /// it), with the harness's variables and then `own` (the command's own). podman and
    /// docker keep the container's variables for it.
    fn argv(&self, command: &[OsString], directory: &Path, own: &[(OsString, OsString)]) -> std::io::Result<InImageCommand> {
        match self {
            Exec::Bubblewrap { bwrap, rootfs, read_only_root, workspace, working_directory, shared, env } => {
                let shared: Vec<&Path> = shared.iter().map(PathBuf::as_path).collect();
                let mut env = env.clone();
                env.extend(own.iter().cloned());
                env.push((OsString::from("PWD"), directory.as_os_str().to_owned()));
                let spec = RunSpec {
                    command,
                    rootfs,
                    read_only_root: *read_only_root,
                    workspace,
                    working_directory,
                    shared: &shared,
                    env: &env,
                    relay: SocketAddr::from(([127, 0, 0, 1], 0)),
                    fence: None,
                };
                let (mut argv, inherit) = bubblewrap_argv(bwrap, &spec)?;
                // The command's directory, not the harness's working directory.
                if let Some(at) = argv.iter().position(|a| a == "--chdir") {
                    argv[at + 1] = directory.as_os_str().to_owned();
                }
                Ok(InImageCommand { argv, inherit: Some(inherit) })
            }
            Exec::Client { prefix, user, name } => {
                let mut argv = prefix.clone();
                argv.extend(os(&[&"exec", &"--interactive", &"--user", user, &"--workdir", &directory]));
                // The command's own variables are the harness's request, not a secret.
                for (key, value) in own {
                    let mut pair = key.clone();
                    pair.push("=");
                    pair.push(value);
                    argv.extend([OsString::from("--env"), pair]);
                }
                argv.push(OsString::from(name));
                argv.extend(command.iter().cloned());
                Ok(InImageCommand { argv, inherit: None })
            }
        }
    }
}

#[derive(Debug)]
enum Cleanup {
    None,
    Podman {
        program: PathBuf,
        globals: Vec<OsString>,
        env: Vec<(OsString, OsString)>,
        join: Option<Join>,
        name: String,
        dir: Option<TempDir>,
    },
    Docker {
        program: PathBuf,
        name: String,
        pause: Option<String>,
        image: Option<String>,
        forwarder: Option<Forwarder>,
        dir: Option<TempDir>,
    },
}

impl RunningContainer {
    /// How the runtime's client is launched for the harness `launch` describes. The client
    /// runs on the host, so it starts from the caller's allow-listed variables and the
    /// runtime's own ([`host_env`]), from `/`: the harness's variables (the image's among
    /// them) reach the harness only, through the argv's descriptor or file. It runs inside
    /// the fence unless it must reach its daemon (docker).
    pub fn client_launch(&mut self, launch: &Launch) -> Launch {
        let mut client = launch.clone();
        client.env = self.client_variables();
        client.clear_env = true;
        client.cwd = Some(PathBuf::from("/"));
        if !self.joins_fence {
            client.netns = None;
        }
        client.inherit = self.inherit.take().map(|fd| Arc::new(Mutex::new(Some(fd))));
        client
    }

    /// Whether the harness runs in the fence's own network (bubblewrap, podman), so every
    /// port the probe listens on there is its 127.0.0.1's, not only the relay's, which alone
    /// is forwarded into docker's pause container.
    pub fn joins_fence(&self) -> bool {
        self.joins_fence
    }

    fn client_variables(&self) -> Vec<(OsString, OsString)> {
        let mut env = host_env::from_caller();
        env.extend(self.client_env.iter().cloned());
        env
    }

    /// Where the harness's `terminal/*` commands run: in the same container, their client
    /// launched as the harness's is.
    pub fn terminals(&self) -> Inside {
        let exec = self.exec.clone();
        Inside { argv: Box::new(move |command, directory, own| exec.argv(command, directory, own)), env: self.client_variables() }
    }

    fn plain(argv: Vec<OsString>, inherit: OwnedFd, fence: ImageFence, exec: Exec) -> RunningContainer {
        RunningContainer {
            argv,
            inherit: Some(inherit),
            client_env: Vec::new(),
            joins_fence: true,
            fence,
            container: None,
            exec,
            cleanup: Cleanup::None,
        }
    }

    /// Removes what the runtime keeps after its client ended: the container (forced: a
    /// killed client leaves it running), the pause container, the forwarder, the loaded
    /// image, the temporary storage. Every step is tried; the first failure is returned.
    /// `grace` is the teardown's budget ([`Budget::grace`]): a signal does not cut the
    /// removals short, so a container goes after Ctrl-C as after a deadline.
    pub fn finish(mut self, grace: &Budget) -> Result<(), RuntimeError> {
        self.clean(grace).map_err(RuntimeError::Teardown)
    }

    fn clean(&mut self, grace: &Budget) -> Result<(), TeardownError> {
        let mut first: Option<TeardownError> = None;
        let mut keep = |r: Result<(), TeardownError>| {
            if let Err(e) = r {
                first.get_or_insert(e);
            }
        };
        match std::mem::replace(&mut self.cleanup, Cleanup::None) {
            Cleanup::None => {}
            Cleanup::Podman { program, globals, env, join, name, dir } => {
                let mut command = podman_command(&program, &globals, &env, join);
                command.args(["rm", "--force", "--time", "0", &name]);
                keep(forced_removal(Tool::Podman, command, &name, grace));
                keep(gone(&name, grace));
                if let Some(dir) = dir {
                    keep(dir.remove().map_err(|source| TeardownError::Storage { what: "podman's storage", source }));
                }
            }
            Cleanup::Docker { program, name, pause, image, forwarder, dir } => {
                keep(forced_removal(Tool::Docker, docker_command(&program, &["rm", "--force", &name]), &name, grace));
                keep(gone(&name, grace));
                if let Some(forwarder) = forwarder {
                    forwarder.stop();
                }
                if let Some(pause) = pause {
                    keep(forced_removal(Tool::Docker, docker_command(&program, &["rm", "--force", &pause]), &pause, grace));
                }
                if let Some(image) = image {
                    keep(forced_removal(Tool::Docker, docker_command(&program, &["rmi", "--force", &image]), &image, grace));
                }
                if let Some(dir) = dir {
                    keep(dir.remove().map_err(|source| TeardownError::Storage { what: "the docker run's directory", source }));
                }
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for RunningContainer {
    /// A run dropped without [`RunningContainer::finish`] (an error on the way, a signal)
    /// still leaves nothing: its removals run under a grace budget of their own.
    fn drop(&mut self) {
        let _ = self.clean(&Budget::after(TEARDOWN_GRACE));
    }
}

/// Waits (a few seconds at most) until no process names the container `name` on its command
/// line: podman's conmon, docker's shim and the init may outlive `rm` by a moment, and the
/// run is over only when they are gone. `Err` names any still there. Within `grace`.
fn gone(name: &str, grace: &Budget) -> Result<(), TeardownError> {
    let deadline = grace.min_with(std::time::Duration::from_secs(5));
    loop {
        let left = processes_naming(name);
        if left.is_empty() {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(TeardownError::StillRunning { name: name.to_owned(), pids: left });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// The processes (pids) whose command line holds `name`.
fn processes_naming(name: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let me = std::process::id().to_string();
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str().filter(|n| n.bytes().all(|b| b.is_ascii_digit()))?.to_owned();
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let named = cmdline.split(|b| *b == 0).any(|arg| arg.windows(name.len()).any(|w| w == name.as_bytes()));
            (named && pid != me).then_some(pid)
        })
        .collect()
}

/// `rm --force`: an object already gone (`--rm` removed it when the harness exited) is not
/// a failure; anything else is, in the tool's words.
fn forced_removal(tool: Tool, command: Command, what: &str, grace: &Budget) -> Result<(), TeardownError> {
    match tools::run(tool, command, &format!("remove {what}"), grace, tools::QUICK_TIMEOUT) {
        Ok(_) => Ok(()),
        Err(ToolError::Failed { stderr, .. }) if stderr.contains("No such") || stderr.contains("no such") => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn os(items: &[&dyn AsRef<std::ffi::OsStr>]) -> Vec<OsString> {
    items.iter().map(|i| i.as_ref().to_owned()).collect()
}

/// bubblewrap's argv: every namespace but the network one, which is the probe's fence; the
/// root read-only; `/tmp` a fresh tmpfs; the shared directories at their own paths and the
/// workspace at the working directory. The harness's variables (and `PWD`) are in the
/// returned descriptor, which bubblewrap reads as further arguments (`--args`): the
/// harness starts from them alone (`--clearenv`), while bubblewrap itself keeps the host's
/// environment the lane gave it, and no value is on a command line.
fn bubblewrap_argv(bwrap: &Path, spec: &RunSpec<'_>) -> std::io::Result<(Vec<OsString>, OwnedFd)> {
    // Where it starts, unless the variables say: the working directory, or the workspace at
    // its own path.
    let pwd = if spec.working_directory == "/" { spec.workspace.as_os_str() } else { std::ffi::OsStr::new(spec.working_directory) };
    let pwd = (!spec.env.iter().any(|(name, _)| name == "PWD")).then_some((std::ffi::OsStr::new("PWD"), pwd));
    let mut setenv: Vec<u8> = b"--clearenv\0".to_vec();
    for (name, value) in spec.env.iter().map(|(n, v)| (n.as_os_str(), v.as_os_str())).chain(pwd) {
        // The arguments are NUL-separated: a NUL inside a name or a value (an image's, a
        // terminal's) would be read as options of bubblewrap's own.
        if name.as_bytes().contains(&0) || value.as_bytes().contains(&0) {
            let shown: String = name.to_string_lossy().chars().take(64).collect();
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("the variable {shown:?} holds a NUL byte")));
        }
        for part in [b"--setenv".as_slice(), name.as_bytes(), value.as_bytes()] {
            setenv.extend_from_slice(part);
            setenv.push(0);
        }
    }
    let fd = sealed_arguments(&setenv)?;
    let mut argv: Vec<OsString> = vec![bwrap.as_os_str().to_owned()];
    let mut flag = |items: &[&dyn AsRef<std::ffi::OsStr>]| argv.extend(os(items));
    flag(&[&"--args", &fd.as_raw_fd().to_string()]);
    flag(&[&"--die-with-parent", &"--new-session"]);
    // The harness holds no capability, whoever runs the probe: with one (bubblewrap keeps
    // them all for root), it could remount the read-only root writable, or mount over what
    // the probe set up, and as uid 0 then write the stored image or the host's files. An
    // ordinary user's bubblewrap drops them anyway; `ALL` also empties the bounding set, and
    // bubblewrap always sets no_new_privs, so a setuid or file-capability program in the
    // image gains none back. Root gets a user namespace of its own too (`--unshare-user`,
    // which bubblewrap otherwise skips for root), so the harness is not in the host's user
    // namespace; `-try` stays for an ordinary user, whose bubblewrap makes one anyway
    // (it is not setuid) and would fail with `--unshare-user` only where it cannot run.
    // A user namespace the harness makes itself (`unshare -Urm`) gives it capabilities
    // there, but over copies of these mounts that the kernel locks: a read-only bind
    // inherited into a less privileged namespace stays read-only and cannot be unmounted to
    // uncover what is beneath. So an ordinary user's harness may still sandbox its own
    // tools (bubblewrap in bubblewrap); root's cannot make one at all, as mapping uid 0
    // takes `CAP_SETFCAP`, which it no longer has.
    let user_namespace = if running_as_root() { "--unshare-user" } else { "--unshare-user-try" };
    flag(&[&"--cap-drop", &"ALL"]);
    flag(&[&user_namespace, &"--unshare-ipc", &"--unshare-pid", &"--unshare-uts", &"--unshare-cgroup-try"]);
    // The run's own copy of the root is bound writable only until the mount points are made
    // (an image need not hold its working directory), then made read-only. A stored root is
    // read-only from the start: the store's entry already holds its mount points, and a
    // run's own paths under /tmp are made on its tmpfs.
    let bind = if spec.read_only_root { "--ro-bind" } else { "--bind" };
    flag(&[&bind, &spec.rootfs, &"/"]);
    flag(&[&"--dev", &"/dev", &"--proc", &"/proc", &"--tmpfs", &"/tmp"]);
    for dir in spec.shared {
        flag(&[&"--bind", dir, dir]);
    }
    if spec.working_directory == "/" {
        // No working directory to mount it at: the harness starts in the workspace itself.
        flag(&[&"--remount-ro", &"/", &"--chdir", &spec.workspace]);
    } else {
        flag(&[&"--bind", &spec.workspace, &spec.working_directory, &"--remount-ro", &"/", &"--chdir", &spec.working_directory]);
    }
    flag(&[&"--"]);
    argv.extend(spec.command.iter().cloned());
    Ok((argv, fd))
}

/// An anonymous file holding `bytes`, read from its start, closed on exec unless the spawn
/// hands it on ([`checkfu_wire_sandbox::process::inherit_on_exec`]).
fn sealed_arguments(bytes: &[u8]) -> std::io::Result<OwnedFd> {
    checkfu_wire_sandbox::file::sealed("checkfu-bwrap-args", bytes)
}

/// The `run` flags podman and docker share: stdin kept open, an init as PID 1 (a harness
/// that is PID 1 ignores SIGTERM), the probe's uid and gid (as bubblewrap keeps them, so the
/// workspace's files stay the user's), a read-only root with a fresh `/tmp`, the mounts, the
/// working directory, and the variables from `env_file`, which this writes (a directory of
/// the run's own, private to the user).
fn shared_run_flags(spec: &RunSpec<'_>, name: &str, user: &str, env_file: &Path) -> Result<Vec<OsString>, StartError> {
    let mut argv: Vec<OsString> = Vec::new();
    argv.extend(os(&[&"run", &"--rm", &"--interactive", &"--init", &"--name", &name, &"--read-only", &"--user", &user]));
    // No capability, and none regained through a setuid or file-capability program in the
    // image (no_new_privs): the runtimes' default set (`CAP_DAC_OVERRIDE`, `CAP_CHOWN`,
    // `CAP_SETUID`, `CAP_SYS_CHROOT`, …) would let a harness running as root override every
    // permission on the directories the probe shares with it.
    argv.extend(os(&[&"--cap-drop=all", &"--security-opt=no-new-privileges"]));
    // Network-wise the container has nothing but the fence: no DNS servers, no hosts.
    let mut volume = |from: &Path, to: &dyn AsRef<std::ffi::OsStr>| {
        let mut spec = from.as_os_str().to_owned();
        spec.push(":");
        spec.push(to);
        argv.extend([OsString::from("--volume"), spec]);
    };
    for dir in spec.shared {
        volume(dir, dir);
    }
    let working_directory: OsString = if spec.working_directory == "/" {
        spec.workspace.as_os_str().to_owned()
    } else {
        volume(spec.workspace, &spec.working_directory);
        OsString::from(spec.working_directory)
    };
    argv.extend([OsString::from("--workdir"), working_directory]);
    // The last setting of a name wins, as in an environment; the values go into the file,
    // except one that a line of it cannot hold (only an image's can be such).
    let mut seen: Vec<&OsString> = Vec::new();
    let mut lines: Vec<u8> = Vec::new();
    let mut on_command_line: Vec<OsString> = Vec::new();
    for (name, value) in spec.env.iter().rev() {
        if seen.contains(&name) {
            continue;
        }
        seen.push(name);
        if host_env::fits_env_file(name, value) {
            lines.extend_from_slice(name.as_bytes());
            lines.push(b'=');
            lines.extend_from_slice(value.as_bytes());
            lines.push(b'\n');
        } else {
            let mut pair = name.clone();
            pair.push("=");
            pair.push(value);
            on_command_line.push(pair);
        }
    }
    write_private(env_file, &lines).map_err(cannot(format!("write the harness's variables to {}", env_file.display())))?;
    argv.extend([OsString::from("--env-file"), env_file.as_os_str().to_owned()]);
    for pair in on_command_line {
        argv.extend([OsString::from("--env"), pair]);
    }
    Ok(argv)
}

/// Writes `bytes` to a new file only its owner can read.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(bytes)
}

/// Whether the probe runs as uid 0 (its effective uid, which bubblewrap checks).
fn running_as_root() -> bool {
    checkfu_wire_sandbox::identity::is_root()
}

/// The probe's uid and gid, as `UID:GID`.
fn own_user() -> String {
    let (uid, gid) = (checkfu_wire_sandbox::identity::uid(), checkfu_wire_sandbox::identity::gid());
    format!("{uid}:{gid}")
}

// --- podman -----------------------------------------------------------------------------

/// podman with its global flags. In a fence made without privileges, through `unshare`:
/// see [`podman`].
fn podman_prefix(program: &Path, globals: &[OsString], user_namespace: bool) -> Vec<OsString> {
    let mut argv: Vec<OsString> = Vec::new();
    if user_namespace {
        argv.extend(os(&[&"unshare", &"--user", &"--map-root-user", &"--mount", &"--propagation", &"private", &"--"]));
    }
    argv.push(program.as_os_str().to_owned());
    argv.extend(globals.iter().cloned());
    argv
}

/// A podman command of the run's own (its removal), in the same namespaces as the run.
fn podman_command(program: &Path, globals: &[OsString], env: &[(OsString, OsString)], join: Option<Join>) -> Command {
    let user_namespace = join.is_some_and(|j| j.through_user_namespace());
    let argv = podman_prefix(program, globals, user_namespace);
    let mut command = host_env::command(&argv[0]);
    command.args(&argv[1..]).envs(env.iter().map(|(k, v)| (k, v)));
    if let Some(join) = join.filter(|_| user_namespace) {
        checkfu_wire_sandbox::fence::join_on_exec(&mut command, join);
    }
    command
}

/// Whether the cgroup hierarchy is hybrid (v1 controllers beside a v2 mount at
/// `/sys/fs/cgroup/unified`): crun refuses it ("cgroups in hybrid mode not supported").
fn hybrid_cgroups() -> bool {
    Path::new("/sys/fs/cgroup/unified/cgroup.controllers").exists()
}

fn podman(program: &Path, spec: &RunSpec<'_>) -> Result<RunningContainer, StartError> {
    let dir = TempDir::new("checkfu-podman").map_err(cannot("make podman's storage"))?;
    let root = dir.path();
    // Short names: podman refuses a run root of 50 characters or more (its sockets' paths).
    for sub in ["root", "r", "oci", "xdg", "tmp", "home"] {
        std::fs::create_dir(root.join(sub)).map_err(cannot("make podman's storage"))?;
    }
    // No default ulimits: podman's built-in `nproc` one fails (EPERM) where the process
    // lacks CAP_SYS_RESOURCE. File locks in the storage, not `/dev/shm/libpod_lock`, which
    // outlives the run and which another user's podman may own. No event log.
    std::fs::write(
        root.join("containers.conf"),
        "[containers]\ndefault_ulimits = []\n\n[engine]\nevents_logger = \"none\"\nlock_type = \"file\"\n",
    )
    .map_err(cannot("write podman's containers.conf"))?;
    let mut globals: Vec<OsString> = Vec::new();
    globals.extend(os(&[&"--root", &root.join("root"), &"--runroot", &root.join("r")]));
    globals.extend(os(&[&"--tmpdir", &root.join("r").join("libpod"), &"--storage-driver", &"vfs", &"--events-backend", &"none"]));
    globals.extend(os(&[&"--cgroup-manager", &"cgroupfs"]));
    // The OCI runtime's state goes into the storage too, not /run/runc or /run/crun.
    let mut state = OsString::from("root=");
    state.push(root.join("oci"));
    globals.extend([OsString::from("--runtime-flag"), state]);
    if hybrid_cgroups() && !tools::on_path("runc").is_empty() {
        globals.extend(os(&[&"--runtime", &"runc"]));
    }
    let mut env: Vec<(OsString, OsString)> = vec![("CONTAINERS_CONF".into(), root.join("containers.conf").into())];
    let join = spec.fence;
    let user_namespace = join.is_some_and(|j| j.through_user_namespace());
    if user_namespace {
        // The fence made without privileges is a user namespace of the probe's user (its own
        // uid mapped, no capability after exec), owning the fence's network namespace. A
        // rootless podman makes its own user namespace outside any fence, so it would not
        // run in this one; instead `unshare` makes a user namespace inside the fence (the
        // user as uid 0 there) with a mount namespace of its own, which is what podman's
        // rootless mode re-executes itself into, and these are the variables podman sets
        // for itself when it has done so. It then runs rootless in the fence, `--network
        // host` being the fence's network. Its runtime files and runc's temporary ones go
        // into the storage (the defaults, `/run/user` and `/tmp`, need not be the user's).
        let (uid, gid) = (checkfu_wire_sandbox::identity::uid(), checkfu_wire_sandbox::identity::gid());
        env.push(("_CONTAINERS_USERNS_CONFIGURED".into(), "done".into()));
        env.push(("_CONTAINERS_ROOTLESS_UID".into(), uid.to_string().into()));
        env.push(("_CONTAINERS_ROOTLESS_GID".into(), gid.to_string().into()));
        env.push(("XDG_RUNTIME_DIR".into(), root.join("xdg").into()));
        // Rootless podman reads its user configuration under `HOME`; the caller's may be
        // another user's (`sudo -u`, `setpriv` keep it) and unreadable, which failed its
        // `rm` at teardown. The run's own directory holds none, so the defaults apply.
        env.push(("HOME".into(), root.join("home").into()));
        env.push(("TMPDIR".into(), root.join("tmp").into()));
    }
    let name = crate::relay::token::mint("checkfu-probe-");
    let mut argv = podman_prefix(program, &globals, user_namespace);
    // Inside the user namespace `unshare` made, the probe's user is uid 0.
    let user = if user_namespace { String::from("0:0") } else { own_user() };
    let mut run = shared_run_flags(spec, &name, &user, &root.join("env"))?;
    // A fresh `/tmp` only, as bubblewrap makes: without `tmpcopyup`, which has runc copy
    // the image's `/tmp` through the host's `/tmp` (an ordinary user may not write there).
    run.extend(os(&[&"--read-only-tmpfs=false", &"--tmpfs", &"/tmp:rw,notmpcopyup"]));
    // The host network is the namespace podman was started in: the fence.
    run.extend(os(&[&"--network", &"host", &"--rootfs", &spec.rootfs]));
    argv.extend(run);
    argv.extend(spec.command.iter().cloned());
    Ok(RunningContainer {
        argv,
        inherit: None,
        client_env: env.clone(),
        joins_fence: true,
        fence: match join {
            Some(_) if user_namespace => ImageFence::PodmanUser,
            Some(_) => ImageFence::Podman,
            None => ImageFence::None,
        },
        container: Some(name.clone()),
        exec: Exec::Client { prefix: podman_prefix(program, &globals, user_namespace), user, name: name.clone() },
        cleanup: Cleanup::Podman { program: program.to_owned(), globals, env, join, name, dir: Some(dir) },
    })
}

// --- docker -----------------------------------------------------------------------------

fn docker_command(program: &Path, args: &[&str]) -> Command {
    let mut command = host_env::command(program);
    command.args(args);
    command
}

fn docker(program: &Path, spec: &RunSpec<'_>, budget: &Budget) -> Result<RunningContainer, StartError> {
    let name = crate::relay::token::mint("checkfu-probe-");
    let image = format!("{name}:run");
    let pause = format!("{name}-pause");
    let dir = TempDir::new("checkfu-docker").map_err(cannot("make the docker run's directory"))?;
    let archive = dir.path().join("rootfs.tar");
    let env_file = dir.path().join("env");
    let mut started = RunningContainer {
        argv: Vec::new(),
        inherit: None,
        client_env: Vec::new(),
        joins_fence: false,
        fence: ImageFence::DockerPause,
        container: Some(name.clone()),
        exec: Exec::Client { prefix: vec![program.as_os_str().to_owned()], user: own_user(), name: name.clone() },
        cleanup: Cleanup::Docker {
            program: program.to_owned(),
            name: name.clone(),
            pause: None,
            image: None,
            forwarder: None,
            dir: Some(dir),
        },
    };
    // The verified, unpacked root, imported as the image's only layer: docker runs the same
    // files bubblewrap and podman would, wherever the image was read from. Its config is not
    // needed: the entrypoint, the variables, the working directory and the user are given.
    let mut tar = host_env::command("tar");
    tar.arg("--create").arg("--numeric-owner").arg("--xattrs").arg("--file").arg(&archive).arg("--directory").arg(spec.rootfs).arg(".");
    tools::run(Tool::Docker, tar, "archive the image's root (tar)", budget, tools::TOOL_TIMEOUT)?;
    let mut import = host_env::command(program);
    import.arg("import").arg(&archive).arg(&image);
    let imported = tools::run(Tool::Docker, import, &format!("import {image}"), budget, tools::TOOL_TIMEOUT);
    if let Cleanup::Docker { image: slot, .. } = &mut started.cleanup {
        *slot = Some(image.clone());
    }
    imported?;
    let _ = std::fs::remove_file(&archive);

    // The pause container: no network but its loopback, a static busybox waiting.
    let mut run = host_env::command(program);
    run.args(["run", "--detach", "--name", &pause, "--network", "none", "--read-only", "--log-driver", "none"]);
    // It only sleeps: no capability, as the harness that joins its namespace has none.
    run.args(["--cap-drop=all", "--security-opt=no-new-privileges"]);
    run.arg("--volume").arg(format!("{PAUSE_PROGRAM}:/checkfu-pause/busybox:ro"));
    run.args(["--entrypoint", "/checkfu-pause/busybox", &image, "sleep", "2147483647"]);
    let made = tools::run(Tool::Docker, run, "start the pause container", budget, tools::QUICK_TIMEOUT);
    if let Cleanup::Docker { pause: slot, .. } = &mut started.cleanup {
        *slot = Some(pause.clone());
    }
    made?;
    let inspect = tools::run(
        Tool::Docker,
        docker_command(program, &["inspect", "--format", "{{.State.Pid}}", &pause]),
        "inspect the pause container",
        budget,
        tools::QUICK_TIMEOUT,
    )?;
    let pid: u32 = String::from_utf8_lossy(&inspect.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| StartError::NoPauseProcess(String::from_utf8_lossy(&inspect.stdout).trim().to_owned()))?;
    let forwarder = Forwarder::start(&PathBuf::from(format!("/proc/{pid}/ns/net")), spec.relay, spec.fence.map(|j| j.net()))
        .map_err(StartError::Forward)?;
    if let Cleanup::Docker { forwarder: slot, .. } = &mut started.cleanup {
        *slot = Some(forwarder);
    }

    let mut argv: Vec<OsString> = vec![program.as_os_str().to_owned()];
    argv.extend(shared_run_flags(spec, &name, &own_user(), &env_file)?);
    argv.extend(os(&[&"--tmpfs", &"/tmp", &"--network", &format!("container:{pause}"), &"--log-driver", &"none"]));
    let (entrypoint, args) = spec.command.split_first().ok_or(StartError::NoCommand)?;
    argv.extend([OsString::from("--entrypoint"), entrypoint.clone(), OsString::from(&image)]);
    argv.extend(args.iter().cloned());
    started.argv = argv;
    Ok(started)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    /// The relay's key never reaches a command line: the variables go into a private file,
    /// the last value of a name wins once, and a value a line cannot hold goes on the command
    /// line instead.
    #[test]
    fn variables_go_into_a_private_file_never_on_the_command_line() {
        let env: Vec<(OsString, OsString)> = vec![
            ("OPENAI_API_KEY".into(), "sk-first".into()),
            ("TMPDIR".into(), "/harness-tmp".into()),
            ("OPENAI_API_KEY".into(), "sk-secret".into()),
            ("MULTI".into(), "two\nlines".into()),
        ];
        let workspace = Path::new("/w");
        let shared = [workspace];
        let spec = RunSpec {
            command: &[],
            rootfs: Path::new("/r"),
            read_only_root: false,
            workspace,
            working_directory: "/workspace",
            shared: &shared,
            env: &env,
            relay: SocketAddr::from(([127, 0, 0, 1], 1)),
            fence: None,
        };
        let dir = TempDir::new("checkfu-runtime-test").unwrap();
        let file = dir.path().join("env");
        let argv = shared_run_flags(&spec, "checkfu-probe-x", "0:0", &file).unwrap();
        let text: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!text.iter().any(|a| a.contains("sk-")), "{text:?}");
        let envs: Vec<&str> = text.windows(2).filter(|w| w[0] == "--env").map(|w| w[1].as_str()).collect();
        assert_eq!(envs, ["MULTI=two\nlines"]);
        assert!(text.windows(2).any(|w| w[0] == "--env-file" && w[1] == file.to_string_lossy()), "{text:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "OPENAI_API_KEY=sk-secret\nTMPDIR=/harness-tmp\n");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        let volumes: Vec<&str> = text.windows(2).filter(|w| w[0] == "--volume").map(|w| w[1].as_str()).collect();
        assert_eq!(volumes, ["/w:/w", "/w:/workspace"]);
        // No capability, none regained through a setuid program.
        assert!(text.iter().any(|a| a == "--cap-drop=all") && text.iter().any(|a| a == "--security-opt=no-new-privileges"), "{text:?}");
        assert!(text.windows(2).any(|w| w[0] == "--workdir" && w[1] == "/workspace"), "{text:?}");
    }

    /// bubblewrap's variables are in its `--args` descriptor, after `--clearenv`, never in
    /// its argv.
    #[test]
    fn bubblewrap_reads_the_harness_variables_from_a_descriptor() {
        let env: Vec<(OsString, OsString)> = vec![("OPENAI_API_KEY".into(), "sk-secret".into()), ("LD_PRELOAD".into(), "./evil.so".into())];
        let workspace = Path::new("/w");
        let spec = RunSpec {
            command: &[OsString::from("/bin/sh")],
            rootfs: Path::new("/r"),
            read_only_root: false,
            workspace,
            working_directory: "/",
            shared: &[],
            env: &env,
            relay: SocketAddr::from(([127, 0, 0, 1], 1)),
            fence: None,
        };
        let (argv, fd) = bubblewrap_argv(Path::new("/usr/bin/bwrap"), &spec).unwrap();
        let text: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert!(!text.iter().any(|a| a.contains("sk-") || a.contains("evil")), "{text:?}");
        assert_eq!(text[1..3], ["--args".to_owned(), fd.as_raw_fd().to_string()]);
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut bytes).unwrap();
        let args: Vec<&[u8]> = bytes.split(|b| *b == 0).collect();
        assert_eq!(args[0], b"--clearenv");
        assert!(args.windows(3).any(|w| w == [b"--setenv".as_slice(), b"LD_PRELOAD", b"./evil.so"]));
        assert!(args.windows(3).any(|w| w == [b"--setenv".as_slice(), b"PWD", b"/w"]));

        // No capability in the sandbox, whoever runs the probe; root's harness in a user
        // namespace of its own.
        assert!(text.windows(2).any(|w| w == ["--cap-drop", "ALL"]), "{text:?}");
        let user_namespace = if running_as_root() { "--unshare-user" } else { "--unshare-user-try" };
        assert!(text.iter().any(|a| a == user_namespace), "{text:?}");

        // A NUL in a value would be read as bubblewrap's own options: refused.
        let hostile: Vec<(OsString, OsString)> = vec![("A".into(), OsString::from_vec(b"x\0--bind\0/\0/host".to_vec()))];
        let spec = RunSpec { env: &hostile, ..spec };
        let error = bubblewrap_argv(Path::new("/usr/bin/bwrap"), &spec).unwrap_err();
        assert!(error.to_string().contains("\"A\" holds a NUL byte"), "{error}");
    }
}
