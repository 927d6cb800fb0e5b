//! The vocabulary the checkfu-wire generator and its runtime share.
//!
//! The generator writes tables whose rows name these enums (`Direction::HarnessToClient`,
//! `Part::Member`, …) and the runtime compiles those tables against the same definitions,
//! so the two cannot drift apart. They live here, below both, so the runtime needs nothing
//! of the generator: this crate depends on `serde` only, and on `schemars` only when the
//! generator asks for it (feature `schemars`, for the catalog's editor schema).
//!
//! [`schema_syntax`] is the one statement of JSON Pointer syntax and of the keywords that
//! hold subschemas, read by the generator and by the safety profile (`checkfu-wire-safety`,
//! which depends on this crate for it alone).

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

use serde::{Deserialize, Serialize};

pub mod decimal;
#[cfg(feature = "oneshot")]
pub mod oneshot;
pub mod schema_syntax;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Run by a Runner driver from an image.
    Packaged,
    /// Runs in a connected runtime lane with its own envelope.
    Connected,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Packaged => "packaged",
            Mode::Connected => "connected",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HarnessToClient,
    ClientToHarness,
}

impl Direction {
    /// The arrow form the docs tables use.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::HarnessToClient => "harness → client",
            Direction::ClientToHarness => "client → harness",
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::HarnessToClient => "harness_to_client",
            Direction::ClientToHarness => "client_to_harness",
        }
    }
}

/// How a consumer treats a slot's payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SlotClass {
    /// Closed, decoded strictly; a bad declaration rejects the handshake.
    Declaration,
    /// Optional harness → client data: fail-open.
    Fidelity,
    /// Requested client → harness authority: fail-closed.
    Authority,
    /// An extension request with a typed acknowledgement.
    Method,
}

impl SlotClass {
    pub fn as_str(self) -> &'static str {
        match self {
            SlotClass::Declaration => "declaration",
            SlotClass::Fidelity => "fidelity",
            SlotClass::Authority => "authority",
            SlotClass::Method => "method",
        }
    }
}

/// Who handles a method: the agent (requests flow client → agent), the client (agent →
/// client), or the JSON-RPC protocol layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Agent,
    Client,
    Protocol,
}

/// Where a slot rides: the ACP method and which part of the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    Request,
    Response,
    /// A `session/update` member (`params.update._meta`).
    Member,
    /// The slot is itself an extension method.
    Method,
}
