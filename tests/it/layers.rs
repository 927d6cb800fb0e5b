//! The probe's shape, held by its source: the layers of the probe crate import only from
//! below them, no crate below the probe (the sandbox, the image's foundation, the relay)
//! names one above it, and no function of the probe or its command line runs over 80 lines.
//!
//! Both are read from the source as rustfmt writes it (a function's closing brace is alone
//! on a line at the indentation of its `fn`), so the checks need no parser of their own.

use std::path::{Path, PathBuf};

/// The longest function the probe's crates may hold, in lines from its `fn` to its brace.
const MAX_FUNCTION_LINES: usize = 80;

/// The probe crate's modules above the shared layer: the run (`plan`, `spine`, `lib`) and
/// the two lanes (the ACP lane's submodules in `acp/`). Every other module is shared, and may
/// name none of them.
const ABOVE_SHARED: &[&str] = &["lib.rs", "plan.rs", "spine.rs", "acp.rs", "acp", "oneshot"];

/// What a shared module must not name: a lane, or the run above the lanes.
const LANES_AND_RUN: &[&str] = &["crate::acp", "crate::oneshot", "crate::plan", "crate::spine", "crate::{acp", "crate::{oneshot"];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the tests crate is in the workspace").to_path_buf()
}

/// Every `.rs` file under `dir`, sorted.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source directory").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The functions of `text` longer than the limit: (line of the `fn`, name, lines).
fn long_functions(text: &str) -> Vec<(usize, String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut long = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = &line[..line.len() - trimmed.len()];
        let Some(at) = trimmed.find("fn ") else { continue };
        let head = &trimmed[..at];
        let is_item = head
            .split_whitespace()
            .all(|w| matches!(w, "pub" | "const" | "async" | "unsafe" | "extern" | "\"C\"") || w.starts_with("pub("));
        if !is_item || trimmed.starts_with("//") {
            continue;
        }
        // A one-line function, or a declaration without a body, has no closing line.
        let signature_end =
            lines[i..].iter().position(|l| l.trim_end().ends_with('{') || l.trim_end().ends_with(';') || l.trim_end().ends_with('}'));
        let Some(offset) = signature_end else { continue };
        if !lines[i + offset].trim_end().ends_with('{') {
            continue;
        }
        let closing = format!("{indent}}}");
        if let Some(end) = lines[i + 1..].iter().position(|l| *l == closing) {
            let length = end + 2;
            if length > MAX_FUNCTION_LINES {
                let name = trimmed[at + 3..].split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or_default().to_owned();
                long.push((i + 1, name, length));
            }
        }
    }
    long
}

/// The probe's, its image foundation's (which was the probe's) and its command line's
/// sources: each one's path from the workspace's root, and its text.
fn probe_and_cli_sources() -> Vec<(String, String)> {
    let root = workspace();
    let paths = ["probe/src", "image/src", "cli/src"].into_iter().flat_map(|dir| sources(&root.join(dir)));
    paths
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a source file");
            (path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().into_owned(), text)
        })
        .collect()
}

#[test]
fn no_function_of_the_probe_or_its_command_line_runs_over_80_lines() {
    let mut long = Vec::new();
    for (relative, text) in probe_and_cli_sources() {
        for (line, name, length) in long_functions(&text) {
            long.push(format!("{relative}:{line}: `{name}` is {length} lines"));
        }
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", long.join("\n"));
}

#[test]
fn the_length_check_finds_a_long_function_and_passes_a_short_one() {
    let body = "    let x = 1;\n".repeat(MAX_FUNCTION_LINES);
    let long = format!("pub(crate) fn long() {{\n{body}}}\n\nfn short() -> u8 {{ 1 }}\n");
    assert_eq!(long_functions(&long), vec![(1, String::from("long"), MAX_FUNCTION_LINES + 2)]);
    let methods = "impl X {\n    fn a(&self) {\n        b();\n    }\n\n    fn c(&self) -> u8 { 2 }\n}\n";
    assert!(long_functions(methods).is_empty());
}

/// Whether `code` names the module path `name` (`crate::plan`, not `crate::plane`).
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| !code[at + name.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// The lines of code (comments skipped) of `text` that name one of `names`, each as
/// `SHOWN:LINE: names `NAME`` (in a manifest, `#` comments are skipped too).
fn lines_naming(text: &str, shown: &str, wanted: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") || (code.starts_with('#') && shown.ends_with(".toml")) {
            continue;
        }
        if let Some(name) = wanted.iter().find(|n| names(code, n)) {
            found.push(format!("{shown}:{}: names `{name}`", i + 1));
        }
    }
    found
}

#[test]
fn the_probes_shared_modules_import_nothing_from_either_lane() {
    assert!(names("use crate::plan::Plan;", "crate::plan") && !names("use crate::plane::Plane;", "crate::plan"));
    let src = workspace().join("probe/src");
    let mut found = Vec::new();
    for path in sources(&src) {
        let relative = path.strip_prefix(&src).unwrap_or(&path);
        let top = relative.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()).unwrap_or_default();
        if ABOVE_SHARED.contains(&top.as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file");
        found.extend(lines_naming(&text, &format!("probe/src/{}", relative.display()), LANES_AND_RUN));
    }
    assert!(found.is_empty(), "shared modules that reach up into a lane or the run:\n{}", found.join("\n"));
}

/// The crates below the probe, each with the crates above it (as Rust names them), which
/// neither its sources nor its manifest may name: the sandbox is the lowest, the image's
/// foundation and the relay stand on it (the image never on the relay), the probe on all.
const BELOW_THE_PROBE: &[(&str, &[&str])] = &[
    ("sandbox", &["checkfu_wire_image", "checkfu_wire_relay", "checkfu_wire_probe"]),
    ("image", &["checkfu_wire_relay", "checkfu_wire_probe"]),
    ("relay", &["checkfu_wire_image", "checkfu_wire_probe"]),
];

#[test]
fn no_crate_below_the_probe_names_one_above_it() {
    let root = workspace();
    let mut found = Vec::new();
    for (dir, above) in BELOW_THE_PROBE {
        // The manifest names a crate by its package name: `checkfu-wire-probe`.
        let packages: Vec<String> = above.iter().map(|name| name.replace('_', "-")).collect();
        let packages: Vec<&str> = packages.iter().map(String::as_str).collect();
        let manifest = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).expect("a manifest");
        found.extend(lines_naming(&manifest, &format!("{dir}/Cargo.toml"), &packages));
        for path in sources(&root.join(dir).join("src")) {
            let text = std::fs::read_to_string(&path).expect("a source file");
            found.extend(lines_naming(&text, &path.strip_prefix(&root).unwrap_or(&path).display().to_string(), above));
        }
    }
    assert!(found.is_empty(), "a crate that names one above it:\n{}", found.join("\n"));
}

/// What names a lane in the spine or the report: a lane's module, the plan's variants.
const A_LANE: &[&str] = &["crate::acp", "crate::oneshot", "acp::", "oneshot::", "LanePlan::", "AcpReport", "OneshotReport"];

#[test]
fn the_spine_and_the_report_name_no_lane() {
    // The spine runs a lane through `crate::lane`'s interface and the report asks the lane's
    // part through `LaneReport`'s methods; a lane either named would be one it had to be
    // edited for, and a third lane one more `match` in it.
    let root = workspace();
    let mut files = vec![root.join("probe/src/spine.rs")];
    files.extend(sources(&root.join("probe/src/report")));
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a source file");
        let shown = path.strip_prefix(&root).unwrap_or(&path).display().to_string();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            if let Some(name) = A_LANE.iter().find(|n| code.contains(*n)) {
                found.push(format!("{shown}:{}: names `{name}`", i + 1));
            }
        }
    }
    assert!(found.is_empty(), "the spine or the report names a lane:\n{}", found.join("\n"));
}

/// Where the probe's errors are not typed yet: the image lane's store and pull, whose owner
/// types them next. Drop the entry when that lands.
const UNTYPED_ERRORS_YET: &[&str] = &[];

/// The `Result<…, String>`s of `text`, by the line their `Result<` is on: the type whose last
/// argument, at its own depth, is `String` (a nested `Result<Vec<String>, Error>` is not one).
fn string_results(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (at, _) in text.match_indices("Result<") {
        // `Result<` inside a longer name (`IoResult<`) is another type.
        if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
            continue;
        }
        // `io::Result<String>` has one argument, and no error type to look at.
        let (mut depth, mut last_comma) = (1, None);
        for (i, &b) in bytes.iter().enumerate().skip(at + "Result<".len()) {
            match b {
                b'<' => depth += 1,
                // The arrow of a function type closes nothing.
                b'>' if bytes[i - 1] == b'-' => {}
                b'>' => {
                    depth -= 1;
                    if depth == 0 {
                        if last_comma.is_some_and(|comma| text[comma..i].trim() == "String") {
                            found.push(text[..at].matches('\n').count() + 1);
                        }
                        break;
                    }
                }
                b',' if depth == 1 => last_comma = Some(i + 1),
                b';' | b'{' => break,
                _ => {}
            }
        }
    }
    found
}

#[test]
fn the_string_check_finds_a_result_with_a_string_error_at_any_depth_of_its_ok() {
    let text = "fn a() -> Result<(), String> {}\nfn b() -> Result<BTreeMap<String, String>,\n    String> {}\nfn c() -> Result<Vec<String>, Error> {}\nfn d() -> io::Result<String> {}\nfn e() -> IoResult<u8, String> {}\n";
    assert_eq!(string_results(text), [1, 2]);
}

#[test]
fn the_probe_and_its_command_line_have_typed_errors() {
    let mut found = Vec::new();
    for (relative, text) in probe_and_cli_sources() {
        if UNTYPED_ERRORS_YET.iter().any(|skip| relative.starts_with(skip)) {
            continue;
        }
        for line in string_results(&text) {
            found
                .push(format!("{relative}:{line}: a `Result<_, String>`: give the failure a type (an error enum, or an outcome's reason)"));
        }
        for (i, line) in text.lines().enumerate().filter(|(_, l)| l.contains("impl From<String> for")) {
            found.push(format!("{relative}:{}: `{}`: an error made from any string is no type", i + 1, line.trim()));
        }
    }
    assert!(found.is_empty(), "untyped errors in the probe and its command line:\n{}", found.join("\n"));
}

/// The crates' directories whose sources the `unsafe` check reads: every member of the
/// workspace but the sandbox, whose own lints hold its `unsafe` to account.
const OUTSIDE_THE_SANDBOX: &[&str] = &[
    "src",
    "generated",
    "build.rs",
    "benches",
    "examples",
    "vocab",
    "codegen",
    "safety",
    "typed",
    "relay",
    "image",
    "probe",
    "cli",
    "tests",
];

/// The one `unsafe` allowed outside the sandbox: `GlobalAlloc` is an unsafe trait, and the
/// counting allocator is how `exact_numbers` measures what decoding holds.
const ALLOWED_UNSAFE: &[&str] = &["tests/it/exact_numbers.rs"];

/// The lines of `text` (numbered from 1) whose code, outside comments and string literals,
/// holds the word `unsafe`.
fn unsafe_lines(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = code_of(line);
        let is_word = |at: usize| {
            let before = code[..at].chars().next_back();
            let after = code[at + "unsafe".len()..].chars().next();
            ![before, after].into_iter().flatten().any(|c| c.is_alphanumeric() || c == '_')
        };
        if code.match_indices("unsafe").any(|(at, _)| is_word(at)) {
            found.push(i + 1);
        }
    }
    found
}

/// A line without its `//` comment and the contents of its string literals (a `"…"` on one
/// line; escapes skipped), which may say `unsafe` without being it.
fn code_of(line: &str) -> String {
    let mut code = String::new();
    let mut chars = line.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match (in_string, c) {
            (true, '\\') => {
                chars.next();
            }
            (true, '"') => in_string = false,
            (true, _) => {}
            (false, '"') => in_string = true,
            (false, '/') if chars.peek() == Some(&'/') => break,
            (false, c) => code.push(c),
        }
    }
    code
}

#[test]
fn no_crate_but_the_sandbox_holds_unsafe() {
    let root = workspace();
    let mut found = Vec::new();
    for dir in OUTSIDE_THE_SANDBOX {
        let path = root.join(dir);
        let files = if path.is_dir() { sources(&path) } else { vec![path] };
        for path in files.into_iter().filter(|p| p.is_file()) {
            let relative = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().into_owned();
            if ALLOWED_UNSAFE.contains(&relative.as_str()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            found.extend(unsafe_lines(&text).into_iter().map(|line| format!("{relative}:{line}")));
        }
    }
    assert!(found.is_empty(), "`unsafe` outside the sandbox crate (sandbox/), which alone may hold it:\n{}", found.join("\n"));
}

#[test]
fn the_unsafe_check_sees_code_and_not_comments_or_strings() {
    let text = "// unsafe in a comment\nlet s = \"unsafe\";\nlet unsafe_schema = 1;\nunsafe { f() }\nlet x = 1; // unsafe\n    unsafe impl Send for X {}\n";
    assert_eq!(unsafe_lines(text), vec![4, 6]);
}

/// The marks of a path resolved by hand, in code: a kernel resolution (`openat2`, raw or
/// rustix's, and rustix's `ResolveFlags`), a `..` walked through a directory (`open_parent`), a `..` folded on
/// a path's text (`Component::ParentDir`). Each was in `main` before the one resolver
/// (`image/src/in_root.rs`, `image/src/unpack.rs`, `image/src/store.rs`,
/// `probe/src/session/workspace.rs`); only the sandbox (`sandbox/src`), whose `root`
/// module is the one resolver, may hold them now.
const HAND_RESOLVED: &[&str] = &["openat2", "ResolveFlags", "open_parent(", "Component::ParentDir"];

/// Each line of `text` whose code (outside comments and strings) holds a mark of
/// [`HAND_RESOLVED`], as `file:line: mark`.
fn hand_resolved(relative: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = code_of(line);
        found.extend(HAND_RESOLVED.iter().filter(|mark| code.contains(*mark)).map(|mark| format!("{relative}:{}: {mark}", i + 1)));
    }
    found
}

#[test]
fn paths_are_resolved_only_by_the_sandbox() {
    let root = workspace();
    let mut scanned = Vec::new();
    let mut found = Vec::new();
    for dir in OUTSIDE_THE_SANDBOX {
        let path = root.join(dir);
        let files = if path.is_dir() { sources(&path) } else { vec![path] };
        for path in files.into_iter().filter(|p| p.is_file()) {
            let relative = path.strip_prefix(&root).unwrap_or(&path).to_string_lossy().into_owned();
            found.extend(hand_resolved(&relative, &std::fs::read_to_string(&path).expect("a source file")));
            scanned.push(relative);
        }
    }
    assert!(found.is_empty(), "a path resolved by hand outside the sandbox's one resolver (sandbox/src/root.rs):\n{}", found.join("\n"));
    // Not vacuous: the files that resolved paths by hand are among those read, and every
    // mark is seen where it is allowed, in the sandbox's code.
    for former in ["image/src/in_root.rs", "image/src/unpack.rs", "image/src/store.rs", "probe/src/session/workspace.rs"] {
        assert!(scanned.iter().any(|s| s == former), "{former} was not read");
    }
    let sandbox: Vec<String> = sources(&root.join("sandbox/src"))
        .iter()
        .flat_map(|path| hand_resolved("sandbox", &std::fs::read_to_string(path).expect("a source file")))
        .collect();
    for mark in HAND_RESOLVED {
        assert!(sandbox.iter().any(|line| line.ends_with(&format!(": {mark}"))), "the mark `{mark}` is in no code of the sandbox's");
    }
}

#[test]
fn the_hand_resolution_check_sees_code_and_not_comments_or_strings() {
    let text = "// open_parent( in a comment\nlet s = \"openat2\";\nlet d = dir.open_parent()?;\nComponent::ParentDir => {} // openat2\n";
    assert_eq!(hand_resolved("f.rs", text), ["f.rs:3: open_parent(", "f.rs:4: Component::ParentDir"]);
}
