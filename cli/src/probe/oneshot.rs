//! `probe --protocol oneshot-v1`: the one-shot flags, laid over a recipe's declaration
//! (flags win) by the lane's plan ([`checkfu_wire_probe::oneshot::OneshotPlan`]), which the
//! release decoder's rules check before anything starts.

use checkfu_wire::oneshot::{OutputMode, OutputSchemaTransport, PromptTransport};
use checkfu_wire_probe::oneshot::OneshotPlan;
use checkfu_wire_probe::recipe::Recipe;

/// The one-shot lane's flags: the launch declaration's members, laid over the recipe's.
#[derive(clap::Args)]
#[group(id = "oneshot-flags", multiple = true, conflicts_with = "acp-flags")]
#[command(next_help_heading = "One-shot lane (oneshot-v1)")]
pub struct Flags {
    /// oneshot-v1: how the prompt reaches the CLI.
    #[arg(long, value_name = "stdin|argv_path", value_parser = word::<PromptTransport>)]
    pub prompt_transport: Option<PromptTransport>,
    /// oneshot-v1: what the CLI prints.
    #[arg(long, value_name = "text|stream_json", value_parser = word::<OutputMode>)]
    pub output_mode: Option<OutputMode>,
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
    #[arg(long, value_name = "argv_path", value_parser = word::<OutputSchemaTransport>)]
    pub output_schema_transport: Option<OutputSchemaTransport>,
}

impl Flags {
    /// The first of these flags given (in the order declared), which an acp-v1 run refuses.
    pub(super) fn given(&self) -> Option<&'static str> {
        self.each_given().into_iter().find_map(|(flag, given)| given.then_some(flag))
    }

    /// Each of these flags, in the order declared, and whether it was given (a test holds
    /// the list to the lane's clap group).
    pub(super) fn each_given(&self) -> [(&'static str, bool); 6] {
        [
            ("--prompt-transport", self.prompt_transport.is_some()),
            ("--output-mode", self.output_mode.is_some()),
            ("--argv", !self.argv.is_empty()),
            ("--resume-flag", self.resume_flag.is_some()),
            ("--output-schema-flag", self.output_schema_flag.is_some()),
            ("--output-schema-transport", self.output_schema_transport.is_some()),
        ]
    }
}

/// Reads an enum flag by the declaration's own serde names, so the flag and the JSON
/// declaration take exactly the same words.
fn word<T: serde::de::DeserializeOwned>(value: &str) -> Result<T, serde_json::Error> {
    serde_json::from_value(serde_json::Value::String(value.to_owned()))
}

/// The one-shot lane's plan from the command line and the recipe's declaration.
pub(super) fn plan(args: &super::Args, recipe: Option<&Recipe>) -> OneshotPlan {
    let flags = &args.oneshot;
    OneshotPlan {
        command: args.command.clone(),
        entrypoint: args.image.entrypoint.clone(),
        recipe: recipe.and_then(Recipe::oneshot),
        base_dir: args.shared.recipe.as_ref().and_then(|p| p.parent()).map(|p| p.to_path_buf()),
        prompt_transport: flags.prompt_transport,
        output_mode: flags.output_mode,
        argv: flags.argv.clone(),
        resume_flag: flags.resume_flag.clone(),
        output_schema_flag: flags.output_schema_flag.clone(),
        output_schema_transport: flags.output_schema_transport,
        working_directory: args.shared.working_directory.clone(),
    }
}
