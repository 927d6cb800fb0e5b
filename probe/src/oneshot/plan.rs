//! The one-shot lane's plan: the launch declaration as the command line and the recipe give
//! it, resolved into the declaration the release decoder holds once the image (whose
//! Entrypoint and Cmd may be the command) is known.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::error::ProbeError;
use checkfu_wire::oneshot::{self, Declaration, OutputMode, OutputSchemaTransport, PromptTransport};

/// The one-shot lane's options: the declaration's members the command line gives, laid over
/// the recipe's declaration.
#[derive(Clone, Debug, Default)]
pub struct OneshotPlan {
    /// The entrypoint and its first arguments, as given after `--`.
    pub command: Vec<OsString>,
    /// `--entrypoint`: the program in place of the command's first word (in an image).
    pub entrypoint: Option<String>,
    /// The recipe's declaration, when there is one.
    pub recipe: Option<Declaration>,
    /// The directory a relative entrypoint of the recipe is resolved against.
    pub base_dir: Option<PathBuf>,
    pub prompt_transport: Option<PromptTransport>,
    pub output_mode: Option<OutputMode>,
    /// `--argv`, in order.
    pub argv: Vec<String>,
    pub resume_flag: Option<String>,
    pub output_schema_flag: Option<String>,
    pub output_schema_transport: Option<OutputSchemaTransport>,
    pub working_directory: Option<String>,
}

impl OneshotPlan {
    /// The declaration: the recipe's, with every member the command line gives laid over it;
    /// or the command line's alone. `image_command` is the image's own Entrypoint and Cmd,
    /// the command when neither `--` nor a recipe gives one. `--entrypoint` alone replaces
    /// the program and keeps the recipe's arguments, since the recipe's entrypoint names a
    /// file beside the recipe, not one in the image. The declaration's rules are checked.
    pub fn resolve(&self, image_command: &[String]) -> Result<Declaration, ProbeError> {
        let usage = |m: &str| ProbeError::Usage(m.to_owned());
        let base = self.recipe.as_ref();
        let given: Vec<OsString> = self.entrypoint.iter().map(OsString::from).chain(self.command.iter().cloned()).collect();
        let entrypoint_only = self.entrypoint.is_some() && self.command.is_empty();
        let command: Vec<OsString> = match (given.is_empty(), base) {
            (true, None) => image_command.iter().map(OsString::from).collect(),
            _ => given,
        };
        let entrypoint = command.first().map(|c| c.to_string_lossy().into_owned()).or_else(|| base.map(|d| d.entrypoint.clone()));
        let Some(entrypoint) = entrypoint else { return Err(usage("no entrypoint: give it after `--`, or a --recipe")) };
        let mut argv: Vec<String> = command.iter().skip(1).map(|c| c.to_string_lossy().into_owned()).collect();
        argv.extend(self.argv.iter().cloned());
        // A command line that gives arguments replaces the recipe's; one that gives none keeps them.
        if argv.is_empty() && (command.is_empty() || entrypoint_only) {
            argv = base.map(|d| d.argv.clone()).unwrap_or_default();
        }
        let prompt_transport = self.prompt_transport.or(base.map(|d| d.prompt_transport));
        let Some(prompt_transport) = prompt_transport else {
            return Err(usage("--prompt-transport stdin|argv_path is required without a recipe"));
        };
        let output_mode = self.output_mode.or(base.map(|d| d.output_mode));
        let Some(output_mode) = output_mode else { return Err(usage("--output-mode text|stream_json is required without a recipe")) };
        let declaration = Declaration {
            entrypoint,
            argv,
            prompt_transport,
            output_mode,
            resume_flag: self.resume_flag.clone().or_else(|| base.and_then(|d| d.resume_flag.clone())),
            output_schema_flag: self.output_schema_flag.clone().or_else(|| base.and_then(|d| d.output_schema_flag.clone())),
            output_schema_transport: self.output_schema_transport.or(base.and_then(|d| d.output_schema_transport)),
            working_directory: self.working_directory.clone().or_else(|| base.and_then(|d| d.working_directory.clone())),
            env: base.map(|d| d.env.clone()).unwrap_or_default(),
            home_files: base.map(|d| d.home_files.clone()).unwrap_or_default(),
        };
        let refusals = declaration.check();
        if !refusals.is_empty() {
            return Err(ProbeError::Usage(oneshot::DecodeError::Rules(refusals).to_string()));
        }
        Ok(declaration)
    }
}

/// The declaration as the flags that register it (`checkfu harness add oci …`), whether it
/// came from the command line, a recipe or the image's own command.
pub(crate) fn profile(declaration: &Declaration) -> Vec<String> {
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
