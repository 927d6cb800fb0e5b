//! checkfu-wire: the runtime consumers of the Checkfu ACP extension catalog.
//!
//! The tables in [`catalog`] are generated at build time from `catalog/catalog.toml`; the
//! generator itself is the `checkfu-wire-codegen` crate, driven by the `checkfu-wire` CLI.

pub mod catalog;
pub mod decode;
pub mod exact;
pub mod schemas;
pub mod admission;
pub mod conformance;
pub mod session;
pub mod probe;
pub mod relay;
