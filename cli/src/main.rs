//! The `checkfu-wire` command line (`checkfu_wire_cli::run`).

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

fn main() {
    std::process::exit(checkfu_wire_cli::run());
}
