//! The `platform_tool` and `platform_tool_http` steps: a platform tool delivered at the
//! sandbox boundary.
//!
//! `session/new` grants the harness MCP servers of the probe's own in `mcpServers`, each with
//! one tool whose result is a nonce of its own. Both are endpoints of one server the probe
//! runs itself on the fence's loopback ([`crate::mcp_http`]), which keeps what reached each
//! in the probe's memory and mints the results there:
//! - over stdio, the probe's binary run as `checkfu-wire mcp-tool` ([`crate::mcp_tool`]),
//!   which the harness starts inside the fence: a pipe to the server's stdio endpoint, whose
//!   arguments name that endpoint and nothing else (no result, no log);
//! - over streamable HTTP, where the agent advertised `mcpCapabilities.http` at
//!   `initialize`, the server's HTTP endpoint itself.
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
//! fence, and needs nothing inside the image. The stdio step is skipped in an image: the
//! process it starts is the probe's own binary, which is not inside the image's root.

use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::mcp_http::{McpHttp, Transport};
use crate::mcp_tool::{ENDPOINT_FLAG, SUBCOMMAND};
use crate::outcome::{Kind, Outcome};
use crate::relay::exercise::PlatformTool;
use crate::verdict;
use crate::verdict::platform::PlatformMiss;
use checkfu_wire::catalog::StepName;

/// The prefixes of the tool's result and of the model's argument: neither a nonce nor a
/// reply token nor another step's mark.
const RESULT_PREFIX: &str = "cfm-";
const ARGUMENT_PREFIX: &str = "cfn-";

/// An MCP server granted to the harness: its `mcpServers` entry, its transport (the endpoint
/// of the probe's server that keeps what reached it) and the result its tool answers.
pub(super) struct Grant {
    entry: Value,
    transport: Transport,
    result: String,
}

/// The servers a session grants, the probe's server behind them (it stops with the run:
/// dropping it stops it), and why a server is not granted when it is not.
#[derive(Default)]
pub(super) struct Grants {
    server: Option<McpHttp>,
    stdio: Option<Grant>,
    http: Option<Grant>,
    stdio_withheld: Option<String>,
    http_withheld: Option<String>,
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
    /// serve it; over HTTP where the agent advertises it. Both are endpoints of one server of
    /// the probe's, started here on the fence's loopback.
    pub(super) fn grant_platform_tools(&mut self) {
        let v2 = self.acp_version == super::negotiate::V2;
        let stdio_withheld = match (self.stage.image.is_some(), &self.stage.options.mcp_server) {
            (true, _) => Some("the probe's MCP server over stdio is not inside the image: it is granted outside one"),
            (false, None) => Some("no program serves the probe's MCP server (the probe's library was run without `mcp_server`)"),
            (false, Some(_)) if !advertises(self.initialize_result.as_ref(), v2, "stdio") => Some(
                "the agent does not advertise `capabilities.session.mcp.stdio` at initialize (ACP v2's `McpServer` grants a stdio server only then)",
            ),
            (false, Some(_)) => None,
        };
        self.platform.stdio_withheld = stdio_withheld.map(str::to_owned);
        self.platform.http_withheld = self.http_withheld();
        let granted: Vec<(Transport, String)> =
            [(Transport::Stdio, stdio_withheld.is_none()), (Transport::Http, self.platform.http_withheld.is_none())]
                .into_iter()
                .filter(|(_, granted)| *granted)
                .map(|(transport, _)| (transport, crate::relay::token::mint(RESULT_PREFIX)))
                .collect();
        if granted.is_empty() {
            return;
        }
        let listener = self.stage.plane.tool_listener.take();
        let server = match McpHttp::start(listener, granted.clone(), self.stage.options.budget.clone()) {
            Ok(server) => server,
            Err(e) => {
                let why = format!("the probe's MCP server could not start: {e}");
                for (transport, _) in &granted {
                    *self.withheld(*transport) = Some(why.clone());
                }
                return;
            }
        };
        for (transport, result) in granted {
            let name = transport.server_name();
            let url = server.url(transport);
            let entry = match (transport, &self.stage.options.mcp_server) {
                (Transport::Stdio, Some(program)) => {
                    let mut entry = json!({"name": name, "command": program.to_string_lossy(),
                        "args": [SUBCOMMAND, ENDPOINT_FLAG, url], "env": []});
                    if v2 {
                        // v2's `McpServer` names every transport, stdio too (v1's stdio entry has no `type`).
                        entry["type"] = json!("stdio");
                    }
                    entry
                }
                _ => json!({"type": "http", "name": name, "url": url, "headers": []}),
            };
            *self.grant(transport) = Some(Grant { entry, transport, result });
        }
        self.platform.server = Some(server);
    }

    fn grant(&mut self, transport: Transport) -> &mut Option<Grant> {
        match transport {
            Transport::Stdio => &mut self.platform.stdio,
            Transport::Http => &mut self.platform.http,
        }
    }

    fn withheld(&mut self, transport: Transport) -> &mut Option<String> {
        match transport {
            Transport::Stdio => &mut self.platform.stdio_withheld,
            Transport::Http => &mut self.platform.http_withheld,
        }
    }

    /// Why no server over HTTP is granted, if none is: the agent does not advertise it, or
    /// the harness does not run in the fence's network (an image under docker); outside an
    /// image, or in one whose runtime joins the fence (bubblewrap, podman), the server needs
    /// nothing inside the image.
    fn http_withheld(&self) -> Option<String> {
        let v2 = self.acp_version == super::negotiate::V2;
        if !advertises(self.initialize_result.as_ref(), v2, "http") {
            let member = if v2 { "capabilities.session.mcp.http" } else { "mcpCapabilities.http" };
            Some(format!("the agent does not advertise `{member}` at initialize"))
        } else if self.container.as_ref().is_some_and(|c| !c.joins_fence()) {
            Some(String::from(
                "the image runs in docker's pause container, into which the probe forwards the relay's port alone: no MCP server over HTTP is granted",
            ))
        } else {
            None
        }
    }

    /// What `session/new` carries in `mcpServers`: the stdio server, then the HTTP one.
    pub(super) fn mcp_servers(&self) -> Value {
        Value::Array([&self.platform.stdio, &self.platform.http].into_iter().flatten().map(|g| g.entry.clone()).collect())
    }

    /// Reports `platform_tool` and `platform_tool_http`, after the prompt exchange.
    pub(super) fn platform_tool(&mut self, session_id: &str) {
        let stdio_unserved = self.platform.stdio_withheld.clone().unwrap_or_default();
        let http_unserved = self.platform.http_withheld.clone().unwrap_or_default();
        for (step, granted, unserved) in [
            (StepName::PlatformTool, self.platform.stdio.is_some(), stdio_unserved),
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
        let Some((result, transport)) = grant.as_ref().map(|g| (g.result.clone(), g.transport)) else {
            return Outcome::failed(Kind::Harness, "no MCP server was granted");
        };
        let (server, tool) = (transport.server_name(), transport.tool());
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
        let log = self.platform.server.as_ref().map(|s| s.log(transport)).unwrap_or_default();
        match verdict::platform::judge(&seen, &log, tool, &argument) {
            Err(miss @ PlatformMiss::Unasked) => Outcome::failed(Kind::Unasked, miss),
            Err(miss) => Outcome::failed(Kind::NotServed, format!("the platform tool is not delivered: {miss}")),
            Ok(()) => answered.map_or_else(Outcome::Failed, |()| Outcome::Passed),
        }
    }
}
