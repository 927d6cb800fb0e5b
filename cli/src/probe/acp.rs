//! `probe` with `--protocol acp-v1` (the default): a live ACP session (see
//! [`checkfu_wire_probe::acp`]).

use std::ffi::OsString;
use std::path::PathBuf;

use checkfu_wire::catalog::{Driver, Retention};
use checkfu_wire_probe::recipe::Recipe;
use checkfu_wire_probe::session::PermissionPolicy;
use checkfu_wire_probe::{self as probe, ProbeOptions, Progress, Report, UsageError};

use super::{shared_options, show, usage, Shared};

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

/// Runs the ACP lane: `command` is what followed `--` (or the recipe's command).
pub fn probe(
    shared: &Shared,
    started: std::time::Instant,
    flags: &Flags,
    image: &super::image::Flags,
    line: &[super::Word],
    command: Vec<OsString>,
    recipe: Option<Recipe>,
) -> Result<Report, i32> {
    // An image is built or pulled, and unpacked, first: its Entrypoint and Cmd are the
    // default command; `--entrypoint` replaces the program, and `--arg` adds arguments.
    let prepared = image.prepare(line, shared.deadline(started))?;
    let mut command = match (&recipe, command.is_empty(), &prepared) {
        (_, false, _) => command,
        (Some(recipe), true, _) => recipe.command.iter().map(OsString::from).collect(),
        (None, true, Some(prepared)) => prepared.container.default_command().into_iter().map(OsString::from).collect(),
        (None, true, None) => return Err(usage("no harness command: give one after `--`, or a --recipe")),
    };
    if let Some(entrypoint) = &image.entrypoint {
        match command.first_mut() {
            Some(first) => *first = OsString::from(entrypoint),
            None => command.push(OsString::from(entrypoint)),
        }
    }
    command.extend(flags.arg.iter().map(OsString::from));
    if command.is_empty() {
        return Err(usage("no harness command: the image has no Entrypoint or Cmd; give --entrypoint"));
    }
    let mut options = ProbeOptions::new(command);
    options.image = prepared.as_ref().map(|p| (p.container.clone(), shared.working_directory.clone()));
    if let Some(recipe) = &recipe {
        options.harness = recipe.harness.clone();
        options.env = recipe.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        options.home_files = recipe.home_files.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    }
    if shared.harness.is_some() {
        options.harness = shared.harness.clone();
    }
    // The entry's driver is the default driver of a bound run.
    if let Some(entry) = options.harness.as_deref().and_then(|n| checkfu_wire::catalog::HARNESSES.iter().find(|h| h.name == n)) {
        if let Some(driver) = entry.driver {
            options.driver = driver;
        }
    }
    shared_options(shared, started, &mut options)?;
    if let Some(driver) = flags.driver {
        options.driver = driver;
    }
    options.retention = flags.retention;
    options.builtin_tools = flags.builtin_tools.clone();
    options.continuity = flags.continuity.clone();
    options.authenticate = flags.authenticate.clone();
    if let Some(text) = &flags.runtime_config {
        match serde_json::from_str(text) {
            Ok(value) => options.runtime_config = Some(value),
            Err(e) => return Err(usage(format!("--runtime-config is not JSON: {e}"))),
        }
    }
    options.interrupt = flags.interrupt;
    options.permission = flags.permission.into();
    options.terminals = flags.allow_terminals;

    let mut progress = |event: Progress| show(shared.format, event);
    match probe::run_with(&options, &mut progress) {
        Ok(mut result) => {
            // The agent as it ran, inside the image: its program and arguments.
            let mut profile = vec![format!("--protocol={}", checkfu_wire::catalog::Protocol::AcpV1)];
            if let Some((program, args)) = options.command.split_first() {
                profile.push(format!("--entrypoint={}", program.to_string_lossy()));
                profile.extend(args.iter().map(|a| format!("--arg={}", a.to_string_lossy())));
            }
            profile.extend(shared.working_directory.iter().map(|d| format!("--working-directory={d}")));
            let env = super::image::settings(recipe.iter().flat_map(|r| &r.env), &shared.env);
            let home_files = super::image::settings(recipe.iter().flat_map(|r| &r.home_files), &shared.home_file);
            result.next = prepared.as_ref().map(|p| image.next_steps(p, result.passed(), &profile, env, home_files));
            Ok(Report::Acp(Box::new(result)))
        }
        Err(e @ (UsageError::Options(_) | UsageError::CannotStart(_))) => Err(usage(e)),
    }
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
