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
    /// The retention mode of the envelope (default: durable).
    #[arg(long, value_parser = retention)]
    pub retention: Option<Retention>,
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
    /// `checkfu.runtime_config` for session/new, as JSON (`{"context_window": 200000}`); its
    /// `context_window`, when it has one, is the window the relay enforces.
    #[arg(long)]
    pub runtime_config: Option<String>,
    /// The model's context window, in tokens of the relay's estimate: sent as
    /// `checkfu.runtime_config`, enforced by the relay (a request past it is answered with
    /// the dialect's context-length error), and judged by the `context_compaction` step.
    #[arg(long, value_name = "TOKENS", conflicts_with = "runtime_config", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub context_window: Option<u64>,
    /// The compaction policy admitted with --context-window: its strategy (`truncate_oldest`
    /// or `summarize`). Without it, the runtime config admits none: the harness must not
    /// compact.
    #[arg(long, value_name = "STRATEGY", requires = "context_window")]
    pub compaction: Option<String>,
    /// The policy's `trigger_tokens`: the estimate at which the harness may compact
    /// (default: the window).
    #[arg(long, value_name = "TOKENS", requires = "compaction", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub compaction_trigger: Option<u64>,
    /// Send a scripted cooperative interrupt (when `interrupt: cooperative` was admitted) and
    /// opt in to its check.
    #[arg(long)]
    pub interrupt: bool,
    /// Skip the `cancellation` step (a second prompt, cancelled with `session/cancel` while
    /// the model's answer streams).
    #[arg(long)]
    pub no_cancellation: bool,
    /// How permission requests are answered (default: allow).
    #[arg(long, value_enum)]
    pub permission: Option<Permission>,
    /// Serve the harness's `terminal/*` requests: commands run in the session's workspace as
    /// the user running the probe (not a sandbox). Without it they are answered -32601.
    #[arg(long)]
    pub allow_terminals: bool,
    /// Advertise no file system access (`clientCapabilities.fs` false): a harness that
    /// still calls `fs/*` is refused and fails ACP-CLIENTCAP-001.
    #[arg(long)]
    pub no_client_fs: bool,
    /// Write the wire, both directions, as the JSON Lines `decode` reads.
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// The ACP version `initialize` asks for (default 1). An agent may answer with an older
    /// one, which the run then speaks; one that refuses 1 with -32022 naming 2 is asked again.
    #[arg(long, value_name = "VERSION", value_parser = clap::value_parser!(u64).range(1..=2))]
    pub acp_version: Option<u64>,
}

impl Flags {
    /// The first of these flags given (in the order declared), which a oneshot-v1 run
    /// refuses; every flag is optional, so given is `Some`, `true` or not empty.
    pub(super) fn given(&self) -> Option<&'static str> {
        self.each_given().into_iter().find_map(|(flag, given)| given.then_some(flag))
    }

    /// Each of these flags, in the order declared, and whether it was given (a test holds
    /// the list to the lane's clap group).
    pub(super) fn each_given(&self) -> [(&'static str, bool); 17] {
        [
            ("--arg", !self.arg.is_empty()),
            ("--driver", self.driver.is_some()),
            ("--retention", self.retention.is_some()),
            ("--builtin-tools", self.builtin_tools.is_some()),
            ("--authenticate", self.authenticate.is_some()),
            ("--continuity", self.continuity.is_some()),
            ("--runtime-config", self.runtime_config.is_some()),
            ("--context-window", self.context_window.is_some()),
            ("--compaction", self.compaction.is_some()),
            ("--compaction-trigger", self.compaction_trigger.is_some()),
            ("--interrupt", self.interrupt),
            ("--no-cancellation", self.no_cancellation),
            ("--permission", self.permission.is_some()),
            ("--allow-terminals", self.allow_terminals),
            ("--no-client-fs", self.no_client_fs),
            ("--record", self.record.is_some()),
            ("--acp-version", self.acp_version.is_some()),
        ]
    }
}

/// `--driver`: a driver the catalog names.
fn driver(text: &str) -> Result<Driver, UnknownName> {
    Driver::from_name(text).ok_or_else(|| UnknownName::Driver { text: text.to_owned(), known: names(Driver::ALL.iter().map(|d| d.name())) })
}

/// `--retention`: a retention mode of the catalog's envelopes.
fn retention(text: &str) -> Result<Retention, UnknownName> {
    Retention::from_name(text)
        .ok_or_else(|| UnknownName::Retention { text: text.to_owned(), known: names(Retention::ALL.iter().map(|r| r.name())) })
}

/// A `--driver` or `--retention` the catalog does not name, and the names it has.
#[derive(Debug, thiserror::Error)]
enum UnknownName {
    #[error("the catalog has no driver `{text}` (it has: {known})")]
    Driver { text: String, known: String },
    #[error("the catalog has no retention mode `{text}` (it has: {known})")]
    Retention { text: String, known: String },
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

/// The ACP lane's options from the command line and the recipe: the recipe's command,
/// variables and home files (written before the command line's, which may override them),
/// and its harness, bound unless `--harness` names another.
pub(super) fn options(args: &super::Args, recipe: Option<&Recipe>, run: &mut RunOptions) -> Result<AcpOptions, ProbeError> {
    let flags = &args.acp;
    let runtime_config = match (&flags.runtime_config, flags.context_window) {
        (Some(text), _) => {
            Some(serde_json::from_str::<serde_json::Value>(text).map_err(|e| ProbeError::invalid("--runtime-config is not JSON", e))?)
        }
        (None, Some(window)) => Some(runtime_config(window, flags)),
        (None, None) => None,
    };
    // The window the harness is told is the one the relay holds it to.
    run.context_window = runtime_config.as_ref().and_then(|c| c.get("context_window")).and_then(serde_json::Value::as_u64);
    Ok(AcpOptions {
        command: args.command.clone(),
        recipe_command: recipe.map(|r| r.command.clone()).unwrap_or_default(),
        recipe_env: recipe.map(|r| r.env.clone()).unwrap_or_default(),
        recipe_home_files: recipe.map(|r| r.home_files.clone()).unwrap_or_default(),
        entrypoint: args.image.entrypoint.clone(),
        args: flags.arg.clone(),
        working_directory: args.shared.working_directory.clone(),
        driver: flags.driver,
        retention: flags.retention.unwrap_or(Retention::Durable),
        builtin_tools: flags.builtin_tools.clone(),
        continuity: flags.continuity.clone(),
        authenticate: flags.authenticate.clone(),
        runtime_config,
        interrupt: flags.interrupt,
        cancellation: !flags.no_cancellation,
        permission: flags.permission.unwrap_or_default().into(),
        terminals: flags.allow_terminals,
        client_fs: !flags.no_client_fs,
        settle: Duration::from_secs_f64(args.shared.settle),
        acp_version: flags.acp_version.unwrap_or(1),
        requirement_probes: true,
    })
}

/// `checkfu.runtime_config` from --context-window, --compaction and --compaction-trigger
/// (checked against the slot's schema with the other authority members, before anything
/// starts).
fn runtime_config(window: u64, flags: &Flags) -> serde_json::Value {
    let mut config = serde_json::json!({"context_window": window});
    if let Some(strategy) = &flags.compaction {
        config["compaction"] = serde_json::json!({"strategy": strategy, "trigger_tokens": flags.compaction_trigger.unwrap_or(window)});
    }
    config
}

/// `--permission`: the probe's [`PermissionPolicy`] as the command line names it (the probe
/// library does not depend on clap).
#[derive(Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
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
