//! `probe` with `--protocol acp-v1` (the default): a live ACP session (see
//! [`checkfu_wire_probe::acp`]).

use std::path::PathBuf;
use std::time::Duration;

use checkfu_wire::catalog::{Driver, Retention};
use checkfu_wire_probe::acp::AcpOptions;
use checkfu_wire_probe::recipe::Recipe;
use checkfu_wire_probe::session::PermissionPolicy;
use checkfu_wire_probe::{ProbeError, RunOptions};

/// The ACP lane's flags: the declaration's admission and the session's authority members.
#[derive(clap::Args)]
#[group(id = "acp-flags", multiple = true, conflicts_with = "oneshot-flags")]
#[command(next_help_heading = "ACP lane (acp-v1)")]
pub struct Flags {
    /// An argument for the agent, after its command (repeatable, in order): with --image,
    /// after the image's entrypoint.
    #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
    pub arg: Vec<String>,
    /// The driver whose envelope the declaration is admitted against (default: the catalog's
    /// ACP driver).
    #[arg(long, value_parser = driver)]
    pub driver: Option<Driver>,
    /// The retention mode of the envelope.
    #[arg(long, value_parser = retention, default_value_t = Retention::Durable)]
    pub retention: Retention,
    /// `checkfu.builtin_tools` for session/new: a comma-separated tool list.
    #[arg(long, value_delimiter = ',', num_args = 0..)]
    pub builtin_tools: Option<Vec<String>>,
    /// Call `authenticate` with this `authMethods` id (from the initialize answer) before
    /// session/new.
    #[arg(long, value_name = "METHOD_ID")]
    pub authenticate: Option<String>,
    /// `checkfu.continuity` for session/new.
    #[arg(long)]
    pub continuity: Option<String>,
    /// `checkfu.runtime_config` for session/new, as JSON (`{"context_window": 200000}`).
    #[arg(long)]
    pub runtime_config: Option<String>,
    /// Send a scripted cooperative interrupt (when `interrupt: cooperative` was admitted) and
    /// opt in to its check.
    #[arg(long)]
    pub interrupt: bool,
    /// Skip the `cancellation` step (a second prompt, cancelled with `session/cancel` while
    /// the model's answer streams).
    #[arg(long)]
    pub no_cancellation: bool,
    /// How permission requests are answered.
    #[arg(long, value_enum, default_value = "allow")]
    pub permission: Permission,
    /// Serve the harness's `terminal/*` requests: commands run in the session's workspace as
    /// the user running the probe (not a sandbox). Without it they are answered -32601.
    #[arg(long)]
    pub allow_terminals: bool,
    /// Write the wire, both directions, as the JSON Lines `decode` reads.
    #[arg(long)]
    pub record: Option<PathBuf>,
}

/// `--driver`: a driver the catalog names.
fn driver(text: &str) -> Result<Driver, String> {
    Driver::from_name(text)
        .ok_or_else(|| format!("the catalog has no driver `{text}` (it has: {})", names(Driver::ALL.iter().map(|d| d.name()))))
}

/// `--retention`: a retention mode of the catalog's envelopes.
fn retention(text: &str) -> Result<Retention, String> {
    Retention::from_name(text)
        .ok_or_else(|| format!("the catalog has no retention mode `{text}` (it has: {})", names(Retention::ALL.iter().map(|r| r.name()))))
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// The ACP lane's options from the command line and the recipe: the recipe's command,
/// variables and home files (written before the command line's, which may override them),
/// and its harness, bound unless `--harness` names another.
pub(super) fn options(args: &super::Args, recipe: Option<&Recipe>, run: &mut RunOptions) -> Result<AcpOptions, ProbeError> {
    let flags = &args.acp;
    if let Some(recipe) = recipe {
        run.harness = args.shared.harness.clone().or_else(|| recipe.harness.clone());
    }
    let runtime_config = match &flags.runtime_config {
        Some(text) => Some(serde_json::from_str(text).map_err(|e| ProbeError::Usage(format!("--runtime-config is not JSON: {e}")))?),
        None => None,
    };
    Ok(AcpOptions {
        command: args.command.clone(),
        recipe_command: recipe.map(|r| r.command.clone()).unwrap_or_default(),
        recipe_env: recipe.map(|r| r.env.clone()).unwrap_or_default(),
        recipe_home_files: recipe.map(|r| r.home_files.clone()).unwrap_or_default(),
        entrypoint: args.image.entrypoint.clone(),
        args: flags.arg.clone(),
        working_directory: args.shared.working_directory.clone(),
        driver: flags.driver,
        retention: flags.retention,
        builtin_tools: flags.builtin_tools.clone(),
        continuity: flags.continuity.clone(),
        authenticate: flags.authenticate.clone(),
        runtime_config,
        interrupt: flags.interrupt,
        cancellation: !flags.no_cancellation,
        permission: flags.permission.into(),
        terminals: flags.allow_terminals,
        settle: Duration::from_secs_f64(args.shared.settle),
    })
}

/// `--permission`: the probe's [`PermissionPolicy`] as the command line names it (the probe
/// library does not depend on clap).
#[derive(Clone, Copy, Default, clap::ValueEnum)]
pub(super) enum Permission {
    /// Select the first option of kind `allow_once` or `allow_always`.
    #[default]
    Allow,
    /// Select the first option of kind `reject_once` or `reject_always`.
    Reject,
    /// Answer `cancelled`.
    Cancel,
}

impl From<Permission> for PermissionPolicy {
    fn from(permission: Permission) -> PermissionPolicy {
        match permission {
            Permission::Allow => PermissionPolicy::Allow,
            Permission::Reject => PermissionPolicy::Reject,
            Permission::Cancel => PermissionPolicy::Cancel,
        }
    }
}
