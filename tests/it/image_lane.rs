//! `probe --image NAME@sha256:…` end to end, on a real image: buildah builds a one-shot CLI
//! (a busybox-static shell script that posts the prompt to the relay it is pointed at, as
//! a minimal real CLI would), the distribution registry serves it on loopback, and the
//! probe pulls it by digest, unpacks it and runs it with bubblewrap inside its fence. The
//! relay's record judges it, as it judges a local CLI: an image whose CLI only echoes its
//! prompt fails. Refusals: a reference without a digest (exit 2, nothing started) and a
//! digest the registry does not have (exit 1, the registry's answer).

use checkfu_wire_probe::image::TempDir;

use crate::probe_support::{probe, Run};
use crate::support::image::{busybox_cli_context, image_dirs, serial, tool, RootContext, Served, BUSYBOX_CLI_FLAGS, PAGE_ONESHOT_FLAGS};

/// The busybox CLI's run with these flags.
fn run_busybox_cli(flags: &[&str]) -> Run {
    probe(&[BUSYBOX_CLI_FLAGS, flags].concat(), &[])
}

/// The busybox CLI's image `reference` run, with `more` flags.
fn run_image(reference: &str, more: &[&str]) -> Run {
    run_busybox_cli(&[&["--image", reference][..], more].concat())
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_pinned_by_digest_runs_in_the_fence_and_is_judged_by_the_relay() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot");
    let pushed = served.reference.clone();
    let reference = pushed.to_string();
    let before = image_dirs();

    let run = run_image(&reference, &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["digest"], pushed.digest().to_string());
    assert_eq!(run.json["image"]["runtime"], "bubblewrap");
    assert_eq!(run.json["image"]["working_directory"], "/workspace");
    // The call was served on the relay's record, through the probe's fence.
    assert!(run.json["model_plane"]["calls"].as_array().is_some_and(|c| !c.is_empty()), "{}", run.pretty());
    // Nothing of the image stays on disk.
    let after: Vec<String> = image_dirs().into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(after, Vec::<String>::new());

    // The next steps of an image run without selectors: the exact add command, the
    // missing flags, and the verify command as a template.
    let next = &run.json["next"];
    let add = next["add"].as_str().expect("add");
    assert!(add.starts_with("checkfu harness add oci --name=checkfu-probe --image="), "{add}");
    // The harness as it ran: the image's own entrypoint, the declaration's members.
    assert!(add.contains("--protocol=oneshot-v1 --entrypoint=/usr/local/bin/oneshot --prompt-transport=stdin --output-mode=text"), "{add}");
    assert!(add.contains(&format!("--image={reference}")) && add.contains("--prompt-transport=stdin"), "{add}");
    assert!(!add.contains("--format") && !add.contains("--kill-grace"), "probe-only flags stay out: {add}");
    assert_eq!(next["required_flags"], serde_json::json!(["--sandbox", "--model"]));
    assert_eq!(next["verify_is_template"], true);
    // With both selectors and the platform's URL: both commands exact, the URL kept.
    let selected = run_image(&reference, &["--sandbox", "sb", "--model", "mr", "--api-url", "https://api.example"]);
    assert_eq!(selected.status, 0, "{}", selected.pretty());
    let next = &selected.json["next"];
    assert_eq!(next["required_flags"], serde_json::json!([]));
    assert_eq!(next["verify_is_template"], false);
    assert_eq!(
        next["verify"],
        "checkfu harness verify checkfu-probe --sandbox=sb --model=mr --wait --api-url=https://api.example",
        "{}",
        selected.pretty()
    );
    assert!(next["add"].as_str().is_some_and(|a| a.contains("--sandbox=sb --model=mr --api-url=https://api.example")), "{next}");
    // A connection file whose defaults hold both: nothing required, the file kept.
    let connection = TempDir::new("checkfu-connection").expect("dir");
    let file = connection.path().join("connection.json");
    std::fs::write(&file, r#"{"defaults": {"sandbox": "sb", "model": "mr"}}"#).expect("write");
    let from_file = run_image(&reference, &["--connection-file", file.to_str().expect("utf-8")]);
    assert_eq!(from_file.json["next"]["required_flags"], serde_json::json!([]), "{}", from_file.pretty());
    assert!(from_file.json["next"]["verify"].as_str().is_some_and(|v| v.contains("--connection-file=")), "{}", from_file.pretty());

    // The text report says which image ran, and the next steps.
    let text = std::process::Command::new(crate::probe_support::PROBE)
        .arg("probe")
        .args(BUSYBOX_CLI_FLAGS)
        .args(["--image", &reference])
        .output()
        .expect("probe");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("image    {reference}, from registry, in /workspace\n")), "{text}");
    assert!(text.contains("image    runtime bubblewrap (detected); fence: the probe's network namespace"), "{text}");
    assert!(text.contains("next     add: checkfu harness add oci --name=checkfu-probe"), "{text}");
    assert!(text.contains("next     verify (a template): checkfu harness verify checkfu-probe"), "{text}");
    assert!(text.contains("next     required flags: --sandbox, --model"), "{text}");

    // The same image, whose CLI only echoes its prompt: the nonce is in the output, no
    // reply token is, and the relay served nothing.
    let echo = run_image(&reference, &["--argv=echo"]);
    assert_eq!(echo.status, 1, "{}", echo.pretty());
    assert_eq!(echo.json["steps"]["prompt_exchange"]["status"], "failed", "{}", echo.pretty());

    // A digest the registry does not have: exit 1 with the registry's answer.
    let mut wrong = pushed.digest().digest().to_owned();
    let flipped = if wrong.ends_with('0') { '1' } else { '0' };
    wrong.replace_range(wrong.len() - 1.., &flipped.to_string());
    let missing = format!("{}/{}@sha256:{wrong}", pushed.registry().expect("registry"), pushed.repository());
    let gone = run_image(&missing, &[]);
    assert_eq!(gone.status, 1, "{}", gone.stderr);
    assert!(gone.stderr.contains("manifest unknown"), "{}", gone.stderr);

    served.stop();
}

#[test]
fn a_reference_without_a_digest_is_refused_before_anything_starts() {
    for (reference, expected) in [("127.0.0.1:5000/cli:1", "digest"), ("127.0.0.1:5000/cli@sha256:abc", "64")] {
        let run = run_image(reference, &[]);
        assert_eq!(run.status, 2, "{reference}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{reference}: {}", run.stderr);
        assert!(run.json.is_null(), "nothing ran");
    }
    // An image's flags without an image: refused by the parser, naming what is missing.
    for flags in [&["--runtime", "podman"][..], &["--image-source", "podman"]] {
        let run = probe(&[&["--protocol", "oneshot-v1"][..], flags].concat(), &["true"]);
        assert_eq!(run.status, 2, "{flags:?}: {}", run.stderr);
        assert!(run.stderr.contains("--image"), "{flags:?}: {}", run.stderr);
        assert!(run.json.is_null(), "nothing ran");
    }
}

/// `--build-context`: built with buildah, pushed to a temporary loopback registry, pulled by
/// the pushed digest and run; the result says how, and hands back the published-image
/// retest, never an add command for the ephemeral image; nothing of it stays behind.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_build_context_is_built_pushed_run_by_digest_and_retested_as_published() {
    let _serial = serial();
    let context = busybox_cli_context();
    let before = image_dirs();
    let dir = context.path().to_str().expect("utf-8").to_owned();
    let run = run_busybox_cli(&["--name", "checkfu-oneshot", "--build-context", &dir, "--builder", "buildah", "--sandbox", "sb"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    let built = &run.json["image"]["built"];
    assert_eq!(built["builder"], "buildah");
    let pushed = built["pushed"].as_str().expect("pushed");
    assert!(pushed.starts_with("127.0.0.1:") && pushed.contains("/checkfu-oneshot@sha256:"), "{pushed}");
    let digest = run.json["image"]["digest"].as_str().expect("digest");
    assert!(pushed.ends_with(digest), "{pushed} ran as {digest}");
    let next = &run.json["next"];
    assert!(next.get("add").is_none() && next.get("verify").is_none(), "no add for an ephemeral image: {next}");
    let retest = next["retest"].as_str().expect("retest");
    assert!(retest.starts_with("checkfu-wire probe"), "{retest}");
    assert!(retest.contains(&format!("--image=<published-name>@{digest}")), "{retest}");
    assert!(!retest.contains("--build-context") && !retest.contains("--builder"), "{retest}");
    assert!(retest.contains("--sandbox=sb"), "the context kept: {retest}");
    // The registry is stopped and the image, its layout and its root are gone.
    let port: u16 = pushed.trim_start_matches("127.0.0.1:").split('/').next().and_then(|p| p.parse().ok()).expect("port");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "the temporary registry still listens");
    let after: Vec<String> = image_dirs().into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(after, Vec::<String>::new());

    // A build that fails: exit 1 with the builder's own error.
    std::fs::write(context.path().join("Dockerfile"), "FROM scratch\nCOPY nothing-here /x\n").expect("Dockerfile");
    let broken = run_busybox_cli(&["--build-context", &dir]);
    assert_eq!(broken.status, 1, "{}", broken.stderr);
    assert!(broken.stderr.contains("nothing-here"), "{}", broken.stderr);
}

/// A build context holding a real, dynamically linked ACP agent (the fixture agent) with the
/// libraries `ldd` names, at their own paths, on `FROM scratch`.
fn acp_context() -> RootContext {
    let context = RootContext::new("checkfu-image-acp");
    context
        .program(std::path::Path::new(crate::probe_support::AGENT), "/opt/custom/bin/acp-agent")
        .dockerfile("WORKDIR /workspace\nENTRYPOINT [\"/opt/custom/bin/acp-agent\"]\n");
    context
}

/// The page's ACP wrapper path: a build context holding an ACP agent (its arguments refused
/// when unknown, so `--arg` is seen to reach it), `--entrypoint` and `--arg`, run through initialize, session/new, the prompt exchange and teardown in the image.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_acp_agent_in_a_built_image_passes_its_steps() {
    let _serial = serial();
    let context = acp_context();
    let dir = context.path().to_str().expect("utf-8").to_owned();
    let run = probe(
        &[
            "--name",
            "custom-acp",
            "--build-context",
            &dir,
            "--entrypoint",
            "/opt/custom/bin/acp-agent",
            "--protocol",
            "acp-v1",
            // The page's wrapper takes `--arg=--stdio`; the fixture agent takes `--turns N`.
            "--arg=--turns",
            "--arg=1",
            "--working-directory",
            "/workspace",
            // A variable the image does not set, which `add` cannot carry.
            "--env=CHECKFU_ACP_EXTRA=1",
        ],
        &[],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
    assert_eq!(run.json["next"]["add_is_exact"], false, "{}", run.pretty());
    assert_eq!(
        run.json["next"]["not_carried"],
        serde_json::json!([{"flag": "--env", "value": "CHECKFU_ACP_EXTRA=1", "origin": "command_line"}])
    );
    assert!(run.json["steps"].get("resume").is_none() && run.json["steps"].get("output_schema").is_none());
    assert_eq!(run.json["image"]["runtime"], "bubblewrap");
    assert_eq!(run.json["image"]["working_directory"], "/workspace");
    // The harness's argv as spawned: bubblewrap's, over the image's root, ending with the
    // agent's own command as inside the image.
    let command = run.json["harness"]["command"].as_array().expect("command");
    assert!(command.first().and_then(|c| c.as_str()).is_some_and(|c| c.ends_with("bwrap")), "{}", run.pretty());
    assert_eq!(command.last(), Some(&serde_json::json!("1")), "{}", run.pretty());
    assert!(
        run.json["next"]["retest"].as_str().is_some_and(|r| r.contains("--arg=--turns --arg=1") && r.contains("--image=")),
        "{}",
        run.pretty()
    );
}

/// `init oneshot` and `init acp`, then the page's own build-context commands, verbatim but
/// for the program's name: both scaffolds pass every step their protocol has (the one-shot
/// one its resume too), and `init` refuses a directory that holds anything.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn both_scaffolds_pass_the_pages_commands() {
    let _serial = serial();
    let parent = TempDir::new("checkfu-init").expect("dir");
    let init = |kind: &str, dir: &std::path::Path| {
        std::process::Command::new(crate::probe_support::PROBE).args(["init", kind, "--directory"]).arg(dir).output().expect("init")
    };
    let oneshot = parent.path().join("custom-oneshot");
    let made = init("oneshot", &oneshot);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    for file in ["Dockerfile", "entrypoint.sh", "README.md", "recipe.json", "busybox"] {
        assert!(oneshot.join(file).is_file(), "{file}");
    }
    let refused = init("oneshot", &oneshot);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not empty"));

    let dir = oneshot.to_str().expect("utf-8");
    let mut options = vec!["--name", "custom-oneshot", "--build-context", dir, "--entrypoint", "/opt/checkfu/bin/checkfu-oneshot"];
    options.extend_from_slice(PAGE_ONESHOT_FLAGS);
    options.extend_from_slice(&["--output-schema-flag=--output-schema", "--output-schema-transport", "argv_path"]);
    let run = probe(&options, &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    // The page's command declares the output-schema path and gives no schema file: it is
    // exercised with the probe's own schema, so every declared path ran and passed.
    for step in ["prompt_exchange", "resume", "output_schema", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
    let retest = run.json["next"]["retest"].as_str().expect("retest").to_owned();
    let built = run.json["image"]["digest"].as_str().expect("digest").to_owned();

    // Published: the author builds the same context as the probe did and pushes it (here to a
    // loopback registry); the digest is the one the retest names, and the printed retest, its
    // name filled in, passes by that digest without rebuilding.
    let published = Served::build(&oneshot, "custom-oneshot");
    assert_eq!(published.reference.digest().to_string(), built, "the build is reproducible, so the retest's digest is the published one");
    let name = format!("{}/{}", published.reference.registry().expect("registry"), published.reference.repository());
    let command = retest.replace("<published-name>", &name);
    let program = command.strip_prefix("checkfu-wire ").expect("the retest runs checkfu-wire");
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" {program}"))
        .arg(crate::probe_support::PROBE)
        .output()
        .expect("retest");
    let again: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {command}"));
    assert_eq!(output.status.code(), Some(0), "{command}: {again:#}");
    assert_eq!(again["image"]["reference"], format!("{name}@{built}"), "{again:#}");
    assert!(again["image"].get("built").is_none(), "not rebuilt: {again:#}");
    for step in ["prompt_exchange", "resume", "output_schema", "teardown"] {
        assert_eq!(again["steps"][step]["status"], "passed", "{step}: {again:#}");
    }
    assert_eq!(again["next"]["add_is_exact"], true, "{again:#}");
    assert!(again["next"]["add"].as_str().is_some_and(|a| a.contains(&format!("--image={name}@{built}"))), "{again:#}");

    let acp = parent.path().join("custom-acp");
    let made = init("acp", &acp);
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let dir = acp.to_str().expect("utf-8");
    let run = probe(
        &[
            "--name",
            "custom-acp",
            "--build-context",
            dir,
            "--entrypoint",
            "/opt/custom/bin/acp-agent",
            "--protocol",
            "acp-v1",
            "--arg=--stdio",
            "--working-directory",
            "/workspace",
        ],
        &[],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "cancellation", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
}

/// `--image-source oci:DIR`: an OCI layout on disk, found by the reference's digest and
/// checked blob by blob; the directory is only read. A digest it does not hold, and a
/// layer changed after the fact, are refused with what is at fault.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_is_read_from_an_oci_layout_directory_by_its_digest() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot");
    let pushed = served.reference.clone();
    let layouts = TempDir::new("checkfu-test-layout").expect("dir");
    let dir = layouts.path().join("layout");
    let source = format!("docker://{}", pushed.pull_name());
    tool("skopeo", &["copy", "--src-tls-verify=false", &source, &format!("oci:{}", dir.display())], &[]);
    served.stop();
    let from = format!("--image-source=oci:{}", dir.display());
    let before = image_dirs();

    let run = run_image(&pushed.to_string(), &[&from]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["source"], format!("oci:{}", dir.display()));
    assert_eq!(run.json["image"]["digest"], pushed.digest().to_string());
    // Read from this machine: the platform still needs it published under that name.
    let advice = run.json["next"]["advice"].as_str().expect("advice");
    assert!(advice.contains("publish it as") && advice.contains(&pushed.pull_name()), "{advice}");
    assert!(dir.join("index.json").is_file(), "the layout is only read");
    assert_eq!(image_dirs().into_iter().filter(|d| !before.contains(d)).count(), 0, "nothing of the run stays");

    // A digest the layout does not hold.
    let absent = format!("{}/{}@sha256:{}", pushed.registry().unwrap_or_default(), pushed.repository(), "0".repeat(64));
    let missing = run_image(&absent, &[&from]);
    assert_eq!(missing.status, 1, "{}", missing.stderr);
    assert!(missing.stderr.contains(&"0".repeat(64)), "names the digest: {}", missing.stderr);

    // A layer changed after the fact: its blob no longer matches its digest.
    let manifest = std::fs::read_dir(dir.join("blobs/sha256"))
        .expect("blobs")
        .flatten()
        .max_by_key(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .expect("a layer");
    let mut bytes = std::fs::read(manifest.path()).expect("layer");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::set_permissions(manifest.path(), <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644))
        .expect("writable");
    std::fs::write(manifest.path(), bytes).expect("changed");
    // Without the store: a stored digest is not read from its source again.
    let changed = run_image(&pushed.to_string(), &[&from, "--no-image-cache"]);
    assert_eq!(changed.status, 1, "{}", changed.stderr);
    let blob = manifest.file_name().to_string_lossy().into_owned();
    assert!(changed.stderr.contains(&blob), "names the blob {blob}: {}", changed.stderr);
    assert_eq!(image_dirs().into_iter().filter(|d| !before.contains(d)).count(), 0, "nothing stays after a refusal");
}

/// `--image-source podman`: the machine's containers storage (here a private one, through
/// `CONTAINERS_STORAGE_CONF`, which podman and the probe's skopeo both read), resolved by
/// the digest podman pulled it by, with its registry already gone.
#[test]
#[cfg_attr(not(checkfu_podman), ignore = "CHECKFU_PODMAN is not set: apt-get install podman, then set it (see .ci/run)")]
fn an_image_is_read_from_podman_storage_by_its_digest() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot");
    let pushed = served.reference.clone();
    let storage = TempDir::new("checkfu-test-storage").expect("storage");
    let conf = storage.path().join("storage.conf");
    std::fs::write(
        &conf,
        format!("[storage]\ndriver = \"vfs\"\ngraphroot = \"{0}/root\"\nrunroot = \"{0}/run\"\n", storage.path().display()),
    )
    .expect("storage.conf");
    let env = [("CONTAINERS_STORAGE_CONF", conf.as_path())];
    tool("podman", &["pull", "--quiet", "--tls-verify=false", &pushed.pull_name()], &env);
    served.stop();

    let from_storage = [("CONTAINERS_STORAGE_CONF", conf.clone().into_os_string())];
    let run = crate::probe_support::probe_env(
        &[BUSYBOX_CLI_FLAGS, &["--image", &pushed.to_string(), "--image-source", "podman"]].concat(),
        &[],
        &from_storage,
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["source"], "podman");

    // A digest the storage does not hold: podman's storage says so, through skopeo.
    let absent = format!("{}/{}@sha256:{}", pushed.registry().unwrap_or_default(), pushed.repository(), "1".repeat(64));
    let missing =
        crate::probe_support::probe_env(&["--protocol", "oneshot-v1", "--image", &absent, "--image-source", "podman"], &[], &from_storage);
    assert_eq!(missing.status, 1, "{}", missing.stderr);
    assert!(missing.stderr.contains("does not resolve to an image"), "{}", missing.stderr);
    // The storage was the test's; podman's files there may be read-only.
    let _ = std::process::Command::new("podman").args(["rmi", "--all", "--force"]).env("CONTAINERS_STORAGE_CONF", &conf).output();
}

/// `--image-source docker`: the daemon's storage, by a digest the daemon pulled the image
/// by; a digest it holds no image by is refused with the daemon's answer.
#[test]
#[cfg_attr(not(checkfu_docker), ignore = "CHECKFU_DOCKER is not set: a docker daemon is needed (see .ci/run)")]
fn an_image_is_read_from_the_docker_daemon_by_a_digest_it_pulled() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot");
    let pushed = served.reference.clone();
    // docker treats 127.0.0.0/8 as an insecure registry by default.
    tool("docker", &["pull", "--quiet", &pushed.pull_name()], &[]);
    served.stop();
    let run = run_image(&pushed.to_string(), &["--image-source", "docker"]);
    let other = format!("{}/{}@sha256:{}", pushed.registry().unwrap_or_default(), pushed.repository(), "2".repeat(64));
    let refused = run_image(&other, &["--image-source", "docker"]);
    let _ = std::process::Command::new("docker").args(["rmi", "--force", &pushed.pull_name()]).output();

    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["source"], "docker");
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("docker"), "{}", refused.stderr);
}

/// `--allow-terminals` in an image, under each runtime there is: a `terminal/*` command runs
/// in the harness's image (it reads a file only the image holds), from the working directory
/// as the harness sees it, with the image's variables and not the caller's; a `cwd` the
/// harness names inside the image is the workspace, and `session/new` hands the harness that
/// directory.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_acp_agents_terminals_run_in_its_image() {
    let _serial = serial();
    let context = RootContext::new("checkfu-image-terminal");
    context.program(std::path::Path::new(crate::probe_support::AGENT), "/opt/custom/bin/acp-agent").busybox().dockerfile(
        "COPY marker /etc/checkfu-marker\nENV FROM_IMAGE=yes\nWORKDIR /workspace\nENTRYPOINT [\"/opt/custom/bin/acp-agent\"]\n",
    );
    std::fs::write(context.path().join("marker"), "inside the image\n").expect("marker");
    let served = Served::build(context.path(), "checkfu-terminal");
    let reference = served.reference.to_string();
    let record = TempDir::new("checkfu-terminal-record").expect("dir");
    let record_file = record.path().join("record.jsonl");
    // Set for the probe: it must not reach the command in the image.
    let line = "cat /etc/checkfu-marker; pwd; echo \"image=$FROM_IMAGE caller=${CHECKFU_CALLER_ONLY:-unset}\"";
    let mut runtimes = vec!["bubblewrap"];
    if cfg!(checkfu_podman) {
        runtimes.push("podman");
    }
    if cfg!(checkfu_docker) {
        runtimes.push("docker");
    }
    for runtime in runtimes {
        let run = crate::probe_support::probe_env(
            &[
                "--image",
                &reference,
                "--runtime",
                runtime,
                "--allow-terminals",
                "--record",
                record_file.to_str().expect("utf-8"),
                "--arg=--terminal-line",
                &format!("--arg={line}"),
                "--arg=--terminal-cwd",
                "--arg=/workspace",
            ],
            &[],
            &[("CHECKFU_CALLER_ONLY", std::ffi::OsString::from("leaked"))],
        );
        assert_eq!(run.status, 0, "{runtime}: {}", run.pretty());
        assert_eq!(run.json["image"]["runtime"], runtime);
        assert_eq!(run.json["client_requests"][0]["method"], "terminal/create", "{}", run.pretty());
        assert_eq!(run.json["client_requests"][0]["outcome"], "answered", "{}", run.pretty());
        let text = std::fs::read_to_string(&record_file).expect("record");
        assert!(
            text.contains(r#"(terminal exit 0 output \"inside the image\\n/workspace\\nimage=yes caller=unset\\n\")"#),
            "{runtime}: the command ran in the image, in its working directory, without the caller's variables: {text}"
        );
        // The harness was handed the workspace where it sees it.
        assert!(text.contains(r#""cwd":"/workspace""#), "{text}");
    }
}

/// The platform tool over HTTP in an image (issue 51): the probe's MCP server over HTTP runs
/// on the host side of the fence and needs nothing inside the image, so under each runtime
/// that runs the harness in the fence's network (bubblewrap, podman) an agent advertising
/// `mcpCapabilities.http` reaches it from inside the image and `platform_tool_http` passes,
/// while the stdio server, the probe's own binary, which is not in the image, is skipped.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_agent_reaches_the_probes_mcp_server_over_http_from_inside_the_fence() {
    let _serial = serial();
    let context = RootContext::new("checkfu-image-mcp-http");
    context
        .program(std::path::Path::new(crate::probe_support::AGENT), "/opt/custom/bin/acp-agent")
        .busybox()
        .dockerfile("WORKDIR /workspace\nENTRYPOINT [\"/opt/custom/bin/acp-agent\"]\n");
    let served = Served::build(context.path(), "checkfu-mcp-http");
    let reference = served.reference.to_string();
    let mut runtimes = vec!["bubblewrap"];
    if cfg!(checkfu_podman) {
        runtimes.push("podman");
    }
    for runtime in runtimes {
        let args = ["--image", &reference, "--runtime", runtime, "--no-cancellation", "--arg=--declare", "--arg=none", "--arg=--mcp-http"];
        let run = crate::probe_support::probe(&args, &[]);
        assert_eq!(run.status, 0, "{runtime}: {}", run.pretty());
        assert_eq!(run.json["steps"]["platform_tool_http"]["status"], "passed", "{runtime}: {}", run.pretty());
        let stdio = &run.json["steps"]["platform_tool"];
        assert_eq!(stdio["status"], "skipped", "{runtime}: {}", run.pretty());
        assert!(stdio["reason"].as_str().unwrap_or_default().contains("not inside the image"), "{runtime}: {}", run.pretty());
    }
}

/// `--builder docker`: the daemon builds the context, pushes it to the probe's loopback
/// registry (docker treats 127.0.0.0/8 as insecure), and the pushed digest runs; the daemon
/// keeps neither the built image nor its registry tag afterwards.
#[test]
#[cfg_attr(not(checkfu_docker), ignore = "CHECKFU_DOCKER is not set: a docker daemon is needed (see .ci/run)")]
fn docker_builds_a_context_that_runs_by_its_pushed_digest() {
    let _serial = serial();
    let images = || tool("docker", &["images", "--format", "{{.Repository}}:{{.Tag}}"], &[]);
    let before = images();
    let context = busybox_cli_context();
    let dir = context.path().to_str().expect("utf-8");
    let run = run_busybox_cli(&["--build-context", dir, "--builder", "docker", "--name", "checkfu-docker-built"]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["built"]["builder"], "docker", "{}", run.pretty());
    let pushed = run.json["image"]["built"]["pushed"].as_str().expect("pushed");
    assert!(pushed.starts_with("127.0.0.1:") && pushed.ends_with(run.json["image"]["digest"].as_str().expect("digest")), "{pushed}");
    let after = images();
    assert!(!after.contains("checkfu-docker-built"), "the daemon keeps the image: {after}");
    assert_eq!(before.lines().count(), after.lines().count(), "{before} / {after}");
}
