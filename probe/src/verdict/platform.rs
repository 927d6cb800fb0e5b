//! Whether the platform tool reached the sandbox boundary: in a turn of its own the model
//! called the tool of the MCP server the probe granted in `session/new`'s `mcpServers`.
//!
//! The harness's word counts for nothing here. The relay's record says under which name the
//! tool was offered, that the model called it, and whether the tool's result (a nonce only
//! the probe's server answers) came back to the model; the server's own log says whether the
//! call reached it, from inside the sandbox, and with which arguments.

use serde_json::{json, Value};

use crate::mcp_tool::ServerLog;
use crate::relay::exercise::PlatformSeen;

/// Why the platform tool step failed, named after what shows it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlatformMiss {
    #[error("the model was never asked: no call the relay served in the platform tool turn carried its nonce")]
    Unasked,
    #[error(
        "the harness ignored `mcpServers`: the tool `{tool}` of the MCP server it was granted was in no model request's tool list \
         ({started})"
    )]
    NeverOffered { tool: String, started: &'static str },
    #[error("the model called `{name}` and no call reached the probe's MCP server: the harness narrated a call it never made")]
    Narrated { name: String },
    #[error("the call of `{name}` reached the probe's MCP server with the arguments {got}, not the model's {wanted}")]
    OtherArguments { name: String, got: String, wanted: String },
    #[error("the call of `{name}` reached the probe's MCP server and its result never reached the model: no later request carried it")]
    ResultNotReturned { name: String },
}

/// Judges the platform tool turn: `seen` are its calls that carried the nonce, in the
/// record's order; `log` what the probe's server logged; `tool` the tool's own name and
/// `argument` the text the model called it with.
pub fn judge(seen: &[PlatformSeen], log: &ServerLog, tool: &str, argument: &str) -> Result<(), PlatformMiss> {
    if seen.is_empty() {
        return Err(PlatformMiss::Unasked);
    }
    let Some(name) = seen.iter().find(|s| s.called).and_then(|s| s.offered.clone()) else {
        let started = match (log.initialized, log.listed) {
            (false, _) => "the server was never started",
            (true, false) => "the server was started and never asked for its tools",
            (true, true) => "the server was started and listed its tool, which never reached the model",
        };
        return Err(PlatformMiss::NeverOffered { tool: tool.to_owned(), started });
    };
    let wanted = json!({"text": argument});
    let Some(got) = log.calls.first() else { return Err(PlatformMiss::Narrated { name }) };
    if !log.calls.contains(&wanted) {
        return Err(PlatformMiss::OtherArguments { name, got: shown(got), wanted: shown(&wanted) });
    }
    if !seen.iter().any(|s| s.result_in_request) {
        return Err(PlatformMiss::ResultNotReturned { name });
    }
    Ok(())
}

/// A value as a reason shows it: its JSON, cut short.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 200 {
        text
    } else {
        format!("{}…", checkfu_wire::text::head(&text, 200))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOL: &str = "checkfu_platform_probe";
    const NAME: &str = "mcp__checkfu__checkfu_platform_probe";

    fn seen(called: bool, result: bool) -> PlatformSeen {
        PlatformSeen { offered: Some(NAME.into()), called, argument_in_request: !called, result_in_request: result }
    }

    fn served(calls: Vec<Value>) -> ServerLog {
        ServerLog { initialized: true, listed: true, calls }
    }

    #[test]
    fn a_call_that_reached_the_server_and_came_back_passes() {
        let log = served(vec![json!({"text": "cfc-1"})]);
        assert_eq!(judge(&[seen(true, false), seen(false, true)], &log, TOOL, "cfc-1"), Ok(()));
    }

    #[test]
    fn each_miss_is_named() {
        let log = served(vec![json!({"text": "cfc-1"})]);
        assert_eq!(judge(&[], &log, TOOL, "cfc-1"), Err(PlatformMiss::Unasked));
        let unoffered = PlatformSeen { offered: None, called: false, argument_in_request: false, result_in_request: false };
        let never = judge(&[unoffered], &ServerLog::default(), TOOL, "cfc-1").unwrap_err();
        assert!(never.to_string().contains("ignored `mcpServers`") && never.to_string().contains("never started"), "{never}");
        let narrated = judge(&[seen(true, false), seen(false, false)], &served(vec![]), TOOL, "cfc-1").unwrap_err();
        assert_eq!(narrated, PlatformMiss::Narrated { name: NAME.into() });
        let other = judge(&[seen(true, false), seen(false, true)], &served(vec![json!({"text": "x"})]), TOOL, "cfc-1").unwrap_err();
        assert!(matches!(other, PlatformMiss::OtherArguments { .. }), "{other}");
        let lost = judge(&[seen(true, false), seen(false, false)], &log, TOOL, "cfc-1").unwrap_err();
        assert_eq!(lost, PlatformMiss::ResultNotReturned { name: NAME.into() });
    }
}
