//! Builds generated schema modules in a crate of their own and runs them: the proof that
//! what the generator reports as success compiles, and that its decoders agree with the
//! oracle, for schemas that are not compiled into this crate.
//!
//! The crate depends on `checkfu-wire` by path and maps its `exact` module to
//! `crate::exact`, where generated code looks for it. Its target directory lives under
//! this workspace's `target/`, so only the generated modules are rebuilt from one run to
//! the next. Its binary reads cases as JSON Lines on stdin and answers with verdicts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use super::oracle::{Case, Verdict};

/// A generated module: its name and its source.
pub struct Module {
    pub name: String,
    pub source: String,
}

/// One schema file generated for a test: its module, its root definition's name, and
/// every definition as `(name, origin)`, the JSON Pointer in the input it came from.
pub struct Generated {
    pub module: Module,
    pub root: String,
    pub definitions: Vec<(String, String)>,
}

/// Generates `schema` as the file `file` would be; `Err` is the compiler's diagnostics.
pub fn generate(file: &str, schema: &Value) -> Result<Generated, Vec<checkfu_wire_codegen::diagnostic::Diagnostic>> {
    use checkfu_wire_codegen::rust::{format_file, schemas};
    let generated = schemas::generate(file, schema)?;
    let source = format_file("// generated for a test", generated.tokens).expect("generated code formats");
    let (name, root) = schemas::names(file);
    let origins = checkfu_wire_codegen::schema::normalize::normalize(&root, schema).origins;
    Ok(Generated { module: Module { name, source }, root, definitions: origins.into_iter().collect() })
}

const MAIN: &str = r#"
use std::io::BufRead;
use serde_json::{json, Value};

fn main() {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout());
    for line in stdin.lock().lines() {
        let case: Value = serde_json::from_str(&line.expect("stdin")).expect("case");
        let (module, def) = (case["module"].as_str().unwrap_or(""), case["def"].as_str().unwrap_or(""));
        let instance = &case["instance"];
        let verdict = match TABLE.iter().find(|(m, _)| *m == module).and_then(|(_, defs)| defs.iter().find(|d| d.name == def)) {
            Some(d) => json!({
                "checked": (d.check)(instance).is_ok(),
                "roundtrip": match (d.roundtrip)(instance) { Ok(v) => json!({"ok": v}), Err(e) => json!({"err": e.to_string()}) },
            }),
            None => json!({"missing": true}),
        };
        std::io::Write::write_all(&mut out, format!("{verdict}\n").as_bytes()).expect("stdout");
    }
}
"#;

fn workspace() -> PathBuf {
    crate::support::project::project_root()
}

/// Writes the crate `name` with `modules` and builds it; `Err` is the compiler's output.
pub fn build(name: &str, modules: &[Module]) -> Result<PathBuf, String> {
    build_with(name, modules, MAIN, false)
}

/// The timing harness `tests/benches/check_bound.rs` runs: each line names a case and how many
/// checks one sample makes; the answer is the median time of one check over the samples.
pub const TIMING_MAIN: &str = r#"
use std::io::BufRead;
use serde_json::{json, Value};

fn main() {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let case: Value = serde_json::from_str(&line.expect("stdin")).expect("case");
        let (module, def) = (case["module"].as_str().unwrap_or(""), case["def"].as_str().unwrap_or(""));
        let (instance, per_sample) = (&case["instance"], case["per_sample"].as_u64().unwrap_or(1));
        let Some(d) = TABLE.iter().find(|(m, _)| *m == module).and_then(|(_, defs)| defs.iter().find(|d| d.name == def)) else {
            println!("{}", json!({"missing": true}));
            continue;
        };
        let mut samples = Vec::new();
        for _ in 0..31 {
            let start = std::time::Instant::now();
            for _ in 0..per_sample {
                std::hint::black_box((d.check)(std::hint::black_box(instance)).is_ok());
            }
            samples.push(start.elapsed().as_nanos() as f64 / per_sample as f64);
        }
        samples.sort_by(f64::total_cmp);
        println!("{}", json!({"ns": samples[samples.len() / 2], "ok": (d.check)(instance).is_ok()}));
    }
}
"#;

/// [`build`] with another `main` (it finds the modules in `TABLE`), in release mode when
/// `release` (for benchmarks).
pub fn build_with(name: &str, modules: &[Module], main_source: &str, release: bool) -> Result<PathBuf, String> {
    build_against(name, modules, main_source, release, "")
}

/// The members the `checkfu-wire` dependency's declaration ends with: the numbers of this
/// test build (the runtime's `exact-numbers` when the tests have it, so the generated checks
/// and the oracle read numbers alike), then `runtime`.
fn runtime_members(runtime: &str) -> String {
    let mut members = String::new();
    if cfg!(feature = "exact-numbers") {
        members.push_str(", features = [\"exact-numbers\"]");
    }
    if !runtime.is_empty() {
        members.push_str(", ");
        members.push_str(runtime);
    }
    members
}

/// [`build_with`], the `checkfu-wire` dependency's declaration extended by `runtime` (TOML
/// inline-table members such as `default-features = false`).
pub fn build_against(name: &str, modules: &[Module], main_source: &str, release: bool, runtime: &str) -> Result<PathBuf, String> {
    let root = workspace();
    let dir = root.join("target").join("compile-tests").join(name);
    let src = dir.join("src");
    std::fs::create_dir_all(&src).expect("create the crate");
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [dependencies]\ncheckfu-wire = {{ path = {root:?}{runtime} }}\nserde = {{ version = \"1\", features = [\"derive\"] }}\n\
         serde_json = {{ version = \"1\", features = [\"preserve_order\", \"raw_value\"] }}\n\n[workspace]\n",
        root = root.display().to_string(),
        runtime = runtime_members(runtime),
    );
    write_if_changed(&dir.join("Cargo.toml"), &manifest);
    if !dir.join("Cargo.lock").exists() {
        std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    }
    let mut main = String::from("#![allow(warnings)]\nmod exact { pub use checkfu_wire::exact::*; }\n");
    let mut table = Vec::new();
    for module in modules {
        write_if_changed(&src.join(format!("{}.rs", module.name)), &module.source);
        main.push_str(&format!(
            "#[allow(warnings, clippy::all)] pub mod {m} {{ include!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/{m}.rs\")); }}\n",
            m = module.name
        ));
        table.push(format!("(\"{m}\", {m}::checks::DEFINITIONS)", m = module.name));
    }
    main.push_str(&format!("static TABLE: &[(&str, &[checkfu_wire::exact::Definition])] = &[{}];\n", table.join(", ")));
    main.push_str(main_source);
    write_if_changed(&src.join("main.rs"), &main);
    let target = root.join("target").join("compile-tests").join("target");
    let mut args = vec!["build".to_string(), "--offline".into(), "--quiet".into(), "--message-format=short".into()];
    if release {
        args.push("--release".into());
    } else {
        // The crate holding the generated code gets full debug info, as a user's `cargo
        // build` gives it, whatever the caller's profile says (`.ci/run` keeps line tables
        // only, to save disk): debug info once made rustc overflow its stack on a cycle of
        // a thousand definitions, where a build without it passed.
        args.push("--config".into());
        args.push(format!("profile.dev.package.\"{name}\".debug=\"full\""));
    }
    let output = Command::new(env!("CARGO"))
        .args(&args)
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        // On rustc's default stack: a caller's larger one would hide an overflow that the
        // generated code's users would meet (long reference graphs once did).
        .env_remove("RUST_MIN_STACK")
        .output()
        .expect("run cargo");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(target.join(if release { "release" } else { "debug" }).join(name))
}

fn write_if_changed(path: &Path, contents: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == contents) {
        return;
    }
    std::fs::write(path, contents).expect("write a crate file");
}

/// Runs the built binary on `cases`; `modules[i]` names the module of `cases[i]`.
pub fn verdicts(binary: &Path, modules: &[String], cases: &[Case]) -> Vec<Verdict> {
    let mut child = Command::new(binary).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("run the built binary");
    let mut input = String::new();
    for (case, module) in cases.iter().zip(modules) {
        input.push_str(&json!({"module": module, "def": case.def, "instance": case.instance}).to_string());
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child.wait_with_output().expect("binary output");
    writer.join().expect("writer thread").expect("write cases");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("verdict JSON");
            Verdict {
                checked: v["checked"].as_bool().unwrap_or(false),
                roundtrip: match &v["roundtrip"] {
                    Value::Object(o) if o.contains_key("ok") => Ok(o["ok"].clone()),
                    other => Err(other.to_string()),
                },
            }
        })
        .collect()
}
