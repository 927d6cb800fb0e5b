//! `probe --protocol oneshot-v1`: the declaration from a recipe and the one-shot flags
//! (flags win), decoded by the release decoder before anything starts, then the one-shot
//! lane (see [`checkfu_wire::probe::oneshot`]). Exit codes are the ACP lane's: 0 passed, 1
//! failed, 2 a usage error (a refused declaration among them) or a CLI that cannot start.

use checkfu_wire::oneshot::{self, Declaration, OutputMode, OutputSchemaTransport, PromptTransport};
use checkfu_wire::probe::oneshot::OneshotLaunch;
use checkfu_wire::probe::recipe::Recipe;
use checkfu_wire::probe::{ProbeOptions, UsageError};

use super::conform::Format;
use super::probe::{report, shared_options, usage, Args};

/// ACP flags a one-shot run cannot use: (flag, given).
fn acp_flags(args: &Args) -> Option<&'static str> {
    [
        ("--driver", args.driver.is_some()),
        ("--builtin-tools", args.builtin_tools.is_some()),
        ("--authenticate", args.authenticate.is_some()),
        ("--continuity", args.continuity.is_some()),
        ("--runtime-config", args.runtime_config.is_some()),
        ("--interrupt", args.interrupt),
        ("--allow-terminals", args.allow_terminals),
        ("--record", args.record.is_some()),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.then_some(flag))
}

/// Reads an enum flag by the declaration's own serde names, so the flag and the JSON
/// declaration take exactly the same words.
fn word<T: serde::de::DeserializeOwned>(flag: &str, value: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(value.to_owned())).map_err(|e| format!("{flag} {value}: {e}"))
}

/// The declaration: the recipe's, with every one-shot flag given laid over it; or the
/// flags' alone.
fn declaration(args: &Args, recipe: Option<&Recipe>) -> Result<Declaration, String> {
    let from_recipe = recipe.and_then(Recipe::oneshot);
    let mut entrypoint = args.command.first().map(|c| c.to_string_lossy().into_owned());
    let mut argv: Vec<String> = args.command.iter().skip(1).map(|c| c.to_string_lossy().into_owned()).collect();
    argv.extend(args.argv.iter().cloned());
    let base = from_recipe.clone();
    if entrypoint.is_none() {
        entrypoint = base.as_ref().map(|d| d.entrypoint.clone());
    }
    let Some(entrypoint) = entrypoint else { return Err(String::from("no entrypoint: give it after `--`, or a --recipe")) };
    let prompt_transport = match (&args.prompt_transport, &base) {
        (Some(t), _) => word::<PromptTransport>("--prompt-transport", t)?,
        (None, Some(d)) => d.prompt_transport,
        (None, None) => return Err(String::from("--prompt-transport stdin|argv_path is required without a recipe")),
    };
    let output_mode = match (&args.output_mode, &base) {
        (Some(m), _) => word::<OutputMode>("--output-mode", m)?,
        (None, Some(d)) => d.output_mode,
        (None, None) => return Err(String::from("--output-mode text|stream_json is required without a recipe")),
    };
    let output_schema_transport = match &args.output_schema_transport {
        Some(t) => Some(word::<OutputSchemaTransport>("--output-schema-transport", t)?),
        None => base.as_ref().and_then(|d| d.output_schema_transport),
    };
    // A command line that gives arguments replaces the recipe's; one that gives none keeps them.
    let argv = if argv.is_empty() && args.command.is_empty() { base.as_ref().map(|d| d.argv.clone()).unwrap_or_default() } else { argv };
    Ok(Declaration {
        entrypoint,
        argv,
        prompt_transport,
        output_mode,
        resume_flag: args.resume_flag.clone().or_else(|| base.as_ref().and_then(|d| d.resume_flag.clone())),
        output_schema_flag: args.output_schema_flag.clone().or_else(|| base.as_ref().and_then(|d| d.output_schema_flag.clone())),
        output_schema_transport,
        working_directory: args.working_directory.clone().or_else(|| base.as_ref().and_then(|d| d.working_directory.clone())),
        env: base.as_ref().map(|d| d.env.clone()).unwrap_or_default(),
        home_files: base.as_ref().map(|d| d.home_files.clone()).unwrap_or_default(),
    })
}

pub fn probe(args: Args, recipe: Option<Recipe>) -> i32 {
    if let Some(flag) = acp_flags(&args) {
        return usage(format!("{flag} belongs to the acp-v1 lane; a oneshot-v1 run has no ACP session"));
    }
    let declaration = match declaration(&args, recipe.as_ref()) {
        Ok(d) => d,
        Err(e) => return usage(e),
    };
    let refusals = declaration.check();
    if !refusals.is_empty() {
        return usage(oneshot::DecodeError::Rules(refusals));
    }
    let launch = OneshotLaunch { declaration, base_dir: args.recipe.as_ref().and_then(|p| p.parent()).map(|p| p.to_path_buf()) };
    let mut options = ProbeOptions::new(Vec::new());
    options.harness = args.harness.clone().or_else(|| recipe.as_ref().and_then(|r| r.harness.clone()));
    if let Err(code) = shared_options(&args, &mut options) {
        return code;
    }
    let live = matches!(args.format, Format::Text);
    if live {
        eprintln!(
            "checkfu-wire probe (unsigned_local_only: local feedback, never qualification), protocol oneshot-v1: {}",
            launch.declaration.entrypoint
        );
    }
    let mut progress = |line: &str| {
        if live {
            eprintln!("{line}");
        }
    };
    let result = match checkfu_wire::probe::oneshot::run(&options, &launch, &mut progress) {
        Ok(result) => result,
        Err(e @ (UsageError::Options(_) | UsageError::CannotStart(_))) => return usage(e),
    };
    let calls = result.model_plane.calls_jsonl();
    let rendered = match args.format {
        Format::Text => result.to_text(),
        Format::Json => result.to_json(),
    };
    report(&[(&args.trace, result.trace().as_bytes()), (&args.record_model, calls.as_bytes())], &rendered, result.passed())
}
