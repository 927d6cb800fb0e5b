//! `probe --image … --runtime podman|docker` end to end, on the busybox one-shot image the
//! image lane's tests build and serve from a loopback registry ([`crate::support::image`]:
//! its `escape` and `stubborn` modes are for these tests).
//! For each runtime: the CLI passes by the relay's record, its echoing twin fails
//! `prompt_exchange`, a CLI that tries the host's loopback and a non-loopback address of
//! the host reaches neither (a listener there counts every connection), and a CLI that
//! ignores SIGTERM is killed at its deadline; after every run no container, no pause
//! container, no image of the run, no process and no temporary directory remains. podman
//! runs again as uid 65534 (in the fence made without privileges); docker is refused there.
//!
//! podman is built in when `CHECKFU_PODMAN` is set, docker when `CHECKFU_DOCKER` is (with
//! `DOCKER_HOST` naming a running daemon: `.ci/run` starts one); `CHECKFU_REQUIRE_PODMAN`
//! and `CHECKFU_REQUIRE_DOCKER` make sure that they were.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::probe_support::{assert_no_process_in_group, probe_env, running_as_root, unprivileged, Run, Staged, NOBODY, PROBE};
use crate::support::image::{busybox_cli_context, serial, tool, Served, BUSYBOX_CLI_FLAGS};

/// A listener on every interface of the host, outside any fence, answering and counting
/// every connection.
struct HostListener {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl HostListener {
    fn start() -> HostListener {
        let listener = TcpListener::bind((Ipv4Addr::UNSPECIFIED, 0)).expect("host listener");
        let port = listener.local_addr().expect("addr").port();
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&connections);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut stream = stream;
                let mut head = [0u8; 512];
                let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
                let _ = stream.read(&mut head);
                let _ = stream.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nhost");
            }
        });
        HostListener { port, connections }
    }

    /// Where the host is reached from outside a fence: its loopback, and the address of the
    /// interface its default route leaves by, when it has one (no packet is sent to learn it).
    fn addresses(&self) -> Vec<String> {
        let mut out = vec![format!("127.0.0.1:{}", self.port)];
        let outward = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))
            .and_then(|s| s.connect(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 255, 255, 1)), 9)).map(|()| s))
            .and_then(|s| s.local_addr());
        if let Ok(address) = outward {
            if !address.ip().is_loopback() && !address.ip().is_unspecified() {
                out.push(format!("{}:{}", address.ip(), self.port));
            }
        }
        out
    }
}

/// A temporary directory for the probe's runs alone (its `TMPDIR`): every directory a run
/// makes (the workspace, the home, the image's root and layout, a runtime's storage) is in
/// it, so after a run it must be empty, whatever other tests do in the shared one. Its path is
/// short: podman refuses a run root of 50 characters or more, and its storage is in here.
/// With `unprivileged`, the probe runs as uid 65534 (`setpriv`, the tests running as root)
/// with this directory, its own, as `TMPDIR` and `HOME`.
pub(crate) struct RunTmp {
    path: std::path::PathBuf,
    unprivileged: bool,
}

impl RunTmp {
    pub(crate) fn new(unprivileged: bool) -> RunTmp {
        let path = std::path::PathBuf::from(format!("/tmp/cf{:x}{}", std::process::id(), if unprivileged { "u" } else { "" }));
        std::fs::create_dir(&path).expect("tmp");
        if unprivileged {
            let owned = Command::new("chown").arg(format!("{NOBODY}:{NOBODY}")).arg(&path).status().expect("chown");
            assert!(owned.success());
        }
        RunTmp { path, unprivileged }
    }

    fn run(&self, reference: &str, more: &[&str]) -> Run {
        let mut options = vec!["--image", reference];
        options.extend_from_slice(BUSYBOX_CLI_FLAGS);
        options.extend_from_slice(more);
        if !self.unprivileged {
            return probe_env(&options, &[], &[("TMPDIR", self.path.as_os_str().to_owned())]);
        }
        let staged = Staged::new("runtime-probe");
        let mut command = unprivileged(&staged.file(PROBE));
        command.args(["probe", "--format", "json", "--kill-grace", "0.5"]).args(&options);
        // The caller's HOME stays, as `setpriv` and `sudo -u` keep it: here root's, which
        // uid 65534 cannot read (rootless podman once failed its teardown on it).
        command.env("TMPDIR", &self.path);
        let output = command.output().expect("the probe runs");
        let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null);
        for run in json["runs"].as_array().into_iter().flatten() {
            if let Some(pid) = run["pid"].as_u64() {
                assert_no_process_in_group(pid as i32);
                assert_eq!(run["leftover_processes"], serde_json::json!([]));
            }
        }
        Run { status: output.status.code().unwrap_or(-1), json, stderr: String::from_utf8_lossy(&output.stderr).into_owned() }
    }

    /// The directory itself, for a caller that starts the probe on its own.
    pub(crate) fn path(&self) -> &std::path::Path {
        &self.path
    }

    fn left(&self) -> Vec<String> {
        std::fs::read_dir(&self.path).expect("tmp").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    }
}

impl Drop for RunTmp {
    fn drop(&mut self) {
        let _ = checkfu_wire_probe::image::remove_tree(&self.path);
    }
}

/// Processes whose command line names `container` (conmon, a runtime's shim, the client).
fn processes_naming(container: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(container) {
                found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// A docker command for the tests' own look at the daemon.
fn docker(args: &[&str]) -> String {
    tool("docker", args, &[])
}

/// What a run of `runtime` must leave: nothing of its container anywhere, no new directory.
pub(crate) fn assert_nothing_of_the_run(run: &Run, runtime: &str, tmp: &RunTmp) {
    let container = run.json["image"]["container"].as_str().unwrap_or_else(|| panic!("no container named: {}", run.pretty()));
    assert!(container.starts_with("checkfu-probe-"), "{container}");
    assert_eq!(run.json["image"].get("teardown_fault"), None, "{}", run.pretty());
    assert_eq!(processes_naming(container), Vec::<String>::new(), "a process of {container} is left");
    assert_eq!(tmp.left(), Vec::<String>::new(), "directories left by {runtime}");
    match runtime {
        "docker" => {
            let containers = docker(&["ps", "--all", "--quiet", "--filter", &format!("name={container}")]);
            assert_eq!(containers.trim(), "", "a container of {container} is left (its pause container too has the name)");
            let images = docker(&["images", "--quiet", "--filter", &format!("reference={container}")]);
            assert_eq!(images.trim(), "", "the image {container}:run is left");
        }
        _ => {
            // podman kept its state in a directory of the run's own, now gone; the default
            // storage never saw the container.
            let listed = Command::new("podman").args(["ps", "--all", "--format", "{{.Names}}"]).output().expect("podman ps");
            assert!(!String::from_utf8_lossy(&listed.stdout).contains(container), "{container} is in podman's default storage");
        }
    }
}

/// The whole story for one runtime, on one pushed image.
fn the_runtime_keeps_the_fence_and_leaves_nothing(runtime: &str, as_nobody: bool) {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot");
    let reference = served.reference.to_string();
    let tmp = RunTmp::new(as_nobody);

    let started = Instant::now();
    let run = tmp.run(&reference, &["--runtime", runtime]);
    let passing = started.elapsed();
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["runtime"], runtime);
    assert_eq!(run.json["image"]["runtime_detected"], false);
    let fence = run.json["image"]["fence"].as_str().expect("fence");
    if runtime == "docker" {
        assert_eq!(fence, "docker pause container's loopback, forwarded to the relay");
    } else if as_nobody || !running_as_root() {
        assert_eq!(fence, "the probe's user and network namespaces, joined by podman (rootless inside them, --network host)");
        assert_eq!(run.json["model_plane"]["fence"], "user_namespace");
    } else {
        assert_eq!(fence, "the probe's network namespace, joined by podman (--network host inside it)");
        assert_eq!(run.json["model_plane"]["fence"], "network_namespace");
    }
    assert_eq!(run.json["image"]["working_directory"], "/workspace");
    assert!(run.json["model_plane"]["calls"].as_array().is_some_and(|c| !c.is_empty()), "{}", run.pretty());
    assert_nothing_of_the_run(&run, runtime, &tmp);

    // The echoing twin: no model call, so no pass.
    let echo = tmp.run(&reference, &["--runtime", runtime, "--argv=echo"]);
    assert_eq!(echo.status, 1, "{}", echo.pretty());
    assert_eq!(echo.json["steps"]["prompt_exchange"]["status"], "failed", "{}", echo.pretty());
    assert_nothing_of_the_run(&echo, runtime, &tmp);

    // A CLI that tries the host first: nothing of it is reached, and the relay still is.
    let host = HostListener::start();
    let mut argv = vec![String::from("--argv=escape")];
    argv.extend(host.addresses().iter().map(|a| format!("--argv={a}")));
    let mut options: Vec<&str> = vec!["--runtime", runtime];
    options.extend(argv.iter().map(String::as_str));
    let escape = tmp.run(&reference, &options);
    assert_eq!(escape.status, 0, "{}", escape.pretty());
    assert_eq!(escape.json["steps"]["prompt_exchange"]["status"], "passed", "{}", escape.pretty());
    assert_eq!(host.connections.load(Ordering::SeqCst), 0, "the harness reached the host ({:?}): {}", host.addresses(), escape.pretty());
    for address in host.addresses() {
        assert!(!escape.pretty().contains(&format!("reached {address}")), "{}", escape.pretty());
    }
    // The listener does count what reaches it (so the zero above can fail).
    drop(std::net::TcpStream::connect(("127.0.0.1", host.port)).expect("the host listener answers outside"));
    let until = Instant::now() + Duration::from_secs(2);
    while host.connections.load(Ordering::SeqCst) == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(host.connections.load(Ordering::SeqCst), 1);
    assert_nothing_of_the_run(&escape, runtime, &tmp);

    // A CLI that ignores SIGTERM and never ends: killed at its deadline, its container
    // removed although its client was killed.
    let started = Instant::now();
    let stubborn = tmp.run(&reference, &["--runtime", runtime, "--argv=stubborn", "--step-timeout", "3"]);
    let took = started.elapsed();
    assert_eq!(stubborn.status, 1, "{}", stubborn.pretty());
    assert_eq!(stubborn.json["steps"]["prompt_exchange"]["status"], "failed", "{}", stubborn.pretty());
    let ending = stubborn.json["runs"][0]["ending"].as_str().unwrap_or_default();
    assert!(["terminated", "killed"].contains(&ending), "{ending}: {}", stubborn.pretty());
    assert!(took < Duration::from_secs(30), "the deadline held: {took:?}");
    assert_nothing_of_the_run(&stubborn, runtime, &tmp);
    eprintln!("{runtime}: a passing run took {passing:?}; the killed one {took:?}");

    served.stop();
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_podman)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_PODMAN are not both set: apt-get install podman and the image tools (see .ci/run)"
)]
fn podman_keeps_the_fence_and_leaves_nothing() {
    the_runtime_keeps_the_fence_and_leaves_nothing("podman", false);
}

/// podman as an ordinary user: rootless, inside the fence made without privileges. Where
/// the tests do not run as root, the ordinary user is the one running them.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_podman)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_PODMAN are not both set: apt-get install podman and the image tools (see .ci/run)"
)]
fn podman_as_an_ordinary_user_keeps_the_fence_and_leaves_nothing() {
    the_runtime_keeps_the_fence_and_leaves_nothing("podman", running_as_root());
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_docker)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_DOCKER are not both set: apt-get install docker.io, start a dockerd, export DOCKER_HOST (see .ci/run)"
)]
fn docker_keeps_the_fence_and_leaves_nothing() {
    the_runtime_keeps_the_fence_and_leaves_nothing("docker", false);
}

/// docker as an ordinary user: refused before anything is pulled, saying why (the probe
/// cannot enter the pause container's network namespace), and naming what works instead.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_docker)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_DOCKER are not both set: apt-get install docker.io, start a dockerd, export DOCKER_HOST (see .ci/run)"
)]
fn docker_is_refused_to_an_ordinary_user() {
    if !running_as_root() {
        return;
    }
    let tmp = RunTmp::new(true);
    let refused = tmp.run(
        "127.0.0.1:5000/never-pulled@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        &["--runtime", "docker"],
    );
    assert_eq!(refused.status, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("CAP_SYS_ADMIN") && refused.stderr.contains("--runtime bubblewrap or podman"), "{}", refused.stderr);
    assert!(refused.json.is_null(), "nothing ran");
    assert_eq!(tmp.left(), Vec::<String>::new());
}

/// A directory outside every directory of the probe's, writable by anyone (so a host
/// program run as uid 65534 could write there too), holding what a hostile image points its
/// variables at; removed when dropped.
struct Canary(std::path::PathBuf);

impl Canary {
    fn new(name: &str) -> Canary {
        let path = std::path::PathBuf::from(format!("/tmp/checkfu-canary-{name}-{}", std::process::id()));
        let _ = checkfu_wire_probe::image::remove_tree(&path);
        std::fs::create_dir(&path).expect("canary");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o777)).expect("chmod 777");
        Canary(path)
    }

    fn entries(&self) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(&self.0).expect("canary").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        let _ = checkfu_wire_probe::image::remove_tree(&self.0);
    }
}

/// A preloadable library that, once loaded by any dynamically linked program, makes a file
/// `preloaded-<pid>` in the canary; `None` without a C compiler.
fn preload_library(canary: &Canary) -> Option<String> {
    let source = canary.0.join("evil.c");
    let library = canary.0.join("evil.so");
    std::fs::write(
        &source,
        format!(
            "#include <fcntl.h>\n#include <stdio.h>\n#include <unistd.h>\n__attribute__((constructor)) static void loaded(void) {{ char p[512]; snprintf(p, sizeof p, \"{}/preloaded-%d\", (int)getpid()); close(open(p, O_CREAT | O_WRONLY, 0666)); }}\n",
            canary.0.display()
        ),
    )
    .expect("evil.c");
    let built = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(&library).arg(&source).status().ok()?;
    std::fs::remove_file(&source).expect("rm evil.c");
    built.success().then(|| library.to_string_lossy().into_owned())
}

/// Builds the busybox CLI's image with `extra` Dockerfile lines appended.
fn hostile_image(extra: &str, name: &str) -> Served {
    let context = busybox_cli_context();
    let dockerfile = context.path().join("Dockerfile");
    let mut text = std::fs::read_to_string(&dockerfile).expect("Dockerfile");
    text.push_str(extra);
    std::fs::write(&dockerfile, text).expect("Dockerfile");
    Served::build(context.path(), name)
}

/// The runtimes the hostile-image cases run under here: bubblewrap, and podman where it is
/// built in; each as the user running the tests and as uid 65534.
fn runtimes() -> Vec<(&'static str, bool)> {
    let mut all = vec![("bubblewrap", false), ("bubblewrap", running_as_root())];
    if cfg!(checkfu_podman) {
        all.extend([("podman", false), ("podman", running_as_root())]);
    }
    all.dedup();
    all
}

/// An image's variables configure its harness, never a program on the host: a `LD_PRELOAD`
/// and `LD_DEBUG_OUTPUT` pointing at the host, and a `CONTAINER_HOST` that would switch
/// podman to a remote service. bubblewrap, `unshare`, podman and conmon once started with
/// them (the library ran in each, as root and as uid 65534). Now the run passes by the
/// relay's record and nothing appears in the canary.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_images_variables_reach_no_program_on_the_host() {
    let _serial = serial();
    let canary = Canary::new("env");
    let preload = preload_library(&canary);
    let mut env = format!("ENV LD_DEBUG=libs LD_DEBUG_OUTPUT={}/ld-debug CONTAINER_HOST=tcp://127.0.0.1:9\n", canary.0.display());
    if let Some(library) = &preload {
        env.push_str(&format!("ENV LD_PRELOAD={library}\n"));
    }
    let served = hostile_image(&env, "checkfu-hostile-env");
    let reference = served.reference.to_string();
    let expected: Vec<String> = preload.iter().map(|_| String::from("evil.so")).collect();
    // The canary works: a dynamically linked host program given these variables writes
    // there (so an empty canary below is not for want of a working library).
    let control = Command::new("true").env("LD_DEBUG", "libs").env("LD_DEBUG_OUTPUT", canary.0.join("control")).status().expect("true");
    assert!(control.success());
    assert!(canary.entries().iter().any(|e| e.starts_with("control")), "LD_DEBUG_OUTPUT writes: {:?}", canary.entries());
    for entry in canary.entries().into_iter().filter(|e| e.starts_with("control")) {
        std::fs::remove_file(canary.0.join(entry)).expect("rm control");
    }
    for (runtime, unprivileged) in runtimes() {
        let tmp = RunTmp::new(unprivileged);
        let run = tmp.run(&reference, &["--runtime", runtime]);
        let context = format!("{runtime}, unprivileged {unprivileged}: {}", run.pretty());
        assert_eq!(run.status, 0, "{context}");
        assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{context}");
        assert_eq!(canary.entries(), expected, "a host program loaded or obeyed the image's variables: {context}");
        assert_eq!(tmp.left(), Vec::<String>::new(), "{context}");
    }
}

/// An image's working directory is made inside its root, never by a runtime on the host:
/// `/workspace` a symlink climbing to a host directory (`../oldroot/…`, where bubblewrap once
/// made the mount point before switching roots). The image is refused at pull time, exit 1,
/// naming the path; a `--working-directory` that climbs is refused too; the host directory
/// stays empty.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_working_directory_that_climbs_out_of_the_image_is_refused() {
    let _serial = serial();
    let canary = Canary::new("workdir");
    let climb = format!("../oldroot{}/escaped", canary.0.display());
    // WORKDIR first makes the real directories; then one step (the builder remakes the
    // working directory before each) turns `/workspace` into the link.
    let extra = format!("WORKDIR /workspace/x/sub\nRUN [\"/bin/sh\", \"-c\", \"rm -rf /workspace && ln -s {climb} /workspace\"]\n");
    let served = hostile_image(&extra, "checkfu-hostile-workdir");
    let reference = served.reference.to_string();
    for (runtime, unprivileged) in runtimes() {
        let tmp = RunTmp::new(unprivileged);
        let run = tmp.run(&reference, &["--runtime", runtime]);
        let context = format!("{runtime}, unprivileged {unprivileged}: {}", run.stderr);
        assert_eq!(run.status, 1, "{context}");
        assert!(run.stderr.contains("/workspace/x/sub") && run.stderr.len() <= 1024, "{context}");
        assert_eq!(canary.entries(), Vec::<String>::new(), "{context}");
        let flag = tmp.run(&reference, &["--runtime", runtime, "--working-directory", "../oldroot/tmp"]);
        assert_ne!(flag.status, 0, "{}", flag.pretty());
        assert_eq!(canary.entries(), Vec::<String>::new());
        assert_eq!(tmp.left(), Vec::<String>::new(), "{context}");
    }
}

/// An image whose `Env` value holds NUL bytes, which bubblewrap (reading the harness's
/// variables NUL-separated) would once have taken as its own options: `--bind / /host`
/// puts the host's root inside. Refused before anything starts, exit 1, naming it.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_variable_holding_nul_bytes_is_refused() {
    let layout = crate::image_untrusted_layers::layout_with_env(&["A=x\0--bind\0/\0/host"]);
    let digest = crate::image_untrusted_layers::manifest_digest(layout.path());
    let source = format!("--image-source=oci:{}", layout.path().display());
    let run = probe_env(&[BUSYBOX_CLI_FLAGS, &["--image", &format!("localhost/nul@{digest}"), &source]].concat(), &[], &[]);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains("Env holds a NUL byte in entry 0") && run.stderr.len() <= 1024, "{}", run.stderr);
    assert!(run.json.is_null(), "nothing ran");
}
