//! Which ACP version the run speaks: `initialize` asks for `--acp-version` (1 unless told),
//! and the agent's answer decides.
//!
//! - Asked for 2, an agent that answers 1 has chosen 1 (ACP lets an agent answer the highest
//!   version it speaks at or below the one asked): the session's decoder reads its answer and
//!   the rest of the stream in v1's grammar ([`checkfu_wire::decode::Decoder::negotiating`]),
//!   and the run is judged as v1.
//! - Asked for 1, an agent that speaks only newer versions answers `initialize` with the error
//!   `-32022`, whose `data.supported` lists the versions it speaks (ACP v2's schema,
//!   `UnsupportedProtocolVersionErrorData`; the official SDK 2.4.0's v2 endpoint does so).
//!   The probe asks once more, with the highest version both speak. ACP's test kit expects a
//!   downgrade to 1 instead (`ACP-INIT-202`); the probe follows the schema.
//!
//! The version that ran is the report's `acp_version`.

use serde_json::{json, Value};

use super::AcpOptions;
use checkfu_wire::decode::Protocol;

/// The versions the probe speaks, by number: as each pinned schema's grammar has it.
pub const V1: u64 = Protocol::AcpV1.grammar().protocol_version;
pub const V2: u64 = Protocol::AcpV2.grammar().protocol_version;

/// ACP's error code for an `initialize` naming no version the agent speaks at or below it.
const UNSUPPORTED_VERSION: i64 = -32022;

/// The decoder's grammar of version `version` (1 for anything but 2: the options allow no other).
pub fn protocol(version: u64) -> Protocol {
    if version == V2 {
        Protocol::AcpV2
    } else {
        Protocol::AcpV1
    }
}

/// The version number of `protocol`.
pub fn version(protocol: Protocol) -> u64 {
    protocol.grammar().protocol_version
}

/// How the version was agreed, for the report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Negotiation {
    /// The version the first `initialize` asked for.
    pub asked: u64,
    /// The versions a `-32022` answer named, when the first `initialize` got one (and so
    /// was asked again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported: Option<Vec<u64>>,
}

/// The `initialize` the probe sends for `version`: its client capabilities as the options
/// advertise them, in that version's shape (v2: `info`, and a `capabilities` object of object
/// markers; the probe offers none of v2's client capabilities).
pub fn params(options: &AcpOptions, version: u64) -> Value {
    let info = json!({"name": "checkfu-wire probe", "version": env!("CARGO_PKG_VERSION")});
    if version == V2 {
        return json!({"protocolVersion": V2, "info": info, "capabilities": {}});
    }
    json!({
        "protocolVersion": V1,
        "clientCapabilities": {"fs": {"readTextFile": options.client_fs, "writeTextFile": options.client_fs}, "terminal": options.terminals},
        "clientInfo": info,
    })
}

/// When `message` (the answer to an `initialize` that asked for `asked`) is a `-32022` naming
/// the versions the agent speaks: those versions, and the highest of them the probe speaks
/// too (`None` when none is, or it is the one already asked).
pub fn retry(message: &Value, asked: u64) -> Option<(Vec<u64>, Option<u64>)> {
    let error = message.get("error")?;
    if error.get("code").and_then(Value::as_i64) != Some(UNSUPPORTED_VERSION) {
        return None;
    }
    // Bounded: a list of more than a few versions is read no further than its first 16.
    let supported: Vec<u64> =
        error.pointer("/data/supported").and_then(Value::as_array)?.iter().take(16).filter_map(Value::as_u64).collect();
    let both = supported.iter().copied().filter(|v| [V1, V2].contains(v) && *v != asked).max();
    Some((supported, both))
}

/// What is wrong with a v2 `initialize` answer's capabilities (`result`), if anything: v2's
/// capabilities are object markers, and a boolean where one belongs is v1's shape. The
/// schema marks `capabilities` lenient (a bad member defaults), so the decoder alone lets it
/// pass.
pub fn boolean_capability(result: &Value) -> Option<String> {
    let mut stack: Vec<(String, &Value)> = vec![(String::from("capabilities"), result.get("capabilities")?)];
    // Bounded by the message, which the session already bounded; the depth by the stack.
    while let Some((path, value)) = stack.pop() {
        match value {
            Value::Bool(b) => return Some(format!("the capability `{path}` is the boolean `{b}`, where ACP v2 takes an object marker")),
            Value::Object(members) => {
                stack.extend(members.iter().filter(|(k, _)| k.as_str() != "_meta").map(|(k, v)| (format!("{path}.{k}"), v)));
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32022_names_the_version_to_ask_again() {
        let answer =
            json!({"error": {"code": -32022, "message": "Unsupported protocol version", "data": {"requested": 1, "supported": [2]}}});
        assert_eq!(retry(&answer, V1), Some((vec![2], Some(V2))));
        let none_shared = json!({"error": {"code": -32022, "message": "m", "data": {"requested": 1, "supported": [3, 7]}}});
        assert_eq!(retry(&none_shared, V1), Some((vec![3, 7], None)));
        assert_eq!(retry(&json!({"error": {"code": -32600, "message": "m"}}), V1), None);
        assert_eq!(retry(&json!({"result": {"protocolVersion": 1}}), V1), None);
    }

    /// The registration profile names the version that ran (`protocol(version)` of the
    /// agreed version, as the lane's end builds it), not v1 always.
    #[test]
    fn the_registration_profile_names_the_version_that_ran() {
        let command = [std::ffi::OsString::from("/agent"), std::ffi::OsString::from("--acp")];
        let options = AcpOptions::new(command.to_vec());
        let v2 = options.profile(&command, protocol(V2));
        assert_eq!(v2, ["--protocol=acp-v2", "--entrypoint=/agent", "--arg=--acp"]);
        assert_eq!(options.profile(&command, protocol(V1))[0], "--protocol=acp-v1");
    }

    #[test]
    fn a_boolean_capability_is_named_with_its_path() {
        let result = json!({"capabilities": {"session": {"prompt": {"image": true}}, "auth": {}}});
        let why = boolean_capability(&result).unwrap_or_default();
        assert!(why.contains("capabilities.session.prompt.image") && why.contains("boolean"), "{why}");
        assert_eq!(boolean_capability(&json!({"capabilities": {"session": {"prompt": {"image": {}}}, "_meta": {"x": true}}})), None);
    }
}
