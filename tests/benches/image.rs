//! What the image lane costs over the process lane, on the same harness: the one-shot
//! scaffold's `entrypoint.sh` (`checkfu-wire init oneshot`), run once as a local command
//! (`busybox sh entrypoint.sh`) and once as an image built from the scaffold.
//!
//! Not a timing loop: each figure is whole operations, run a few times, the median kept.
//! - `process`: `probe -- busybox sh entrypoint.sh …`, one turn with its resume;
//! - `build`, `push`, `pull`, `unpack`: the image lane's parts, each by itself (buildah,
//!   the temporary registry, skopeo by digest, the crate's unpacker);
//! - `image`: `probe --image REF --no-image-cache` with the same flags (pull, unpack and
//!   run), under the detected runtime (bubblewrap), and `image-podman`, `image-docker` under
//!   those (each only when it is installed and, for docker, `DOCKER_HOST` or the default
//!   socket answers);
//! - `image-stored`: the same run of a digest already in the image store (its seal checked,
//!   nothing pulled or unpacked; the median of the runs after the first);
//! - `build-context`: `probe --build-context DIR` (build, push, pull, unpack and run).
//!
//! Then, with `CHECKFU_REAL_ONESHOT` (`tests/real-agents/install-oneshot.sh DIR`), a real
//! npm CLI: Claude Code through its shim and recipe (`recipes/oneshot/claude-code.json`:
//! two runs, the resume, the output schema), as a process and in a `FROM scratch` image of
//! this machine's node, busybox and the package (as `tests/it/image_real.rs` makes it,
//! hundreds of MB): `first` is a run with an empty store (pull, check, unpack, store),
//! `second` a run of the stored digest, and `seal check` what the store's check of that
//! entry costs by itself.
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

use checkfu_wire_probe::Budget;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use whole_runs::{machine, median};

use checkfu_wire_probe::image::store::{self, Lookup, Store, StorePlan};
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
    // `cargo bench --bench image -- claude-code`: the real CLI's part alone.
    if !std::env::args().any(|a| a == "claude-code") {
        busybox_scaffold(parent.path());
    }
    for names in [1_000, 30_000] {
        println!("seal check of an entry of {names} names: {:.1} ms", seal_check_of(parent.path(), names).as_secs_f64() * 1000.0);
    }
    if real_cli(parent.path()).is_none() {
        println!("\nClaude Code: CHECKFU_REAL_ONESHOT is not set (tests/real-agents/install-oneshot.sh DIR), not measured");
    }
}

/// The one-shot scaffold's part.
fn busybox_scaffold(parent: &Path) {
    let scaffold = parent.join("scaffold");
    let made = Command::new(PROBE).args(["init", "oneshot", "--directory"]).arg(&scaffold).output().expect("init");
    assert!(made.status.success(), "init: {}", String::from_utf8_lossy(&made.stderr));
    let script = scaffold.join("entrypoint.sh");
    let busybox = scaffold.join("busybox");
    let (busybox, script) = (busybox.to_str().expect("utf-8"), script.to_str().expect("utf-8"));

    let process = timed(|| probe(&[], &[busybox, "sh", script]));

    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    let build = timed(|| {
        let started = Instant::now();
        tools::build(&builder, &scaffold, None, "localhost/checkfu-bench:1", &Budget::after(tools::TOOL_TIMEOUT)).expect("build");
        started.elapsed()
    });
    let registry = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    let mut pushed = None;
    let push = timed(|| {
        let started = Instant::now();
        pushed = Some(tools::push(&builder, "localhost/checkfu-bench:1", &registry, &Budget::after(tools::TOOL_TIMEOUT)).expect("push"));
        started.elapsed()
    });
    let pushed = pushed.expect("pushed");
    let pull = timed(|| {
        let dir = TempDir::new("checkfu-bench-layout").expect("dir");
        let started = Instant::now();
        tools::pull_to_layout(&pushed, &dir.path().join("layout"), &Budget::after(tools::TOOL_TIMEOUT)).expect("pull");
        started.elapsed()
    });
    let unpack = timed(|| {
        let dir = TempDir::new("checkfu-bench-unpack").expect("dir");
        tools::pull_to_layout(&pushed, &dir.path().join("layout"), &Budget::after(tools::TOOL_TIMEOUT)).expect("pull");
        let layout = OciLayout::open(&dir.path().join("layout")).expect("layout");
        let image = layout.image(Selector::Only).expect("image");
        std::fs::create_dir(dir.path().join("rootfs")).expect("rootfs");
        let started = Instant::now();
        layout.unpack(&image, &dir.path().join("rootfs"), Limits::default()).expect("unpack");
        started.elapsed()
    });
    let reference = pushed.to_string();
    let image = timed(|| probe(&["--image", &reference, "--no-image-cache"], &[]));
    let store = parent.join("store");
    let store_flag = format!("--image-cache={}", store.display());
    let _first = probe(&["--image", &reference, &store_flag], &[]);
    let image_stored = timed(|| probe(&["--image", &reference, &store_flag], &[]));
    let runs = |runtime: &str| -> bool {
        let works = Command::new(runtime).arg(if runtime == "docker" { "version" } else { "--version" }).output();
        works.is_ok_and(|o| o.status.success())
    };
    let under: Vec<(&str, Duration)> = [("image-podman", "podman"), ("image-docker", "docker")]
        .into_iter()
        .filter(|(_, runtime)| runs(runtime))
        .map(|(name, runtime)| (name, timed(|| probe(&["--image", &reference, "--runtime", runtime, "--no-image-cache"], &[]))))
        .collect();
    let context = scaffold.to_str().expect("utf-8");
    let build_context = timed(|| probe(&["--build-context", context, "--entrypoint", "/opt/checkfu/bin/checkfu-oneshot"], &[]));
    drop(registry);
    let _ = tools::remove_image(&builder, "localhost/checkfu-bench:1", &Budget::after(tools::QUICK_TIMEOUT));
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
        ("image-stored", image_stored),
        ("build-context", build_context),
    ]
    .into_iter()
    .chain(under)
    {
        println!("{name:<14} {:>8.0} ms  {:>6.2}x process", d.as_secs_f64() * 1000.0, ratio(d));
    }
}

/// The real CLI's part: `None` without `CHECKFU_REAL_ONESHOT`.
fn real_cli(parent: &Path) -> Option<()> {
    let installed = PathBuf::from(std::env::var_os("CHECKFU_REAL_ONESHOT")?);
    let package = installed.join("node_modules/@anthropic-ai/claude-code");
    let root = env!("CARGO_MANIFEST_DIR").trim_end_matches("/tests").to_owned();
    let recipe = format!("{root}/recipes/oneshot/claude-code.json");
    let schema = parent.join("answer.schema.json");
    std::fs::write(&schema, ANSWER_SCHEMA).expect("schema");
    let schema = schema.to_str().expect("utf-8").to_owned();
    let common = ["--recipe", &recipe, "--output-schema", &schema, "--step-timeout", "90", "--deadline", "300"];
    let mut path = installed.join("node_modules/.bin").into_os_string();
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let run = |extra: &[&str]| -> Duration {
        let started = Instant::now();
        let output = Command::new(PROBE)
            .args(["probe", "--format", "json"])
            .args(common)
            .args(extra)
            .env("PATH", &path)
            .stderr(Stdio::piped())
            .output()
            .expect("the probe runs");
        let elapsed = started.elapsed();
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_default();
        assert!(output.status.success(), "the probe failed: {extra:?}: {report:#}\n{}", String::from_utf8_lossy(&output.stderr));
        elapsed
    };

    let context = image_support::RootContext::new("checkfu-bench-claude-code");
    let shims = PathBuf::from(&root).join("recipes/oneshot/shims");
    context
        .program(&node(), "/usr/bin/node")
        .busybox()
        .tree(&shims, "/opt/checkfu/shims", &[])
        .tree(&package, "/opt/claude-code/node_modules/@anthropic-ai/claude-code", &[])
        .libraries(&package.join("bin/claude.exe"))
        .link("/opt/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "/usr/local/bin/claude")
        .dockerfile("ENV PATH=/usr/local/bin:/usr/bin:/bin\nWORKDIR /workspace\nENTRYPOINT [\"/opt/checkfu/shims/claude-code.mjs\"]\n");
    let bytes = context.bytes();
    let served = image_support::Served::build(context.path(), "checkfu-bench-claude-code");
    drop(context);
    let reference = served.reference.to_string();
    let in_image = ["--image", &reference, "--entrypoint", "/opt/checkfu/shims/claude-code.mjs"];

    // Interleaved, so that the machine's other load falls on all three alike.
    let (mut process, mut first, mut second, mut check) = (vec![], vec![], vec![], vec![]);
    let mut names = 0;
    for round in 0..RUNS {
        let store = parent.join(format!("claude-store-{round}"));
        let store_flag = format!("--image-cache={}", store.display());
        process.push(run(&[]));
        first.push(run(&[&in_image[..], &[&store_flag]].concat()));
        second.push(run(&[&in_image[..], &[&store_flag]].concat()));
        let opened = Store::open(&StorePlan { dir: store.clone(), max_bytes: store::DEFAULT_MAX_BYTES }).expect("store");
        let started = Instant::now();
        let Lookup::Hit(entry) = opened.lookup(served.reference.digest(), None) else { panic!("the stored entry's seal holds") };
        check.push(started.elapsed());
        names = entry.meta.names;
        drop(entry);
        let _ = opened.prune(&[]);
    }
    served.stop();
    let (process, first, second, check) = (median(process), median(first), median(second), median(check));
    println!(
        "\nClaude Code (recipes/oneshot/claude-code.json: two runs and the schema), {} MB image, {} (median of {RUNS})",
        bytes / 1_000_000,
        machine()
    );
    let row = |name: &str, d: Duration| {
        let over = d.as_secs_f64() - process.as_secs_f64();
        println!(
            "{name:<14} {:>8.0} ms  {:>6.2}x process  {over:>+7.2} s over it",
            d.as_secs_f64() * 1000.0,
            d.as_secs_f64() / process.as_secs_f64()
        );
    };
    row("process", process);
    row("image first", first);
    row("image second", second);
    println!("{:<14} {:>8.2} ms  ({names} names in the entry)", "seal check", check.as_secs_f64() * 1000.0);
    Some(())
}

/// What the store's check costs by the number of names, on an entry of `names` small files
/// in directories of 100 (a node_modules' shape): the median of [`RUNS`] lookups.
fn seal_check_of(parent: &Path, names: usize) -> Duration {
    let store = Store::open(&StorePlan { dir: parent.join(format!("seal-{names}")), max_bytes: store::DEFAULT_MAX_BYTES }).expect("store");
    let pending = store.begin().expect("begin");
    for i in 0..names {
        let dir = pending.root().join(format!("d{}", i / 100));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join(format!("f{i}.js")), i.to_string()).expect("file");
    }
    let digest = checkfu_wire_probe::image::digest_of(format!("seal-{names}").as_bytes());
    let config = store::Config::default();
    let new = store::NewEntry { digest: &digest, reference: String::from("bench"), config: &config, unpacked_bytes: 0 };
    drop(store.commit(pending, &new, None).map_err(|(_, why)| why).expect("stored"));
    let checked = timed(|| {
        let started = Instant::now();
        assert!(matches!(store.lookup(&digest, None), Lookup::Hit(_)), "the seal holds");
        started.elapsed()
    });
    let _ = store.prune(&[]);
    checked
}

/// `node` as this machine runs it: the first on `PATH`.
fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join("node")).find(|p| p.is_file());
    found.expect("node on PATH").canonicalize().expect("node")
}

/// The structured answer the recipe's output_schema step asks for.
const ANSWER_SCHEMA: &str =
    r#"{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false}"#;
