//! The decoder tables generated from the catalog and the schemas (checked-in copy:
//! `generated/decoder_tables.rs`): slots and methods, each row with the generated checks
//! of its definitions. The typed decoders of the same rows, and the golden vectors', are
//! `checkfu-wire-typed`'s: the runtime compiles no generated type.

pub use crate::catalog::{Direction, SlotClass};
use crate::exact::{Invalid, Json};

/// A generated check alone, on the borrowed tree the policy parses `_meta` members into.
pub type Check = fn(&Json<'_>) -> Result<(), Invalid>;

/// Which part of a message carries a slot, and who handles a method: the generator's enums
/// (from `checkfu-wire-vocab`, which both share), so the tables it writes and the decoder
/// reading them cannot drift apart.
pub use checkfu_wire_vocab::{Part, Side};

#[derive(Clone, Copy)]
pub struct SlotDecoder {
    pub key: &'static str,
    pub direction: Direction,
    pub class: SlotClass,
    /// The payload's generated check (for an extension method, its params'): exactly the
    /// schema's accept/reject decision; an extension method's result check is its row in
    /// `METHODS`.
    pub check: Check,
    /// The payload must also pass the bounded safety profile.
    pub safety_profile: bool,
    /// (slot, value) this slot requires in the same message.
    pub requires: Option<(&'static str, &'static str)>,
}

/// Where one ACP version carries a slot. Each version has its own row per slot (its
/// grammar's `slot_carriers`, in `SLOTS` order): v2 moved `checkfu.turn` from the prompt's
/// answer to the idle `state_update` that ends the turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotCarrier {
    /// The ACP method whose message carries the slot (`None` for extension methods).
    pub method: Option<&'static str>,
    pub part: Part,
}

#[derive(Clone, Copy)]
pub struct MethodDecoder {
    pub name: &'static str,
    /// `acp`, `checkfu`, or the method source of the catalog.
    pub source: &'static str,
    pub side: Side,
    pub notification: bool,
    /// The generated checks of the method's params, result and (for a family whose schema
    /// describes the whole message) envelope, read from a borrowed tree.
    pub params_check: Option<Check>,
    pub result_check: Option<Check>,
    pub envelope_check: Option<Check>,
}

include!(concat!(env!("OUT_DIR"), "/generated/decoder_tables.rs"));

/// The ACP version a [`Decoder`](super::Decoder) reads: v1 (the default) or, with the
/// runtime's `acp-v2` feature, v2. Each is its pinned schema's grammar; the `checkfu.*`
/// slots and the extension methods ride both.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    AcpV1,
    #[cfg(feature = "acp-v2")]
    AcpV2,
}

impl Protocol {
    /// As the catalog and the command line name it: `acp-v1`, `acp-v2`.
    pub const fn name(self) -> &'static str {
        match self {
            Protocol::AcpV1 => "acp-v1",
            #[cfg(feature = "acp-v2")]
            Protocol::AcpV2 => "acp-v2",
        }
    }

    /// The version below this one that this build reads and whose number is `version`, if
    /// any: an agent may answer `initialize` with it (ACP v1 is the oldest).
    pub fn older(self, version: u64) -> Option<Protocol> {
        let v1 = Protocol::AcpV1;
        (version < self.grammar().protocol_version && version == v1.grammar().protocol_version).then_some(v1)
    }

    /// The generated grammar of this version's pinned schema.
    pub const fn grammar(self) -> &'static Grammar {
        match self {
            Protocol::AcpV1 => &ACP_V1,
            #[cfg(feature = "acp-v2")]
            Protocol::AcpV2 => &acp_v2::GRAMMAR,
        }
    }
}

/// What the decoder's policy reads of one ACP version's tables.
pub struct Grammar {
    /// The method whose response carries `protocolVersion`, and the version it must be.
    pub version_method: &'static str,
    pub protocol_version: u64,
    /// The notification whose `params.update` is a session update member.
    pub update_method: &'static str,
    /// The `sessionUpdate` kinds the schema names, and whether they are all it admits (v1's
    /// closed grammar) or the schema's own open alternative takes the rest (v2).
    pub session_update_kinds: &'static [&'static str],
    pub closed_update_kinds: bool,
    pub fidelity_update_kinds: &'static [&'static str],
    /// The method whose response carries `stopReason` and the stop reasons (v1); v2's
    /// prompt is answered with a receipt, and the stop reason rides an idle `state_update`.
    pub prompt_method: Option<&'static str>,
    pub stop_reasons: &'static [&'static str],
    /// The method of a wire name.
    pub method: fn(&str) -> Option<&'static MethodDecoder>,
    /// Where this version carries each slot of `SLOTS`, in its order.
    pub slot_carriers: &'static [SlotCarrier],
}

/// ACP v1's grammar, from the generated tables above.
pub static ACP_V1: Grammar = Grammar {
    version_method: VERSION_METHOD,
    protocol_version: PROTOCOL_VERSION,
    update_method: UPDATE_METHOD,
    session_update_kinds: SESSION_UPDATE_KINDS,
    closed_update_kinds: true,
    fidelity_update_kinds: FIDELITY_UPDATE_KINDS,
    prompt_method: Some(PROMPT_METHOD),
    stop_reasons: STOP_REASONS,
    method,
    slot_carriers: SLOT_CARRIERS,
};

/// ACP v2's decoder tables (checked-in copy: `generated/decoder_tables_acp_v2.rs`) and its
/// grammar. Only with the `acp-v2` feature: a dependent that reads v1 alone compiles none
/// of it, nor the v2 schema's checks.
#[cfg(feature = "acp-v2")]
pub mod acp_v2 {
    use super::{Grammar, MethodDecoder, Part, Side, SlotCarrier};

    include!(concat!(env!("OUT_DIR"), "/generated/decoder_tables_acp_v2.rs"));

    /// ACP v2's grammar: open `sessionUpdate` kinds, no stop reason on the prompt's answer.
    pub static GRAMMAR: Grammar = Grammar {
        version_method: VERSION_METHOD,
        protocol_version: PROTOCOL_VERSION,
        update_method: UPDATE_METHOD,
        session_update_kinds: SESSION_UPDATE_KINDS,
        closed_update_kinds: false,
        fidelity_update_kinds: FIDELITY_UPDATE_KINDS,
        prompt_method: None,
        stop_reasons: &[],
        method,
        slot_carriers: SLOT_CARRIERS,
    };
}
