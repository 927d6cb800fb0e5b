//! The `checkfu-wire` command, built under this crate so its tests can run it (see
//! `Cargo.toml`): the same `checkfu_wire_cli::run` as the published binary.

fn main() {
    std::process::exit(checkfu_wire_cli::run());
}
