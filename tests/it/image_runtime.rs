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
struct RunTmp {
    path: std::path::PathBuf,
    unprivileged: bool,
}

impl RunTmp {
    fn new(unprivileged: bool) -> RunTmp {
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
fn assert_nothing_of_the_run(run: &Run, runtime: &str, tmp: &RunTmp) {
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
