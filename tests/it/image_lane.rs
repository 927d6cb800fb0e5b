//! `probe --image NAME@sha256:…` end to end, on a real image: buildah builds a one-shot CLI
//! (a busybox-static shell script that posts the prompt to the relay it is pointed at, as
//! a minimal real CLI would), the distribution registry serves it on loopback, and the
//! probe pulls it by digest, unpacks it and runs it with bubblewrap inside its fence. The
//! relay's record judges it, as it judges a local CLI: an image whose CLI only echoes its
//! prompt fails. Refusals: a reference without a digest (exit 2, nothing started) and a
//! digest the registry does not have (exit 1, the registry's answer).

use checkfu_wire_probe::image::tools;
use checkfu_wire_probe::image::TempDir;

use crate::probe_support::image::{build_context, image_dirs, pushed_image, run_image, serial};
use crate::probe_support::probe;

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_pinned_by_digest_runs_in_the_fence_and_is_judged_by_the_relay() {
    let _serial = serial();
    let (registry, pushed, builder, _context) = pushed_image();
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
        .args(["probe", "--protocol", "oneshot-v1", "--image", &reference, "--prompt-transport", "stdin", "--output-mode", "text"])
        .output()
        .expect("probe");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains(&format!("image    {reference} ({}, bubblewrap, in /workspace)", pushed.digest())), "{text}");
    assert!(text.contains("next     add: checkfu harness add oci --name=checkfu-probe"), "{text}");
    assert!(text.contains("next     verify (a template): checkfu harness verify checkfu-probe"), "{text}");
    assert!(text.contains("next     required flags: --sandbox, --model"), "{text}");

    // The same image, whose CLI only echoes its prompt: the nonce is in the output, no
    // reply token is, and the relay served nothing.
    let echo = run_image(&reference, &["--argv=echo"]);
    assert_eq!(echo.status, 1, "{}", echo.pretty());
    assert_eq!(echo.json["steps"]["prompt_exchange"]["status"], "failed", "{}", echo.pretty());

    // A digest the registry does not have: exit 1 with the registry's answer.
    let mut wrong = pushed.digest().hex().to_owned();
    let flipped = if wrong.ends_with('0') { '1' } else { '0' };
    wrong.replace_range(wrong.len() - 1.., &flipped.to_string());
    let missing = format!("{}/{}@sha256:{wrong}", pushed.registry().expect("registry"), pushed.repository());
    let gone = run_image(&missing, &[]);
    assert_eq!(gone.status, 1, "{}", gone.stderr);
    assert!(gone.stderr.contains("manifest unknown"), "{}", gone.stderr);

    drop(registry);
    tools::remove_image(&builder, "localhost/checkfu-oneshot:1").expect("rmi");
    builder.remove_storage().expect("storage");
}

#[test]
fn a_reference_without_a_digest_is_refused_before_anything_starts() {
    for (reference, expected) in [("127.0.0.1:5000/cli:1", "digest"), ("127.0.0.1:5000/cli@sha256:abc", "64")] {
        let run = run_image(reference, &[]);
        assert_eq!(run.status, 2, "{reference}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{reference}: {}", run.stderr);
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
    let context = build_context();
    let before = image_dirs();
    let dir = context.path().to_str().expect("utf-8").to_owned();
    let run = probe(
        &[
            "--protocol",
            "oneshot-v1",
            "--name",
            "checkfu-oneshot",
            "--build-context",
            &dir,
            "--builder",
            "buildah",
            "--prompt-transport",
            "stdin",
            "--output-mode",
            "text",
            "--sandbox",
            "sb",
        ],
        &[],
    );
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
    assert!(retest.contains("--sandbox sb"), "the context kept: {retest}");
    // The registry is stopped and the image, its layout and its root are gone.
    let port: u16 = pushed.trim_start_matches("127.0.0.1:").split('/').next().and_then(|p| p.parse().ok()).expect("port");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "the temporary registry still listens");
    let after: Vec<String> = image_dirs().into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(after, Vec::<String>::new());

    // A build that fails: exit 1 with the builder's own error.
    std::fs::write(context.path().join("Dockerfile"), "FROM scratch\nCOPY nothing-here /x\n").expect("Dockerfile");
    let broken = probe(&["--protocol", "oneshot-v1", "--build-context", &dir, "--prompt-transport", "stdin", "--output-mode", "text"], &[]);
    assert_eq!(broken.status, 1, "{}", broken.stderr);
    assert!(broken.stderr.contains("nothing-here"), "{}", broken.stderr);
}

/// A build context holding a real, dynamically linked ACP agent (the fixture agent) with the
/// libraries `ldd` names, at their own paths, on `FROM scratch`.
fn acp_context() -> TempDir {
    let context = TempDir::new("checkfu-image-acp").expect("context");
    let rootfs = context.path().join("rootfs");
    let agent = std::path::Path::new(crate::probe_support::AGENT);
    let place = |from: &std::path::Path, to: &str| {
        let target = rootfs.join(to.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().expect("parent")).expect("dirs");
        std::fs::copy(from, &target).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    };
    place(agent, "/opt/custom/bin/acp-agent");
    let listed = std::process::Command::new("ldd").arg(agent).output().expect("ldd");
    for line in String::from_utf8_lossy(&listed.stdout).lines() {
        // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
        let path = line.split("=>").last().and_then(|rest| rest.split_whitespace().next()).unwrap_or("");
        if path.starts_with('/') {
            place(std::path::Path::new(path), path);
        }
    }
    std::fs::write(
        context.path().join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nWORKDIR /workspace\nENTRYPOINT [\"/opt/custom/bin/acp-agent\"]\n",
    )
    .expect("Dockerfile");
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
        ],
        &[],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
    assert!(run.json["steps"].get("resume").is_none() && run.json["steps"].get("output_schema").is_none());
    assert_eq!(run.json["image"]["runtime"], "bubblewrap");
    assert_eq!(run.json["image"]["working_directory"], "/workspace");
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
    let run = probe(
        &[
            "--name",
            "custom-oneshot",
            "--build-context",
            dir,
            "--entrypoint",
            "/opt/checkfu/bin/checkfu-oneshot",
            "--protocol",
            "oneshot-v1",
            "--argv=--output-mode",
            "--argv=stream_json",
            "--argv=--prompt-path",
            "--argv={prompt_path}",
            "--argv={resume_flag}",
            "--prompt-transport",
            "argv_path",
            "--output-mode",
            "stream_json",
            "--resume-flag=--resume",
            "--output-schema-flag=--output-schema",
            "--output-schema-transport",
            "argv_path",
            "--working-directory",
            "/workspace",
        ],
        &[],
    );
    assert_eq!(run.status, 0, "{}", run.pretty());
    for step in ["prompt_exchange", "resume", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
    assert!(run.json["next"]["retest"].as_str().is_some_and(|r| r.contains("--image=")), "{}", run.pretty());

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
    for step in ["initialize_handshake", "session_start", "prompt_exchange", "teardown"] {
        assert_eq!(run.json["steps"][step]["status"], "passed", "{step}: {}", run.pretty());
    }
}
