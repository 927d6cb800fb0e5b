//! The `platform_tool` and `platform_tool_http` steps: a platform tool delivered at the
//! sandbox boundary.
//!
//! `session/new` grants the harness MCP servers of the probe's own in `mcpServers`, each with
//! one tool whose result is a nonce of its own:
//! - over stdio, the probe's binary run as `checkfu-wire mcp-tool` ([`crate::mcp_tool`]),
//!   which the harness starts inside the fence, with a log in the workspace;
//! - over streamable HTTP, where the agent advertised `mcpCapabilities.http` at
//!   `initialize`, a server the probe runs itself on the fence's loopback
//!   ([`crate::mcp_http`]), which keeps what reached it in the probe's memory.
//!
//! In a turn of its own per server the model (the relay's [`PlatformTool`]) calls that
//! server's tool under whatever name the request offers it, with a mark as its argument. What
//! reached the server and the relay's record then say what the harness did
//! ([`verdict::platform`]); the two steps are judged alike.
//!
//! The stdio step runs for every harness, declared or not: ACP asks every agent to accept
//! stdio MCP servers in `session/new`, so a harness that ignores them breaks ACP, not a
//! declaration of its own. The HTTP step runs where the agent advertises HTTP MCP servers,
//! which ACP makes a promise of the agent's, in an image too when its runtime runs it in the
//! fence's network (bubblewrap, podman): the server is the probe's, on the host side of the
//! fence, and needs nothing inside the image. The stdio step is skipped in an image: its
//! server is the probe's own binary, which is not inside the image's root.

use std::path::PathBuf;
use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::mcp_http::{self, McpHttp};
use crate::mcp_tool::{self, ServerLog, SUBCOMMAND};
use crate::outcome::{Kind, Outcome};
use crate::relay::exercise::PlatformTool;
use crate::verdict;
use crate::verdict::platform::PlatformMiss;
use checkfu_wire::catalog::StepName;

/// The stdio server's log, in the workspace (the harness starts the server there, inside the fence).
const LOG_FILE: &str = ".checkfu-platform-tool.jsonl";
/// The prefixes of the tool's result and of the model's argument: neither a nonce nor a
/// reply token nor another step's mark.
const RESULT_PREFIX: &str = "cfm-";
const ARGUMENT_PREFIX: &str = "cfn-";

/// An MCP server granted to the harness: its `mcpServers` entry, where what reached it is
/// kept, and the result its tool answers.
pub(super) struct Grant {
    entry: Value,
    evidence: Evidence,
    result: String,
    server: &'static str,
    tool: &'static str,
}

/// Where what reached a granted server is kept.
enum Evidence {
    /// The stdio server's log file (on this machine, in the workspace).
    Log(PathBuf),
    /// The server over HTTP itself, which keeps it in the probe's memory; it stops with the
    /// run (dropping the grant stops it).
    Server(McpHttp),
}

impl Grant {
    fn log(&self) -> ServerLog {
        match &self.evidence {
            Evidence::Log(path) => mcp_tool::read_log(path),
            Evidence::Server(server) => server.log(),
        }
    }
}

/// The servers a session grants, and why the one over HTTP is not granted when it is not.
#[derive(Default)]
pub(super) struct Grants {
    stdio: Option<Grant>,
    http: Option<Grant>,
    http_withheld: Option<String>,
    /// ACP v2: why the stdio server is not granted, when the agent does not advertise it.
    stdio_withheld: Option<String>,
}

/// Whether the `initialize` result advertises MCP servers over `transport` (`stdio`,
/// `http`): v1's `mcpCapabilities.http` is a boolean (and stdio always admitted); v2's
/// `capabilities.session.mcp.<transport>` is an object marker (its `McpServer` grants
/// either transport "only when the agent capabilities include" it).
fn advertises(initialize_result: Option<&Value>, v2: bool, transport: &str) -> bool {
    let Some(result) = initialize_result else { return false };
    match v2 {
        true => result.pointer(&format!("/capabilities/session/mcp/{transport}")).is_some_and(Value::is_object),
        false => transport == "stdio" || result.pointer("/agentCapabilities/mcpCapabilities/http") == Some(&Value::Bool(true)),
    }
}

impl Run<'_, '_, '_, '_> {
    /// The servers the session grants, when the probe can grant them: over stdio outside an
    /// image (in one, the probe's binary is not inside the image's root) with a program to
    /// serve it; over HTTP where the agent advertises it.
    pub(super) fn grant_platform_tools(&mut self) {
        self.platform.http = self.grant_http();
        if self.stage.image.is_some() {
            return;
        }
        let v2 = self.acp_version == super::negotiate::V2;
        if !advertises(self.initialize_result.as_ref(), v2, "stdio") {
            let why = "the agent does not advertise `capabilities.session.mcp.stdio` at initialize (ACP v2's `McpServer` grants a stdio server only then)";
            self.platform.stdio_withheld = Some(why.to_owned());
            return;
        }
        let Some(program) = self.stage.options.mcp_server.clone() else { return };
        let log = self.session.workspace().root().join(LOG_FILE);
        let result = crate::relay::token::mint(RESULT_PREFIX);
        let seen = self.session.workspace().harness_path(&log).to_string_lossy().into_owned();
        let mut entry = json!({"name": mcp_tool::SERVER_NAME, "command": program.to_string_lossy(),
            "args": [SUBCOMMAND, "--result", result, "--log", seen], "env": []});
        if v2 {
            // v2's `McpServer` names every transport, stdio too (v1's stdio entry has no `type`).
            entry["type"] = json!("stdio");
        }
        self.platform.stdio =
            Some(Grant { entry, evidence: Evidence::Log(log), result, server: mcp_tool::SERVER_NAME, tool: mcp_tool::TOOL });
    }

    /// The server over HTTP, started on the fence's loopback, when the agent advertises it
    /// and the harness runs in the fence's network: outside an image, or in one whose
    /// runtime joins the fence (bubblewrap, podman), where the server needs nothing inside
    /// the image; else `None`, with why.
    fn grant_http(&mut self) -> Option<Grant> {
        let v2 = self.acp_version == super::negotiate::V2;
        let withheld = if !advertises(self.initialize_result.as_ref(), v2, "http") {
            let member = if v2 { "capabilities.session.mcp.http" } else { "mcpCapabilities.http" };
            Some(format!("the agent does not advertise `{member}` at initialize"))
        } else if self.container.as_ref().is_some_and(|c| !c.joins_fence()) {
            Some(String::from(
                "the image runs in docker's pause container, into which the probe forwards the relay's port alone: no MCP server over HTTP is granted",
            ))
        } else {
            None
        };
        if let Some(why) = withheld {
            self.platform.http_withheld = Some(why);
            return None;
        }
        let result = crate::relay::token::mint(RESULT_PREFIX);
        let listener = self.stage.plane.tool_listener.take();
        match McpHttp::start(listener, result.clone(), self.stage.options.budget.clone()) {
            Ok(server) => {
                let entry = json!({"type": "http", "name": mcp_http::SERVER_NAME, "url": server.url(), "headers": []});
                Some(Grant { entry, evidence: Evidence::Server(server), result, server: mcp_http::SERVER_NAME, tool: mcp_http::TOOL })
            }
            Err(e) => {
                self.platform.http_withheld = Some(format!("the probe's MCP server over HTTP could not start: {e}"));
                None
            }
        }
    }

    /// What `session/new` carries in `mcpServers`: the stdio server, then the HTTP one.
    pub(super) fn mcp_servers(&self) -> Value {
        Value::Array([&self.platform.stdio, &self.platform.http].into_iter().flatten().map(|g| g.entry.clone()).collect())
    }

    /// Reports `platform_tool` and `platform_tool_http`, after the prompt exchange.
    pub(super) fn platform_tool(&mut self, session_id: &str) {
        let stdio_unserved = match (self.stage.image.is_some(), &self.platform.stdio_withheld) {
            (true, _) => "the probe's MCP server over stdio is not inside the image: it is granted outside one",
            (false, Some(why)) => why.as_str(),
            (false, None) => "no program serves the probe's MCP server (the probe's library was run without `mcp_server`)",
        };
        let http_unserved = self.platform.http_withheld.clone().unwrap_or_default();
        for (step, granted, unserved) in [
            (StepName::PlatformTool, self.platform.stdio.is_some(), stdio_unserved.to_owned()),
            (StepName::PlatformToolHttp, self.platform.http.is_some(), http_unserved),
        ] {
            let skip = match granted {
                false => Some(unserved),
                true if !self.stage.steps.passed(StepName::PromptExchange) => {
                    Some(format!("prompt_exchange did not pass, so {} would judge nothing", step.name()))
                }
                true => None,
            };
            if let Some(reason) = skip {
                self.stage.steps.skipped(step, &reason);
                continue;
            }
            let started = Instant::now();
            let outcome = self.platform_turn(session_id, step == StepName::PlatformToolHttp);
            self.step(step, started, outcome);
        }
    }

    fn platform_turn(&mut self, session_id: &str, http: bool) -> Outcome {
        let grant = if http { &self.platform.http } else { &self.platform.stdio };
        let Some((result, server, tool)) = grant.as_ref().map(|g| (g.result.clone(), g.server, g.tool)) else {
            return Outcome::failed(Kind::Harness, "no MCP server was granted");
        };
        let nonce = crate::options::fresh_nonce();
        let argument = crate::relay::token::mint(ARGUMENT_PREFIX);
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        relay.script_platform_tool(PlatformTool { tool: tool.to_owned(), argument: argument.clone(), result });
        let turn = relay.turn();
        let text = format!(
            "Checkfu local diagnostic, platform tool. Run the tool the model asks for: it is served by the `{server}` MCP server \
             this session was given. Then reply with the nonce {nonce} and end the turn."
        );
        let answered = self.exercise_turn(session_id, json!([{"type": "text", "text": text}]));
        let seen: Vec<_> = self.stage.plane.relay.calls(turn).into_iter().filter_map(|c| c.platform).collect();
        let grant = if http { &self.platform.http } else { &self.platform.stdio };
        let log = grant.as_ref().map(Grant::log).unwrap_or_default();
        match verdict::platform::judge(&seen, &log, tool, &argument) {
            Err(miss @ PlatformMiss::Unasked) => Outcome::failed(Kind::Unasked, miss),
            Err(miss) => Outcome::failed(Kind::NotServed, format!("the platform tool is not delivered: {miss}")),
            Ok(()) => answered.map_or_else(Outcome::Failed, |()| Outcome::Passed),
        }
    }
}
