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
    /// The ACP method whose message carries the slot (`None` for extension methods).
    pub method: Option<&'static str>,
    pub part: Part,
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

#[derive(Clone, Copy)]
pub struct MethodDecoder {
    pub method: Method,
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
