//! Analysis, run before anything is emitted: the plan every Rust emitter reads.
//!
//! - `decoder` plans the decoder tables from the catalog (with `grammar`, the pinned ACP
//!   schema's grammar, and `annotated`, methods read from `x-method` annotations) into the
//!   data of `model`;
//! - `calls` is each schema's definition call graph, `indirection` the edges of it that are
//!   held (types) or called (checks) through a table, and `reach` the definitions the
//!   runtime's tables lead to.
//!
//! No file here emits Rust, and the emitters (`super::{checks, types, decoder, acp, …}`)
//! import this module and shared helpers only, never each other.

pub mod annotated;
pub mod calls;
pub mod decoder;
pub mod grammar;
pub mod indirection;
pub mod model;
pub mod reach;

pub use decoder::plan;
pub use model::{side, Def, Grammar, GrammarV2, Part, Pins, Plan, PlanV2};
