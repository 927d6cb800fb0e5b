//! Subcommands of `checkfu-wire`. Each returns the process exit status.

mod generate;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "checkfu-wire", version, about = "Schema compiler and wire tools for the Checkfu ACP extensions")]
struct Cli {
    /// Project root holding catalog/, schemas/ and templates/ (default: the current directory).
    #[arg(long, global = true, default_value = ".")]
    root: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate generated/ and docs/ from the catalog, schemas and templates.
    Generate,
    /// Regenerate in memory and fail with a diff when a checked-in output drifted.
    Check,
}

pub fn run() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Command::Generate => generate::generate(&cli.root),
        Command::Check => generate::check(&cli.root),
    }
}
