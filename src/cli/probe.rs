//! `probe [OPTIONS] -- COMMAND [ARGS...]`: the live local diagnostic (see
//! [`checkfu_wire::probe`]). Exit 0 when every step and check passed, 1 when the harness
//! failed one, 2 on a usage error or when the command cannot be started.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use checkfu_wire::probe::{self, ProbeOptions, UsageError};
use checkfu_wire::session::PermissionPolicy;

use super::conform::Format;

#[derive(clap::Args)]
pub struct Args {
    /// The driver whose envelope the declaration is admitted against (default: the catalog's
    /// ACP driver).
    #[arg(long)]
    pub(super) driver: Option<String>,
    /// The retention mode of the envelope.
    #[arg(long, default_value = "durable")]
    pub(super) retention: String,
    /// `checkfu.builtin_tools` for session/new: a comma-separated tool list.
    #[arg(long, value_delimiter = ',', num_args = 0..)]
    pub(super) builtin_tools: Option<Vec<String>>,
    /// Call `authenticate` with this `authMethods` id (from the initialize answer) before
    /// session/new.
    #[arg(long, value_name = "METHOD_ID")]
    pub(super) authenticate: Option<String>,
    /// `checkfu.continuity` for session/new.
    #[arg(long)]
    pub(super) continuity: Option<String>,
    /// `checkfu.runtime_config` for session/new, as JSON (`{"context_window": 200000}`).
    #[arg(long)]
    pub(super) runtime_config: Option<String>,
    /// `checkfu.output_schema` for session/new: a JSON Schema file, which must pass the
    /// safety profile before it is sent.
    #[arg(long)]
    pub(super) output_schema: Option<PathBuf>,
    /// Send a scripted cooperative interrupt (when `interrupt: cooperative` was admitted) and
    /// opt in to its check.
    #[arg(long)]
    pub(super) interrupt: bool,
    /// How permission requests are answered.
    #[arg(long, value_enum, default_value = "allow")]
    pub(super) permission: PermissionPolicy,
    /// Serve the harness's `terminal/*` requests: commands run in the session's workspace as
    /// the user running the probe (not a sandbox). Without it they are answered -32601.
    #[arg(long)]
    pub(super) allow_terminals: bool,
    /// Seconds each step may take.
    #[arg(long, default_value_t = 30.0, value_parser = seconds)]
    pub(super) step_timeout: f64,
    /// Seconds the whole session may take.
    #[arg(long, default_value_t = 120.0, value_parser = seconds)]
    pub(super) deadline: f64,
    /// Seconds the turn is still watched after its terminal, for late or duplicate emissions.
    #[arg(long, default_value_t = 0.25, value_parser = seconds)]
    pub(super) settle: f64,
    /// Seconds teardown waits after closing stdin, and again after SIGTERM.
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    pub(super) kill_grace: f64,
    /// Write the wire, both directions, as the JSON Lines `decode` reads.
    #[arg(long)]
    pub(super) record: Option<PathBuf>,
    /// Write the observation trace, as `conform` reads it.
    #[arg(long)]
    pub(super) trace: Option<PathBuf>,
    /// The provider whose gateway allow-list the model relay serves (default: the
    /// unlisted-provider route, a compatible customer endpoint).
    #[arg(long, value_name = "NAME")]
    pub(super) provider: Option<String>,
    /// The replay model's script: `nonce`, `tool`, or a JSON file of replies.
    #[arg(long, value_name = "nonce|tool|FILE", default_value = "nonce")]
    pub(super) model_script: String,
    /// Bind the run to this catalog entry: its driver, its declaration and its dialects are
    /// compared with what the harness does.
    #[arg(long, value_name = "NAME")]
    pub(super) harness: Option<String>,
    /// A launch recipe (`recipes/*.json`): command, env and home files, with placeholders.
    #[arg(long, value_name = "FILE")]
    pub(super) recipe: Option<PathBuf>,
    /// Run the harness with your own HOME (by default it gets a fresh, empty one).
    #[arg(long)]
    pub(super) inherit_home: bool,
    /// A variable for the harness, KEY=VALUE (repeatable; placeholders expanded).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = pair)]
    pub(super) env: Vec<(String, String)>,
    /// A file written into the fresh home, RELPATH=TEMPLATE or RELPATH=@FILE (the template
    /// read from FILE; `@@` for a template that starts with `@`). Repeatable; placeholders
    /// expanded.
    #[arg(long = "home-file", value_name = "RELPATH=TEMPLATE|@FILE", value_parser = home_file)]
    pub(super) home_file: Vec<(String, String)>,
    /// Do not run the harness in a loopback-only network namespace (the proxy variables
    /// are then the only fence).
    #[arg(long)]
    pub(super) no_netns: bool,
    /// Write the model calls the relay served, bodies included, as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub(super) record_model: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub(super) format: Format,
    /// The release protocol: `acp-v1` (a live ACP session) or `oneshot-v1` (a CLI run
    /// once per turn). Default: the recipe's, else `acp-v1`.
    #[arg(long, value_name = "acp-v1|oneshot-v1")]
    pub(super) protocol: Option<String>,
    /// oneshot-v1: how the prompt reaches the CLI.
    #[arg(long, value_name = "stdin|argv_path")]
    pub(super) prompt_transport: Option<String>,
    /// oneshot-v1: what the CLI prints.
    #[arg(long, value_name = "text|stream_json")]
    pub(super) output_mode: Option<String>,
    /// oneshot-v1: an argument after the entrypoint (repeatable, in order; placeholders
    /// `{prompt_path}`, `{resume_flag}` and the launch ones).
    #[arg(long = "argv", value_name = "ARG", allow_hyphen_values = true)]
    pub(super) argv: Vec<String>,
    /// oneshot-v1: the flag that makes the second run resume the first (may hold
    /// `{session_id}`).
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub(super) resume_flag: Option<String>,
    /// oneshot-v1: the flag the output schema's file path follows.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub(super) output_schema_flag: Option<String>,
    /// oneshot-v1: how the output schema reaches the CLI.
    #[arg(long, value_name = "argv_path")]
    pub(super) output_schema_transport: Option<String>,
    /// oneshot-v1: where the Runner mounts the workspace (recorded; the probe runs the CLI
    /// in its fresh workspace).
    #[arg(long, value_name = "DIR")]
    pub(super) working_directory: Option<String>,
    /// The harness command and its arguments, after `--` (optional with --recipe).
    #[arg(last = true, value_name = "COMMAND")]
    pub(super) command: Vec<OsString>,
}

/// The first one-shot flag given, if any (refused in an ACP run).
fn oneshot_flag(args: &Args) -> Option<&'static str> {
    [
        ("--prompt-transport", args.prompt_transport.is_some()),
        ("--output-mode", args.output_mode.is_some()),
        ("--argv", !args.argv.is_empty()),
        ("--resume-flag", args.resume_flag.is_some()),
        ("--output-schema-flag", args.output_schema_flag.is_some()),
        ("--output-schema-transport", args.output_schema_transport.is_some()),
        ("--working-directory", args.working_directory.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
}

fn pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not KEY=VALUE")),
    }
}

/// `RELPATH=TEMPLATE`, with curl's convention for the value: `@FILE` reads the template from
/// FILE, `@@…` is a template that starts with `@`. So a config file's path is never
/// written into the home as the file's content.
fn home_file(text: &str) -> Result<(String, String), String> {
    let (path, value) = pair(text)?;
    if let Some(literal) = value.strip_prefix("@@") {
        return Ok((path, format!("@{literal}")));
    }
    match value.strip_prefix('@') {
        Some(file) => match std::fs::read_to_string(file) {
            Ok(template) => Ok((path, template)),
            Err(e) => Err(format!("cannot read the template `{file}` (`@` reads a file; `@@` writes a literal `@`): {e}")),
        },
        None => Ok((path, value)),
    }
}

/// An output path is checked before anything starts: its directory must exist, and the
/// path must not be a directory, so a run is never thrown away at the end for want of a
/// place to write it.
pub(super) fn writable(flag: &str, path: &Path) -> Result<(), String> {
    if path.is_dir() {
        return Err(format!("{flag} {}: is a directory", path.display()));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(format!("{flag} {}: {} is not a directory", path.display(), parent.display())),
        Err(e) => Err(format!("{flag} {}: cannot use {}: {e}", path.display(), parent.display())),
    }
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds between 0 and 86400")),
    }
}

pub(super) fn usage(message: impl std::fmt::Display) -> i32 {
    eprintln!("error: {message}");
    2
}

pub fn probe(args: Args) -> i32 {
    for (flag, path) in [("--record", &args.record), ("--trace", &args.trace), ("--record-model", &args.record_model)] {
        if let Some(path) = path {
            if let Err(e) = writable(flag, path) {
                return usage(e);
            }
        }
    }
    let recipe = match &args.recipe {
        Some(path) => match probe::recipe::Recipe::load(path) {
            Ok(recipe) => Some(recipe),
            Err(e) => return usage(e),
        },
        None => None,
    };
    let protocol =
        args.protocol.clone().or_else(|| recipe.as_ref().and_then(|r| r.protocol.clone())).unwrap_or_else(|| String::from("acp-v1"));
    match protocol.as_str() {
        "acp-v1" => {
            if let Some(flag) = oneshot_flag(&args) {
                return usage(format!("{flag} is a oneshot-v1 flag; add --protocol oneshot-v1"));
            }
        }
        checkfu_wire::oneshot::PROTOCOL => return super::probe_oneshot::probe(args, recipe),
        other => return usage(format!("--protocol {other}: known protocols are acp-v1 and {}", checkfu_wire::oneshot::PROTOCOL)),
    }
    let command = match (&recipe, args.command.is_empty()) {
        (_, false) => args.command.clone(),
        (Some(recipe), true) => recipe.command.iter().map(OsString::from).collect(),
        (None, true) => return usage("no harness command: give one after `--`, or a --recipe"),
    };
    let mut options = ProbeOptions::new(command);
    if let Some(recipe) = &recipe {
        options.harness = recipe.harness.clone();
        options.env = recipe.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        options.home_files = recipe.home_files.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    }
    if args.harness.is_some() {
        options.harness = args.harness.clone();
    }
    // The entry's driver is the default driver of a bound run.
    if let Some(entry) = options.harness.as_deref().and_then(|n| checkfu_wire::catalog::HARNESSES.iter().find(|h| h.name == n)) {
        if let Some(driver) = entry.driver {
            options.driver = driver.to_owned();
        }
    }
    if let Err(code) = shared_options(&args, &mut options) {
        return code;
    }
    if let Some(driver) = args.driver.clone() {
        options.driver = driver;
    }
    options.retention = args.retention.clone();
    options.builtin_tools = args.builtin_tools.clone();
    options.continuity = args.continuity.clone();
    options.authenticate = args.authenticate.clone();
    if let Some(text) = &args.runtime_config {
        match serde_json::from_str(text) {
            Ok(value) => options.runtime_config = Some(value),
            Err(e) => return usage(format!("--runtime-config is not JSON: {e}")),
        }
    }
    options.interrupt = args.interrupt;
    options.permission = args.permission;
    options.terminals = args.allow_terminals;

    // In text format the banner and each step are said as they happen, on stderr, so that
    // a slow harness is never met with silence and `--format json` keeps stdout one object.
    // The banner comes from the run, once the argv is expanded as it will be run.
    let live = matches!(args.format, Format::Text);
    // Notes (a blocked entry, an unreachable cell) are said before the run in either format.
    let mut progress = |line: &str| {
        if live || line.starts_with("note ") {
            eprintln!("{line}");
        }
    };
    let result = match probe::run_with(&options, &mut progress) {
        Ok(result) => result,
        Err(e @ (UsageError::Options(_) | UsageError::CannotStart(_))) => return usage(e),
    };
    let calls = result.model_plane.as_ref().map(|p| p.calls_jsonl()).unwrap_or_default();
    let files = [(&args.record, result.record.as_slice()), (&args.trace, result.trace.as_bytes()), (&args.record_model, calls.as_bytes())];
    let rendered = match args.format {
        Format::Text => result.to_text(),
        Format::Json => result.to_json(),
    };
    report(&files, &rendered, result.passed())
}

/// Writes the output files (each whole or not at all), then the report, and gives the exit
/// code: 0 passed, 1 failed, 2 when a file cannot be written.
pub(super) fn report(files: &[(&Option<PathBuf>, &[u8])], rendered: &str, passed: bool) -> i32 {
    for (path, bytes) in files {
        if let Some(path) = path {
            if let Err(e) = write_whole(path, bytes) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return 2;
            }
        }
    }
    let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
    if passed {
        0
    } else {
        1
    }
}

/// The options both lanes take from the command line: the model plane, the harness's
/// environment, the output schema and the times. `Err` is the exit code of a usage error.
pub(super) fn shared_options(args: &Args, options: &mut ProbeOptions) -> Result<(), i32> {
    options.env.extend(args.env.iter().cloned());
    options.home_files.extend(args.home_file.iter().cloned());
    options.provider = args.provider.clone();
    options.inherit_home = args.inherit_home;
    options.netns = !args.no_netns;
    options.record_bodies = args.record_model.is_some();
    options.model_script = match checkfu_wire::relay::Script::parse(&args.model_script) {
        Ok(script) => script,
        Err(e) => return Err(usage(e)),
    };
    if let Some(path) = &args.output_schema {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => return Err(usage(format!("cannot read {}: {e}", path.display()))),
        };
        match serde_json::from_slice(&bytes) {
            Ok(value) => options.output_schema = Some(value),
            Err(e) => return Err(usage(format!("{}:{}:{}: not JSON: {e}", path.display(), e.line(), e.column()))),
        }
    }
    options.step_timeout = Duration::from_secs_f64(args.step_timeout);
    options.deadline = Duration::from_secs_f64(args.deadline);
    options.settle = Duration::from_secs_f64(args.settle);
    options.kill_grace = Duration::from_secs_f64(args.kill_grace);
    Ok(())
}

/// Writes a file whole or not at all: a temporary file beside it, then a rename.
fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}
