//! The `checkfu-wire` command line (`checkfu_wire_cli::run`).

fn main() {
    std::process::exit(checkfu_wire_cli::run());
}
