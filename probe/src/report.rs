//! The report of a probe run, whichever lane ran: the one type the command line ends every
//! run with. Each lane's report stays its own (`result::ProbeResult` for an ACP session,
//! `oneshot::OneshotResult` for a one-shot CLI), so their JSON is as each lane documents it.

use serde::Serialize;

use crate::Step;

/// The result of a probe run, whichever lane ran: each lane's own report (their JSON shapes
/// differ: the ACP lane reports admission, the handshake and the wire; the one-shot lane its
/// runs), with what every lane has answered once, here, for the command line.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum Report {
    Acp(Box<crate::ProbeResult>),
    Oneshot(Box<crate::oneshot::OneshotResult>),
}

impl Report {
    /// The lane that ran.
    pub fn protocol(&self) -> checkfu_wire::catalog::Protocol {
        match self {
            Report::Acp(_) => checkfu_wire::catalog::Protocol::AcpV1,
            Report::Oneshot(_) => checkfu_wire::catalog::Protocol::OneshotV1,
        }
    }

    /// The steps, in the order they ran.
    pub fn steps(&self) -> &[(&'static str, Step)] {
        match self {
            Report::Acp(r) => &r.step_list,
            Report::Oneshot(r) => &r.step_list,
        }
    }

    /// Every step passed and nothing else failed (the lane says what else counts).
    pub fn passed(&self) -> bool {
        match self {
            Report::Acp(r) => r.passed(),
            Report::Oneshot(r) => r.passed(),
        }
    }

    pub fn to_text(&self) -> String {
        match self {
            Report::Acp(r) => r.to_text(),
            Report::Oneshot(r) => r.to_text(),
        }
    }

    pub fn to_json(&self) -> String {
        match self {
            Report::Acp(r) => r.to_json(),
            Report::Oneshot(r) => r.to_json(),
        }
    }

    /// The observation trace `--trace` writes (the one-shot lane's first run's).
    pub fn trace(&self) -> &str {
        match self {
            Report::Acp(r) => &r.trace,
            Report::Oneshot(r) => r.trace(),
        }
    }

    /// The recorded wire `--record` writes; `None` for a lane without an ACP wire.
    pub fn wire_record(&self) -> Option<&[u8]> {
        match self {
            Report::Acp(r) => Some(&r.record),
            Report::Oneshot(_) => None,
        }
    }

    /// The model calls the relay served, as `--record-model` writes them (JSON Lines).
    pub fn model_calls(&self) -> String {
        match self {
            Report::Acp(r) => r.model_plane.as_ref().map(|p| p.calls_jsonl()).unwrap_or_default(),
            Report::Oneshot(r) => r.model_plane.calls_jsonl(),
        }
    }
}
