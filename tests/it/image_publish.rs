//! `next.publish` end to end: `init` writes a scaffold and prints the command that tests it;
//! that command, run as printed, builds the scaffold, passes, and hands back the publish
//! commands and the retest; the publish commands, run as printed (their `<published-name>`
//! filled in) with the builder's ordinary storage and a real registry, push an image with
//! the very digest the retest names, and the retest, run as printed, passes on it. The run
//! carries a variable and a home file that `add` cannot carry, so both results say so, and
//! the retest keeps them; the published name is on this machine's loopback, so the `add` it
//! hands back carries the warning.

use checkfu_wire_probe::Budget;
use std::path::Path;
use std::process::{Command, Output};

use checkfu_wire_probe::image::tools::{self, Registry, RegistryOptions};
use checkfu_wire_probe::image::TempDir;
use serde_json::{json, Value};

use crate::probe_support::PROBE;
use crate::support::image::serial;

/// `command` run by `sh`, with `$0` the probe's program, in `env`.
fn shell(command: &str, env: &[(&str, &Path)]) -> Output {
    Command::new("sh").arg("-c").arg(command).arg(PROBE).envs(env.iter().copied()).output().expect("sh")
}

/// The report a probe command printed on stdout.
fn report(output: &Output, command: &str) -> Value {
    let report: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {command}: {}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(output.status.code(), Some(0), "{command}: {report:#}");
    report
}

/// The builder's ordinary configuration, pointed at `dir`: its storage, no credentials, and
/// `registry` (plain HTTP on loopback) allowed, as an author's machine would have it for
/// their own registry.
fn builder_env(dir: &Path, registry: &str) -> Vec<(&'static str, std::path::PathBuf)> {
    for sub in ["root", "runroot", "home", "run", "tmp"] {
        std::fs::create_dir_all(dir.join(sub)).expect("dir");
    }
    let storage = format!("[storage]\ndriver = \"vfs\"\ngraphroot = \"{0}/root\"\nrunroot = \"{0}/runroot\"\n", dir.display());
    std::fs::write(dir.join("storage.conf"), storage).expect("storage.conf");
    let registries = format!("unqualified-search-registries = []\n[[registry]]\nlocation = \"{registry}\"\ninsecure = true\n");
    std::fs::write(dir.join("registries.conf"), registries).expect("registries.conf");
    std::fs::write(dir.join("auth.json"), "{\"auths\":{}}\n").expect("auth.json");
    // podman's own state and event log go there too.
    let engine = format!("[engine]\nevents_logger = \"none\"\ntmp_dir = \"{}/run/libpod\"\n", dir.display());
    std::fs::write(dir.join("containers.conf"), engine).expect("containers.conf");
    vec![
        ("CONTAINERS_CONF", dir.join("containers.conf")),
        ("CONTAINERS_STORAGE_CONF", dir.join("storage.conf")),
        ("CONTAINERS_REGISTRIES_CONF", dir.join("registries.conf")),
        ("REGISTRY_AUTH_FILE", dir.join("auth.json")),
        ("HOME", dir.join("home")),
        ("XDG_RUNTIME_DIR", dir.join("run")),
        ("TMPDIR", dir.join("tmp")),
    ]
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn the_printed_publish_commands_push_the_digest_the_retest_names() {
    publish_as_printed("buildah");
}

/// The same with podman as the builder: its `build` and `push`, as printed, reproduce the
/// digest its build had in the probe.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_podman)),
    ignore = "CHECKFU_IMAGE_TOOLS and CHECKFU_PODMAN are not both set: apt-get install podman and the image tools (see .ci/run)"
)]
fn podmans_printed_publish_commands_push_the_digest_the_retest_names() {
    publish_as_printed("podman");
}

/// `init`, its printed command built by `builder`, the printed publish commands and the
/// printed retest.
fn publish_as_printed(builder: &str) {
    let _serial = serial();
    let parent = TempDir::new("checkfu-publish").expect("dir");
    let scaffold = parent.path().join("custom-oneshot");
    let init = Command::new(PROBE).args(["init", "oneshot", "--directory"]).arg(&scaffold).output().expect("init");
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    let printed = String::from_utf8_lossy(&init.stdout).into_owned();
    let test = printed.lines().find_map(|l| l.strip_prefix("next     checkfu-wire ")).expect("init prints the next command");

    // The printed command, with a variable and a home file the image does not hold.
    let command =
        format!("exec \"$0\" {test} --format=json --builder={builder} --env=CHECKFU_EXTRA=1 '--home-file=cfg/x.json={{\"a\": 1}}'");
    let run = report(&shell(&command, &[]), &command);
    let next = &run["next"];
    let digest = run["image"]["digest"].as_str().expect("digest").to_owned();
    let not_carried = json!([
        {"flag": "--env", "value": "CHECKFU_EXTRA=1", "origin": "command_line"},
        {"flag": "--home-file", "value": "cfg/x.json={\"a\": 1}", "origin": "command_line"}
    ]);
    assert_eq!((&next["add_is_exact"], &next["not_carried"]), (&json!(false), &not_carried), "{next:#}");
    let retest = next["retest"].as_str().expect("retest");
    assert!(retest.contains("--env=CHECKFU_EXTRA=1") && retest.contains("cfg/x.json="), "the retest keeps every flag: {retest}");
    let publish = &next["publish"];
    assert_eq!((&publish["digest"], &publish["reproduces_digest"]), (&json!(digest), &json!(true)), "{next:#}");
    let build = publish["build"].as_str().expect("build");
    let push = publish["push"].as_str().expect("push");
    let verb = if builder == "podman" { "build" } else { "bud" };
    let flags = format!("{builder} {verb} --isolation chroot --timestamp 0 --layers=false -t '<published-name>' ");
    assert!(build.starts_with(&flags), "{build}");

    // The scaffold's README carries the same commands, for its own directory.
    let readme = std::fs::read_to_string(scaffold.join("README.md")).expect("README");
    let context = scaffold.to_str().expect("utf-8");
    let here = build.strip_suffix(context).map(|b| format!("{b}.")).expect("the build names the context");
    assert!(readme.contains(&here) && readme.contains(push), "{readme}");

    // Published as printed: the digest is the one the retest names.
    let registry = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    let name = format!("{}/team/custom-oneshot", registry.address());
    let storage = TempDir::new("checkfu-publish-storage").expect("dir");
    let env = builder_env(storage.path(), &registry.address());
    let env: Vec<(&str, &Path)> = env.iter().map(|(k, v)| (*k, v.as_path())).collect();
    for step in [build, push] {
        let command = step.replace("<published-name>", &name);
        let output = shell(&command, &env);
        assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let command = format!("exec \"$0\" {}", retest.replace("<published-name>", &name).trim_start_matches("checkfu-wire "));
    let again = report(&shell(&command, &[]), &command);
    assert_eq!(again["image"]["reference"], format!("{name}@{digest}"), "{again:#}");
    assert!(again["image"].get("built").is_none(), "not rebuilt: {again:#}");
    let next = &again["next"];
    assert!(next["add"].as_str().is_some_and(|a| a.contains(&format!("--image={name}@{digest}"))), "{next:#}");
    assert_eq!((&next["add_is_exact"], &next["not_carried"]), (&json!(false), &not_carried), "{next:#}");
    let warning = next["warning"].as_str().unwrap_or_default();
    assert!(warning.contains("cannot be pulled from anywhere else"), "a loopback reference: {next:#}");
    registry.stop().expect("the registry stops");
}
