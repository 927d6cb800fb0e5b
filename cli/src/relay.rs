//! `relay [OPTIONS]`: the probe's model relay on its own, for checking a model client (an
//! SDK, a harness started by hand) against it. It prints one JSON line saying where it is
//! (`url`, `api_key`, `nonce`, `token`, `token_file`), serves until stdin closes, then prints
//! its record (calls, refusals, egress attempts) as one JSON line and exits 0.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use checkfu_wire_probe::relay::{self, Relay, Script};
use serde_json::json;

#[derive(clap::Args)]
pub struct Args {
    /// The provider whose gateway allow-list is served (default: the unlisted-provider route).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The replay model's script: `nonce`, `tool`, `faults`, or a JSON file of replies (and faults).
    #[arg(long, value_name = "nonce|tool|faults|FILE", default_value = "nonce")]
    model_script: String,
    /// The directory the `tool` script's token file is written into (it must exist).
    #[arg(long, value_name = "DIR")]
    workspace: PathBuf,
    /// Seconds a client may take to send its headers, and then its body.
    #[arg(long, default_value_t = 10)]
    stall_seconds: u64,
    /// Enforce a context window, in tokens of the relay's estimate: a request past it is
    /// answered with the dialect's context-length error.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    context_window: Option<u64>,
    /// Seconds the relay serves calls for: a call after them is refused (503), as a probe
    /// run's relay refuses calls past the run's deadline. Stdin's end still stops it.
    #[arg(long, value_name = "SECONDS", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    deadline: u64,
}

pub fn relay(args: Args) -> i32 {
    let script = match Script::parse(&args.model_script) {
        Ok(script) => script,
        Err(e) => return super::usage_error(e),
    };
    // Refused before anything is written: the token file is written only for a relay that
    // will serve.
    if let Err(e) = relay::routes::for_provider(args.provider.as_deref()) {
        return super::usage_error(e);
    }
    let nonce = checkfu_wire_probe::fresh_nonce();
    let token = relay::token::mint(relay::token::FILE_TOKEN_PREFIX);
    let token_file = args.workspace.join(checkfu_wire_probe::TOKEN_FILE);
    if let Err(e) = std::fs::write(&token_file, relay::token::file_text(&token)) {
        return super::usage_error(format!("cannot write {}: {e}", token_file.display()));
    }
    let key = relay::token::mint(relay::token::KEY_PREFIX);
    let config = relay::Config {
        provider: args.provider,
        script,
        nonce: nonce.clone(),
        token: token.clone(),
        token_file: token_file.clone(),
        key: key.clone(),
        stall: Duration::from_secs(args.stall_seconds.max(1)),
        listener: None,
        record_bodies: false,
        context_window: args.context_window,
        budget: relay::Budget::after(Duration::from_secs(args.deadline)),
    };
    let relay = match Relay::start(config) {
        Ok(relay) => relay,
        Err(e) => {
            let _ = std::fs::remove_file(&token_file);
            return super::usage_error(e);
        }
    };
    let here =
        json!({"url": relay.url(), "api_key": key, "nonce": nonce, "token": token, "token_file": token_file, "provider": relay.provider()});
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{here}");
    let _ = out.flush();
    // Serve until stdin closes: the caller's way of saying it is done.
    let _ = std::io::stdin().lock().read_to_end(&mut Vec::new());
    let record = relay.stop(&relay::Budget::after(Duration::from_secs(5)));
    // The token file is this run's: it goes with the relay.
    let _ = std::fs::remove_file(&token_file);
    let _ = writeln!(out, "{}", serde_json::to_string(&record).unwrap_or_default());
    0
}
