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
    driver: Option<String>,
    /// The retention mode of the envelope.
    #[arg(long, default_value = "durable")]
    retention: String,
    /// `checkfu.builtin_tools` for session/new: a comma-separated tool list.
    #[arg(long, value_delimiter = ',', num_args = 0..)]
    builtin_tools: Option<Vec<String>>,
    /// Call `authenticate` with this `authMethods` id (from the initialize answer) before
    /// session/new.
    #[arg(long, value_name = "METHOD_ID")]
    authenticate: Option<String>,
    /// `checkfu.continuity` for session/new.
    #[arg(long)]
    continuity: Option<String>,
    /// `checkfu.runtime_config` for session/new, as JSON (`{"context_window": 200000}`).
    #[arg(long)]
    runtime_config: Option<String>,
    /// `checkfu.output_schema` for session/new: a JSON Schema file, which must pass the
    /// safety profile before it is sent.
    #[arg(long)]
    output_schema: Option<PathBuf>,
    /// Send a scripted cooperative interrupt (when `interrupt: cooperative` was admitted) and
    /// opt in to its check.
    #[arg(long)]
    interrupt: bool,
    /// How permission requests are answered.
    #[arg(long, value_enum, default_value = "allow")]
    permission: PermissionPolicy,
    /// Serve the harness's `terminal/*` requests: commands run in the session's workspace as
    /// the user running the probe (not a sandbox). Without it they are answered -32601.
    #[arg(long)]
    allow_terminals: bool,
    /// Seconds each step may take.
    #[arg(long, default_value_t = 30.0, value_parser = seconds)]
    step_timeout: f64,
    /// Seconds the whole session may take.
    #[arg(long, default_value_t = 120.0, value_parser = seconds)]
    deadline: f64,
    /// Seconds the turn is still watched after its terminal, for late or duplicate emissions.
    #[arg(long, default_value_t = 0.25, value_parser = seconds)]
    settle: f64,
    /// Seconds teardown waits after closing stdin, and again after SIGTERM.
    #[arg(long, default_value_t = 2.0, value_parser = seconds)]
    kill_grace: f64,
    /// Write the wire, both directions, as the JSON Lines `decode` reads.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Write the observation trace, as `conform` reads it.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
    /// The harness command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!("`{text}` is not a number of seconds between 0 and 86400")),
    }
}

fn usage(message: impl std::fmt::Display) -> i32 {
    eprintln!("error: {message}");
    2
}

pub fn probe(args: Args) -> i32 {
    let mut options = ProbeOptions::new(args.command);
    if let Some(driver) = args.driver {
        options.driver = driver;
    }
    options.retention = args.retention;
    options.builtin_tools = args.builtin_tools;
    options.continuity = args.continuity;
    options.authenticate = args.authenticate;
    if let Some(text) = args.runtime_config {
        match serde_json::from_str(&text) {
            Ok(value) => options.runtime_config = Some(value),
            Err(e) => return usage(format!("--runtime-config is not JSON: {e}")),
        }
    }
    if let Some(path) = &args.output_schema {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => return usage(format!("cannot read {}: {e}", path.display())),
        };
        match serde_json::from_slice(&bytes) {
            Ok(value) => options.output_schema = Some(value),
            Err(e) => return usage(format!("{}:{}:{}: not JSON: {e}", path.display(), e.line(), e.column())),
        }
    }
    options.interrupt = args.interrupt;
    options.permission = args.permission;
    options.terminals = args.allow_terminals;
    options.step_timeout = Duration::from_secs_f64(args.step_timeout);
    options.deadline = Duration::from_secs_f64(args.deadline);
    options.settle = Duration::from_secs_f64(args.settle);
    options.kill_grace = Duration::from_secs_f64(args.kill_grace);

    let result = match probe::run(&options) {
        Ok(result) => result,
        Err(e @ (UsageError::Options(_) | UsageError::CannotStart(_))) => return usage(e),
    };
    for (path, bytes) in [(&args.record, result.record.as_slice()), (&args.trace, result.trace.as_bytes())] {
        if let Some(path) = path {
            if let Err(e) = write_whole(path, bytes) {
                eprintln!("error: cannot write {}: {e}", path.display());
                return 2;
            }
        }
    }
    let rendered = match args.format {
        Format::Text => result.to_text(),
        Format::Json => result.to_json(),
    };
    let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
    if result.passed() {
        0
    } else {
        1
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
