//! The runtime is light: a dependent compiles none of the generator, the command line or
//! the probe's HTTP stack.
//!
//! `cargo tree -e normal,build` lists what a build compiles for the library and its build
//! script (dev-dependencies aside). For `checkfu-wire` with its default features, without
//! any, and for the downstream example crate, the tree must hold none of those crates; the
//! `checkfu-wire` command's crate holds them (which also shows the reading below finds them
//! when they are there).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The generator and what only it needs (issue 18), the command line, and the relay's HTTP
/// stack.
const GENERATOR: &[&str] = &[
    "checkfu-wire-codegen",
    "typify",
    "prettyplease",
    "schemars",
    "minijinja",
    "toml",
    "annotate-snippets",
    "similar",
    "regress",
    "clap",
    // The model relay's HTTP stack (`checkfu-wire-probe`).
    "hyper",
    "hyper-util",
    "tokio",
];

/// What `cargo tree --prefix none` prints for `manifest` with `how` (format, edges, depth)
/// and `args` (package, features).
fn cargo_tree(manifest: &Path, how: &[&str], args: &[&str]) -> String {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "--prefix", "none"])
        .args(how)
        .arg("--manifest-path")
        .arg(manifest)
        .args(args)
        .output()
        .expect("run cargo tree");
    assert!(output.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Package names in `cargo tree -e normal,build` of `manifest` with `args`.
fn tree(manifest: &Path, args: &[&str]) -> BTreeSet<String> {
    tree_of(manifest, &["-e", "normal,build"], args)
}

/// Package names in `cargo tree` of `manifest` with `edges` (which dependencies it follows,
/// how deep) and `args`.
fn tree_of(manifest: &Path, edges: &[&str], args: &[&str]) -> BTreeSet<String> {
    cargo_tree(manifest, &[&["--format", "{p}"], edges].concat(), args)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(String::from)
        .collect()
}

/// The generator's crates in `packages`: each name, or a crate of its family
/// (`typify-impl`, `schemars_derive`).
fn generator_crates(packages: &BTreeSet<String>) -> Vec<&String> {
    packages
        .iter()
        .filter(|name| {
            GENERATOR
                .iter()
                .any(|g| name.as_str() == *g || name.strip_prefix(g).is_some_and(|rest| rest.starts_with('-') || rest.starts_with('_')))
        })
        .collect()
}

fn root() -> PathBuf {
    crate::support::project::project_root()
}

#[test]
fn runtime_has_no_generator_by_default_or_without_features() {
    for features in [&[][..], &["--no-default-features"]] {
        let packages = tree(&root().join("Cargo.toml"), &[&["-p", "checkfu-wire"], features].concat());
        for needed in ["checkfu-wire", "checkfu-wire-vocab", "checkfu-wire-safety", "serde_json"] {
            assert!(packages.contains(needed), "{needed} missing from {packages:?} ({features:?})");
        }
        assert_eq!(generator_crates(&packages), Vec::<&String>::new(), "in {packages:?} ({features:?})");
        assert!(!packages.contains("libc"), "libc in {packages:?} ({features:?})");
    }
}

#[test]
fn downstream_example_has_no_generator() {
    let packages = tree(&root().join("examples/downstream/Cargo.toml"), &[]);
    assert!(packages.contains("checkfu-wire"), "{packages:?}");
    assert_eq!(generator_crates(&packages), Vec::<&String>::new(), "in {packages:?}");
}

/// What a crate that only decodes never runs, so never compiles: the regex engine (no
/// schema the runtime serves uses `pattern`; the safety profile parses an author's
/// patterns with `regex-syntax` alone) and `libc` (the probe's process groups and fences).
const NOT_DECODE_ONLY: &[&str] = &["regex", "regex-automata", "aho-corasick", "libc"];

#[test]
fn downstream_example_compiles_no_regex_engine_and_no_libc() {
    let packages = tree(&root().join("examples/downstream/Cargo.toml"), &[]);
    let found: Vec<_> = NOT_DECODE_ONLY.iter().filter(|name| packages.contains(**name)).collect();
    assert_eq!(found, Vec::<&&str>::new(), "in {packages:?}");
    // The safety profile's pattern parser stays: it lints `checkfu.output_schema`.
    assert!(packages.contains("regex-syntax"), "{packages:?}");
    // And the builds that need them have them, so the reading above finds them when they
    // are there: the runtime's default `patterns`, the probe's fences.
    let runtime = tree(&root().join("Cargo.toml"), &["-p", "checkfu-wire"]);
    assert!(runtime.contains("regex"), "regex not in {runtime:?}");
    let probe = tree(&root().join("Cargo.toml"), &["-p", "checkfu-wire-probe"]);
    assert!(probe.contains("libc"), "libc not in {probe:?}");
}

/// The features `package` is built with in `cargo tree`'s view of `manifest` with `args`.
fn features_of(manifest: &Path, package: &str, args: &[&str]) -> BTreeSet<String> {
    let text = cargo_tree(manifest, &["-e", "normal,build", "-i", package, "--format", "{p} {f}"], args);
    let line = text.lines().find(|line| line.starts_with(&format!("{package} v"))).unwrap_or_else(|| panic!("{package} in {text}"));
    line.rsplit_once(") ").map_or("", |(_, features)| features).split(',').filter(|f| !f.is_empty()).map(String::from).collect()
}

/// A crate that only decodes compiles neither the conformance checker, the one-shot stream
/// reader (with the one-shot declaration), ACP v2's tables and schema checks (`acp-v2`) nor
/// the `lint-schema` command: what took its build under three times a serde crate's
/// (docs/measurements/build-cost.md). The command's build has them, so the reading finds
/// them when they are there.
#[test]
fn downstream_example_compiles_no_conformance_checker_one_shot_reader_or_lint_command() {
    let downstream = root().join("examples/downstream/Cargo.toml");
    let workspace = root().join("Cargo.toml");
    for (package, features) in [
        ("checkfu-wire", &["conformance", "oneshot", "acp-v2"][..]),
        ("checkfu-wire-vocab", &["oneshot"]),
        ("checkfu-wire-safety", &["cli"]),
    ] {
        let decode_only = features_of(&downstream, package, &[]);
        let with_them = features_of(&workspace, package, &["-p", "checkfu-wire-cli"]);
        for feature in features {
            assert!(!decode_only.contains(*feature), "{package} has {feature} in the downstream build: {decode_only:?}");
            assert!(with_them.contains(*feature), "{package} lacks {feature} in the command's build: {with_them:?}");
        }
    }
    // The v2 schema's checks are compiled only with `acp-v2`, as its tables are.
    let index = std::fs::read_to_string(root().join("generated/schema_types.rs")).expect("the runtime's schema index");
    let at = index.find("pub mod acp_v2 ").expect("the runtime compiles the v2 checks its tables reach");
    // The attributes of that module: what follows the item before it.
    let attributes = &index[index[..at].rfind('}').map_or(0, |i| i + 1)..at];
    assert!(attributes.contains("#[cfg(feature = \"acp-v2\")]"), "the runtime's acp_v2 module is not behind `acp-v2`: {attributes}");
}

/// Without `regenerate` the build script only copies the checked-in Rust and has no
/// dependency: no crate is compiled a second time, for the host, to run it.
#[test]
fn build_script_without_regeneration_depends_on_nothing() {
    let manifest = root().join("Cargo.toml");
    let host = |args: &[&str]| {
        let mut packages = tree_of(&manifest, &["-e", "build", "--depth", "1"], &[&["-p", "checkfu-wire"], args].concat());
        packages.remove("checkfu-wire");
        packages.remove("[build-dependencies]");
        packages
    };
    assert_eq!(host(&["--no-default-features"]), BTreeSet::new());
    assert_eq!(host(&["--no-default-features", "--features", "exact-numbers"]), BTreeSet::new());
    assert_eq!(host(&[]), BTreeSet::new(), "the default features");
    let regenerating = host(&["--features", "regenerate"]);
    assert!(regenerating.contains("checkfu-wire-codegen") && regenerating.contains("serde_json"), "{regenerating:?}");
}

/// The `checkfu-wire` command regenerates: its crate turns the runtime's `regenerate` on.
#[test]
fn the_command_line_regenerates() {
    let packages = tree(&root().join("Cargo.toml"), &["-p", "checkfu-wire-cli"]);
    let found = generator_crates(&packages);
    for expected in ["checkfu-wire-codegen", "typify", "schemars", "minijinja", "clap"] {
        assert!(found.iter().any(|name| name.as_str() == expected), "{expected} not in {found:?}");
    }
}

/// Whether serde_json is built with `arbitrary_precision` in `cargo tree`'s view of
/// `manifest` with `args`: the features of every package that reaches serde_json, dev- and
/// build-dependencies included (a test binary is built with the dev-dependencies' features).
fn arbitrary_precision(manifest: &Path, args: &[&str]) -> bool {
    let text = cargo_tree(manifest, &["-e", "all,features", "-i", "serde_json", "--format", "{p} {f}"], args);
    text.lines().filter(|line| line.starts_with("serde_json v")).any(|line| line.contains("arbitrary_precision"))
}

/// `exact-numbers` is the only switch of serde_json's `arbitrary_precision`: off in the
/// runtime's default build and without default features, in the build of its tests too (no
/// dev-dependency, the generator included, turns it on); on in the command's build and in
/// the tests' default build. The tests without default features (`.ci/run`) leave it off, so
/// the plain-number path is tested in a build that has exactly that path.
#[test]
fn exact_numbers_alone_switches_arbitrary_precision() {
    let manifest = root().join("Cargo.toml");
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire"]), "default features");
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire", "--no-default-features"]), "--no-default-features");
    assert!(arbitrary_precision(&manifest, &["-p", "checkfu-wire-cli"]), "the command");
    assert!(arbitrary_precision(&manifest, &["-p", "checkfu-wire-tests"]), "the tests' default");
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire-tests", "--no-default-features"]), "the tests without defaults");
    assert!(
        arbitrary_precision(&manifest, &["-p", "checkfu-wire", "--no-default-features", "--features", "exact-numbers"]),
        "--no-default-features --features exact-numbers"
    );
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire-codegen"]), "the generator alone");
}
