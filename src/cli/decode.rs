//! `decode [FILE]`: reads JSON Lines of wire messages and prints how the platform reads
//! each one, as one JSON object per line. Exit 0 when every line was accepted, 1 otherwise,
//! 2 when the input cannot be read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use checkfu_wire::decode::{Decoder, WireDirection};
use serde_json::json;

/// The longest line `decode` reads; a longer one is rejected as a whole.
const MAX_LINE: usize = 16 * 1024 * 1024;

fn discard_rest_of_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        match buffer.iter().position(|b| *b == b'\n') {
            Some(at) => {
                reader.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = buffer.len();
                reader.consume(n);
            }
        }
    }
}

/// A line of a capture (`{"direction": …, "message": …}`), as the SDK traffic
/// recordings write: the message with the direction it flowed. A JSON-RPC message always
/// has `jsonrpc`, so the two forms cannot be confused.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Captured<'a> {
    direction: WireDirection,
    #[serde(borrow)]
    message: &'a serde_json::value::RawValue,
}

fn captured(bytes: &[u8]) -> Option<Captured<'_>> {
    // Cheap refusal first: a bare message has no `"direction"` member at all.
    memchr::memmem::find(bytes, b"\"direction\"")?;
    serde_json::from_slice(bytes).ok()
}

pub fn decode(file: Option<PathBuf>, direction: Option<WireDirection>) -> i32 {
    let input: Box<dyn Read> = match &file {
        Some(path) => match File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", path.display());
                return 2;
            }
        },
        None => Box::new(io::stdin().lock()),
    };
    let mut reader = BufReader::new(input);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut decoder = Decoder::new();
    let mut line = Vec::new();
    let (mut number, mut rejected) = (0usize, 0usize);
    loop {
        line.clear();
        // Bounded: a line longer than the limit is rejected without holding it in memory.
        match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                eprintln!("error: reading input: {e}");
                return 2;
            }
        }
        number += 1;
        if line.len() > MAX_LINE {
            if let Err(e) = discard_rest_of_line(&mut reader) {
                eprintln!("error: reading input: {e}");
                return 2;
            }
            rejected += 1;
            let report = json!({"line": number, "accepted": false,
                "error": {"code": "line_too_long", "limit": MAX_LINE, "message": format!("a message longer than {MAX_LINE} bytes")}});
            if writeln!(out, "{report}").is_err() {
                return 2;
            }
            continue;
        }
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // A capture record carries its own direction; a bare message takes `--direction`.
        let record = captured(bytes);
        let (bytes, direction) = match &record {
            Some(record) => (record.message.get().as_bytes(), Some(record.direction)),
            None => (bytes, direction),
        };
        let report = decoder.decode(bytes, direction);
        if !report.accepted {
            rejected += 1;
        }
        let mut value = serde_json::Map::new();
        value.insert("line".into(), json!(number));
        match serde_json::to_value(&report) {
            Ok(serde_json::Value::Object(fields)) => value.extend(fields),
            _ => {
                value.insert("accepted".into(), json!(report.accepted));
            }
        }
        let value = serde_json::Value::Object(value);
        if writeln!(out, "{value}").is_err() {
            return 2;
        }
    }
    if rejected > 0 {
        eprintln!("decode: {rejected} of the messages were rejected");
        1
    } else {
        0
    }
}
