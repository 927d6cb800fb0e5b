//! What both lanes take: the catalog binding, the model plane, the harness's environment
//! and files, the output schema, and the times. Each lane's own options are the lane's
//! ([`crate::acp::AcpOptions`], [`crate::oneshot::OneshotPlan`]).

use std::time::Duration;

use serde_json::Value;

pub use crate::budget::{Budget, Cancel, Deadline};
use crate::error::ProbeError;
use crate::relay::routes::RouteError;
use crate::relay::{self, Script};
use checkfu_wire::catalog;

/// The options of a run that both lanes read.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The catalog entry the run is bound to (`--harness`, else the recipe's).
    pub harness: Option<&'static catalog::Harness>,
    /// The reviewed provider whose gateway allow-list the relay serves (`--provider`);
    /// `None`: the unlisted-provider route.
    pub provider: Option<&'static catalog::GatewayRoutes>,
    pub model_script: Script,
    /// The author's output schema (`--output-schema`), checked by the safety profile.
    pub output_schema: Option<Value>,
    /// Run the harness with the caller's own `HOME` instead of a fresh one.
    pub inherit_home: bool,
    /// Variables for the harness (after the probe's own, so they may override them): a
    /// recipe's, then the command line's.
    pub env: Vec<(String, String)>,
    /// Files written into the fresh home: (relative path, template), a recipe's then the
    /// command line's.
    pub home_files: Vec<(String, String)>,
    /// Try to run the harness in a loopback-only network namespace.
    pub netns: bool,
    /// Keep bounded copies of the model calls' bodies (`--record-model`).
    pub record_bodies: bool,
    /// The context window the relay enforces (the ACP lane's `checkfu.runtime_config`
    /// tells the harness the same window): `None`, no window.
    pub context_window: Option<u64>,
    pub step_timeout: Duration,
    /// The run's one budget: its deadline (`--deadline`) and its cancellation (a signal).
    pub budget: Budget,
    /// How long teardown waits for an exit after closing stdin, and again after SIGTERM.
    pub kill_grace: Duration,
    /// The program that serves the probe's MCP server as `mcp-tool` (the `checkfu-wire`
    /// binary: [`crate::mcp_tool`]); `None`: no server is granted and `platform_tool` is
    /// skipped, saying so.
    pub mcp_server: Option<std::path::PathBuf>,
}

impl RunOptions {
    /// The provider's catalog name; `None`: the unlisted-provider route.
    pub fn provider_name(&self) -> Option<&'static str> {
        self.provider.map(|p| p.provider)
    }
}

/// The catalog entry named `name` (`--harness`, or a recipe's `harness`), or the usage
/// error that lists the entries the catalog has.
pub fn harness(name: &str) -> Result<&'static catalog::Harness, ProbeError> {
    catalog::HARNESSES.iter().find(|h| h.name == name).ok_or_else(|| {
        let known: Vec<&str> = catalog::HARNESSES.iter().map(|h| h.name).collect();
        ProbeError::Usage(format!("no harness `{name}` in the catalog (it has: {})", known.join(", ")))
    })
}

/// The reviewed provider named `name` (`--provider`), refused as the relay refuses it.
pub fn provider(name: &str) -> Result<&'static catalog::GatewayRoutes, ProbeError> {
    catalog::GATEWAY_ROUTES
        .iter()
        .find(|p| p.provider == name)
        .ok_or_else(|| ProbeError::Usage(RouteError(catalog::UnknownProvider(name.to_owned())).to_string()))
}

impl Default for RunOptions {
    /// Unbound, the unlisted provider, the `nonce` script, a fresh home in a network
    /// namespace, 30 s steps and 120 s in all.
    fn default() -> RunOptions {
        RunOptions {
            harness: None,
            provider: None,
            model_script: Script::Nonce,
            output_schema: None,
            inherit_home: false,
            env: Vec::new(),
            home_files: Vec::new(),
            netns: true,
            record_bodies: false,
            context_window: None,
            step_timeout: Duration::from_secs(30),
            budget: Budget::after(Duration::from_secs(120)),
            kill_grace: Duration::from_secs(2),
            mcp_server: None,
        }
    }
}

/// The file of the `tool` script's second token, in the workspace.
pub const TOKEN_FILE: &str = "checkfu-probe-token.txt";

/// A fresh nonce, as the probe makes one per session (`cf-` and 16 hex digits).
pub fn fresh_nonce() -> String {
    relay::token::mint(relay::token::NONCE_PREFIX)
}
