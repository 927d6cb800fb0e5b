//! The decoder tables generated from the catalog and the schemas (checked-in copy:
//! `generated/decoder_tables.rs`): slots, methods and golden vectors, each row with its
//! typed decoders.

use serde_json::Value;

pub use crate::catalog::{Direction, SlotClass};
use crate::exact::{Invalid, Json};

/// A typed decoder: the generated check, then the generated type.
pub type Decode = fn(&Value) -> Result<(), Invalid>;

/// A generated check alone, on the borrowed tree the policy parses `_meta` members into.
pub type Check = fn(&Json<'_>) -> Result<(), Invalid>;

/// Which part of a message carries a slot, and who handles a method: the generator's enums
/// (from `checkfu-wire-vocab`, which both share), so the tables it writes and the decoder
/// reading them cannot drift apart.
pub use checkfu_wire_vocab::{Part, Side};

#[derive(Clone, Copy)]
pub struct SlotDecoder {
    pub key: &'static str,
    /// The ACP method whose message carries the slot (`None` for extension methods).
    pub method: Option<&'static str>,
    pub part: Part,
    pub direction: Direction,
    pub class: SlotClass,
    /// The payload's generated check: exactly the schema's accept/reject decision, without
    /// building the typed value (what the hot path needs).
    pub check: Check,
    /// Decodes the payload into its generated type (for an extension method, its params).
    pub decode: Decode,
    /// For an extension method, decodes its result.
    pub result: Option<Decode>,
    /// The payload must also pass the bounded safety profile.
    pub safety_profile: bool,
    /// (slot, value) this slot requires in the same message.
    pub requires: Option<(&'static str, &'static str)>,
}

#[derive(Clone, Copy)]
pub struct MethodDecoder {
    pub name: &'static str,
    /// `acp`, `checkfu`, or the method source of the catalog.
    pub source: &'static str,
    pub side: Side,
    pub notification: bool,
    pub params: Option<Decode>,
    pub result: Option<Decode>,
    /// For a family whose schema describes the whole message.
    pub envelope: Option<Decode>,
    /// The generated checks behind `params`, `result` and `envelope`: the same decisions,
    /// read from a borrowed tree (what the decoder's hot path uses).
    pub params_check: Option<Check>,
    pub result_check: Option<Check>,
    pub envelope_check: Option<Check>,
}

#[derive(Clone, Copy)]
pub struct VectorDecoder {
    pub name: &'static str,
    pub direction: &'static str,
    pub decode: Decode,
}

include!(concat!(env!("OUT_DIR"), "/generated/decoder_tables.rs"));
