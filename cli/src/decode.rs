//! `decode [FILE] [--protocol acp-v1|acp-v2]`: reads JSON Lines of wire messages, in the
//! grammar of the ACP version asked for (v1 unless told), and prints how the platform reads
//! each one, as one JSON object per line, then on stderr how many of how many were
//! accepted. Exit 0 when every message was accepted, 1 otherwise, 2 when the input cannot
//! be read or holds no message. A probe `--record` names the ACP version its client read
//! (`{"protocol": …}` lines): the decoder follows them, so a record whose handshake was
//! asked again in v2 after a `-32022` reads back whole, its v1 part as v1.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use checkfu_wire::decode::{Decoder, Protocol, WireDirection};
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

/// `--direction`: the runtime's [`WireDirection`], spelled as the wire spells it (the
/// runtime does not depend on clap, so the command line names its values here).
#[derive(Clone, Copy, clap::ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum Direction {
    AgentToRunner,
    RunnerToAgent,
}

impl From<Direction> for WireDirection {
    fn from(direction: Direction) -> WireDirection {
        match direction {
            Direction::AgentToRunner => WireDirection::AgentToRunner,
            Direction::RunnerToAgent => WireDirection::RunnerToAgent,
        }
    }
}

/// `--protocol`: the runtime's [`Protocol`], as the catalog names it.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ProtocolName {
    #[value(name = "acp-v1")]
    AcpV1,
    #[value(name = "acp-v2")]
    AcpV2,
}

impl From<ProtocolName> for Protocol {
    fn from(name: ProtocolName) -> Protocol {
        match name {
            ProtocolName::AcpV1 => Protocol::AcpV1,
            ProtocolName::AcpV2 => Protocol::AcpV2,
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

/// The line the probe's `--record` opens with: how the harness was launched (the argv as
/// run). Not a message, so it is skipped. A record holds one such line per agent process (the
/// requirement probes' fresh process follows the main one's): each opens a connection of its
/// own, so the decoder starts afresh there (its pending requests were the last process's).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read only to recognize the line
struct Launched {
    launch: serde_json::Value,
}

/// The line the probe's `--record` writes when its client reads the rest of the session in
/// another ACP version (the handshake asked again after a `-32022`): `{"protocol": NAME}`.
/// Not a message: the decoder reads what follows in that version, as the client did.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Switched<'a> {
    protocol: &'a str,
}

fn switched(bytes: &[u8]) -> Option<Switched<'_>> {
    // Cheap refusal first: only a marker has `"protocol"` before any `"jsonrpc"`.
    memchr::memmem::find(bytes, b"\"protocol\"")?;
    serde_json::from_slice(bytes).ok()
}

/// The ACP version a marker names, of those this build reads.
fn named(name: &str) -> Option<Protocol> {
    [Protocol::AcpV1, Protocol::AcpV2].into_iter().find(|p| p.name() == name)
}

/// Reads the rest of the record in the version `marker` names; the rejection to print, for a
/// version this build does not read.
fn follow(decoder: &mut Decoder, marker: &Switched<'_>, number: usize) -> Option<serde_json::Value> {
    let Some(protocol) = named(marker.protocol) else {
        return Some(json!({"line": number, "accepted": false, "error": {"code": "unknown_protocol",
            "message": format!("the record switches to `{}`, which this build does not read", marker.protocol)}}));
    };
    // A record that names its version is a negotiating client's: an agent's answer in an
    // older version than asked is read as that version, as the client read it.
    *decoder = std::mem::take(decoder).negotiating();
    decoder.switch_to(protocol);
    None
}

fn launched(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes, b"\"launch\"").is_some() && serde_json::from_slice::<Launched>(bytes).is_ok()
}

/// A line the probe wrote on purpose although it is no message (its informational probes'
/// malformed JSON and invalid request), marked so in the record: shown, not decoded.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Invalid {
    direction: WireDirection,
    invalid: String,
}

fn invalid(bytes: &[u8]) -> Option<Invalid> {
    memchr::memmem::find(bytes, b"\"invalid\"")?;
    serde_json::from_slice(bytes).ok()
}

/// A line of a probe's record that is no message, handled: a launch line (a new connection
/// starts: `decoder` is made afresh in `protocol`) or a line the probe wrote on purpose as no
/// message (its note written to `out`); `None` for any other line.
fn no_message(bytes: &[u8], number: usize, out: &mut impl Write, (decoder, protocol): (&mut Decoder, Protocol)) -> Option<io::Result<()>> {
    if launched(bytes) {
        *decoder = Decoder::new().reading(protocol);
        return Some(Ok(()));
    }
    let sent = invalid(bytes)?;
    let note = json!({"line": number, "direction": sent.direction, "invalid": sent.invalid,
        "note": "written on purpose as no message of the protocol; not decoded"});
    Some(writeln!(out, "{note}"))
}

fn captured(bytes: &[u8]) -> Option<Captured<'_>> {
    // Cheap refusal first: a bare message has no `"direction"` member at all.
    memchr::memmem::find(bytes, b"\"direction\"")?;
    serde_json::from_slice(bytes).ok()
}

/// Exit status when the input cannot be read, or holds no message.
const UNREADABLE: i32 = 2;

pub fn decode(file: Option<PathBuf>, direction: Option<WireDirection>, protocol: Protocol) -> i32 {
    // Every I/O error names what was being read.
    let source = file.as_ref().map_or_else(|| "standard input".to_string(), |path| path.display().to_string());
    let unreadable = |e: io::Error| {
        eprintln!("error: cannot read {source}: {e}");
        UNREADABLE
    };
    let input: Box<dyn Read> = match &file {
        Some(path) => match File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => return unreadable(e),
        },
        None => Box::new(io::stdin().lock()),
    };
    let mut reader = BufReader::new(input);
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut decoder = Decoder::new().reading(protocol);
    let mut line = Vec::new();
    let (mut number, mut messages, mut rejected) = (0usize, 0usize, 0usize);
    loop {
        line.clear();
        // Bounded: a line longer than the limit is rejected without holding it in memory.
        match (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return unreadable(e),
        }
        number += 1;
        if line.len() > MAX_LINE {
            if let Err(e) = discard_rest_of_line(&mut reader) {
                return unreadable(e);
            }
            messages += 1;
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
        match no_message(bytes, number, &mut out, (&mut decoder, protocol)) {
            Some(Ok(())) => continue,
            Some(Err(_)) => return 2,
            None => {}
        }
        if let Some(marker) = switched(bytes) {
            let Some(refused) = follow(&mut decoder, &marker, number) else { continue };
            messages += 1;
            rejected += 1;
            if writeln!(out, "{refused}").is_err() {
                return 2;
            }
            continue;
        }
        // A capture record carries its own direction; a bare message takes `--direction`.
        let record = captured(bytes);
        let (bytes, direction) = match &record {
            Some(record) => (record.message.get().as_bytes(), Some(record.direction)),
            None => (bytes, direction),
        };
        let report = decoder.decode(bytes, direction);
        messages += 1;
        if !report.accepted {
            rejected += 1;
        }
        if writeln!(out, "{}", numbered(number, &report)).is_err() {
            return 2;
        }
    }
    summary(&source, messages, rejected)
}

/// `report` as `decode` prints it: its line number first, then its members.
fn numbered(number: usize, report: &checkfu_wire::decode::Report) -> serde_json::Value {
    let mut value = serde_json::Map::new();
    value.insert("line".into(), json!(number));
    match serde_json::to_value(report) {
        Ok(serde_json::Value::Object(fields)) => value.extend(fields),
        _ => {
            value.insert("accepted".into(), json!(report.accepted));
        }
    }
    serde_json::Value::Object(value)
}

/// The closing line on stderr, always: how many of how many messages were accepted.
fn summary(source: &str, messages: usize, rejected: usize) -> i32 {
    if messages == 0 {
        // An empty capture is not a clean one: a recording that failed writes nothing.
        eprintln!("decode: {source} holds no message (no line other than blank ones); nothing was decoded");
        return UNREADABLE;
    }
    let accepted = messages - rejected;
    let noun = if messages == 1 { "message" } else { "messages" };
    eprintln!("decode: {accepted} of {messages} {noun} accepted, {rejected} rejected");
    if rejected > 0 {
        1
    } else {
        0
    }
}
