//! Admission from wire bytes, through the same generated decoder the rest of the runtime
//! uses: the initialize response is first read by `decode::Decoder` (the ACP grammar, the
//! protocol version, the declaration slot's generated check), and only a message the
//! decoder accepts as an initialize response reaches the table-driven admission.

use std::fmt;

use super::{admit, AdmissionError, AdmittedCapabilities};
use crate::catalog::Envelope;
use crate::decode::{tables, DecodeError, Decoder, Kind, WireDirection};

/// Why a handshake read from the wire was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireAdmissionError {
    /// The decoder rejected the message.
    Decode(DecodeError),
    /// The decoder accepted it, but not as a response to the version-carrying method.
    NotAnInitializeResponse,
    /// Admission rejected the declaration.
    Admission(AdmissionError),
}

impl fmt::Display for WireAdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireAdmissionError::Decode(e) => write!(f, "handshake rejected by the decoder: {e}"),
            WireAdmissionError::NotAnInitializeResponse => {
                write!(f, "handshake rejected: not a `{}` response", tables::VERSION_METHOD)
            }
            WireAdmissionError::Admission(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for WireAdmissionError {}

/// Decodes an initialize response from the harness and admits its declaration against
/// `envelope`.
///
/// ```
/// use checkfu_wire::admission::admit_wire;
/// use checkfu_wire::catalog;
///
/// let envelope = catalog::envelope(catalog::Driver::CheckfuAcpV11, catalog::Retention::Durable).expect("a server envelope");
/// let response = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"checkfu.capabilities":{"subagents":"observed"}}}}"#;
/// let admitted = admit_wire(envelope, response).expect("admitted");
/// // One declared step above the envelope, and nothing else changed.
/// assert_eq!(admitted.value("subagents"), Some("observed"));
/// let before = envelope.values.iter().find(|(axis, _)| *axis == "interrupt").map(|(_, value)| *value);
/// assert_eq!(admitted.value("interrupt"), before);
///
/// // A declaration may not raise an axis no upgrade names.
/// let smuggled = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"checkfu.capabilities":{"model_control":"platform_enforced"}}}}"#;
/// let refused = admit_wire(envelope, smuggled).expect_err("refused");
/// assert!(refused.to_string().contains("model_control"), "{refused}");
/// ```
pub fn admit_wire(envelope: &'static Envelope, bytes: &[u8]) -> Result<AdmittedCapabilities, WireAdmissionError> {
    admit_wire_as(envelope, bytes, crate::decode::Protocol::AcpV1)
}

/// [`admit_wire`] for an answer of the ACP version `protocol` (the `checkfu.capabilities`
/// slot rides every version's `initialize` answer the same way).
pub fn admit_wire_as(
    envelope: &'static Envelope,
    bytes: &[u8],
    protocol: crate::decode::Protocol,
) -> Result<AdmittedCapabilities, WireAdmissionError> {
    let report = Decoder::new().reading(protocol).decode(bytes, Some(WireDirection::AgentToRunner));
    if let Some(error) = report.error {
        return Err(WireAdmissionError::Decode(error.error));
    }
    if report.kind != Some(Kind::Response) || report.method != Some(tables::VERSION_METHOD) {
        return Err(WireAdmissionError::NotAnInitializeResponse);
    }
    // The decoder accepted the bytes, so they are one JSON object.
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| WireAdmissionError::Decode(DecodeError::InvalidJson { message: e.to_string() }))?;
    admit(envelope, &value).map_err(WireAdmissionError::Admission)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::{self, ENVELOPES, LANE_ENVELOPES};

    fn initialize(declaration: serde_json::Value, version: u64) -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version, "agentCapabilities": {},
            "_meta": {"checkfu.capabilities": declaration}}})
        .to_string()
        .into_bytes()
    }

    /// The declaration of every upgrade of the catalog, as a harness would send it.
    fn full_upgrade_declaration() -> serde_json::Value {
        let members = catalog::UPGRADES.iter().map(|u| (u.member.to_string(), json!(u.value)));
        serde_json::Value::Object(members.collect())
    }

    #[test]
    fn a_wire_declaration_is_decoded_then_admitted() {
        let admitted = admit_wire(&ENVELOPES[0], &initialize(full_upgrade_declaration(), 1)).expect("admitted");
        assert_eq!(admitted.envelope(), &ENVELOPES[0]);
        assert!(admitted.to_json().len() > crate::admission::envelope_json(&ENVELOPES[0]).len());
    }

    #[test]
    fn the_decoder_rejects_before_admission_runs() {
        let bad_value = initialize(json!({"subagents": "maybe"}), 1);
        assert!(matches!(admit_wire(&ENVELOPES[0], &bad_value), Err(WireAdmissionError::Decode(DecodeError::InvalidDeclaration { .. }))));
        let wrong_version = initialize(json!({}), 2);
        assert!(matches!(admit_wire(&ENVELOPES[0], &wrong_version), Err(WireAdmissionError::Decode(DecodeError::ProtocolVersion { .. }))));
        let request = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}).to_string();
        assert!(matches!(
            admit_wire(&ENVELOPES[0], request.as_bytes()),
            Err(WireAdmissionError::Decode(DecodeError::WrongDirection { .. }))
        ));
        assert!(matches!(admit_wire(&ENVELOPES[0], b"{nope"), Err(WireAdmissionError::Decode(DecodeError::InvalidJson { .. }))));
    }

    #[test]
    fn admission_still_judges_what_the_schema_allows() {
        // The schema allows `interrupt: cooperative`; against a lane envelope that is already
        // cooperative, admission refuses it (the envelope is not at the upgrade's base).
        let lane = LANE_ENVELOPES.iter().find(|e| e.values.contains(&("interrupt", "cooperative"))).expect("a cooperative lane");
        let upgrade = catalog::UPGRADES.iter().find(|u| u.axis == "interrupt").expect("interrupt upgrade");
        let declaration = json!({ upgrade.member: upgrade.value });
        assert!(matches!(admit_wire(lane, &initialize(declaration, 1)), Err(WireAdmissionError::Admission(AdmissionError::Member { .. }))));
    }
}
