//! The `checkfu-wire` command line: its subcommands, each returning the process exit status.

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

mod conform;
mod decode;
mod generate;
mod image;
mod init;
mod probe;
mod relay;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(clap::Parser)]
#[command(
    name = "checkfu-wire",
    bin_name = "checkfu-wire",
    version,
    about = "Schema compiler and wire tools for the Checkfu ACP extensions"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The options of the commands that read a project (`generate`, `check`); the others read
/// only the files they are given, so they take no `--root`.
#[derive(clap::Args)]
struct Project {
    /// Project root holding catalog/, schemas/ and templates/ (default: the current directory).
    #[arg(long, default_value = ".")]
    root: PathBuf,
    /// Also show the warnings reviewed in catalog/acknowledged.toml, with their review.
    #[arg(long)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Regenerate generated/ and docs/ from the catalog, schemas and templates
    /// (exit 0 written or up to date, 1 generation failed, 2 not a project root).
    Generate(Project),
    /// Regenerate in memory and fail with a diff when a checked-in output drifted
    /// (exit 0 up to date, 1 drift or generation failed, 2 not a project root).
    Check(Project),
    /// Run the conformance grammar over a JSON Lines trace (exit 0 pass, 1 a check failed, 2 invalid trace).
    Conform {
        /// The trace: a header line, then one observation per line.
        trace: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: conform::Format,
    },
    /// Read JSON Lines of wire messages (FILE, or stdin) and print how the platform reads each
    /// (exit 0 all accepted, 1 any rejected, 2 unreadable input or no message).
    Decode {
        /// A file of JSON Lines; stdin when absent.
        file: Option<PathBuf>,
        /// The direction of every message, when the messages alone do not tell.
        #[arg(long, value_enum)]
        direction: Option<decode::Direction>,
        /// The ACP version whose pinned schema the messages are read against.
        #[arg(long, value_enum, default_value = "acp-v1")]
        protocol: decode::ProtocolName,
    },
    /// Drive a live ACP harness over stdio and report what the contract says about it
    /// (unsigned_local_only; exit 0 passed, 1 a step or check failed, 2 usage error or the
    /// command cannot be started).
    Probe(Box<probe::Args>),
    /// Write the smallest runnable wrapper for a protocol (a Dockerfile, an entrypoint, a
    /// recipe and a README) into a new or empty directory (exit 0 written, 1 cannot write, 2
    /// usage error: a non-empty directory, no static busybox without --base).
    Init(init::Args),
    /// Show (`ls`) and empty (`prune`) the store of images the probe ran by digest.
    Image(image::Args),
    /// Serve the probe's model relay alone until stdin closes (for checking a model client
    /// against it; prints where it listens, then its record).
    Relay(relay::Args),
    /// The probe's own MCP server over stdio, which a harness under `probe` starts from
    /// `session/new`'s `mcpServers` (not for use by hand): a pipe to the probe's server.
    #[command(name = "mcp-tool", hide = true)]
    McpTool {
        /// The probe's endpoint every message is relayed to (`http://LOOPBACK:PORT/PATH`).
        #[arg(long)]
        endpoint: String,
    },
    /// Check author-supplied JSON Schemas against the bounded safety profile (exit 0 all pass,
    /// 1 any fails, 2 usage error or unreadable file).
    LintSchema {
        /// Schema files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: conform::Format,
    },
}

pub fn run() -> i32 {
    // The one read of the command line: every command takes its typed flags from here.
    match Cli::parse().command {
        Command::Generate(project) => generate::generate(&project.root, project.verbose),
        Command::Check(project) => generate::check(&project.root, project.verbose),
        Command::Conform { trace, format } => conform::conform(&trace, format),
        Command::Decode { file, direction, protocol } => decode::decode(file, direction.map(Into::into), protocol.into()),
        Command::Probe(args) => probe::probe(*args),
        Command::Relay(args) => relay::relay(args),
        Command::Image(args) => image::image(args),
        Command::Init(args) => init::init(&args),
        Command::McpTool { endpoint } => {
            let piped = endpoint
                .parse()
                .and_then(|endpoint| checkfu_wire_probe::mcp_tool::pipe(std::io::stdin().lock(), std::io::stdout().lock(), &endpoint));
            match piped {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("checkfu-wire mcp-tool: {e}");
                    1
                }
            }
        }
        Command::LintSchema { files, format } => {
            let json = matches!(format, conform::Format::Json);
            checkfu_wire_safety::run_cli(&files, json, &mut std::io::stdout().lock())
        }
    }
}

/// A usage error: said on stderr, exit 2.
fn usage_error(message: impl std::fmt::Display) -> i32 {
    eprintln!("error: {message}");
    2
}
