//! Unit tests of the external tools' driver: bounded capture, timeouts, and process groups
//! killed before their leader is reaped.

use super::*;

/// A budget that neither ends nor is cancelled within a test.
fn open() -> Budget {
    Budget::after(Duration::from_secs(600))
}

#[test]
fn remote_repository_drops_registry_and_tag() {
    assert_eq!(remote_repository("localhost/checkfu-probe:abc"), "checkfu-probe");
    assert_eq!(remote_repository("checkfu/probe"), "checkfu/probe");
    assert_eq!(remote_repository("127.0.0.1:5000/a/b:v1"), "a/b");
}

#[test]
fn a_missing_tool_names_its_package() {
    let message = ToolError::Missing { tool: Tool::Registry }.to_string();
    assert_eq!(message, "`docker-registry` is not on PATH: install it (apt-get install docker-registry)");
    assert!(ToolError::Missing { tool: Tool::Docker }.to_string().ends_with("(apt-get install docker.io)"));
}

#[test]
fn a_failing_tool_carries_its_stderr_tail_and_a_slow_one_is_killed() {
    let mut command = Command::new("sh");
    command.args(["-c", "head -c 100000 /dev/zero | tr '\\0' x >&2; echo the-reason >&2; exit 3"]);
    let error = run(Tool::Skopeo, command, "fail", &open(), Duration::from_secs(10)).unwrap_err();
    let ToolError::Failed { stderr, status, .. } = &error else { panic!("{error}") };
    assert!(stderr.len() <= MAX_STDERR && stderr.trim_end().ends_with("the-reason"), "{}", stderr.len());
    assert!(status.contains('3'), "{status}");

    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & sleep 30"]);
    let started = Instant::now();
    let error = run(Tool::Skopeo, command, "wait", &open(), Duration::from_millis(200)).unwrap_err();
    assert!(matches!(error, ToolError::TimedOut { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10), "the group was killed, the pipes closed");
}

#[test]
fn an_exited_leaders_stragglers_are_killed_before_it_is_reaped() {
    // The leader exits at once; its straggler is killed while the leader is still an
    // unreaped zombie holding the group's id.
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & echo $!"]);
    let output = run(Tool::Skopeo, command, "leave a straggler", &open(), Duration::from_secs(10)).expect("runs");
    let pid = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    let gone = || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map_or(true, |s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
    };
    let until = Instant::now() + Duration::from_secs(5);
    while !gone() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gone(), "the straggler {pid} was killed");
}

#[test]
fn a_cancelled_budget_stops_a_running_tool_and_starts_no_other() {
    let budget = open();
    let cancel = budget.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        cancel.cancel_by(libc::SIGINT);
    });
    let mut command = Command::new("sh");
    command.args(["-c", "sleep 30 & sleep 30"]);
    let started = Instant::now();
    let error = run(Tool::Skopeo, command, "wait", &budget, Duration::from_secs(60)).unwrap_err();
    canceller.join().expect("the canceller");
    assert!(matches!(error, ToolError::Stopped(_)), "{error}");
    assert_eq!(error.to_string(), "skopeo (wait): interrupted by SIGINT");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at the cancellation: {:?}", started.elapsed());
    // Nothing new starts under it; a grace budget made from it runs its command to the end.
    let refused = run(Tool::Skopeo, Command::new("true"), "after", &budget, Duration::from_secs(10)).unwrap_err();
    assert!(matches!(refused, ToolError::Stopped(_)), "{refused}");
    let mut echo = Command::new("echo");
    echo.arg("removed");
    let output = run(Tool::Skopeo, echo, "teardown", &budget.grace(Duration::from_secs(10)), Duration::from_secs(10)).expect("runs");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "removed");
}
