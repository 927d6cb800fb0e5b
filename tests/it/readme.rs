//! The book's examples of output are the output: each block is compared with what the
//! command it shows prints today, so an edit that changes the output fails here until the
//! chapter that shows it says the same.

use crate::support;

use std::fs;
use std::process::Command;

use support::project::{project_root, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");

/// A file of the repository, such as a chapter of the book under docs/.
fn doc(path: &str) -> String {
    fs::read_to_string(project_root().join(path)).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// The ```text block that follows the first occurrence of `marker` in the chapter `path`,
/// without the indentation of its fence.
fn block_after(path: &str, marker: &str) -> String {
    let readme = doc(path);
    let at = readme.find(marker).unwrap_or_else(|| panic!("{path} no longer contains {marker:?}"));
    let mut lines = readme[at..].lines().skip_while(|l| l.trim() != "```text");
    let fence = lines.next().unwrap_or_else(|| panic!("no ```text block after {marker:?}"));
    let indent = fence.len() - fence.trim_start().len();
    let mut block = String::new();
    for line in lines.take_while(|l| l.trim() != "```") {
        block.push_str(line.get(indent..).unwrap_or(line.trim_start()));
        block.push('\n');
    }
    block
}

#[test]
fn the_e0004_example_is_what_generate_prints_for_that_edit() {
    let dir = scratch();
    let catalog = dir.path().join("catalog/catalog.toml");
    let text = fs::read_to_string(&catalog).expect("read catalog");
    // The edit the chapter describes: checkfu's ceiling promotes `interrupt`.
    let entry = text.find("name = \"checkfu\"\nmode").expect("the checkfu entry");
    let at = text[entry..].find("interrupt = \"kill_only\"").expect("its interrupt ceiling") + entry;
    let edited = format!("{}interrupt = \"cooperative\"{}", &text[..at], &text[at + "interrupt = \"kill_only\"".len()..]);
    fs::write(&catalog, edited).expect("write catalog");
    let out = Command::new(BIN).args(["generate", "--root"]).arg(dir.path()).output().expect("run generate");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), block_after("docs/guide/changing-the-catalog.md", "2. Run `cargo run -- generate`"));
}

#[test]
fn the_decode_example_is_what_decode_prints() {
    let out = Command::new(BIN).current_dir(project_root()).args(["decode", "tests/data/exchange.jsonl"]).output().expect("run decode");
    assert_eq!(out.status.code(), Some(1));
    let shown = format!(
        "$ checkfu-wire decode tests/data/exchange.jsonl\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(shown, block_after("docs/guide/decoding.md", "a recorded exchange with three planted problems"));
}

#[test]
fn the_probe_test_count_is_current() {
    let readme = doc("docs/design/probe-run.md");
    let marker = "**Tests** (`tests/it/probe.rs`, ";
    let at = readme.find(marker).expect("the probe's test paragraph") + marker.len();
    let stated: usize = readme[at..].split(')').next().and_then(|n| n.parse().ok()).expect("a count");
    let tests = fs::read_to_string(project_root().join("tests/it/probe.rs")).expect("read tests/it/probe.rs");
    assert_eq!(stated, tests.lines().filter(|l| l.trim() == "#[test]").count());
}

/// What varies between two runs of the probe, replaced by a placeholder: pids, times, the
/// session's temporary directory and the reply token the relay minted.
fn steady(text: &str) -> String {
    let token = regex::Regex::new(r"cfr-[0-9a-f]{16}").expect("regex");
    let text = token.replace_all(text, "cfr-TOKEN");
    let text = text.as_ref();
    let pid = regex::Regex::new(r"pid \d+").expect("regex");
    let ms = regex::Regex::new(r"\s+\d+ ms").expect("regex");
    let dir = regex::Regex::new(r"/tmp/checkfu-probe-[0-9a-f-]+").expect("regex");
    let text = pid.replace_all(text, "pid N");
    let text = ms.replace_all(&text, " N ms");
    dir.replace_all(&text, "/tmp/WORKSPACE").into_owned()
}

#[test]
fn the_probe_example_is_what_probe_prints_on_the_fixture_agent() {
    let agent = env!("CARGO_BIN_EXE_checkfu-fixture-agent");
    let out = Command::new(BIN).args(["probe", "--interrupt", "--", agent]).output().expect("run probe");
    assert_eq!(out.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&out.stdout);
    let block = block_after("docs/guide/probing-acp.md", "On the fixture agent of the tests");
    let shown = block.split_once('\n').map(|(command, rest)| {
        assert_eq!(command, "$ checkfu-wire probe --interrupt -- target/debug/checkfu-fixture-agent");
        rest
    });
    let mut printed = steady(&printed);
    let mut shown = steady(shown.unwrap_or_default());
    // Without CAP_SYS_ADMIN the fence is a user namespace, or where that is refused too the
    // proxy variables; the chapter shows the privileged namespace.
    if printed.contains("fence: user namespace") {
        shown = shown.replace("fence: network namespace", "fence: user namespace holding a network namespace");
    }
    if printed.contains("fence: proxy variables only") {
        printed = printed.lines().filter(|l| !l.starts_with("model    no namespace")).map(|l| format!("{l}\n")).collect();
        shown = shown.replace(
            "fence: network namespace (loopback only: the relay's port and the probe's MCP server's)",
            "fence: proxy variables only",
        );
    }
    assert_eq!(printed, shown);
}

/// [`steady`], and what varies between two runs of the image lane: digests, ports, the
/// probe's temporary directories, nonces and session ids; the published registry's address
/// is the chapter's example registry.
fn steady_image(text: &str, published: &str) -> String {
    // The published registry is on loopback here, so the retest's `add` warns that no other
    // machine can pull it; the chapter's registry is not, and has no such warning.
    let text: String = text.lines().filter(|l| !l.starts_with("warning  the add command names")).map(|l| format!("{l}\n")).collect();
    let text = text.replace(published, "registry.example/custom-oneshot");
    let text = steady(&text);
    let replace = |text: &str, pattern: &str, with: &str| regex::Regex::new(pattern).expect("regex").replace_all(text, with).into_owned();
    let text = replace(&text, r"sha256:[0-9a-f]{64}", "sha256:DIGEST");
    let text = replace(&text, r"images/sha256-[0-9a-f]{64}/", "images/sha256-DIGEST/");
    let text = replace(&text, r"127\.0\.0\.1:\d+", "127.0.0.1:PORT");
    let text = replace(&text, r"/tmp/checkfu-([a-z-]+?)-\d+-\d+-[0-9a-f]+", "/tmp/checkfu-$1-N");
    let text = replace(&text, r"/tmp/WORKSPACE", "/tmp/checkfu-probe-N");
    let text = replace(&text, r"\bcf-[0-9a-f]{16}", "cf-NONCE");
    let text = replace(&text, r"session: s-\d+-\d+", "session: s-N");
    // An ordinary user's bubblewrap gets `--unshare-user-try` (it makes the user namespace
    // anyway); the chapter shows root's, as in CI.
    let text = text.replace(" --unshare-user-try ", " --unshare-user ");
    // The descriptor bubblewrap reads the harness's variables from: whichever is free.
    replace(&text, r"--args \d+ ", "--args FD ")
}

/// The page's author path as the chapter walks it, with the output each command prints:
/// `init oneshot`, the build-context run, the author's own build pushed to a registry, and
/// the retest the first run printed, its published name filled in.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn the_image_walkthrough_is_what_the_commands_print() {
    let _serial = crate::support::image::serial();
    let dir = scratch();
    // An image store of the walkthrough's own, shown as the user's default (`~/.cache`).
    let cache = dir.path().join("cache");
    let run = |words: &[&str]| {
        let out = Command::new(BIN).current_dir(dir.path()).env("XDG_CACHE_HOME", &cache).args(words).output().expect("run");
        assert_eq!(out.status.code(), Some(0), "{words:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let init = ["init", "oneshot", "--directory", "./custom-oneshot"];
    let built = [
        "probe",
        "--recipe",
        "./custom-oneshot/recipe.json",
        "--build-context",
        "./custom-oneshot",
        "--name",
        "custom-oneshot",
        "--sandbox",
        "standard",
        "--model",
        "relay-default",
    ];
    let mut shown = format!("$ checkfu-wire {}\n{}", init.join(" "), run(&init));
    let first = run(&built);
    shown.push_str(&format!("$ checkfu-wire {}\n{first}", built.join(" ")));
    let retest = first.lines().find_map(|l| l.strip_prefix("next     retest: ")).expect("a retest line").to_owned();
    // The author publishes the same context, built as the probe builds it.
    let published = crate::support::image::Served::build(&dir.path().join("custom-oneshot"), "custom-oneshot");
    let name = format!("{}/{}", published.reference.registry().expect("registry"), published.reference.repository());
    let retest = retest.replace("<published-name>", &name);
    let words = retest.strip_prefix("checkfu-wire ").expect("checkfu-wire");
    let out = Command::new("sh")
        .current_dir(dir.path())
        .env("XDG_CACHE_HOME", &cache)
        .arg("-c")
        .arg(format!("exec \"$0\" {words}"))
        .arg(BIN)
        .output()
        .expect("retest");
    assert_eq!(out.status.code(), Some(0), "{retest}: {}", String::from_utf8_lossy(&out.stderr));
    shown.push_str(&format!("$ {retest}\n{}", String::from_utf8_lossy(&out.stdout)));
    let printed = steady_image(&shown.replace(cache.to_str().expect("utf-8"), "~/.cache"), &name);
    let block = block_after("docs/guide/probing-oneshot.md", "The page's path, end to end");
    assert_eq!(printed, block, "the chapter's walkthrough is not what the commands print:\n{printed}");
}
