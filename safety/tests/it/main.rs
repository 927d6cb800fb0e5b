//! The safety profile's integration tests, one binary (`cargo test -p checkfu-wire-safety
//! --test it`): each module was a test binary of its own.

#[path = "support/jsts.rs"]
mod support;

mod corpus;
mod jsts;
mod no_panic;
