//! What the image lane costs over the process lane, on the same harness: the one-shot
//! scaffold's `entrypoint.sh` (`checkfu-wire init oneshot`), run once as a local command
//! (`busybox sh entrypoint.sh`) and once as an image built from the scaffold.
//!
//! Not a timing loop: each figure is whole operations, run a few times, the median kept.
//! - `process`: `probe -- busybox sh entrypoint.sh …`, one turn with its resume;
//! - `build`, `push`, `pull`, `unpack`: the image lane's parts, each by itself (buildah,
//!   the temporary registry, skopeo by digest, the crate's unpacker);
//! - `image`: `probe --image REF` with the same flags (pull, unpack and run), under the
//!   detected runtime (bubblewrap), and `image-podman`, `image-docker` under those (each
//!   only when it is installed and, for docker, `DOCKER_HOST` or the default socket answers);
//! - `build-context`: `probe --build-context DIR` (build, push, pull, unpack and run).
//!
//! Needs buildah, skopeo, docker-registry, busybox-static and bubblewrap (`.ci/run` installs
//! them). `cargo bench -p checkfu-wire-tests --bench image` prints the figures and the ratios
//! against `process`.

#[path = "whole_runs.rs"]
mod whole_runs;
// The image tests' helpers: this benchmark uses the page's one-shot flags.
#[allow(dead_code)]
#[path = "../it/support/image.rs"]
mod image_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use whole_runs::{machine, median};

use checkfu_wire_probe::image::tools::{self, Builder, BuilderKind, Registry, RegistryOptions};
use checkfu_wire_probe::image::{Limits, OciLayout, Selector, TempDir};

const PROBE: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");
const RUNS: usize = 3;

/// The scaffold's one-shot flags, as the page's build-context command gives them.
use image_support::PAGE_ONESHOT_FLAGS as FLAGS;

fn probe(extra: &[&str], command: &[&str]) -> Duration {
    let started = Instant::now();
    let mut c = Command::new(PROBE);
    c.args(["probe", "--format", "json"]).args(FLAGS).args(extra);
    if !command.is_empty() {
        c.arg("--").args(command);
    }
    let status = c.stdout(Stdio::null()).stderr(Stdio::null()).status().expect("the probe runs");
    assert!(status.success(), "the probe failed: {extra:?} {command:?}");
    started.elapsed()
}

fn timed(mut f: impl FnMut() -> Duration) -> Duration {
    median((0..RUNS).map(|_| f()).collect())
}

fn main() {
    let parent = TempDir::new("checkfu-bench-image").expect("dir");
    let scaffold = parent.path().join("scaffold");
    let made = Command::new(PROBE).args(["init", "oneshot", "--directory"]).arg(&scaffold).output().expect("init");
    assert!(made.status.success(), "init: {}", String::from_utf8_lossy(&made.stderr));
    let script = scaffold.join("entrypoint.sh");
    let busybox = scaffold.join("busybox");
    let (busybox, script) = (busybox.to_str().expect("utf-8"), script.to_str().expect("utf-8"));

    let process = timed(|| probe(&[], &[busybox, "sh", script]));

    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    let build = timed(|| {
        let started = Instant::now();
        tools::build(&builder, &scaffold, None, "localhost/checkfu-bench:1", Instant::now() + tools::TOOL_TIMEOUT).expect("build");
        started.elapsed()
    });
    let registry = Registry::start(RegistryOptions::default()).expect("registry");
    let mut pushed = None;
    let push = timed(|| {
        let started = Instant::now();
        pushed = Some(tools::push(&builder, "localhost/checkfu-bench:1", &registry, Instant::now() + tools::TOOL_TIMEOUT).expect("push"));
        started.elapsed()
    });
    let pushed = pushed.expect("pushed");
    let pull = timed(|| {
        let dir = TempDir::new("checkfu-bench-layout").expect("dir");
        let started = Instant::now();
        tools::pull_to_layout(&pushed, &dir.path().join("layout"), Instant::now() + tools::TOOL_TIMEOUT).expect("pull");
        started.elapsed()
    });
    let unpack = timed(|| {
        let dir = TempDir::new("checkfu-bench-unpack").expect("dir");
        tools::pull_to_layout(&pushed, &dir.path().join("layout"), Instant::now() + tools::TOOL_TIMEOUT).expect("pull");
        let layout = OciLayout::open(&dir.path().join("layout")).expect("layout");
        let image = layout.image(Selector::Only).expect("image");
        std::fs::create_dir(dir.path().join("rootfs")).expect("rootfs");
        let started = Instant::now();
        layout.unpack(&image, &dir.path().join("rootfs"), Limits::default()).expect("unpack");
        started.elapsed()
    });
    let reference = pushed.to_string();
    let image = timed(|| probe(&["--image", &reference], &[]));
    let runs = |runtime: &str| -> bool {
        let works = Command::new(runtime).arg(if runtime == "docker" { "version" } else { "--version" }).output();
        works.is_ok_and(|o| o.status.success())
    };
    let under: Vec<(&str, Duration)> = [("image-podman", "podman"), ("image-docker", "docker")]
        .into_iter()
        .filter(|(_, runtime)| runs(runtime))
        .map(|(name, runtime)| (name, timed(|| probe(&["--image", &reference, "--runtime", runtime], &[]))))
        .collect();
    let context = scaffold.to_str().expect("utf-8");
    let build_context = timed(|| probe(&["--build-context", context, "--entrypoint", "/opt/checkfu/bin/checkfu-oneshot"], &[]));
    drop(registry);
    let _ = tools::remove_image(&builder, "localhost/checkfu-bench:1");
    let _ = builder.remove_storage();

    println!("image lane over the process lane, {} (median of {RUNS}; one turn and its resume)", machine());
    let ratio = |d: Duration| d.as_secs_f64() / process.as_secs_f64();
    for (name, d) in [
        ("process", process),
        ("build", build),
        ("push", push),
        ("pull", pull),
        ("unpack", unpack),
        ("image", image),
        ("build-context", build_context),
    ]
    .into_iter()
    .chain(under)
    {
        println!("{name:<14} {:>8.0} ms  {:>6.2}x process", d.as_secs_f64() * 1000.0, ratio(d));
    }
}
