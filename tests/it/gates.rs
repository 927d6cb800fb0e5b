//! Which integration tests a build ignores, read from the same attributes that ignore them.
//!
//! A test that needs what a machine may lack carries `#[cfg_attr(PREDICATE, ignore = "…")]`,
//! where the predicate names the cfgs `tests/build.rs` sets from the environment
//! (`checkfu_image_tools` when `CHECKFU_IMAGE_TOOLS` is set, and so on). This module parses
//! every source file of this binary with `syn`, evaluates each such predicate against the
//! cfgs this build was compiled with, and holds the binary's own `--list --ignored` to exactly
//! that set. No count is kept by hand: a new gated test is covered by being written.
//!
//! The getting-started chapter lists what a plain `cargo test --workspace` (no variable set)
//! skips and what each needs; [`the_getting_started_chapter_lists_every_test_a_plain_run_skips`]
//! holds it to the same parse.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token};

/// An input a test may need, as `tests/build.rs` turns it into a cfg.
struct Input {
    cfg: &'static str,
    /// Whether this build was compiled with the cfg.
    built: bool,
    /// Under this variable (set by `.ci/run`) a test ignored for want of the input fails.
    required_by: &'static str,
}

/// Every cfg a gate may name. A predicate naming any other fails the parse, so a new input
/// has to be added here (and to `tests/build.rs`) before a test can be gated on it.
const INPUTS: &[Input] = &[
    Input { cfg: "checkfu_jsts", built: cfg!(checkfu_jsts), required_by: "CHECKFU_REQUIRE_JSTS" },
    Input { cfg: "checkfu_ts_agent", built: cfg!(checkfu_ts_agent), required_by: "CHECKFU_REQUIRE_TS_AGENT" },
    Input { cfg: "checkfu_real_agents", built: cfg!(checkfu_real_agents), required_by: "CHECKFU_REQUIRE_REAL_AGENTS" },
    Input { cfg: "checkfu_relay_sdk", built: cfg!(checkfu_relay_sdk), required_by: "CHECKFU_REQUIRE_RELAY_SDK" },
    Input { cfg: "checkfu_real_oneshot", built: cfg!(checkfu_real_oneshot), required_by: "CHECKFU_REQUIRE_REAL_ONESHOT" },
    Input { cfg: "checkfu_public_schemas", built: cfg!(checkfu_public_schemas), required_by: "CHECKFU_REQUIRE_PUBLIC_SCHEMAS" },
    Input { cfg: "checkfu_image_tools", built: cfg!(checkfu_image_tools), required_by: "CHECKFU_REQUIRE_IMAGE_TOOLS" },
    Input { cfg: "checkfu_podman", built: cfg!(checkfu_podman), required_by: "CHECKFU_REQUIRE_PODMAN" },
    Input { cfg: "checkfu_docker", built: cfg!(checkfu_docker), required_by: "CHECKFU_REQUIRE_DOCKER" },
    Input { cfg: "checkfu_report_consumers", built: cfg!(checkfu_report_consumers), required_by: "CHECKFU_REQUIRE_REPORT_CONSUMERS" },
];

/// When a test is ignored.
#[derive(Debug, Clone)]
enum Gate {
    /// `#[ignore]`: in every build.
    Always,
    /// `#[cfg_attr(predicate, ignore …)]`.
    When(Predicate),
}

/// A cfg predicate as written in a `cfg_attr`.
#[derive(Debug, Clone)]
enum Predicate {
    Cfg(String),
    Not(Box<Predicate>),
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
}

impl Predicate {
    fn parse(meta: &Meta, at: &str) -> Predicate {
        match meta {
            Meta::Path(path) => {
                let name = path.get_ident().map(|i| i.to_string()).unwrap_or_else(|| panic!("{at}: a cfg that is not a name"));
                assert!(INPUTS.iter().any(|i| i.cfg == name), "{at}: `{name}` is not an input of tests/build.rs (gates.rs INPUTS)");
                Predicate::Cfg(name)
            }
            Meta::List(list) => {
                let nested: Vec<Predicate> = list
                    .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
                    .unwrap_or_else(|e| panic!("{at}: {e}"))
                    .iter()
                    .map(|m| Predicate::parse(m, at))
                    .collect();
                match list.path.get_ident().map(|i| i.to_string()).as_deref() {
                    Some("not") if nested.len() == 1 => Predicate::Not(Box::new(nested.into_iter().next().expect("one"))),
                    Some("all") => Predicate::All(nested),
                    Some("any") => Predicate::Any(nested),
                    _ => panic!("{at}: an unknown cfg predicate"),
                }
            }
            Meta::NameValue(_) => panic!("{at}: a gate on `name = value` (a feature?) is not an input; compile the test out instead"),
        }
    }

    fn holds(&self, built: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Predicate::Cfg(name) => built(name),
            Predicate::Not(inner) => !inner.holds(built),
            Predicate::All(all) => all.iter().all(|p| p.holds(built)),
            Predicate::Any(any) => any.iter().any(|p| p.holds(built)),
        }
    }

    fn cfgs(&self, into: &mut BTreeSet<String>) {
        match self {
            Predicate::Cfg(name) => {
                into.insert(name.clone());
            }
            Predicate::Not(inner) => inner.cfgs(into),
            Predicate::All(list) | Predicate::Any(list) => list.iter().for_each(|p| p.cfgs(into)),
        }
    }
}

impl Gate {
    fn ignores(&self, built: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Gate::Always => true,
            Gate::When(predicate) => predicate.holds(built),
        }
    }
}

/// Whether this build has `cfg`.
fn in_this_build(cfg: &str) -> bool {
    INPUTS.iter().any(|i| i.cfg == cfg && i.built)
}

/// A plain `cargo test --workspace`: no input variable set.
fn in_a_plain_build(_: &str) -> bool {
    false
}

/// Every test function with a gate in the module tree rooted at `file` (named `prefix`), by
/// its full name as the test runner lists it.
fn gated_tests(file: &Path, prefix: &str, found: &mut BTreeMap<String, Gate>) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    // A module declared in `dir/name.rs` or `dir/name/mod.rs` lives in `dir/name/`; the
    // crate root and `mod.rs` files keep their own directory.
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    let dir = if stem == "main" || stem == "mod" { file.parent().expect("dir").to_path_buf() } else { file.with_extension("") };
    walk(&parsed.items, &dir, prefix, found, &file.display().to_string());
}

fn walk(items: &[Item], dir: &Path, prefix: &str, found: &mut BTreeMap<String, Gate>, at: &str) {
    for item in items {
        match item {
            Item::Fn(function) if is_test(&function.attrs) => {
                let name = format!("{prefix}{}", function.sig.ident);
                if let Some(gate) = gate(&function.attrs, &format!("{at}: {name}")) {
                    found.insert(name, gate);
                }
            }
            Item::Mod(module) => {
                let name = module.ident.to_string();
                let inner_prefix = format!("{prefix}{name}::");
                // `#[path = "…"]`, relative to the declaring file's directory (as it is for the
                // crate roots and `mod.rs` files that use it here).
                let path = module.attrs.iter().find(|a| a.path().is_ident("path")).map(|a| match &a.meta {
                    Meta::NameValue(syn::MetaNameValue { value: syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }), .. }) => {
                        s.value()
                    }
                    _ => panic!("{at}: a #[path] without a string"),
                });
                match (&module.content, path) {
                    (Some((_, inline)), _) => walk(inline, &dir.join(&name), &inner_prefix, found, at),
                    (None, Some(path)) => gated_tests(&dir.join(path), &inner_prefix, found),
                    (None, None) => {
                        let flat: PathBuf = dir.join(format!("{name}.rs"));
                        let file = if flat.exists() { flat } else { dir.join(&name).join("mod.rs") };
                        gated_tests(&file, &inner_prefix, found);
                    }
                }
            }
            _ => {}
        }
    }
}

fn is_test(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|a| a.path().is_ident("test"))
}

fn gate(attrs: &[Attribute], at: &str) -> Option<Gate> {
    for attr in attrs {
        if attr.path().is_ident("ignore") {
            return Some(Gate::Always);
        }
        if attr.path().is_ident("cfg_attr") {
            let args = attr.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated).unwrap_or_else(|e| panic!("{at}: {e}"));
            let mut args = args.iter();
            let predicate = Predicate::parse(args.next().unwrap_or_else(|| panic!("{at}: an empty cfg_attr")), at);
            if args.any(|m| m.path().is_ident("ignore")) {
                return Some(Gate::When(predicate));
            }
        }
    }
    None
}

/// This binary's tests, all or only the ignored ones, as `module::name`.
fn listed(ignored: bool) -> BTreeSet<String> {
    let mut command = Command::new(std::env::current_exe().expect("this test binary"));
    command.arg("--list");
    if ignored {
        command.arg("--ignored");
    }
    let output = command.output().expect("the test binary lists its tests");
    String::from_utf8_lossy(&output.stdout).lines().filter_map(|l| l.strip_suffix(": test")).map(str::to_owned).collect()
}

fn this_binarys_gates() -> BTreeMap<String, Gate> {
    let mut found = BTreeMap::new();
    gated_tests(&Path::new(env!("CARGO_MANIFEST_DIR")).join("it/main.rs"), "", &mut found);
    found
}

#[test]
fn every_test_is_ignored_exactly_where_its_gate_says() {
    let gates = this_binarys_gates();
    let all = listed(false);
    let ignored = listed(true);
    assert!(all.contains("gates::every_test_is_ignored_exactly_where_its_gate_says"), "the listing names this test");
    // Tests compiled out (by a module's `cfg(feature = …)`) are not listed, so only the
    // listed ones are held to their gates.
    let expected: BTreeSet<String> =
        gates.iter().filter(|(name, gate)| all.contains(*name) && gate.ignores(&in_this_build)).map(|(name, _)| name.clone()).collect();
    let unexplained: Vec<&String> = ignored.difference(&expected).collect();
    let not_ignored: Vec<&String> = expected.difference(&ignored).collect();
    assert!(unexplained.is_empty(), "ignored without a gate this parse found: {unexplained:?}");
    assert!(not_ignored.is_empty(), "gated but not ignored: {not_ignored:?}");

    // Where `.ci/run` requires an input, no test may be ignored for want of it: a gate naming
    // a required cfg must hold with every cfg it names built.
    let required: Vec<&Input> = INPUTS.iter().filter(|i| std::env::var_os(i.required_by).is_some()).collect();
    for input in &required {
        assert!(input.built, "{} is set but `{}` was not when the tests were built (see tests/build.rs)", input.required_by, input.cfg);
    }
    for name in &ignored {
        if let Some(Gate::When(predicate)) = gates.get(name) {
            let mut cfgs = BTreeSet::new();
            predicate.cfgs(&mut cfgs);
            let wanted: Vec<&Input> = required.iter().copied().filter(|i| cfgs.contains(i.cfg)).collect();
            assert!(
                wanted.is_empty(),
                "{name} is ignored though {} require(s) it",
                wanted.iter().map(|i| i.required_by).collect::<Vec<_>>().join(", ")
            );
        }
    }
}

/// The rows of the chapter's table of skipped tests: the first cell of each row between the
/// table's markers, a test's full name in backticks.
fn chapter_rows() -> BTreeSet<String> {
    let path = crate::support::project::project_root().join("docs/guide/getting-started.md");
    let text = std::fs::read_to_string(&path).expect("the getting-started chapter");
    let start = text.find("<!-- skipped-tests:start -->").expect("the chapter marks its table of skipped tests");
    let end = text.find("<!-- skipped-tests:end -->").expect("the table's end marker");
    text[start..end]
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn the_getting_started_chapter_lists_every_test_a_plain_run_skips() {
    let mut plain: BTreeSet<String> =
        this_binarys_gates().into_iter().filter(|(_, gate)| gate.ignores(&in_a_plain_build)).map(|(name, _)| name).collect();
    // The safety crate's own integration test binary gates one test on the suite the same
    // way; listed as `checkfu-wire-safety: NAME`.
    let mut safety = BTreeMap::new();
    gated_tests(&crate::support::project::project_root().join("safety/tests/it/main.rs"), "", &mut safety);
    plain.extend(
        safety.into_iter().filter(|(_, gate)| gate.ignores(&in_a_plain_build)).map(|(name, _)| format!("checkfu-wire-safety: {name}")),
    );
    let rows = chapter_rows();
    let missing: Vec<&String> = plain.difference(&rows).collect();
    let stale: Vec<&String> = rows.difference(&plain).collect();
    assert!(missing.is_empty() && stale.is_empty(), "docs/guide/getting-started.md: missing {missing:?}, no longer skipped {stale:?}");
    // In a plain build the chapter is what the runner says it skips.
    if !INPUTS.iter().any(|i| i.built) {
        let ignored = listed(true);
        let from_this_binary: BTreeSet<String> = rows.iter().filter(|r| !r.starts_with("checkfu-wire-safety: ")).cloned().collect();
        let compiled: BTreeSet<String> = listed(false);
        let expected: BTreeSet<String> = from_this_binary.intersection(&compiled).cloned().collect();
        assert_eq!(ignored, expected);
    }
}
