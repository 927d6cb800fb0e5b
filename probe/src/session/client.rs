//! The client side of a runner's session: how it answers the requests a harness sends it.
//!
//! - `session/request_permission`: by [`PermissionPolicy`];
//! - `fs/read_text_file`, `fs/write_text_file`: confined to the session's [`Workspace`];
//! - everything else (`terminal/*` unless the session serves them through
//!   [`super::terminals`], `elicitation/create`, other vendors' `_…` extensions): "Method not
//!   found" (-32601), which is what ACP prescribes for a method a client does not offer; the
//!   initialize request advertises no elicitation, and a terminal only when they are served.

use serde::Serialize;
use serde_json::{json, Value};

use checkfu_wire::decode::tables::Method;

use super::workspace::{Refusal, Workspace};

/// JSON-RPC "Method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "Invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// ACP's "Resource not found".
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// The option kinds that grant a permission, and those that reject it (ACP's
/// `PermissionOptionKind`): what the policy selects, and what a refusal is.
const ALLOW_KINDS: &[&str] = &["allow_once", "allow_always"];
const REJECT_KINDS: &[&str] = &["reject_once", "reject_always"];

/// A write or a terminal refused because the turn's permission was: a server error of
/// JSON-RPC's implementation-defined range, which ACP leaves free.
pub const PERMISSION_REFUSED: i64 = -32003;

/// How permission requests are answered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionPolicy {
    /// Select the first option of kind `allow_once` or `allow_always`.
    #[default]
    Allow,
    /// Select the first option of kind `reject_once` or `reject_always`.
    Reject,
    /// Answer `cancelled`.
    Cancel,
}

/// One request the harness made of the client, and what the runner answered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientRequest {
    pub method: String,
    /// `answered` or `refused`.
    pub outcome: &'static str,
    /// What was granted or why it was refused.
    pub detail: String,
}

/// A JSON-RPC result or error for one harness request.
pub type Answer = Result<Value, (i64, String)>;

/// Answers one request from the harness. `extension` is true for a `_`-prefixed method no
/// table knows.
pub fn answer(method: &str, params: &Value, extension: bool, policy: PermissionPolicy, workspace: &Workspace) -> (Answer, ClientRequest) {
    let refused = |code: i64, why: String| {
        let log = ClientRequest { method: method.to_owned(), outcome: "refused", detail: why.clone() };
        (Err((code, why)), log)
    };
    let granted = |value: Value, detail: String| (Ok(value), ClientRequest { method: method.to_owned(), outcome: "answered", detail });
    if extension {
        return refused(METHOD_NOT_FOUND, format!("extension method `{method}` is not supported by this client"));
    }
    match Method::from_name(method) {
        Some(Method::SessionRequestPermission) => {
            let options = params.get("options").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
            let wanted: &[&str] = match policy {
                PermissionPolicy::Allow => ALLOW_KINDS,
                PermissionPolicy::Reject => REJECT_KINDS,
                PermissionPolicy::Cancel => &[],
            };
            let chosen = options.iter().find(|o| o.get("kind").and_then(Value::as_str).is_some_and(|k| wanted.contains(&k)));
            match chosen.and_then(|o| o.get("optionId")) {
                Some(id) => {
                    let detail = format!("selected option {id}");
                    granted(json!({"outcome": {"outcome": "selected", "optionId": id}}), detail)
                }
                None => granted(json!({"outcome": {"outcome": "cancelled"}}), String::from("cancelled")),
            }
        }
        Some(Method::FsReadTextFile) => {
            let path = params.get("path").and_then(Value::as_str).unwrap_or_default();
            let line = params.get("line").and_then(Value::as_u64);
            let limit = params.get("limit").and_then(Value::as_u64);
            match workspace.read_text(path, line, limit) {
                Ok(content) => granted(json!({"content": content}), format!("read {path}")),
                Err(refusal) => refused(refusal_code(&refusal), format!("{path}: {refusal}")),
            }
        }
        Some(Method::FsWriteTextFile) => {
            let path = params.get("path").and_then(Value::as_str).unwrap_or_default();
            let content = params.get("content").and_then(Value::as_str).unwrap_or_default();
            match workspace.write_text(path, content) {
                Ok(()) => granted(json!({}), format!("wrote {path}")),
                Err(refusal) => refused(refusal_code(&refusal), format!("{path}: {refusal}")),
            }
        }
        _ => refused(METHOD_NOT_FOUND, format!("`{method}` is not offered by this client")),
    }
}

/// What the answer to a `session/request_permission` refused, if it did: `cancelled`, or
/// the kind of the option it selected when that is a rejection (`reject_once`,
/// `reject_always`).
pub fn refusal(answer: &Answer, params: &Value) -> Option<&'static str> {
    let outcome = answer.as_ref().ok()?.get("outcome")?;
    if outcome.get("outcome").and_then(Value::as_str) == Some("cancelled") {
        return Some("cancelled");
    }
    let chosen = outcome.get("optionId")?;
    let options = params.get("options").and_then(Value::as_array)?;
    let kind = options.iter().find(|o| o.get("optionId") == Some(chosen))?.get("kind").and_then(Value::as_str)?;
    REJECT_KINDS.iter().copied().find(|k| *k == kind)
}

fn refusal_code(refusal: &Refusal) -> i64 {
    match refusal {
        Refusal::NotFound => RESOURCE_NOT_FOUND,
        Refusal::NotAbsolute | Refusal::Outside => INVALID_PARAMS,
        Refusal::Io(_) => -32603,
    }
}
