//! The `checkfu-wire` command, built under this crate so its tests can run it (see
//! `Cargo.toml`): the same `checkfu_wire_cli::run` as the published binary.

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

fn main() {
    std::process::exit(checkfu_wire_cli::run());
}
