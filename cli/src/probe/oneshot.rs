//! `probe --protocol oneshot-v1`: the declaration from a recipe and the one-shot flags
//! (flags win), decoded by the release decoder before anything starts, then the one-shot
//! lane (see [`checkfu_wire_probe::oneshot`]). Exit codes are the ACP lane's: 0 passed, 1
//! failed, 2 a usage error (a refused declaration among them) or a CLI that cannot start.

use std::ffi::OsString;

use checkfu_wire::oneshot::{self, Declaration, OutputMode, OutputSchemaTransport, PromptTransport};
use checkfu_wire_probe::oneshot::OneshotLaunch;
use checkfu_wire_probe::recipe::Recipe;
use checkfu_wire_probe::{ProbeOptions, Progress, Report, UsageError};

use super::{shared_options, show, usage, Shared};

/// The one-shot lane's flags: the launch declaration's members, laid over the recipe's.
#[derive(clap::Args)]
#[group(id = "oneshot-flags", multiple = true, conflicts_with = "acp-flags")]
#[command(next_help_heading = "One-shot lane (oneshot-v1)")]
pub struct Flags {
    /// oneshot-v1: how the prompt reaches the CLI.
    #[arg(long, value_name = "stdin|argv_path")]
    pub prompt_transport: Option<String>,
    /// oneshot-v1: what the CLI prints.
    #[arg(long, value_name = "text|stream_json")]
    pub output_mode: Option<String>,
    /// oneshot-v1: an argument after the entrypoint (repeatable, in order; placeholders
    /// `{prompt_path}`, `{resume_flag}` and the launch ones).
    #[arg(long = "argv", value_name = "ARG", allow_hyphen_values = true)]
    pub argv: Vec<String>,
    /// oneshot-v1: the flag that makes the second run resume the first (may hold
    /// `{session_id}`).
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub resume_flag: Option<String>,
    /// oneshot-v1: the flag the output schema's file path follows.
    #[arg(long, value_name = "FLAG", allow_hyphen_values = true)]
    pub output_schema_flag: Option<String>,
    /// oneshot-v1: how the output schema reaches the CLI.
    #[arg(long, value_name = "argv_path")]
    pub output_schema_transport: Option<String>,
}

/// Reads an enum flag by the declaration's own serde names, so the flag and the JSON
/// declaration take exactly the same words.
fn word<T: serde::de::DeserializeOwned>(flag: &str, value: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(value.to_owned())).map_err(|e| format!("{flag} {value}: {e}"))
}

/// The declaration: the recipe's, with every one-shot flag given laid over it; or the
/// flags' alone.
/// `image_command` is the image's own Entrypoint and Cmd, the command when neither `--` nor
/// a recipe gives one. `entrypoint_only`: `command` is `--entrypoint` alone, which replaces
/// the program and keeps the recipe's arguments (as in the ACP lane), since the recipe's
/// entrypoint names a file beside the recipe, not one in the image.
fn declaration(
    flags: &Flags,
    working_directory: Option<&str>,
    command: &[OsString],
    entrypoint_only: bool,
    recipe: Option<&Recipe>,
    image_command: &[String],
) -> Result<Declaration, String> {
    let from_recipe = recipe.and_then(Recipe::oneshot);
    let command: Vec<OsString> =
        if command.is_empty() && from_recipe.is_none() { image_command.iter().map(OsString::from).collect() } else { command.to_vec() };
    let mut entrypoint = command.first().map(|c| c.to_string_lossy().into_owned());
    let mut argv: Vec<String> = command.iter().skip(1).map(|c| c.to_string_lossy().into_owned()).collect();
    argv.extend(flags.argv.iter().cloned());
    let base = from_recipe.clone();
    if entrypoint.is_none() {
        entrypoint = base.as_ref().map(|d| d.entrypoint.clone());
    }
    let Some(entrypoint) = entrypoint else { return Err(String::from("no entrypoint: give it after `--`, or a --recipe")) };
    let prompt_transport = match (&flags.prompt_transport, &base) {
        (Some(t), _) => word::<PromptTransport>("--prompt-transport", t)?,
        (None, Some(d)) => d.prompt_transport,
        (None, None) => return Err(String::from("--prompt-transport stdin|argv_path is required without a recipe")),
    };
    let output_mode = match (&flags.output_mode, &base) {
        (Some(m), _) => word::<OutputMode>("--output-mode", m)?,
        (None, Some(d)) => d.output_mode,
        (None, None) => return Err(String::from("--output-mode text|stream_json is required without a recipe")),
    };
    let output_schema_transport = match &flags.output_schema_transport {
        Some(t) => Some(word::<OutputSchemaTransport>("--output-schema-transport", t)?),
        None => base.as_ref().and_then(|d| d.output_schema_transport),
    };
    // A command line that gives arguments replaces the recipe's; one that gives none keeps them.
    let argv = if argv.is_empty() && (command.is_empty() || entrypoint_only) {
        base.as_ref().map(|d| d.argv.clone()).unwrap_or_default()
    } else {
        argv
    };
    Ok(Declaration {
        entrypoint,
        argv,
        prompt_transport,
        output_mode,
        resume_flag: flags.resume_flag.clone().or_else(|| base.as_ref().and_then(|d| d.resume_flag.clone())),
        output_schema_flag: flags.output_schema_flag.clone().or_else(|| base.as_ref().and_then(|d| d.output_schema_flag.clone())),
        output_schema_transport,
        working_directory: working_directory.map(str::to_owned).or_else(|| base.as_ref().and_then(|d| d.working_directory.clone())),
        env: base.as_ref().map(|d| d.env.clone()).unwrap_or_default(),
        home_files: base.as_ref().map(|d| d.home_files.clone()).unwrap_or_default(),
    })
}

/// Runs the one-shot lane: `command` is the entrypoint and its first arguments, when given
/// after `--`.
pub fn probe(
    shared: &Shared,
    started: std::time::Instant,
    flags: &Flags,
    image: &super::image::Flags,
    line: &[super::Word],
    command: &[OsString],
    recipe: Option<Recipe>,
) -> Result<Report, i32> {
    // An image is built or pulled, and unpacked, first: its Entrypoint and Cmd are the
    // default command.
    let prepared = image.prepare(line, shared.deadline(started))?;
    let container = prepared.as_ref().map(|p| p.container.clone());
    let image_command = container.as_ref().map(|c| c.default_command()).unwrap_or_default();
    let entrypoint_flag: Vec<OsString> = image.entrypoint.iter().map(OsString::from).chain(command.iter().cloned()).collect();
    let entrypoint_only = image.entrypoint.is_some() && command.is_empty();
    let command = if image.entrypoint.is_some() { entrypoint_flag.as_slice() } else { command };
    let declaration =
        match declaration(flags, shared.working_directory.as_deref(), command, entrypoint_only, recipe.as_ref(), &image_command) {
            Ok(d) => d,
            Err(e) => return Err(usage(e)),
        };
    let refusals = declaration.check();
    if !refusals.is_empty() {
        return Err(usage(oneshot::DecodeError::Rules(refusals)));
    }
    let launch =
        OneshotLaunch { declaration, base_dir: shared.recipe.as_ref().and_then(|p| p.parent()).map(|p| p.to_path_buf()), container };
    let mut options = ProbeOptions::new(Vec::new());
    options.harness = shared.harness.clone().or_else(|| recipe.as_ref().and_then(|r| r.harness.clone()));
    shared_options(shared, started, &mut options)?;
    let mut progress = |event: Progress| show(shared.format, event);
    match checkfu_wire_probe::oneshot::run(&options, &launch, &mut progress) {
        Ok(mut result) => {
            let profile = profile(&result.declaration);
            // The declaration's own settings are the recipe's (no flag sets them).
            let env = super::image::settings(&result.declaration.env, &shared.env);
            let home_files = super::image::settings(&result.declaration.home_files, &shared.home_file);
            result.next = prepared.as_ref().map(|p| image.next_steps(p, result.passed(), &profile, env, home_files));
            Ok(Report::Oneshot(Box::new(result)))
        }
        Err(e @ (UsageError::Options(_) | UsageError::CannotStart(_))) => Err(usage(e)),
    }
}

/// The declaration as the flags that register it (`checkfu harness add oci …`), whether it
/// came from the command line, a recipe or the image's own command.
fn profile(declaration: &Declaration) -> Vec<String> {
    let mut flags = vec![format!("--protocol={}", oneshot::PROTOCOL), format!("--entrypoint={}", declaration.entrypoint)];
    flags.extend(declaration.argv.iter().map(|a| format!("--argv={a}")));
    flags.push(format!("--prompt-transport={}", spelled(&declaration.prompt_transport)));
    flags.push(format!("--output-mode={}", spelled(&declaration.output_mode)));
    flags.extend(declaration.resume_flag.iter().map(|f| format!("--resume-flag={f}")));
    flags.extend(declaration.output_schema_flag.iter().map(|f| format!("--output-schema-flag={f}")));
    flags.extend(declaration.output_schema_transport.iter().map(|t| format!("--output-schema-transport={}", spelled(t))));
    flags.extend(declaration.working_directory.iter().map(|d| format!("--working-directory={d}")));
    flags
}

/// An enum member of the declaration as the declaration (and so its flag) spells it.
fn spelled<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(word)) => word,
        other => other.map(|v| v.to_string()).unwrap_or_default(),
    }
}
