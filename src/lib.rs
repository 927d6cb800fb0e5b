//! checkfu-wire: the runtime of the Checkfu ACP extensions: the wire decoder with the
//! contract's fail-open / fail-closed policy, exact schema checks, declaration admission and
//! the conformance checker, light enough for any service that reads the wire.
//!
//! The tables in [`catalog`] are generated from `catalog/catalog.toml` by the
//! `checkfu-wire-codegen` crate: at build time with the `regenerate` feature (which the
//! `checkfu-wire` command turns on), or compiled from the checked-in `generated/` files
//! without it (the default). The probe (`checkfu-wire-probe`) and the command line
//! (`checkfu-wire-cli`) are crates of their own. This crate never imports
//! from the generator; the few types both need live in `checkfu-wire-vocab`.

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

pub mod admission;
pub mod catalog;
#[cfg(feature = "conformance")]
pub mod conformance;
pub mod decode;
pub mod exact;
#[cfg(feature = "oneshot")]
pub mod oneshot;
#[cfg(test)]
mod regeneration;
pub mod schemas;
pub mod text;
