//! The runtime with regeneration off compiles none of the generator.
//!
//! `cargo tree -e normal,build` lists what a build compiles for the library and its build
//! script (dev-dependencies aside). With `--no-default-features`, as a dependent that only
//! decodes asks for it, and for the downstream example crate, the tree must hold none of
//! the generator's crates; with the default features it holds them (which also shows the
//! reading below finds them when they are there).

use std::collections::BTreeSet;
use std::path::Path;
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
    // The model relay's HTTP stack, behind the `probe` feature.
    "hyper",
    "hyper-util",
    "tokio",
];

/// Package names in `cargo tree` of `manifest` with `args`.
fn tree(manifest: &Path, args: &[&str]) -> BTreeSet<String> {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-e", "normal,build", "--prefix", "none", "--format", "{p}"])
        .arg("--manifest-path")
        .arg(manifest)
        .args(args)
        .output()
        .expect("run cargo tree");
    assert!(output.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout)
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
            GENERATOR.iter().any(|g| {
                name.as_str() == *g || name.strip_prefix(g).is_some_and(|rest| rest.starts_with('-') || rest.starts_with('_'))
            })
        })
        .collect()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn runtime_without_regeneration_has_no_generator() {
    let packages = tree(&root().join("Cargo.toml"), &["-p", "checkfu-wire", "--no-default-features"]);
    for needed in ["checkfu-wire", "checkfu-wire-vocab", "checkfu-wire-safety", "serde_json"] {
        assert!(packages.contains(needed), "{needed} missing from {packages:?}");
    }
    assert_eq!(generator_crates(&packages), Vec::<&String>::new(), "in {packages:?}");
}

#[test]
fn downstream_example_has_no_generator() {
    let packages = tree(&root().join("examples/downstream/Cargo.toml"), &[]);
    assert!(packages.contains("checkfu-wire"), "{packages:?}");
    assert_eq!(generator_crates(&packages), Vec::<&String>::new(), "in {packages:?}");
}

#[test]
fn default_features_do_regenerate() {
    let packages = tree(&root().join("Cargo.toml"), &["-p", "checkfu-wire"]);
    let found = generator_crates(&packages);
    for expected in ["checkfu-wire-codegen", "typify", "schemars", "minijinja", "clap"] {
        assert!(found.iter().any(|name| name.as_str() == expected), "{expected} not in {found:?}");
    }
}

/// Whether serde_json is built with `arbitrary_precision` in `cargo tree`'s view of
/// `manifest` with `args`: the features of every package that reaches serde_json, dev- and
/// build-dependencies included (a test binary is built with the dev-dependencies' features).
fn arbitrary_precision(manifest: &Path, args: &[&str]) -> bool {
    let output = Command::new(env!("CARGO"))
        .args(["tree", "--locked", "-e", "all,features", "-i", "serde_json", "--prefix", "none", "--format", "{p} {f}"])
        .arg("--manifest-path")
        .arg(manifest)
        .args(args)
        .output()
        .expect("run cargo tree");
    assert!(output.status.success(), "cargo tree {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines().filter(|line| line.starts_with("serde_json v")).any(|line| line.contains("arbitrary_precision"))
}

/// `exact-numbers` is the only switch of serde_json's `arbitrary_precision`: on in the
/// default build, off without default features, in the build of the runtime's tests too
/// (no dev-dependency, the generator and the differential oracle included, turns it on).
/// So the plain-number path is tested in a build that has exactly that path.
#[test]
fn exact_numbers_alone_switches_arbitrary_precision() {
    let manifest = root().join("Cargo.toml");
    assert!(arbitrary_precision(&manifest, &["-p", "checkfu-wire"]), "default features");
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire", "--no-default-features"]), "--no-default-features");
    assert!(
        arbitrary_precision(&manifest, &["-p", "checkfu-wire", "--no-default-features", "--features", "exact-numbers"]),
        "--no-default-features --features exact-numbers"
    );
    assert!(!arbitrary_precision(&manifest, &["-p", "checkfu-wire-codegen"]), "the generator alone");
}
