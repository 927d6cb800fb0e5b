//! The egress fence as an ordinary user: the probe run unprivileged (as uid 65534 through
//! `setpriv` when the tests run as root, as in CI; as the user running the tests
//! otherwise) puts the fixture agent in a user namespace holding a loopback-only network
//! namespace. The turn passes through the relay, the harness keeps its uid, and a port
//! listening on the host's 127.0.0.1 is unreachable from inside.

use crate::probe_support;

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use probe_support::{
    assert_no_process_in_group, assert_nothing_left, running_as_root, unprivileged, unprivileged_uid, Scratch, Staged, AGENT, NOBODY, PROBE,
};
use serde_json::Value;

/// Whether this machine lets an unprivileged user make a user and network namespace:
/// `unshare -Urn true`, as that user.
fn user_namespaces_allowed() -> bool {
    let mut command = unprivileged("unshare");
    command.args(["--user", "--map-current-user", "--net", "true"]);
    command.output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn an_unprivileged_probe_fences_the_harness_in_a_user_namespace() {
    if running_as_root() {
        assert!(
            Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success()),
            "setpriv (util-linux) is needed to drop to uid {NOBODY}"
        );
    }
    let host = TcpListener::bind(("127.0.0.1", 0)).expect("a host loopback listener");
    let port = host.local_addr().expect("addr").port();
    let scratch = Scratch::new("unprivileged-fence");
    // The unprivileged harness writes what it saw here.
    std::fs::set_permissions(&scratch.0, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let seen = scratch.path("seen.txt");
    // What uid 65534 runs is staged where it can read it, wherever the clone is.
    let staged = Staged::new("unprivileged-fence");
    let agent = staged.file(AGENT);
    let script = format!(
        "(id -u; if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo reached; else echo unreachable; fi) > {seen}; exec {agent}"
    );
    let mut command = unprivileged(&staged.file(PROBE));
    command.args(["probe", "--format", "json", "--kill-grace", "0.5", "--step-timeout", "10", "--", "bash", "-c", &script]);
    // The probe's own temporary files go where the unprivileged user may write.
    command.env("TMPDIR", "/tmp");
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("probe starts");
    let probe_pid = child.id();
    let output = child.wait_with_output().expect("probe runs");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let pretty = format!("{}\n{}", serde_json::to_string_pretty(&json).unwrap_or_default(), String::from_utf8_lossy(&output.stderr));
    if let Some(pid) = json["harness"]["pid"].as_u64() {
        assert_no_process_in_group(pid as i32);
    }
    assert_nothing_left(probe_pid);
    let plane = &json["model_plane"];
    if !user_namespaces_allowed() {
        // The machine refuses both ways: the report must say so, with the reason.
        assert_eq!(plane["fence"], "proxy_variables", "{pretty}");
        assert!(plane["fence_note"].as_str().is_some_and(|n| n.contains("without privileges")), "{pretty}");
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{pretty}");
    assert_eq!(plane["fence"], "user_namespace", "{pretty}");
    assert_eq!(plane["fence_note"], Value::Null);
    assert_eq!(plane["nonce_at_relay"], true, "the relay's listener is reachable inside: {pretty}");
    assert!(plane["reply_in_output"].as_str().is_some_and(|t| t.starts_with("cfr-")), "the model's answer came out: {pretty}");
    let text = std::fs::read_to_string(&seen).expect("the harness wrote what it saw");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(unprivileged_uid().as_str()), "the harness keeps its uid: {text}");
    assert_eq!(lines.get(1).copied(), Some("unreachable"), "the host's 127.0.0.1:{port} is out of reach: {text}");
    // The same port is reachable from outside the fence: the check above is not vacuous.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
}

/// The one-shot lane stands on the same fence: the fixture CLI, unprivileged, takes its
/// turn through the relay and cannot reach the host's loopback.
#[test]
fn an_unprivileged_oneshot_run_is_fenced_the_same_way() {
    if running_as_root() {
        assert!(
            Command::new("setpriv").arg("--version").output().is_ok_and(|o| o.status.success()),
            "setpriv (util-linux) is needed to drop to uid {NOBODY}"
        );
    }
    let host = TcpListener::bind(("127.0.0.1", 0)).expect("a host loopback listener");
    let port = host.local_addr().expect("addr").port();
    let scratch = Scratch::new("unprivileged-oneshot");
    std::fs::set_permissions(&scratch.0, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let seen = scratch.path("seen.txt");
    let staged = Staged::new("unprivileged-oneshot");
    let cli = staged.file(concat!(env!("CARGO_MANIFEST_DIR"), "/fixture-oneshot/cli.py"));
    let script = format!(
        "(id -u; if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo reached; else echo unreachable; fi) > {seen}; exec {cli}"
    );
    let mut command = unprivileged(&staged.file(PROBE));
    command.args([
        "probe",
        "--format",
        "json",
        "--kill-grace",
        "0.5",
        "--step-timeout",
        "20",
        "--protocol",
        "oneshot-v1",
        "--prompt-transport",
        "stdin",
        "--output-mode",
        "text",
    ]);
    // The script holds no `{identifier}`, so it passes through the templates as it is.
    command.args(["--argv=-c", &format!("--argv={script}"), "--", "bash"]);
    command.env("TMPDIR", "/tmp");
    let child = command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().expect("probe starts");
    let probe_pid = child.id();
    let output = child.wait_with_output().expect("probe runs");
    let json: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let pretty = format!("{}\n{}", serde_json::to_string_pretty(&json).unwrap_or_default(), String::from_utf8_lossy(&output.stderr));
    for run in json["runs"].as_array().into_iter().flatten() {
        assert_no_process_in_group(run["pid"].as_u64().expect("pid") as i32);
    }
    assert_nothing_left(probe_pid);
    let plane = &json["model_plane"];
    if !user_namespaces_allowed() {
        assert_eq!(plane["fence"], "proxy_variables", "{pretty}");
        return;
    }
    assert_eq!(output.status.code(), Some(0), "{pretty}");
    assert_eq!(plane["fence"], "user_namespace", "{pretty}");
    assert_eq!(json["steps"]["prompt_exchange"]["status"], "passed", "{pretty}");
    let text = std::fs::read_to_string(&seen).expect("the CLI wrote what it saw");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first().copied(), Some(unprivileged_uid().as_str()), "{text}");
    assert_eq!(lines.get(1).copied(), Some("unreachable"), "the host's 127.0.0.1:{port} is out of reach: {text}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
}
