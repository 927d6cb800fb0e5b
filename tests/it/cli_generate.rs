//! End-to-end runs of `checkfu-wire generate` and `check` on scratch copies of the project.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use support::project::{project_root, scratch};

fn run(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup")).args(args).arg("--root").arg(root).output().expect("run checkfu-wire")
}

/// Every generated output (as the generator lists them), with its bytes in `root`.
fn outputs(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let generation = checkfu_wire_codegen::generate(&project_root()).unwrap_or_else(|d| panic!("{d}"));
    let mut files: Vec<_> =
        generation.outputs.iter().map(|o| (root.join(&o.path), fs::read(root.join(&o.path)).expect("read output"))).collect();
    files.sort();
    files
}

#[test]
fn check_passes_on_the_checked_in_outputs() {
    let out = run(&project_root(), &["check"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn generate_is_a_no_op_when_nothing_changed() {
    let dir = scratch();
    let before = outputs(dir.path());
    let out = run(dir.path(), &["generate"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("up to date"));
    assert_eq!(before, outputs(dir.path()));
}

#[test]
fn failing_generation_leaves_every_output_byte_identical() {
    let dir = scratch();
    // Change a fact that alters outputs *and* break the catalog: nothing may be written.
    let catalog = dir.path().join("catalog/catalog.toml");
    let text = fs::read_to_string(&catalog).expect("read");
    let text = text.replacen("gateway_path = \"/v1/messages\"", "gateway_path = \"/v2/messages\"", 1);
    let text = text.replacen("checkpoint = \"none\"", "checkpoint = \"snapshot\"", 1);
    fs::write(&catalog, text).expect("write");
    let before = outputs(dir.path());
    let out = run(dir.path(), &["generate"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[E0001]") && stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(before, outputs(dir.path()));
    let leftovers: Vec<_> = fs::read_dir(dir.path().join("generated")).expect("read_dir").flatten().collect();
    assert!(leftovers.iter().all(|e| !e.file_name().to_string_lossy().contains(".tmp-")));
}

#[test]
fn check_fails_after_a_one_byte_edit_of_any_generated_file() {
    let dir = scratch();
    for (path, bytes) in outputs(dir.path()) {
        let mut edited = bytes.clone();
        let at = edited.len() / 2;
        edited[at] = if edited[at] == b'x' { b'y' } else { b'x' };
        fs::write(&path, &edited).expect("write");
        let out = run(dir.path(), &["check"]);
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        assert_eq!(out.status.code(), Some(1), "check passed after editing {name}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if name == "revisions.lock.json" {
            // The lock is read back: an edited pin is refused like a reinterpretation, an
            // edited ACP floor as a promise the pinned schema no longer keeps (where the
            // middle byte lands depends on how many literals the lock pins), an edited member
            // name as a lock that cannot be read, or an edited literal shows as drift.
            let unreadable = stderr.contains("generated/revisions.lock.json") && stderr.contains("cannot be read");
            let refused = stderr.contains("error[E0010]") || stderr.contains("recorded in the revisions lock") || unreadable;
            assert!(refused || stdout.contains("@@"), "{name}: {stdout}{stderr}");
        } else {
            assert!(stdout.contains("@@") && stdout.contains(&name), "no diff for {name}: {stdout}");
            assert!(stderr.contains("run `cargo run -- generate`"), "{stderr}");
        }
        fs::write(&path, &bytes).expect("restore");
    }
    assert!(run(dir.path(), &["check"]).status.success());
}

#[test]
fn generate_repairs_drift_and_only_touches_changed_files() {
    let dir = scratch();
    let page = dir.path().join("docs/harness-wire-extensions.md");
    let original = fs::read(&page).expect("read");
    fs::write(&page, b"hand edited\n").expect("write");
    let out = run(dir.path(), &["generate"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("wrote").count(), 1, "{stderr}");
    assert_eq!(fs::read(&page).expect("read"), original);
}

#[test]
fn a_module_left_by_a_removed_schema_is_removed_and_said_so() {
    let dir = scratch();
    let stale = dir.path().join("generated/schemas/gone.rs");
    fs::write(&stale, b"// a module of a schema no longer in schemas/\n").expect("write");
    let out = run(dir.path(), &["generate"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().collect::<Vec<_>>(), ["checkfu-wire: removed generated/schemas/gone.rs"], "{stderr}");
    assert!(!stale.exists());
}

/// Lines of `stderr` that are warnings.
fn warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.starts_with("warning")).map(str::to_string).collect()
}

#[test]
fn a_clean_checkout_generates_and_checks_without_a_warning() {
    let dir = scratch();
    for command in ["generate", "check"] {
        let out = run(dir.path(), &[command]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(warnings(&out), Vec::<String>::new(), "{command}");
    }
    // `build.rs` prints exactly these warnings as `cargo:warning`, so the build is quiet too.
    let generation = checkfu_wire_codegen::generate(&project_root()).unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(generation.warnings, Vec::<String>::new());
}

#[test]
fn check_verbose_shows_every_acknowledged_warning_with_its_review_once() {
    let out = run(&project_root(), &["check", "--verbose"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let reviews: Vec<&str> = stderr.lines().filter(|l| l.starts_with("acknowledged: ")).collect();
    assert_eq!(reviews.len(), 3, "{stderr}");
    assert_eq!(stderr.matches("  = why: ").count(), 3, "{stderr}");
    let listed: Vec<&str> = stderr.lines().filter_map(|l| l.strip_prefix("  = warning: ")).collect();
    assert_eq!(listed.len(), 21, "{stderr}");
    assert_eq!(listed.iter().filter(|w| w.contains("the description names method")).count(), 11);
    assert_eq!(listed.iter().filter(|w| w.contains("typify could not name the members")).count(), 9);
    assert!(listed.iter().any(|w| w.contains("method `heartbeat` has no `HeartbeatParams` definition")));
    // Without --verbose they are not shown.
    let quiet = run(&project_root(), &["check"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("acknowledged"));
}

#[test]
fn an_acknowledgement_matching_no_warning_fails_generation_and_points_at_it() {
    let dir = scratch();
    let file = dir.path().join("catalog/acknowledged.toml");
    let mut text = fs::read_to_string(&file).expect("read");
    text.push_str(
        "\n[[acknowledged]]\nwhat = \"a warning that is gone\"\nwhy = \"reviewed once\"\nwarnings = [\"schemas/x.json: no longer said\"]\n",
    );
    fs::write(&file, &text).expect("write");
    let line = text.lines().position(|l| l.contains("no longer said")).expect("line") + 1;
    let before = outputs(dir.path());
    let out = run(dir.path(), &["generate"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("error[E0011]: an acknowledged warning is no longer given"), "{stderr}");
    assert!(stderr.contains(&format!("--> catalog/acknowledged.toml:{line}:13")), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(before, outputs(dir.path()));
}

#[test]
fn a_warning_nobody_reviewed_still_shows() {
    let dir = scratch();
    let file = dir.path().join("catalog/acknowledged.toml");
    let text = fs::read_to_string(&file).expect("read");
    // Drop the review of khy-os's heartbeat (the file's last group).
    let cut = text.rfind("[[acknowledged]]").expect("a group");
    fs::write(&file, &text[..cut]).expect("write");
    for command in ["generate", "check"] {
        let out = run(dir.path(), &[command]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(
            warnings(&out),
            ["warning: schemas/khy-os-acp-message.schema.json: method `heartbeat` has no `HeartbeatParams` definition; its params are checked only by the envelope"],
            "{command}"
        );
    }
}

#[test]
fn a_directory_that_is_not_a_project_gets_a_hint_to_pass_root() {
    let empty = tempfile::tempdir().expect("tempdir");
    for command in ["generate", "check"] {
        let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup")).arg(command).current_dir(empty.path()).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{command}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("is not a checkfu-wire project root: it has no catalog/catalog.toml"), "{stderr}");
        assert!(stderr.contains("pass `--root DIR`"), "{stderr}");
        assert!(!stderr.contains("E0000"), "{stderr}");
    }
    assert_eq!(fs::read_dir(empty.path()).expect("read_dir").count(), 0, "nothing written");
}

#[test]
fn root_is_taken_only_by_the_commands_that_read_a_project() {
    let root = project_root();
    let root = root.to_str().expect("UTF-8 path");
    for args in [
        vec!["decode", "--root", root, "tests/data/exchange.jsonl"],
        vec!["conform", "--root", root, "tests/data/trace.jsonl"],
        vec!["lint-schema", "--root", root, "schemas/checkfu-slots.schema.json"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup")).args(&args).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected argument '--root'"), "{args:?}");
    }
}

#[test]
fn an_optional_fidelity_kind_must_be_a_kind_of_the_pinned_schema_and_named_once() {
    let dir = scratch();
    let catalog = dir.path().join("catalog/catalog.toml");
    let text = fs::read_to_string(&catalog).expect("read");
    let list = "optional_fidelity_updates = [\"usage_update\", ";
    assert!(text.contains(list), "the catalog's list of optional-fidelity kinds");
    let text = text.replacen(list, "optional_fidelity_updates = [\"usage_updat\", \"current_mode_update\", ", 1);
    fs::write(&catalog, text).expect("write");
    let out = run(dir.path(), &["generate"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("names `usage_updat`, which is not a sessionUpdate kind"), "{stderr}");
    assert!(stderr.contains("names `current_mode_update` twice"), "{stderr}");
    assert!(stderr.contains("catalog.toml:"), "the error points into the catalog: {stderr}");
}
