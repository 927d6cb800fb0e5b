//! The image lane on real harnesses from npm, and as an ordinary user. Each image is made
//! here, offline (no registry is reachable): a build context on `FROM scratch` holding this
//! machine's `node` with the libraries `ldd` names, busybox-static (`/bin/sh`, and
//! `/usr/bin/env` for the packages' `#!/usr/bin/env node`), and the npm package as
//! installed by `tests/real-agents/install-oneshot.sh` or `install.sh`. buildah builds it
//! once per test, a loopback registry serves it, and the probe pulls it by digest and runs
//! it, as root and then as uid 65534 (through `setpriv`): the same pushed image twice,
//! pulled and unpacked by each run. Each run is judged as the same harness is as a local
//! process (`real_oneshot.rs`, `real_agents.rs`), by the relay's record. Afterwards the
//! registry's port is closed and no image root or layout is left.
//!
//! - Claude Code (`claude -p`, its native `claude` and the shim `recipes/oneshot/shims/` under
//!   node) with `recipes/oneshot/claude-code.json`: prompt path, stream JSON, resume and the
//!   output schema;
//! - Codex (`codex exec`, its static `codex` and the shim under node) with
//!   `recipes/oneshot/codex.json`: the same steps, the schema as `text.format`;
//! - claude-code-acp (node) with `recipes/claude-code.json`: initialize, session/new, a
//!   prompt turn with a tool call, teardown;
//! - the busybox one-shot CLI of `image_lane.rs`, unprivileged, and its echo failing.
//!
//! Gated on the image tools (`CHECKFU_IMAGE_TOOLS`) and the harness's install
//! (`CHECKFU_REAL_ONESHOT`, `CHECKFU_REAL_AGENTS`); `.ci/run` sets all three and the
//! `CHECKFU_REQUIRE_*` under which they cannot be ignored.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use crate::probe_support::{probe, probe_unprivileged, Run, Scratch};
use crate::real_agents::turn_with;
use crate::real_oneshot::{passed_every_step, ANSWER_SCHEMA};
use crate::support::image::{busybox_cli_context, image_dirs_in, serial, RootContext, Served, BUSYBOX_CLI_FLAGS};

/// Where the image runs leave their roots and layouts: the tests' temporary directory, and
/// `/tmp` for the unprivileged probe.
fn leftovers() -> Vec<String> {
    let mut dirs = crate::support::image::image_dirs();
    dirs.extend(image_dirs_in(Path::new("/tmp")));
    dirs.sort();
    dirs.dedup();
    dirs
}

/// Stops the image's registry and removes the builder's image; then its port must be closed
/// and nothing of any run left beyond `before`.
fn nothing_left(served: Served, before: &[String]) {
    let port = served.stop();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "the registry still listens on {port}");
    let after: Vec<String> = leftovers().into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(after, Vec::<String>::new(), "image directories left behind");
}

/// `node` as this machine runs it: the first on `PATH`.
fn node() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path).map(|d| d.join("node")).find(|p| p.is_file());
    found.expect("node on PATH").canonicalize().expect("node")
}

/// A one-shot CLI's image: node (for its shim), the recipes' shims at `/opt/checkfu/shims`
/// with `recipe`'s as the entrypoint, busybox, and what `cli` adds (the CLI on `PATH`).
fn shim_context(recipe: &str, cli: impl FnOnce(&RootContext)) -> RootContext {
    let shims = crate::support::project::project_root().join("recipes/oneshot/shims");
    let context = RootContext::new(&format!("checkfu-image-{recipe}"));
    context.program(&node(), "/usr/bin/node").busybox().tree(&shims, "/opt/checkfu/shims", &[]);
    cli(&context);
    context.dockerfile(&format!(
        "ENV PATH=/usr/local/bin:/usr/bin:/bin\nWORKDIR /workspace\nENTRYPOINT [\"/opt/checkfu/shims/{recipe}.mjs\"]\n"
    ));
    context
}

/// The one-shot CLI of `recipes/oneshot/{recipe}.json` inside `context`'s image, through its
/// shim: every step the same CLI passes as a local process (`dialect`, the output schema
/// delivered as `delivered_as`), as root and then unprivileged, and nothing left after.
fn oneshot_cli_passes_every_step_in_an_image(recipe: &str, context: RootContext, dialect: &str, delivered_as: &str) {
    let before = leftovers();
    let started = Instant::now();
    let bytes = context.bytes();
    let served = Served::build(context.path(), &format!("checkfu-{recipe}"));
    drop(context);
    let built = started.elapsed();
    let reference = served.reference.to_string();

    let scratch = Scratch::new(&format!("image-real-{recipe}"));
    std::fs::set_permissions(&scratch.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let schema = scratch.path("answer.schema.json");
    std::fs::write(&schema, ANSWER_SCHEMA).unwrap();
    let recipe_file = format!("{}/recipes/oneshot/{recipe}.json", crate::support::project::project_root().display());
    // The recipe's entrypoint is a file beside it; in the image the shim is under
    // /opt/checkfu/shims. The recipe's arguments, env, resume and schema flags stay as declared.
    let shim = format!("/opt/checkfu/shims/{recipe}.mjs");
    let options = [
        "--recipe",
        &recipe_file,
        "--image",
        &reference,
        "--entrypoint",
        &shim,
        "--output-schema",
        &schema,
        "--step-timeout",
        "90",
        "--deadline",
        "300",
    ];
    let mut times = vec![];
    for unprivileged in [false, true] {
        let started = Instant::now();
        let run = if unprivileged { probe_unprivileged(&options, &[], &[]) } else { probe(&options, &[]) };
        times.push(started.elapsed());
        passed_every_step(&run, dialect, delivered_as);
        ran_in_the_image(&run, &served, unprivileged);
        // The recipe's arguments reached the shim inside the image.
        let argv = run.json["runs"][0]["argv"].as_array().expect("argv");
        assert!(argv.contains(&json!(shim)) && argv.contains(&json!("--prompt-path")), "{}", run.pretty());
    }
    nothing_left(served, &before);
    eprintln!(
        "image_real: {recipe} image ({} MB of files): built and pushed in {:.1} s; as root {:.1} s, as uid 65534 {:.1} s",
        bytes / 1_000_000,
        built.as_secs_f64(),
        times[0].as_secs_f64(),
        times[1].as_secs_f64()
    );
}

/// Claude Code (`claude -p`) inside an image: its native `claude` with its libraries, as
/// `claude` on `PATH`.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_real_oneshot)),
    ignore = "needs CHECKFU_IMAGE_TOOLS (see .ci/run) and CHECKFU_REAL_ONESHOT (tests/real-agents/install-oneshot.sh DIR)"
)]
fn claude_code_passes_every_step_in_an_image_as_root_and_unprivileged() {
    let _serial = serial();
    let installed = PathBuf::from(std::env::var_os("CHECKFU_REAL_ONESHOT").expect("CHECKFU_REAL_ONESHOT"));
    let package = installed.join("node_modules/@anthropic-ai/claude-code");
    let context = shim_context("claude-code", |context| {
        context
            .tree(&package, "/opt/claude-code/node_modules/@anthropic-ai/claude-code", &[])
            .libraries(&package.join("bin/claude.exe"))
            .link("/opt/claude-code/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "/usr/local/bin/claude");
    });
    oneshot_cli_passes_every_step_in_an_image("claude-code", context, "anthropic_messages", "tool");
}

/// Codex (`codex exec`) inside an image: its static musl `codex` on `PATH`; the output
/// schema reaches the model as the Responses request's `text.format`.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_real_oneshot)),
    ignore = "needs CHECKFU_IMAGE_TOOLS (see .ci/run) and CHECKFU_REAL_ONESHOT (tests/real-agents/install-oneshot.sh DIR)"
)]
fn codex_passes_every_step_in_an_image_as_root_and_unprivileged() {
    let _serial = serial();
    let installed = PathBuf::from(std::env::var_os("CHECKFU_REAL_ONESHOT").expect("CHECKFU_REAL_ONESHOT"));
    let binary = installed.join("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex");
    let context = shim_context("codex", |context| {
        context.file(&binary, "/usr/local/bin/codex");
    });
    oneshot_cli_passes_every_step_in_an_image("codex", context, "openai_responses", "text.format");
}

/// What every image run's result says: the image pinned by the pushed digest, run by
/// bubblewrap in `/workspace`; unprivileged, the fence is a user namespace.
fn ran_in_the_image(run: &Run, served: &Served, unprivileged: bool) {
    let context = run.pretty();
    assert_eq!(run.json["image"]["digest"], served.reference.digest().to_string(), "{context}");
    assert_eq!(run.json["image"]["runtime"], "bubblewrap", "{context}");
    assert_eq!(run.json["image"]["working_directory"], "/workspace", "{context}");
    if unprivileged {
        assert_eq!(run.plane()["fence"], "user_namespace", "{context}");
    }
}

/// claude-code-acp's image: node, the installed agents' `node_modules` without codex-acp
/// (its native binary is most of the install, and this image does not run it), and
/// `claude-code-acp` on `PATH`, as the recipe's command names it.
fn claude_code_acp_context(installed: &Path) -> RootContext {
    let modules = installed.join("node_modules");
    let adapter = "/opt/agents/node_modules/@zed-industries/claude-code-acp";
    let context = RootContext::new("checkfu-image-claude-code-acp");
    context
        .program(&node(), "/usr/bin/node")
        .busybox()
        .tree(&modules, "/opt/agents/node_modules", &[".bin", "@zed-industries"])
        .tree(&modules.join("@zed-industries/claude-code-acp"), adapter, &[])
        .link(&format!("{adapter}/dist/index.js"), "/usr/local/bin/claude-code-acp")
        .dockerfile("ENV PATH=/usr/local/bin:/usr/bin:/bin\nWORKDIR /workspace\nENTRYPOINT [\"/usr/local/bin/claude-code-acp\"]\n");
    context
}

/// claude-code-acp inside an image, with its recipe and the tool script: the same turn, and
/// every assertion, as the agent as a local process (`real_agents.rs`), as root and then
/// unprivileged.
#[test]
#[cfg_attr(
    not(all(checkfu_image_tools, checkfu_real_agents)),
    ignore = "needs CHECKFU_IMAGE_TOOLS (see .ci/run) and CHECKFU_REAL_AGENTS (tests/real-agents/install.sh DIR)"
)]
fn claude_code_acp_takes_a_turn_in_an_image_as_root_and_unprivileged() {
    let _serial = serial();
    let installed = PathBuf::from(std::env::var_os("CHECKFU_REAL_AGENTS").expect("CHECKFU_REAL_AGENTS"));
    let before = leftovers();
    let started = Instant::now();
    let context = claude_code_acp_context(&installed);
    let bytes = context.bytes();
    let served = Served::build(context.path(), "checkfu-claude-code-acp");
    drop(context);
    let built = started.elapsed();
    let reference = served.reference.to_string();
    let mut times = vec![];
    for unprivileged in [false, true] {
        let started = Instant::now();
        // The catalog's claude-code declares `subagents: observed`, which this adapter does
        // not: one declaration mismatch, as outside the image.
        let run = turn_with("claude-code", "anthropic_messages", "tool", 1, &["--image", &reference], &[], unprivileged);
        times.push(started.elapsed());
        ran_in_the_image(&run, &served, unprivileged);
        // bubblewrap over the image's root ran the recipe's command, found on the image's PATH.
        let command = run.json["harness"]["command"].as_array().expect("command");
        assert!(command.first().and_then(|c| c.as_str()).is_some_and(|c| c.ends_with("bwrap")), "{}", run.pretty());
        assert_eq!(command.last(), Some(&json!("claude-code-acp")), "{}", run.pretty());
    }
    nothing_left(served, &before);
    eprintln!(
        "image_real: claude-code-acp image ({} MB of files): built and pushed in {:.1} s; as root {:.1} s, as uid 65534 {:.1} s",
        bytes / 1_000_000,
        built.as_secs_f64(),
        times[0].as_secs_f64(),
        times[1].as_secs_f64()
    );
}

/// The busybox one-shot CLI of `image_lane.rs`, by digest from a loopback registry, with the
/// probe unprivileged: its turn passes on the relay's record, fenced in a user namespace,
/// and the same image echoing its prompt fails.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn the_busybox_cli_image_runs_unprivileged_by_digest() {
    let _serial = serial();
    let before = leftovers();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-oneshot-unprivileged");
    let reference = served.reference.to_string();
    let options = [BUSYBOX_CLI_FLAGS, &["--image", &reference]].concat();
    let run = probe_unprivileged(&options, &[], &[]);
    let context = run.pretty();
    assert_eq!(run.status, 0, "{context}");
    assert_eq!(run.step("prompt_exchange").0, "passed", "{context}");
    assert_eq!(run.step("teardown").0, "passed", "{context}");
    ran_in_the_image(&run, &served, true);
    let plane = run.plane();
    assert!(plane["calls"].as_array().is_some_and(|c| !c.is_empty()), "{context}");
    assert!(plane["reply_in_output"].as_str().is_some_and(|t| t.starts_with("cfr-")), "{context}");

    let mut echo_options = options.to_vec();
    echo_options.push("--argv=echo");
    let echo = probe_unprivileged(&echo_options, &[], &[]);
    assert_eq!(echo.status, 1, "{}", echo.pretty());
    assert_eq!(echo.step("prompt_exchange").0, "failed", "{}", echo.pretty());
    nothing_left(served, &before);
}
