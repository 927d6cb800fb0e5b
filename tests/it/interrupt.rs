//! A signal ends a run as its deadline does: SIGINT, SIGTERM and SIGHUP sent to the probe
//! mid-turn stop the harness's process group, the probe tears down and reports (JSON with
//! `interrupted`), exits with 128 plus the signal's number, and leaves no process and no
//! directory behind. Under podman and docker the container goes too, whether the signal
//! comes mid-turn or mid-teardown (while `podman rm`/`docker rm` runs): the teardown runs
//! under a grace budget of its own, which no signal cancels.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::probe_support::{assert_no_process_in_group, assert_nothing_left, PROBE};

/// Starts the probe on a harness that never answers, sends `signal` once the harness runs,
/// and returns the exit code and the JSON report.
fn interrupted_run(signal: libc::c_int, protocol: &[&str]) -> (Option<i32>, Value, String) {
    let mut command = Command::new(PROBE);
    command.args(["probe", "--format", "json", "--kill-grace", "0.5", "--step-timeout", "60", "--deadline", "120"]);
    command.args(protocol);
    // The harness waits far beyond the test; only the signal can end the run in time.
    command.args(["--", "sleep", "300"]);
    let child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("probe starts");
    let pid = child.id();
    // Until the harness runs: a `sleep 300` whose parent is the probe.
    let until = Instant::now() + Duration::from_secs(20);
    while Instant::now() < until && !has_sleeping_child(pid) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (output, took) = signal_and_wait(child, signal);
    assert!(took < Duration::from_secs(15), "the run ended {took:?} after the signal");
    assert_nothing_left(pid);
    let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), json, String::from_utf8_lossy(&output.stderr).into_owned())
}

/// Sends `signal` to the probe `child`, waits for it, and says how long it took to end.
fn signal_and_wait(child: std::process::Child, signal: libc::c_int) -> (std::process::Output, Duration) {
    let sent = Instant::now();
    // The probe this test started, still unreaped.
    let signal = checkfu_wire_sandbox::process::Signal::from_named_raw(signal).expect("a named signal");
    checkfu_wire_sandbox::process::signal_process(child.id(), signal).expect("kill");
    let output = child.wait_with_output().expect("probe ends");
    (output, sent.elapsed())
}

/// Runs the probe on the busybox CLI's flags and `options` (an image to read) with a TMPDIR
/// of its own, sends SIGINT once `ready` says so of that directory (or after 30 s), and
/// holds it to ending within 5 s, exit 130, nothing left in the directory; its stderr.
fn interrupted_image_run(options: &[String], ready: impl Fn(&std::path::Path) -> bool) -> String {
    let tmp =
        crate::probe_support::Scratch::new(&format!("interrupt-{}", std::thread::current().name().unwrap_or("image").replace("::", "-")));
    let mut command = Command::new(PROBE);
    command.args(["probe", "--format", "json", "--deadline", "600"]).args(crate::support::image::BUSYBOX_CLI_FLAGS).args(options);
    let child = command.env("TMPDIR", &tmp.0).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("probe starts");
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until && !ready(&tmp.0) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (output, took) = signal_and_wait(child, libc::SIGINT);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(took < Duration::from_secs(5), "the run ended {took:?} after the signal: {stderr}");
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(&tmp.0).expect("tmp").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    stderr
}

fn has_sleeping_child(parent: u32) -> bool {
    std::fs::read_dir("/proc").into_iter().flatten().flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        // The fields after the command's name: state, then the parent's pid.
        let ppid = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)).and_then(|p| p.parse::<u32>().ok());
        ppid == Some(parent) && cmdline.starts_with(b"sleep\x00300")
    })
}

#[test]
fn sigint_stops_an_acp_run_which_reports_and_exits_130() {
    let (code, json, stderr) = interrupted_run(libc::SIGINT, &[]);
    assert_eq!(code, Some(130), "{stderr}");
    assert_eq!(json["interrupted"], "SIGINT", "{json}\n{stderr}");
    let pid = json["harness"]["pid"].as_u64().expect("the harness ran") as i32;
    assert_no_process_in_group(pid);
}

#[test]
fn sigterm_stops_a_oneshot_run_which_reports_and_exits_143() {
    let (code, json, stderr) =
        interrupted_run(libc::SIGTERM, &["--protocol", "oneshot-v1", "--prompt-transport", "stdin", "--output-mode", "text"]);
    assert_eq!(code, Some(143), "{stderr}");
    assert_eq!(json["interrupted"], "SIGTERM", "{json}\n{stderr}");
    // One run only: nothing new starts after the signal (no resume run).
    assert_eq!(json["runs"].as_array().map(Vec::len), Some(1), "{json}");
    for run in json["runs"].as_array().into_iter().flatten() {
        assert_no_process_in_group(run["pid"].as_u64().expect("pid") as i32);
    }
}

/// SIGINT in the middle of a pull (a registry trickling its manifest): the pull stops at
/// once, the command exits 130 saying why, and the run's temporary directory is empty.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn sigint_mid_pull_stops_it_and_leaves_nothing() {
    let reference = crate::image_untrusted_registry::trickling_registry();
    // The manifest trickles a byte a second: 1.5 s in, the pull is under way.
    let begun = Instant::now();
    let stderr = interrupted_image_run(&[String::from("--image"), reference], |_| begun.elapsed() >= Duration::from_millis(1500));
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
}

/// SIGINT in the middle of an unpack (200,000 entries read from an OCI layout directory,
/// which takes tens of seconds): the unpack stops at the next entry, the command exits 130,
/// and the half-made root and the layout copy are gone from the run's TMPDIR.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn sigint_mid_unpack_stops_it_and_leaves_nothing() {
    let layout = crate::image_untrusted_layers::long_paths_layout(200_000);
    let digest = crate::image_untrusted_layers::manifest_digest(layout.path());
    // Without the store, the root is made in the run's TMPDIR, which the test watches (with
    // it, the unpack goes into the store: the test below).
    let options = [
        format!("--image=localhost/long-paths@{digest}"),
        format!("--image-source=oci:{}", layout.path().display()),
        String::from("--no-image-cache"),
    ];
    // Once the root is being filled, and half a second into it.
    let filling: std::cell::Cell<Option<Instant>> = std::cell::Cell::new(None);
    let stderr = interrupted_image_run(&options, |tmp| {
        if filling.get().is_none() && unpacking(tmp) {
            filling.set(Some(Instant::now()));
        }
        filling.get().is_some_and(|t| t.elapsed() >= Duration::from_millis(500))
    });
    assert!(stderr.contains("interrupted by SIGINT while unpacking"), "stopped in the unpack: {stderr}");
}

/// SIGINT in the middle of an unpack into the image store: the entry being written goes with
/// the run, so the store holds no entry and no `.tmp-` directory afterwards, and `image ls`
/// lists nothing.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn sigint_mid_unpack_into_the_store_leaves_no_entry() {
    let layout = crate::image_untrusted_layers::long_paths_layout(200_000);
    let digest = crate::image_untrusted_layers::manifest_digest(layout.path());
    let store_dir = crate::probe_support::Scratch::new("interrupt-store");
    let store = store_dir.path("images");
    let options = [
        format!("--image=localhost/long-paths@{digest}"),
        format!("--image-source=oci:{}", layout.path().display()),
        format!("--image-cache={store}"),
    ];
    let filling: std::cell::Cell<Option<Instant>> = std::cell::Cell::new(None);
    let stderr = interrupted_image_run(&options, |_| {
        if filling.get().is_none() && writing_an_entry(std::path::Path::new(&store)) {
            filling.set(Some(Instant::now()));
        }
        filling.get().is_some_and(|t| t.elapsed() >= Duration::from_millis(500))
    });
    assert!(stderr.contains("interrupted by SIGINT while unpacking"), "stopped in the unpack: {stderr}");
    let left: Vec<_> = std::fs::read_dir(&store).expect("the store").flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the store kept {left:?}");
    let listed = Command::new(PROBE).args(["image", "ls", "--image-cache", &store]).output().expect("image ls");
    assert!(listed.status.success(), "{listed:?}");
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&digest), "{}", String::from_utf8_lossy(&listed.stdout));
}

/// Whether the store at `store` is writing an entry: a `.tmp-…/root` with something in it.
fn writing_an_entry(store: &std::path::Path) -> bool {
    std::fs::read_dir(store).into_iter().flatten().flatten().any(|entry| {
        entry.file_name().to_string_lossy().starts_with(".tmp-")
            && std::fs::read_dir(entry.path().join("root")).is_ok_and(|mut d| d.next().is_some())
    })
}

/// Whether a root is being unpacked in `tmp`: a `checkfu-image-rootfs-…` with something in it.
fn unpacking(tmp: &std::path::Path) -> bool {
    std::fs::read_dir(tmp).into_iter().flatten().flatten().any(|entry| {
        entry.file_name().to_string_lossy().starts_with("checkfu-image-rootfs-")
            && std::fs::read_dir(entry.path()).is_ok_and(|mut d| d.next().is_some())
    })
}

/// Where a podman or docker run is when SIGINT comes.
#[derive(Clone, Copy, Debug)]
enum When {
    /// The CLI runs in its container (and ignores SIGTERM: `stubborn`).
    MidTurn,
    /// The runtime is removing the container (`rm --force`), the CLI's time being up.
    MidTeardown,
}

/// Runs the busybox CLI's `stubborn` mode in `runtime`, sends SIGINT (twice, as an impatient
/// Ctrl-C does) `when` says, and holds the run to exit 130 reporting the signal, with no
/// container, no process of it and no directory left.
fn sigint_in_a_container_leaves_nothing(runtime: &str, when: When) {
    let _serial = crate::support::image::serial();
    let context = crate::support::image::busybox_cli_context();
    let served = crate::support::image::Served::build(context.path(), "checkfu-oneshot");
    let tmp = crate::image_runtime::RunTmp::new(false);
    // Mid-turn, only the signal ends the turn in time; mid-teardown, the step's 3 s do.
    let step_timeout = match when {
        When::MidTurn => "300",
        When::MidTeardown => "3",
    };
    let mut command = Command::new(PROBE);
    command.args(["probe", "--format", "json", "--kill-grace", "0.5", "--deadline", "600", "--step-timeout", step_timeout]);
    command.args(["--image", &served.reference.to_string(), "--runtime", runtime, "--argv=stubborn"]);
    command.args(crate::support::image::BUSYBOX_CLI_FLAGS);
    let mut child = command.env("TMPDIR", tmp.path()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("probe starts");
    let pid = child.id();
    let until = Instant::now() + Duration::from_secs(120);
    let ready = || match when {
        // The CLI's shell inside the container (the runtime's client, which has `stubborn` for
        // argument too, is no shell): the turn has begun.
        When::MidTurn => !processes_with_args(&["/bin/sh", "stubborn"]).is_empty(),
        When::MidTeardown => !processes_with_args(&["rm", "--force"]).is_empty(),
    };
    // Seen once is enough: what is looked for may be gone by a second look (a removal ends).
    let mut reached = false;
    while Instant::now() < until {
        if ready() {
            reached = true;
            break;
        }
        if child.try_wait().ok().flatten().is_some() {
            let output = child.wait_with_output().expect("the probe's output");
            panic!("the probe ended before {when:?}: {}", String::from_utf8_lossy(&output.stderr));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    if !reached {
        // Not left running past the test, nor killed: SIGTERM lets it remove its container.
        let (output, _) = signal_and_wait(child, libc::SIGTERM);
        panic!("{runtime} never reached {when:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    if let When::MidTurn = when {
        // Into the turn: the CLI has the prompt.
        std::thread::sleep(Duration::from_millis(500));
    }
    let sent = Instant::now();
    let signal = checkfu_wire_sandbox::process::Signal::from_named_raw(libc::SIGINT).expect("SIGINT");
    checkfu_wire_sandbox::process::signal_process(pid, signal).expect("the first SIGINT");
    std::thread::sleep(Duration::from_millis(200));
    // The probe may have ended already: a second signal to it is then refused, not an error.
    let _ = checkfu_wire_sandbox::process::signal_process(pid, signal);
    let output = child.wait_with_output().expect("probe ends");
    let took = sent.elapsed();
    let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let run = crate::probe_support::Run { status: output.status.code().unwrap_or(-1), json, stderr };
    assert!(took < Duration::from_secs(60), "the run ended {took:?} after the signal: {}", run.pretty());
    assert_eq!(run.status, 130, "{}\n{}", run.pretty(), run.stderr);
    assert_eq!(run.json["interrupted"], "SIGINT", "{}", run.pretty());
    for process in run.json["runs"].as_array().into_iter().flatten() {
        assert_no_process_in_group(process["pid"].as_u64().expect("pid") as i32);
    }
    assert_nothing_left(pid);
    crate::image_runtime::assert_nothing_of_the_run(&run, runtime, &tmp);
    eprintln!("{runtime}, SIGINT {when:?}: ended {took:?} after the signal");
    served.stop();
}

/// Processes (but this test's probe, whose argument is `--argv=stubborn`) whose arguments
/// include every one of `args`, each whole.
fn processes_with_args(args: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let given: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args.iter().all(|arg| given.contains(&arg.as_bytes())) {
            found.push(pid);
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_podman)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_PODMAN are not both set: apt-get install podman and the image tools (see .ci/run)"
)]
fn sigint_mid_turn_under_podman_removes_the_container() {
    sigint_in_a_container_leaves_nothing("podman", When::MidTurn);
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_podman)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_PODMAN are not both set: apt-get install podman and the image tools (see .ci/run)"
)]
fn sigint_mid_teardown_under_podman_removes_the_container() {
    sigint_in_a_container_leaves_nothing("podman", When::MidTeardown);
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_docker)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_DOCKER are not both set: apt-get install docker.io, start a dockerd, export DOCKER_HOST (see .ci/run)"
)]
fn sigint_mid_turn_under_docker_removes_the_container() {
    sigint_in_a_container_leaves_nothing("docker", When::MidTurn);
}

#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_docker)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_DOCKER are not both set: apt-get install docker.io, start a dockerd, export DOCKER_HOST (see .ci/run)"
)]
fn sigint_mid_teardown_under_docker_removes_the_container() {
    sigint_in_a_container_leaves_nothing("docker", When::MidTeardown);
}
