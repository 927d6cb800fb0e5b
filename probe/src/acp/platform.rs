//! The `platform_tool` step: a platform tool delivered at the sandbox boundary.
//!
//! `session/new` grants the harness an MCP server of the probe's own in `mcpServers`: the
//! probe's binary run as `checkfu-wire mcp-tool` over stdio ([`crate::mcp_tool`]), which the
//! harness starts inside the fence, with the result its one tool answers (a nonce of its own)
//! and a log in the workspace. In a turn of its own the model (the relay's
//! [`PlatformTool`]) calls the tool under whatever name the request offers it, with a mark as
//! its argument. The server's log and the relay's record then say what the harness did
//! ([`verdict::platform`]).
//!
//! The step runs for every harness, declared or not: ACP asks every agent to accept stdio
//! MCP servers in `session/new` (HTTP ones only where it advertises `mcpCapabilities.http`),
//! so a harness that ignores them breaks ACP, not a declaration of its own.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::mcp_tool::{self, SERVER_NAME, SUBCOMMAND, TOOL};
use crate::outcome::{Kind, Outcome};
use crate::relay::exercise::PlatformTool;
use crate::verdict;
use crate::verdict::platform::PlatformMiss;
use checkfu_wire::catalog::StepName;

/// The server's log, in the workspace (the harness starts the server there, inside the fence).
const LOG_FILE: &str = ".checkfu-platform-tool.jsonl";
/// The prefixes of the tool's result and of the model's argument: neither a nonce nor a
/// reply token nor another step's mark.
const RESULT_PREFIX: &str = "cfm-";
const ARGUMENT_PREFIX: &str = "cfn-";

/// The MCP server granted to the harness: its `mcpServers` entry, the log it writes (on this
/// machine) and the result its tool answers.
pub(super) struct Grant {
    entry: Value,
    log: PathBuf,
    result: String,
}

impl Run<'_, '_, '_, '_> {
    /// The server the session grants, when the probe can grant one: outside an image (in one,
    /// the probe's binary is not inside the image's root), with a program to serve it.
    pub(super) fn grant_platform_tool(&mut self) {
        if self.stage.image.is_some() {
            return;
        }
        let Some(program) = self.stage.options.mcp_server.clone() else { return };
        let log = self.session.workspace().root().join(LOG_FILE);
        let result = crate::relay::token::mint(RESULT_PREFIX);
        let seen = self.session.workspace().harness_path(&log).to_string_lossy().into_owned();
        let entry = json!({"name": SERVER_NAME, "command": program.to_string_lossy(), "args": [SUBCOMMAND, "--result", result, "--log", seen],
            "env": []});
        self.platform = Some(Grant { entry, log, result });
    }

    /// What `session/new` carries in `mcpServers`.
    pub(super) fn mcp_servers(&self) -> Value {
        Value::Array(self.platform.iter().map(|g| g.entry.clone()).collect())
    }

    /// Reports `platform_tool`, after the prompt exchange.
    pub(super) fn platform_tool(&mut self, session_id: &str) {
        let skip = match &self.platform {
            None if self.stage.image.is_some() => Some("the probe's MCP server is not inside the image: it is granted outside one"),
            None => Some("no program serves the probe's MCP server (the probe's library was run without `mcp_server`)"),
            Some(_) if !self.stage.steps.passed(StepName::PromptExchange) => {
                Some("prompt_exchange did not pass, so platform_tool would judge nothing")
            }
            Some(_) => None,
        };
        if let Some(reason) = skip {
            self.stage.steps.skipped(StepName::PlatformTool, reason);
            return;
        }
        let started = Instant::now();
        let outcome = self.platform_turn(session_id);
        self.step(StepName::PlatformTool, started, outcome);
    }

    fn platform_turn(&mut self, session_id: &str) -> Outcome {
        let Some((log, result)) = self.platform.as_ref().map(|g| (g.log.clone(), g.result.clone())) else {
            return Outcome::failed(Kind::Harness, "no MCP server was granted");
        };
        let nonce = crate::options::fresh_nonce();
        let argument = crate::relay::token::mint(ARGUMENT_PREFIX);
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        relay.script_platform_tool(PlatformTool { tool: TOOL.to_owned(), argument: argument.clone(), result });
        let turn = relay.turn();
        let text = format!(
            "Checkfu local diagnostic, platform tool. Run the tool the model asks for: it is served by the `{SERVER_NAME}` MCP server \
             this session was given. Then reply with the nonce {nonce} and end the turn."
        );
        let answered = self.exercise_turn(session_id, json!([{"type": "text", "text": text}]));
        let seen: Vec<_> = self.stage.plane.relay.calls(turn).into_iter().filter_map(|c| c.platform).collect();
        match verdict::platform::judge(&seen, &mcp_tool::read_log(&log), TOOL, &argument) {
            Err(miss @ PlatformMiss::Unasked) => Outcome::failed(Kind::Unasked, miss),
            Err(miss) => Outcome::failed(Kind::NotServed, format!("the platform tool is not delivered: {miss}")),
            Ok(()) => answered.map_or_else(Outcome::Failed, |()| Outcome::Passed),
        }
    }
}
