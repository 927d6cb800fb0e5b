//! The relay alone (`checkfu-wire relay`): every dialect parsed by the official SDKs (pip
//! `openai` and `anthropic`, through `tests/relay-sdk/check_sdk.py`, which also walks each
//! answer against the SDK's response models and fails on any member left unset), and every refusal
//! (another path, another method, CONNECT and absolute-form targets, a missing key, fal's
//! queue, an oversized body, malformed JSON, a client that stalls), each answered with a
//! status and recorded. Faults (`relay::fault`): each in its provider's shape, classified by
//! the SDKs as their own error classes and retried where they retry, and a stream cut that
//! really stops mid-stream.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_checkfu-wire-dup");

struct Served {
    child: Child,
    out: BufReader<ChildStdout>,
    here: Value,
    dir: std::path::PathBuf,
}

fn serve(script: &str, extra: &[&str]) -> Served {
    // One directory per relay: tests run in parallel, and two of them serve the same script
    // with as many arguments (a name made of those once let one test's cleanup remove the
    // other's workspace before its relay wrote the token there).
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A script given as a path is named by its file name: its slashes would otherwise nest
    // the directory, and the cleanup would leave the parents behind in the temporary dir.
    let name = std::path::Path::new(script).file_name().map_or_else(|| script.into(), |name| name.to_string_lossy());
    let dir = std::env::temp_dir().join(format!("checkfu-relay-test-{}-{name}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut child = Command::new(CLI)
        .args(["relay", "--model-script", script, "--workspace"])
        .arg(&dir)
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("relay starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("the relay says where it is");
    let here: Value = serde_json::from_str(&line).expect("JSON");
    Served { child, out, here, dir }
}

impl Served {
    fn addr(&self) -> String {
        self.here["url"].as_str().expect("url").trim_start_matches("http://").to_owned()
    }

    /// Closes stdin and reads the record.
    fn stop(mut self) -> Value {
        drop(self.child.stdin.take());
        let mut line = String::new();
        self.out.read_line(&mut line).expect("the record");
        assert!(self.child.wait().expect("exits").success());
        let _ = std::fs::remove_dir_all(&self.dir);
        serde_json::from_str(&line).expect("record JSON")
    }
}

/// Writes raw bytes and returns the answer's status and body (read to EOF).
fn raw(addr: &str, request: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let _ = stream.write_all(request);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn post(path: &str, headers: &str, body: &str) -> Vec<u8> {
    format!("POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

#[test]
#[cfg_attr(
    not(checkfu_relay_sdk),
    ignore = "CHECKFU_RELAY_SDK is not set: pip install -r tests/relay-sdk/requirements.txt, then set CHECKFU_RELAY_SDK=1"
)]
fn the_official_sdks_parse_every_dialect_json_and_streaming_text_and_tool_calls() {
    // The walk over the SDKs' response models must itself find a missing member, or a
    // relay as thin as before would pass it.
    let walk = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/relay-sdk/check_sdk.py"))
        .arg("--self-test")
        .output()
        .expect("python3 runs");
    assert!(walk.status.success(), "{}{}", String::from_utf8_lossy(&walk.stdout), String::from_utf8_lossy(&walk.stderr));
    for script in ["nonce", "tool"] {
        let (summary, record) = check_sdk_against(script, &["--script", script]);
        assert_eq!(summary["failed"], 0);
        assert_eq!(summary["passed"], 12, "3 dialects × (JSON, stream, no key, wrong key)");
        let calls = record["calls"].as_array().expect("calls");
        let per_turn = if script == "tool" { 2 } else { 1 };
        // Per dialect: JSON, the SDK's stream helper, and the raw stream walked event by event.
        assert_eq!(calls.len(), 3 * 3 * per_turn, "every served call recorded: {record}");
        assert!(calls.iter().all(|c| c["nonce_in_request"] == true));
        let refused = record["refused"].as_array().expect("refused");
        assert_eq!(refused.len(), 6, "the six unauthorized calls, and no idle keep-alive connection counted as a stall: {refused:?}");
        assert!(refused.iter().all(|r| r["status"] == 401), "{refused:?}");
    }
}

/// Runs `check_sdk.py` against a relay serving `script`, with `args`; returns its summary and
/// the relay's record.
fn check_sdk_against(script: &str, args: &[&str]) -> (Value, Value) {
    let served = serve(script, &[]);
    let h = &served.here;
    let output = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/relay-sdk/check_sdk.py"))
        .args(["--base-url", h["url"].as_str().unwrap_or_default(), "--api-key", h["api_key"].as_str().unwrap_or_default()])
        .args(["--nonce", h["nonce"].as_str().unwrap_or_default(), "--token", h["token"].as_str().unwrap_or_default()])
        .arg("--workspace")
        .arg(&served.dir)
        .args(args)
        .output()
        .expect("python3 runs");
    let summary = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "{script} {args:?}: {summary}\n{}", String::from_utf8_lossy(&output.stderr));
    (serde_json::from_str(summary.trim()).expect("one JSON line"), served.stop())
}

/// The record's calls as (fault, status) pairs.
fn faults_and_statuses(record: &Value) -> Vec<(Value, Value)> {
    record["calls"].as_array().expect("calls").iter().map(|c| (c["fault"].clone(), c["status"].clone())).collect()
}

/// Each 429's next call began at least its `retry-after` (1 s) later: the SDK waited.
fn retries_waited(record: &Value) {
    let calls = record["calls"].as_array().expect("calls");
    for pair in calls.windows(2) {
        if pair[0]["fault"] == "rate_limit" && pair[1]["fault"].is_null() {
            let waited = pair[1]["started_ms"].as_u64().unwrap_or(0) - pair[0]["started_ms"].as_u64().unwrap_or(0);
            assert!(waited >= 1000, "a retry {waited} ms after a retry-after of 1 s: {pair:?}");
        }
    }
}

#[test]
#[cfg_attr(
    not(checkfu_relay_sdk),
    ignore = "CHECKFU_RELAY_SDK is not set: pip install -r tests/relay-sdk/requirements.txt, then set CHECKFU_RELAY_SDK=1"
)]
fn the_official_sdks_classify_every_fault_and_retry_the_transient_ones() {
    let script = Command::new("python3")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/relay-sdk/check_sdk.py"))
        .arg("--fault-shapes-script")
        .output()
        .expect("python3 runs");
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("fault-shapes.json");
    std::fs::write(&file, &script.stdout).expect("the script");
    let (summary, record) = check_sdk_against(&file.to_string_lossy(), &["--script", "fault-shapes"]);
    assert_eq!((summary["passed"].as_u64(), summary["failed"].as_u64()), (Some(6), Some(0)), "3 dialects × (JSON, stream)");
    for check in summary["checks"].as_array().expect("checks") {
        let anthropic = check["dialect"] == "anthropic_messages";
        let raised = &check["raised"];
        assert_eq!(raised["rate_limit"], "RateLimitError");
        assert_eq!(raised["overloaded"], if anthropic { "OverloadedError" } else { "InternalServerError" });
        assert_eq!((&raised["server_error"], &raised["context_overflow"]), (&"InternalServerError".into(), &"BadRequestError".into()));
        let retried = &check["sdk_retried"];
        assert!(["rate_limit", "overloaded", "server_error"].iter().all(|f| retried[f] == true), "{check}");
        assert_eq!(retried["context_overflow"], false, "a 400 is not retried: {check}");
        // A cut before the answer began is retried; one mid-stream is the caller's to retry.
        assert_eq!(retried["stream_cut"], check["stream"] == false, "{check}");
    }
    let calls = record["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 90, "every fault and answer served once: {record}");
    let statuses: Vec<(Value, Value)> = faults_and_statuses(&record);
    for (fault, status) in &statuses {
        let expected: &[u64] = match fault.as_str() {
            Some("rate_limit") => &[429],
            Some("overloaded") => &[529, 503],
            Some("server_error") => &[500],
            Some("context_overflow") => &[400],
            _ => &[200],
        };
        assert!(status.as_u64().is_some_and(|s| expected.contains(&s)), "{fault} written as {status}");
    }
    assert!(calls
        .iter()
        .filter(|c| c["fault"] == "stream_cut")
        .all(|c| c["events_sent"] == if c["stream"] == true { 2.into() } else { Value::Null }));
    assert!(calls.iter().all(|c| c["fault"].is_null() == c["reply_token"].is_string()), "only answers carry a reply token");
    retries_waited(&record);
}

#[test]
#[cfg_attr(
    not(checkfu_relay_sdk),
    ignore = "CHECKFU_RELAY_SDK is not set: pip install -r tests/relay-sdk/requirements.txt, then set CHECKFU_RELAY_SDK=1"
)]
fn the_faults_script_is_survived_by_an_sdk_that_retries_in_every_dialect() {
    for (dialect, overloaded) in [("anthropic_messages", 529), ("openai_chat", 503), ("openai_responses", 503)] {
        let (summary, record) = check_sdk_against("faults", &["--script", "faults", "--only", dialect]);
        assert_eq!((summary["passed"].as_u64(), summary["failed"].as_u64()), (Some(4), Some(0)), "{summary}");
        let null = Value::Null;
        let expected: Vec<(Value, Value)> = [
            ("rate_limit".into(), 429),
            (null.clone(), 200),
            ("overloaded".into(), overloaded),
            (null.clone(), 200),
            ("server_error".into(), 500),
            (null.clone(), 200),
            ("stream_cut".into(), 200),
            (null, 200),
        ]
        .into_iter()
        .map(|(fault, status): (Value, u16)| (fault, status.into()))
        .collect();
        assert_eq!(faults_and_statuses(&record), expected, "{dialect}");
        retries_waited(&record);
    }
}

#[test]
fn a_stream_cut_stops_mid_stream_and_every_fault_is_recorded_as_written() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("script.json");
    let entries = r#"[{"fault": "stream_cut", "after_events": 3}, {"fault": "rate_limit", "retry_after": 7},
        {"fault": "context_overflow", "maximum": 1000}, {"text": "{reply_token}"}]"#;
    std::fs::write(&file, entries).expect("script");
    let served = serve(&file.to_string_lossy(), &[]);
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    let header = format!("x-api-key: {key}\r\n");
    // A fault entry waits for a call carrying a nonce, as a turn's own call does.
    let body = r#"{"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi cf-0123456789abcdef"}]}"#;
    let started = std::time::Instant::now();
    let (status, cut) = raw(&served.addr(), &post("/v1/messages", &header, body));
    assert!(started.elapsed() < Duration::from_secs(5), "the cut closed the connection at once");
    assert_eq!(status, 200);
    assert_eq!(cut.matches("event: ").count(), 3, "three events, then nothing: {cut}");
    assert!(!cut.contains("message_stop") && !cut.ends_with("0\r\n\r\n"), "no clean end: {cut:?}");
    let mut stream = TcpStream::connect(served.addr()).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let _ = stream.write_all(&post("/v1/messages", &header, body));
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 429 ") && answer.to_ascii_lowercase().contains("\r\nretry-after: 7\r\n"), "{answer}");
    let (status, overflow) = raw(&served.addr(), &post("/v1/messages", &header, body));
    assert_eq!(status, 400);
    assert!(overflow.contains("prompt is too long: ") && overflow.contains(" tokens > 1000 maximum"), "{overflow}");
    let (status, _) = raw(&served.addr(), &post("/v1/messages", &header, body));
    assert_eq!(status, 200);
    let record = served.stop();
    let calls = record["calls"].as_array().expect("calls");
    let kinds: Vec<&Value> = calls.iter().map(|c| &c["fault"]).collect();
    assert_eq!(kinds, [&Value::from("stream_cut"), &"rate_limit".into(), &"context_overflow".into(), &Value::Null]);
    assert_eq!((&calls[0]["status"], &calls[0]["events_sent"]), (&Value::from(200), &Value::from(3)));
    assert_eq!((&calls[1]["status"], &calls[2]["status"]), (&Value::from(429), &Value::from(400)));
    // The scripted overflow names no length: the error names the window plus the relay's own
    // estimate of the request, the one the record keeps.
    let estimated = calls[2]["estimated_tokens"].as_u64().expect("an estimate");
    assert!(overflow.contains(&format!("prompt is too long: {} tokens > 1000 maximum", 1000 + estimated)), "{estimated}: {overflow}");
    assert!(calls.windows(2).all(|w| w[0]["started_ms"].as_u64() <= w[1]["started_ms"].as_u64()), "{calls:?}");
    assert_eq!(record["refused"], serde_json::json!([]));
}

#[test]
fn a_cut_answer_to_a_client_that_never_reads_is_closed_within_the_stall_time() {
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("script.json");
    std::fs::write(&file, r#"[{"fault": "stream_cut", "after_events": 2}, {"text": "{reply_token}"}]"#).expect("script");
    let served = serve(&file.to_string_lossy(), &["--stall-seconds", "1"]);
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    // The model name comes back in the first event: 20 MB, more than the sockets hold, so
    // the relay is left writing to a client that reads nothing. With a stall time past the
    // client's wait (tried: 9 s) it reads all of it.
    let model = "m".repeat(20 << 20);
    let body = format!(r#"{{"model": "{model}", "stream": true, "messages": [{{"role": "user", "content": "hi cf-0123456789abcdef"}}]}}"#);
    let mut stream = TcpStream::connect(served.addr()).expect("connect");
    let _ = stream.write_all(&post("/v1/messages", &format!("x-api-key: {key}\r\n"), &body));
    // The relay reads and checks 20 MB first, which a loaded machine makes slow: the client
    // stops reading only once the answer has begun (its first byte waits, unread), and then
    // for three stall times.
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let mut first = [0u8; 1];
    assert_eq!(stream.peek(&mut first).expect("the answer begins"), 1);
    std::thread::sleep(Duration::from_secs(3));
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(started.elapsed() < Duration::from_secs(10), "the connection was closed, not left open");
    assert!(answer.len() < model.len(), "the relay gave up on the answer: {} bytes read", answer.len());
    let plain = r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#;
    let (status, text) = raw(&served.addr(), &post("/v1/messages", &format!("x-api-key: {key}\r\n"), plain));
    assert_eq!(status, 200, "the relay still serves: {text}");
    let record = served.stop();
    assert_eq!(record["calls"][0]["fault"], "stream_cut");
}

#[test]
fn everything_else_is_refused_with_a_status_in_the_dialects_error_shape_and_recorded() {
    let served = serve("nonce", &["--stall-seconds", "1"]);
    let addr = served.addr();
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    let bearer = format!("Authorization: Bearer {key}\r\n");
    let anthropic = format!("x-api-key: {key}\r\n");
    let cases: Vec<(Vec<u8>, u16, &str)> = vec![
        (post("/v1/models", &bearer, "{}"), 404, "allow-list"),
        (b"GET /v1/responses HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_vec(), 405, "POST"),
        (b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n".to_vec(), 403, "no other host"),
        (b"GET http://example.com/v1/messages HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n".to_vec(), 403, "no other host"),
        (post("/v1/messages", "", "{}"), 401, "key"),
        (post("/v1/messages", &anthropic, "{\"model\": "), 400, "not JSON"),
        (post("/v1/chat/completions", &bearer, "{\"model\": \"m\"}"), 400, "messages"),
        (format!("POST /v1/responses HTTP/1.1\r\nHost: x\r\n{bearer}Content-Length: 40000000\r\n\r\n").into_bytes(), 413, "more than"),
        // Headers never finished, then a body that never comes: both stall.
        (b"POST /v1/responses HTTP/1.1\r\nHost: x\r\n".to_vec(), 408, ""),
        (format!("POST /v1/responses HTTP/1.1\r\nHost: x\r\n{bearer}Content-Length: 100\r\n\r\n{{").into_bytes(), 408, "stalled"),
    ];
    for (request, status, says) in &cases {
        let (got, body) = raw(&addr, request);
        let label = String::from_utf8_lossy(&request[..request.len().min(60)]).into_owned();
        if *status == 408 && got == 0 {
            // hyper closes a connection whose headers time out without an answer; the
            // record below still has it.
            continue;
        }
        assert_eq!(got, *status, "{label}: {body}");
        assert!(body.contains(says), "{label}: {body}");
        let error: Value = serde_json::from_str(&body).expect("an error body in JSON");
        assert!(error["error"]["message"].is_string(), "{label}: the dialect's error shape: {body}");
    }
    let (_, anthropic_shaped) = raw(&addr, &post("/v1/messages", "", "{}"));
    assert_eq!(serde_json::from_str::<Value>(&anthropic_shaped).expect("JSON")["type"], "error", "Anthropic's shape on its path");
    let record = served.stop();
    let refused = record["refused"].as_array().expect("refused");
    let statuses: Vec<u64> = refused.iter().filter_map(|r| r["status"].as_u64()).collect();
    for (request, status, _) in &cases {
        if request.ends_with(b"Host: x\r\n") {
            // The stall inside the headers: hyper closes it without writing anything, and
            // the record says so rather than claim a 408 was sent.
            let closed = refused
                .iter()
                .find(|r| r["reason"].as_str().is_some_and(|t| t.contains("no complete request headers")))
                .expect("the header stall is recorded");
            assert_eq!(closed["status"], Value::Null, "{closed}");
            assert!(closed["reason"].as_str().unwrap_or_default().ends_with("closed without an answer"), "{closed}");
            continue;
        }
        assert!(statuses.contains(&u64::from(*status)), "{status} recorded: {statuses:?}");
    }
    assert_eq!(
        record["egress_attempts"],
        serde_json::json!([{"host": "api.anthropic.com", "port": 443}, {"host": "example.com", "port": 80}])
    );
    assert_eq!(record["calls"], serde_json::json!([]));
}

#[test]
fn fal_queue_is_refused_saying_so_and_an_unknown_provider_is_a_usage_error() {
    let served = serve("nonce", &["--provider", "fal-ai"]);
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    let (status, body) = raw(&served.addr(), &post("/flux-dev", &format!("Authorization: Key {key}\r\n"), "{}"));
    assert_eq!(status, 501);
    assert!(body.contains("fal_queue") && body.contains("does not serve"), "{body}");
    // `/{model_id}` is one whole segment, as the catalog's path grammar defines a placeholder:
    // a model id that holds slashes is off the allow-list.
    let (status, body) = raw(&served.addr(), &post("/fal-ai/flux/dev", &format!("Authorization: Key {key}\r\n"), "{}"));
    assert_eq!(status, 404, "{body}");
    served.stop();
    let workspace = tempfile::tempdir().expect("workspace");
    let unknown = Command::new(CLI)
        .args(["relay", "--provider", "nobody", "--workspace"])
        .arg(workspace.path())
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no provider `nobody`"));
    // Refused before anything was written.
    assert!(!workspace.path().join(checkfu_wire_probe::TOKEN_FILE).exists());
}

#[test]
fn garbage_and_too_many_connections_panic_nothing_and_the_relay_still_serves() {
    let served = serve("nonce", &["--stall-seconds", "1"]);
    let addr = served.addr();
    // Deterministic byte soup, some of it shaped like HTTP, none of it well-formed.
    let mut seed: u64 = 0x5eed;
    let mut next = || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as u8
    };
    for i in 0..100 {
        let mut bytes: Vec<u8> = if i % 2 == 0 { b"POST /v1/messages HTTP/1.1\r\n".to_vec() } else { Vec::new() };
        bytes.extend((0..(i * 7 % 300)).map(|_| next()));
        bytes.extend_from_slice(b"\r\n\r\n");
        let _ = raw(&addr, &bytes);
    }
    // Connections held open past the limit are closed and recorded, not served.
    let held: Vec<TcpStream> = (0..80).filter_map(|_| TcpStream::connect(&addr).ok()).collect();
    std::thread::sleep(Duration::from_millis(200));
    drop(held);
    std::thread::sleep(Duration::from_millis(1500));
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    let body = r#"{"model": "m", "messages": [{"role": "user", "content": "hi cf-0123456789abcdef"}]}"#;
    let (status, answer) = raw(&addr, &post("/v1/chat/completions", &format!("Authorization: Bearer {key}\r\n"), body));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("cf-0123456789abcdef"));
    let record = served.stop();
    let capped = record["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .find(|r| r["reason"].as_str().is_some_and(|t| t.contains("connections at once")));
    let capped = capped.expect("the connection cap was recorded");
    assert_eq!(capped["status"], Value::Null, "a connection closed unread was sent nothing: {capped}");
}

/// Writes `request`, then shuts the write side, and reads whatever comes back.
fn raw_then_close(addr: &str, request: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let _ = stream.write_all(request);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    answer
}

#[test]
fn the_record_says_the_status_that_was_sent_or_that_none_was() {
    let served = serve("nonce", &["--stall-seconds", "2"]);
    let addr = served.addr();
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    // hyper answers these heads itself: 431 for headers past its buffer, 414 for a target
    // past its URI limit, 400 for a malformed request line.
    let huge_header = format!("POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-pad: {}\r\n\r\n", "a".repeat(600 * 1024));
    let long_target = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "p".repeat(70 * 1024));
    let mut sent = Vec::new();
    for request in [huge_header.as_bytes(), long_target.as_bytes(), b"NOT HTTP AT ALL\r\n\r\n".as_slice()] {
        let (status, _) = raw(&addr, request);
        sent.push(status);
    }
    // A client that sends half a body and ends its side: the relay's 400 is written, and
    // recorded as written.
    let half = format!("POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: {key}\r\nContent-Length: 1000\r\n\r\n{{\"model\"");
    let answer = raw_then_close(&addr, half.as_bytes());
    let record = served.stop();
    let refused = record["refused"].as_array().expect("refused");
    let recorded: Vec<Value> = refused.iter().map(|r| r["status"].clone()).collect();
    for status in &sent {
        assert!(*status != 0, "hyper answered each head: {sent:?}");
        assert!(recorded.contains(&Value::from(*status)), "{status} was sent and is recorded: {recorded:?}");
    }
    let half_body =
        refused.iter().find(|r| r["path"] == "/v1/messages" && r["reason"].as_str().is_some_and(|t| t.contains("could not be read")));
    let half_body = half_body.unwrap_or_else(|| panic!("the half body is recorded: {refused:?}"));
    assert!(answer.starts_with(b"HTTP/1.1 400 "), "{}", String::from_utf8_lossy(&answer));
    assert_eq!(half_body["status"], 400, "{half_body}");
}

/// `--context-window`: a request past the window, by the relay's estimate, is answered with
/// the dialect's context-length error naming that estimate, recorded as a `context_overflow`
/// fault; one within it is answered as ever. The script is not asked for the refused ones.
#[test]
fn an_enforced_window_answers_past_it_with_each_dialects_context_length_error() {
    let served = serve("nonce", &["--context-window", "20"]);
    let key = served.here["api_key"].as_str().expect("key").to_owned();
    // "user" and 200 bytes: 204 bytes, 51 tokens; "user" and "hi": 6 bytes, 2 tokens.
    let long = "x".repeat(200);
    let cases = [
        ("/v1/messages", format!("x-api-key: {key}\r\n"), "messages", "prompt is too long: 51 tokens > 20 maximum"),
        (
            "/v1/chat/completions",
            format!("Authorization: Bearer {key}\r\n"),
            "messages",
            "maximum context length is 20 tokens. However, your messages resulted in 51 tokens",
        ),
        ("/v1/responses", format!("Authorization: Bearer {key}\r\n"), "input", "context_length_exceeded"),
    ];
    for (path, header, list, said) in &cases {
        let body = |text: &str| serde_json::json!({"model": "m", *list: [{"role": "user", "content": text}]}).to_string();
        let (status, answer) = raw(&served.addr(), &post(path, header, &body(&long)));
        assert_eq!(status, 400, "{path}: {answer}");
        assert!(answer.contains(said), "{path}: {answer}");
        let (status, answer) = raw(&served.addr(), &post(path, header, &body("hi")));
        assert_eq!(status, 200, "{path}: {answer}");
    }
    let record = served.stop();
    let calls = record["calls"].as_array().expect("calls");
    let seen: Vec<(Value, Value, Value, Value)> =
        calls.iter().map(|c| (c["status"].clone(), c["fault"].clone(), c["estimated_tokens"].clone(), c["messages"].clone())).collect();
    let refused = (Value::from(400), Value::from("context_overflow"), Value::from(51), Value::from(1));
    let answered = (Value::from(200), Value::Null, Value::from(2), Value::from(1));
    assert_eq!(seen, [refused.clone(), answered.clone(), refused.clone(), answered.clone(), refused, answered]);
    // The answered calls carry the script's reply token: the overflows used up no reply.
    assert!(calls.iter().filter(|c| c["status"] == 200).all(|c| c["reply_token"].is_string()), "{calls:?}");
}
