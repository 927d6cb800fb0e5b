//! `conform TRACE.jsonl [--format json|text]`: run the conformance grammar over a trace.
//!
//! Exit status: 0 when no check failed, 1 when any check failed, 2 when the trace itself is
//! invalid or unreadable (the message names the line).

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

use checkfu_wire::conformance;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Format {
    Text,
    Json,
}

pub fn conform(trace: &Path, format: Format) -> i32 {
    let file = match File::open(trace) {
        Ok(file) => file,
        Err(e) => {
            eprintln!("error: cannot open {}: {e}", trace.display());
            return 2;
        }
    };
    let report = match conformance::check_reader(BufReader::new(file)) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {}:{}: invalid trace: {}", trace.display(), e.line, e.message);
            return 2;
        }
    };
    let rendered = match format {
        Format::Text => report.to_text(),
        Format::Json => report.to_json(),
    };
    // A closed stdout (`| head`) is not a conformance verdict; the status still is.
    let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
    if report.failed() {
        1
    } else {
        0
    }
}
