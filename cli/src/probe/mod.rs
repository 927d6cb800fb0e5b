//! `probe [OPTIONS] -- COMMAND [ARGS...]`: the live local diagnostic (see
//! [`checkfu_wire_probe`]). The command line is resolved once into a typed plan
//! ([`Invocation`]), which the probe's spine runs; exit statuses come from
//! [`checkfu_wire_probe::exit_code`]: 0 when every step and check passed, 1 when the harness
//! failed one, 2 on a usage error, 128 plus the signal's number when one stopped the run.
//!
//! The flags are four sets: what both lanes take ([`Shared`]), the ACP lane's
//! ([`acp::Flags`]), the one-shot lane's ([`oneshot::Flags`]) and the image's
//! ([`image::Flags`]). Each lane's set is a clap group that conflicts with the other's, so
//! the parser refuses a mix; a lane's flags given to the other lane's protocol (chosen by
//! `--protocol` or the recipe, which the parser cannot see) are refused from the typed flags
//! themselves (`given`), as are the retest's words ([`retest`]): clap reads the command line
//! once, into [`Args`], and nothing reads it again.

mod acp;
mod image;
mod oneshot;
mod retest;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use checkfu_wire::catalog::Protocol;
use checkfu_wire_probe::plan::{LanePlan, Plan};
use checkfu_wire_probe::recipe::Recipe;
use checkfu_wire_probe::report::{steps::line as step_line, Window, QUALIFICATION};
use checkfu_wire_probe::{options, Budget, Cancel, Deadline, ProbeError, Progress, Report, RunOptions};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    shared: Shared,
    #[command(flatten)]
    acp: acp::Flags,
    #[command(flatten)]
    oneshot: oneshot::Flags,
    #[command(flatten)]
    image: image::Flags,
    /// The harness command and its arguments, after `--` (optional with --recipe).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// The flags both lanes take: the model plane, the harness's environment, the output
/// schema, the times and the outputs.
#[derive(clap::Args)]
pub struct Shared {
    /// `checkfu.output_schema` for session/new: a JSON Schema file, which must pass the
    /// safety profile before it is sent.
    #[arg(long)]
    pub output_schema: Option<PathBuf>,
    /// Seconds each step may take.
    #[arg(long, default_value_t = STEP_TIMEOUT, value_parser = seconds)]
    pub step_timeout: f64,
    /// Seconds the whole run may take: the image's build, pull and unpack included, then
    /// the session in what remains.
    #[arg(long, default_value_t = DEADLINE, value_parser = seconds)]
    pub deadline: f64,
    /// Seconds the turn is still watched after its terminal, for late or duplicate emissions.
    #[arg(long, default_value_t = SETTLE, value_parser = seconds)]
    pub settle: f64,
    /// Seconds teardown waits after closing stdin, and again after SIGTERM.
    #[arg(long, default_value_t = KILL_GRACE, value_parser = seconds)]
    pub kill_grace: f64,
    /// Write the observation trace, as `conform` reads it.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// The provider whose gateway allow-list the model relay serves (default: the
    /// unlisted-provider route, a compatible customer endpoint).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// The replay model's script: `nonce`, `tool`, `faults`, or a JSON file of replies (and faults).
    #[arg(long, value_name = "nonce|tool|faults|FILE", default_value = MODEL_SCRIPT)]
    pub model_script: String,
    /// Bind the run to this catalog entry: its driver, its declaration and its dialects are
    /// compared with what the harness does.
    #[arg(long, value_name = "NAME")]
    pub harness: Option<String>,
    /// A launch recipe (`recipes/*.json`): command, env and home files, with placeholders.
    #[arg(long, value_name = "FILE")]
    pub recipe: Option<PathBuf>,
    /// Run the harness with your own HOME (by default it gets a fresh, empty one).
    #[arg(long)]
    pub inherit_home: bool,
    /// A variable for the harness, KEY=VALUE (repeatable; placeholders expanded).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = pair)]
    pub env: Vec<(String, String)>,
    /// A file written into the fresh home, RELPATH=TEMPLATE or RELPATH=@FILE (the template
    /// read from FILE; `@@` for a template that starts with `@`). Repeatable; placeholders
    /// expanded.
    #[arg(long = "home-file", value_name = "RELPATH=TEMPLATE|@FILE", value_parser = home_file)]
    pub home_file: Vec<HomeFile>,
    /// Do not run the harness in a loopback-only network namespace (the proxy variables
    /// are then the only fence).
    #[arg(long)]
    pub no_netns: bool,
    /// Write the model calls the relay served, bodies included, as JSON Lines.
    #[arg(long, value_name = "FILE")]
    pub record_model: Option<PathBuf>,
    /// Output format: `text`, `json` (the report as one object), `junit` (JUnit XML as
    /// cargo-nextest writes it) or `ctrf` (a Common Test Report Format document); the last
    /// two carry a test case per step and check, for a CI to read.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The release protocol: `acp-v1` (a live ACP session) or `oneshot-v1` (a CLI run
    /// once per turn). Default: the recipe's, else `acp-v1`.
    #[arg(long, value_name = "acp-v1|oneshot-v1", value_parser = protocol)]
    pub protocol: Option<Protocol>,
    /// Where the Runner mounts the workspace. With --image or --build-context the probe
    /// mounts it there and starts the harness in it (default: the image's WorkingDir); a
    /// local one-shot CLI records it (it runs in the probe's fresh workspace).
    #[arg(long, value_name = "DIR")]
    pub working_directory: Option<String>,
}

/// The defaults of the flags that have one, so the retest can leave out what was not
/// changed.
const STEP_TIMEOUT: f64 = 30.0;
const DEADLINE: f64 = 120.0;
const SETTLE: f64 = 0.25;
const KILL_GRACE: f64 = 2.0;
const MODEL_SCRIPT: &str = "nonce";

/// `--home-file`: a file for the fresh home, and where its template came from, so the
/// retest says it as it was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomeFile {
    /// The path relative to the home.
    pub path: String,
    pub template: String,
    /// The file the template was read from (`@FILE`); `None`: given inline.
    pub from: Option<String>,
}

/// How a probe run's report is written on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
    Junit,
    Ctrf,
}

/// How the command line shows a run's progress: in the text format every event, as it
/// happens, on stderr (so a slow harness is never met with silence, and `--format json`
/// keeps stdout one object); in the JSON format only the notes, which say what the catalog
/// thinks of the run before it starts.
pub(super) fn show(format: Format, event: Progress) {
    let line = match event {
        Progress::Note(text) => format!("note     {text}"),
        _ if !matches!(format, Format::Text) => return,
        Progress::Started { protocol, command } => {
            // The ACP lane is the default one and says no protocol; every other says its own.
            let lane = match protocol {
                Protocol::AcpV1 => String::new(),
                Protocol::OneshotV1 => format!(", protocol {protocol}"),
            };
            format!("checkfu-wire probe ({QUALIFICATION}: local feedback, never qualification){lane}: {command}")
        }
        Progress::Step { name, step } => step_line(name, step),
    };
    eprintln!("{line}");
}

/// `probe`: the command line resolved into a plan, the run, its outputs, and the exit
/// status.
pub fn probe(args: Args) -> i32 {
    // `--deadline` counts from here, once: an image's pull and unpack spend the same budget
    // the session then runs in.
    let budget = Budget::new(Deadline::after(Duration::from_secs_f64(args.shared.deadline)), Cancel::new());
    let started = SystemTime::now();
    // From here on SIGINT, SIGTERM and SIGHUP cancel the budget and stop the run's tools; the
    // run then tears down (under a grace budget of its own) and reports as at its deadline.
    if let Err(e) = checkfu_wire_probe::interrupt::install(budget.cancel.clone()) {
        eprintln!("warning: cannot listen for signals ({e}): an interrupted run may leave its temporary files");
    }
    let outcome = Invocation::read(&args, &budget).and_then(|invocation| invocation.run());
    match &outcome {
        Ok(report) => {
            let window = Window { start: started, stop: SystemTime::now() };
            let rendered = match args.shared.format {
                Format::Text => report.to_text(),
                Format::Json => report.to_json(),
                Format::Junit => match report.to_junit(window) {
                    Ok(xml) => xml,
                    Err(e) => {
                        eprintln!("error: cannot write the report as JUnit XML: {e}");
                        return 2;
                    }
                },
                Format::Ctrf => report.to_ctrf(window),
            };
            let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
        }
        Err(e) => {
            eprintln!("error: {e}");
            // A run a signal stopped says so last, whatever else it came to.
            if let Some(signal) = budget.signal() {
                eprintln!("error: interrupted by {}", checkfu_wire_probe::interrupt::name(signal));
            }
        }
    }
    checkfu_wire_probe::exit_code(outcome.as_ref(), &budget)
}

/// A probe run as the command line asks for it: the plan the spine runs (who registers an
/// image afterwards included), the files it writes, and how it shows its progress.
pub struct Invocation {
    plan: Plan,
    outputs: Outputs,
    format: Format,
}

/// The files a run writes, each whole or not at all, checked before anything starts.
struct Outputs {
    trace: Option<PathBuf>,
    record: Option<PathBuf>,
    record_model: Option<PathBuf>,
}

impl Invocation {
    /// The one resolution of the command line, as clap read it, into the plan: the outputs
    /// checked, the recipe read, the protocol chosen, the catalog entry and the provider
    /// found, each lane's flags turned into its options, and the image's registration.
    fn read(args: &Args, budget: &Budget) -> Result<Invocation, ProbeError> {
        let shared = &args.shared;
        let outputs = Outputs { trace: shared.trace.clone(), record: args.acp.record.clone(), record_model: shared.record_model.clone() };
        for (flag, path) in [("--record", &outputs.record), ("--trace", &outputs.trace), ("--record-model", &outputs.record_model)] {
            if let Some(path) = path {
                writable(flag, path).map_err(|e| ProbeError::invalid("", e))?;
            }
        }
        let recipe = shared.recipe.as_deref().map(Recipe::load).transpose().map_err(|e| ProbeError::invalid("", e))?;
        let protocol = match (shared.protocol, recipe.as_ref().and_then(|r| r.protocol)) {
            (Some(protocol), _) | (None, Some(protocol)) => protocol,
            (None, None) => Protocol::AcpV1,
        };
        let mut run = shared.run_options(budget.clone())?;
        // The recipe's entry is bound unless `--harness` names another.
        let harness = shared.harness.as_deref().or_else(|| recipe.as_ref().and_then(|r| r.harness.as_deref()));
        run.harness = harness.map(options::harness).transpose()?;
        // Exhaustive over the catalog's protocols: a protocol added there has no lane until
        // one is written here.
        let lane = match protocol {
            Protocol::AcpV1 => {
                if let Some(flag) = args.oneshot.given() {
                    return Err(ProbeError::Usage(format!("{flag} is a oneshot-v1 flag; add --protocol oneshot-v1")));
                }
                LanePlan::Acp(acp::options(args, recipe.as_ref(), &mut run)?)
            }
            Protocol::OneshotV1 => {
                if let Some(flag) = args.acp.given() {
                    return Err(ProbeError::Usage(format!("{flag} belongs to the acp-v1 lane; a oneshot-v1 run has no ACP session")));
                }
                LanePlan::Oneshot(oneshot::plan(args, recipe.as_ref()))
            }
        };
        let image = args.image.plan();
        let registration = image.is_some().then(|| args.image.registration(args.retest())).transpose()?;
        Ok(Invocation { plan: Plan { run, lane, image, registration }, outputs, format: shared.format })
    }

    /// Runs the plan (the report holds an image run's next steps), and writes the outputs.
    fn run(self) -> Result<Report, ProbeError> {
        let format = self.format;
        let mut progress = |event: Progress| show(format, event);
        let report = checkfu_wire_probe::run(&self.plan, &mut progress)?;
        let calls = report.model_calls();
        let record = report.wire_record().unwrap_or_default();
        let files = [
            (&self.outputs.record, record),
            (&self.outputs.trace, report.trace().as_bytes()),
            (&self.outputs.record_model, calls.as_bytes()),
        ];
        for (path, bytes) in files {
            if let Some(path) = path {
                write_whole(path, bytes).map_err(|source| ProbeError::Output { path: path.clone(), source })?;
            }
        }
        Ok(report)
    }
}

/// `--protocol`: a release protocol the catalog names.
fn protocol(text: &str) -> Result<Protocol, FlagError> {
    Protocol::from_name(text).ok_or_else(|| {
        let known: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
        FlagError::UnknownProtocol { known: known.join(" and ") }
    })
}

fn pair(text: &str) -> Result<(String, String), FlagError> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(FlagError::NotPair { text: text.to_owned() }),
    }
}

/// A flag's value that does not read (clap prints it after the flag's name).
#[derive(Debug, thiserror::Error)]
pub(super) enum FlagError {
    #[error("known protocols are {known}")]
    UnknownProtocol { known: String },
    #[error("`{text}` is not KEY=VALUE")]
    NotPair { text: String },
    #[error("cannot read the template `{file}` (`@` reads a file; `@@` writes a literal `@`): {source}")]
    Template { file: String, source: std::io::Error },
    #[error("`{text}` is not a number of seconds between 0 and 86400")]
    Seconds { text: String },
}

/// An output path that cannot be written, found before anything starts.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unwritable {
    #[error("{flag} {}: is a directory", path.display())]
    Directory { flag: String, path: PathBuf },
    #[error("{flag} {}: {} is not a directory", path.display(), parent.display())]
    ParentNotDirectory { flag: String, path: PathBuf, parent: PathBuf },
    #[error("{flag} {}: cannot use {}: {source}", path.display(), parent.display())]
    Parent { flag: String, path: PathBuf, parent: PathBuf, source: std::io::Error },
}

/// `RELPATH=TEMPLATE`, with curl's convention for the value: `@FILE` reads the template from
/// FILE, `@@…` is a template that starts with `@`. So a config file's path is never
/// written into the home as the file's content.
pub(super) fn home_file(text: &str) -> Result<HomeFile, FlagError> {
    let (path, value) = pair(text)?;
    if let Some(literal) = value.strip_prefix("@@") {
        return Ok(HomeFile { path, template: format!("@{literal}"), from: None });
    }
    match value.strip_prefix('@') {
        Some(file) => match std::fs::read_to_string(file) {
            Ok(template) => Ok(HomeFile { path, template, from: Some(file.to_owned()) }),
            Err(source) => Err(FlagError::Template { file: file.to_owned(), source }),
        },
        None => Ok(HomeFile { path, template: value, from: None }),
    }
}

/// An output path is checked before anything starts: its directory must exist, and the
/// path must not be a directory, so a run is never thrown away at the end for want of a
/// place to write it.
pub(super) fn writable(flag: &str, path: &Path) -> Result<(), Unwritable> {
    if path.is_dir() {
        return Err(Unwritable::Directory { flag: flag.to_owned(), path: path.to_owned() });
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match std::fs::metadata(parent) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(Unwritable::ParentNotDirectory { flag: flag.to_owned(), path: path.to_owned(), parent: parent.to_owned() }),
        Err(source) => Err(Unwritable::Parent { flag: flag.to_owned(), path: path.to_owned(), parent: parent.to_owned(), source }),
    }
}

pub(super) fn seconds(text: &str) -> Result<f64, FlagError> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(FlagError::Seconds { text: text.to_owned() }),
    }
}

impl Shared {
    /// The options both lanes take: the model plane, the harness's environment, the output
    /// schema and the times; `deadline` is `--deadline` from the run's start. The catalog
    /// entry is the caller's to bind, since a recipe may name it.
    fn run_options(&self, budget: Budget) -> Result<RunOptions, ProbeError> {
        let model_script = checkfu_wire_probe::relay::Script::parse(&self.model_script).map_err(|e| ProbeError::invalid("", e))?;
        let output_schema = match &self.output_schema {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| ProbeError::invalid(format!("cannot read {}", path.display()), e))?;
                let value = serde_json::from_slice(&bytes)
                    .map_err(|e| ProbeError::invalid(format!("{}:{}:{}: not JSON", path.display(), e.line(), e.column()), e))?;
                Some(value)
            }
            None => None,
        };
        Ok(RunOptions {
            harness: None,
            provider: self.provider.as_deref().map(options::provider).transpose()?,
            model_script,
            output_schema,
            inherit_home: self.inherit_home,
            env: self.env.clone(),
            home_files: self.home_file.iter().map(|f| (f.path.clone(), f.template.clone())).collect(),
            netns: !self.no_netns,
            record_bodies: self.record_model.is_some(),
            context_window: None,
            step_timeout: Duration::from_secs_f64(self.step_timeout),
            budget,
            kill_grace: Duration::from_secs_f64(self.kill_grace),
            // This very binary serves the MCP server the ACP lane grants (`mcp-tool`).
            mcp_server: std::env::current_exe().ok(),
        })
    }
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
