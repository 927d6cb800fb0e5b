//! The model relay's cost per model call, against a floor measured in the same run.
//!
//! - `relay_call`: one call through the relay (`checkfu_wire_probe::relay`, started once): a fresh
//!   loopback connection, a POST of a small request in the dialect, the key checked, the body
//!   read and parsed, the replay model's answer rendered (JSON or server-sent events) and
//!   recorded, the answer read to EOF;
//! - `loopback_floor`: the same request bytes to a plain `std::net::TcpListener` thread that
//!   reads the request (headers and declared body) and writes back a canned answer of the
//!   same size as the relay's, then closes: what any HTTP call over loopback costs here.
//! - `relay_start_stop`: starting a relay (thread, runtime, socket) and stopping it, against
//!   `bind_floor`: binding and dropping a loopback listener.
//! - `estimate`: the relay's size estimate (`relay::estimate`, made for every call since the
//!   context window came) of a parsed Chat Completions body of N messages of about 400 bytes,
//!   against `parse_floor`: parsing that body, which every call pays anyway.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use checkfu_wire_probe::relay::{Budget, Config, Relay, Script};

fn main() {
    divan::main();
}

const NONCE: &str = "cf-0123456789abcdef";
const KEY: &str = "cfk-bench";

fn config() -> Config {
    Config {
        provider: None,
        script: Script::Nonce,
        nonce: NONCE.into(),
        token: "cft-bench".into(),
        token_file: PathBuf::from("/nonexistent/token.txt"),
        key: KEY.into(),
        stall: Duration::from_secs(10),
        listener: None,
        record_bodies: false,
        context_window: None,
        budget: Budget::after(Duration::from_secs(3600)),
    }
}

/// (label, path, key header, body) per dialect and form.
fn requests() -> Vec<(&'static str, &'static str, String, String)> {
    let mut out = Vec::new();
    for stream in [false, true] {
        let text = format!("Reply with the nonce {NONCE}.");
        out.push((
            if stream { "messages_sse" } else { "messages_json" },
            "/v1/messages",
            format!("x-api-key: {KEY}"),
            serde_json::json!({"model": "m", "max_tokens": 64, "stream": stream, "messages": [{"role": "user", "content": text}]})
                .to_string(),
        ));
        out.push((
            if stream { "chat_sse" } else { "chat_json" },
            "/v1/chat/completions",
            format!("Authorization: Bearer {KEY}"),
            serde_json::json!({"model": "m", "stream": stream, "messages": [{"role": "user", "content": text}]}).to_string(),
        ));
        out.push((
            if stream { "responses_sse" } else { "responses_json" },
            "/v1/responses",
            format!("Authorization: Bearer {KEY}"),
            serde_json::json!({"model": "m", "stream": stream, "input": text}).to_string(),
        ));
    }
    out
}

const LABELS: [&str; 6] = ["messages_json", "chat_json", "responses_json", "messages_sse", "chat_sse", "responses_sse"];

fn request_bytes(label: &str) -> Vec<u8> {
    let (_, path, header, body) = requests().into_iter().find(|r| r.0 == label).expect("label");
    format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{header}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn call(addr: std::net::SocketAddr, request: &[u8]) -> usize {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.write_all(request).expect("write");
    let mut answer = Vec::with_capacity(4096);
    stream.read_to_end(&mut answer).expect("read");
    answer.len()
}

#[divan::bench(args = LABELS, sample_count = 200)]
fn relay_call(bencher: divan::Bencher, label: &str) {
    let relay = Relay::start(config()).expect("relay");
    let request = request_bytes(label);
    let size = call(relay.addr(), &request);
    assert!(size > 200, "the relay answered");
    bencher.bench(|| call(relay.addr(), &request));
    drop(relay);
}

/// A server that reads one request per connection and answers with `answer`.
fn floor_server(answer: Vec<u8>) -> std::net::SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = vec![0u8; 64 * 1024];
            let mut read = 0;
            // Read the headers, then the declared body, as any server must.
            while let Ok(n) = stream.read(&mut buffer[read..]) {
                if n == 0 {
                    break;
                }
                read += n;
                let text = &buffer[..read];
                if let Some(end) = text.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&text[..end]).to_ascii_lowercase();
                    let length: usize =
                        head.lines().find_map(|l| l.strip_prefix("content-length: ")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
                    if read >= end + 4 + length {
                        break;
                    }
                }
            }
            let _ = stream.write_all(&answer);
        }
    });
    addr
}

#[divan::bench(args = LABELS, sample_count = 200)]
fn loopback_floor(bencher: divan::Bencher, label: &str) {
    // The canned answer is as long as the relay's own for this request.
    let relay = Relay::start(config()).expect("relay");
    let request = request_bytes(label);
    let mut stream = TcpStream::connect(relay.addr()).expect("connect");
    stream.write_all(&request).expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    drop(relay);
    let addr = floor_server(answer);
    bencher.bench(|| call(addr, &request));
}

#[divan::bench(sample_count = 50)]
fn relay_start_stop() {
    let relay = Relay::start(config()).expect("relay");
    divan::black_box(relay.addr());
    relay.stop(&Budget::after(Duration::from_secs(5)));
}

#[divan::bench(sample_count = 50)]
fn bind_floor() {
    let listener = TcpListener::bind(("127.0.0.1", 0)).expect("bind");
    divan::black_box(listener.local_addr().ok());
}

/// Message counts of the estimated bodies: about 4 KB, 400 KB and 8 MB.
const MESSAGES: [usize; 3] = [10, 1_000, 20_000];

fn chat_body(messages: usize) -> Vec<u8> {
    let list: Vec<serde_json::Value> = (0..messages)
        .map(|k| serde_json::json!({"role": if k % 2 == 0 { "user" } else { "assistant" }, "content": format!("{k} {}", "words ".repeat(64))}))
        .collect();
    serde_json::json!({"model": "m", "messages": list}).to_string().into_bytes()
}

#[divan::bench(args = MESSAGES, sample_count = 30)]
fn estimate(bencher: divan::Bencher, messages: usize) {
    let body: serde_json::Value = serde_json::from_slice(&chat_body(messages)).expect("JSON");
    let object = body.as_object().expect("object");
    bencher.bench(|| checkfu_wire_probe::relay::estimate::of(checkfu_wire_probe::relay::dialect::Served::OpenaiChat, object));
}

#[divan::bench(args = MESSAGES, sample_count = 30)]
fn parse_floor(bencher: divan::Bencher, messages: usize) {
    let bytes = chat_body(messages);
    bencher.bench(|| serde_json::from_slice::<serde_json::Value>(&bytes).expect("JSON"));
}
