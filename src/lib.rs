//! checkfu-wire: the runtime consumers of the Checkfu ACP extension catalog.
//!
//! The tables in [`catalog`] are generated from `catalog/catalog.toml` by the
//! `checkfu-wire-codegen` crate: at build time with the default `regenerate` feature, or
//! compiled from the checked-in `generated/` files without it. This crate never imports
//! from the generator; the few types both need live in `checkfu-wire-vocab`.

pub mod admission;
pub mod catalog;
pub mod conformance;
pub mod decode;
pub mod exact;
pub mod oneshot;
pub mod schemas;
pub mod text;
// The live diagnostic and what it stands on, behind the default `probe` feature: a crate
// that only decodes compiles no HTTP server.
#[cfg(feature = "probe")]
pub mod probe;
#[cfg(feature = "probe")]
pub mod relay;
#[cfg(feature = "probe")]
pub mod session;
