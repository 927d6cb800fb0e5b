//! `checkfu-wire decode` on a recorded harness exchange, from a file and from stdin.

use std::io::Write;
use std::process::{Command, Stdio};

fn reports(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout).lines().map(|l| serde_json::from_str(l).expect("one JSON object per line")).collect()
}

#[test]
fn a_recorded_exchange_is_read_line_by_line() {
    let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .current_dir(crate::support::project::project_root())
        .args(["decode", "tests/data/exchange.jsonl"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "two lines are rejected");
    let lines = reports(&out.stdout);
    assert_eq!(lines.len(), 14);
    let rejected: Vec<(u64, &str)> = lines
        .iter()
        .filter(|l| l["accepted"] == false)
        .map(|l| (l["line"].as_u64().unwrap_or(0), l["error"]["code"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(rejected, vec![(13, "missing_requirement"), (14, "unknown_update_kind")]);
    assert_eq!(lines[8]["method"], "_checkfu/session/steer");
    assert_eq!(lines[8]["kind"], "response");
    assert_eq!(lines[9]["slots"][0]["status"], "dropped");
    assert_eq!(lines[6]["slots"][1]["status"], "ignored");
}

#[test]
fn stdin_and_an_all_accepted_stream_exit_zero() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .args(["decode", "--direction", "agent_to_runner"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let line = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}"#;
    child.stdin.take().expect("stdin").write_all(&[line.as_slice(), b"\n\n", line.as_slice(), b"\n"].concat()).expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let lines = reports(&out.stdout);
    assert_eq!(lines.len(), 2, "blank lines are skipped");
    assert_eq!(lines[1]["line"], 3);
}

#[test]
fn an_overlong_line_is_rejected_and_the_stream_goes_on() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .args(["decode"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut input = vec![b' '; 17 * 1024 * 1024];
    input.push(b'\n');
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"session/cancel"}"#);
    input.push(b'\n');
    let mut stdin = child.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait");
    writer.join().expect("writer thread").expect("write");
    assert_eq!(out.status.code(), Some(1));
    let lines = reports(&out.stdout);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["error"]["code"], "line_too_long");
    assert_eq!(lines[1]["error"]["code"], "unexpected_id", "the next line is still decoded");
}

/// `decode` with `args`, fed `input` on stdin: (exit status, reports, stderr).
fn decode_stdin(args: &[&str], input: &[u8]) -> (Option<i32>, Vec<serde_json::Value>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .arg("decode")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(input).expect("write");
    let out = child.wait_with_output().expect("wait");
    (out.status.code(), reports(&out.stdout), String::from_utf8_lossy(&out.stderr).into_owned())
}

const PLAN: &[u8] =
    br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}}"#;

#[test]
fn the_summary_says_how_many_of_how_many_were_accepted() {
    let (status, _, stderr) = decode_stdin(&["--direction", "agent_to_runner"], &[PLAN, b"\n", PLAN, b"\n"].concat());
    assert_eq!(status, Some(0));
    assert_eq!(stderr, "decode: 2 of 2 messages accepted, 0 rejected\n");
    let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
        .current_dir(crate::support::project::project_root())
        .args(["decode", "tests/data/exchange.jsonl"])
        .output()
        .expect("run");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "decode: 12 of 14 messages accepted, 2 rejected\n");
}

#[test]
fn empty_input_is_said_and_is_not_a_pass() {
    for input in [&b""[..], b"\n\n  \n"] {
        let (status, lines, stderr) = decode_stdin(&[], input);
        assert_eq!(status, Some(2), "{stderr}");
        assert!(lines.is_empty());
        assert_eq!(stderr, "decode: standard input holds no message (no line other than blank ones); nothing was decoded\n");
    }
}

#[test]
fn every_read_error_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.jsonl");
    for path in [dir.path(), missing.as_path()] {
        let out = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup")).arg("decode").arg(path).output().expect("run");
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with(&format!("error: cannot read {}: ", path.display())), "{stderr}");
    }
}

#[test]
fn a_byte_order_mark_is_named_as_such() {
    let (status, lines, _) = decode_stdin(&["--direction", "agent_to_runner"], &[b"\xEF\xBB\xBF", PLAN, b"\n", PLAN, b"\n"].concat());
    assert_eq!(status, Some(1));
    assert_eq!(lines[0]["error"]["code"], "byte_order_mark");
    assert!(lines[0]["error"]["message"].as_str().expect("message").contains("UTF-8 byte-order mark"), "{}", lines[0]);
    assert_eq!(lines[1]["accepted"], true);
}

#[test]
fn a_direction_is_spelled_the_wire_s_way_everywhere() {
    let cancel = br#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#;
    let (status, lines, _) = decode_stdin(&["--direction", "agent_to_runner"], &[cancel.as_slice(), b"\n"].concat());
    assert_eq!(status, Some(1));
    assert_eq!(lines[0]["direction"], "agent_to_runner");
    assert_eq!(lines[0]["error"]["direction"], "agent_to_runner");
    assert_eq!(lines[0]["error"]["message"], "`session/cancel` does not flow agent_to_runner");
}

/// `--protocol acp-v2` reads the stream in v2's grammar; the default is v1, which refuses
/// the same lines where v2 differs.
#[test]
fn the_protocol_option_chooses_the_grammar() {
    let lines = [
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{"session":{}}}}"#,
        r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}}}"#,
    ];
    let run = |protocol: Option<&str>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_checkfu-wire-dup"))
            .args(["decode", "--direction", "agent_to_runner"])
            .args(protocol.map(|p| ["--protocol", p]).into_iter().flatten())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child.stdin.take().expect("stdin").write_all(lines.join("\n").as_bytes()).expect("write");
        child.wait_with_output().expect("wait")
    };
    let v2 = run(Some("acp-v2"));
    assert_eq!(v2.status.code(), Some(0), "{}", String::from_utf8_lossy(&v2.stdout));
    let v1 = run(None);
    assert_eq!(v1.status.code(), Some(1));
    let codes: Vec<String> = reports(&v1.stdout).iter().map(|l| l["error"]["code"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(codes, ["protocol_version", "unknown_update_kind"]);
    let unknown = run(Some("acp-v3"));
    assert_eq!(unknown.status.code(), Some(2), "an unknown protocol is a usage error");
}

/// A record's `{"protocol": …}` line switches the grammar for what follows (the default v1
/// reads a v2 answer after `{"protocol":"acp-v2"}`); one naming a version this build does
/// not read is rejected, pointing at its line, and the stream goes on.
#[test]
fn a_protocol_line_switches_the_grammar_and_an_unknown_one_is_rejected() {
    let answer = r#"{"direction":"agent_to_runner","message":{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{}}}}"#;
    let (status, lines, _) = decode_stdin(&[], format!("{{\"protocol\":\"acp-v2\"}}\n{answer}\n").as_bytes());
    assert_eq!(status, Some(0), "{lines:?}");
    assert_eq!(lines.len(), 1, "the marker is no message: {lines:?}");
    let (status, lines, _) = decode_stdin(&[], format!("{answer}\n").as_bytes());
    assert_eq!((status, lines[0]["error"]["code"].as_str()), (Some(1), Some("protocol_version")));
    let (status, lines, _) = decode_stdin(&[], format!("{{\"protocol\":\"acp-v9\"}}\n{answer}\n").as_bytes());
    assert_eq!(status, Some(1), "{lines:?}");
    assert_eq!((lines[0]["line"].as_u64(), lines[0]["error"]["code"].as_str()), (Some(1), Some("unknown_protocol")));
    assert!(lines[0]["error"]["message"].as_str().is_some_and(|m| m.contains("acp-v9")));
    assert_eq!(lines.len(), 2, "the stream goes on: {lines:?}");
}
