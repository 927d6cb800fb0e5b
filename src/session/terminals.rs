//! The client's `terminal/*` methods, when the runner enables them (`--allow-terminals`):
//! a command the harness asks for runs in the session's workspace (its `cwd` must resolve
//! inside it), in a process group of its own, with its output kept up to `outputByteLimit`
//! (cut from the front, on a character boundary, as ACP describes). `wait_for_exit` on a
//! running command is answered when it exits, without holding the session's loop. Every
//! terminal still running at teardown is killed with its group.
//!
//! This is not a sandbox: enabling terminals lets the harness run any command as the user
//! running the probe. It is off unless asked for.

use std::collections::HashMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::client::{Answer, INVALID_PARAMS};
use super::process::{drain, signal_group, Tail};
use super::workspace::Workspace;

/// Output kept when the harness sets no limit.
const DEFAULT_LIMIT: usize = 1024 * 1024;

struct Terminal {
    child: Child,
    output: Arc<Mutex<Tail>>,
    exit: Option<ExitStatus>,
}

impl Terminal {
    fn poll(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.child.try_wait().ok().flatten();
        }
        self.exit
    }

    fn kill(&mut self) {
        if self.poll().is_none() {
            signal_group(self.child.id(), libc::SIGKILL);
            self.exit = self.child.wait().ok();
        }
    }
}

/// What a `terminal/*` request gets.
pub enum Handled {
    Now(Answer),
    /// `wait_for_exit` on a running terminal: answer when it exits.
    WhenExited(String),
}

/// The session's terminals.
#[derive(Default)]
pub struct Terminals {
    next: u64,
    open: HashMap<String, Terminal>,
    /// The harness's network namespace: its commands run inside the same fence.
    netns: Option<std::os::fd::RawFd>,
}

impl Terminals {
    /// Terminals whose commands join `netns` (the harness's fence), if any.
    pub fn fenced(netns: Option<std::os::fd::RawFd>) -> Terminals {
        Terminals { netns, ..Terminals::default() }
    }
}

fn exit_json(status: ExitStatus) -> Value {
    let signal = status.signal().map(|s| match s {
        libc::SIGHUP => String::from("SIGHUP"),
        libc::SIGINT => String::from("SIGINT"),
        libc::SIGKILL => String::from("SIGKILL"),
        libc::SIGSEGV => String::from("SIGSEGV"),
        libc::SIGPIPE => String::from("SIGPIPE"),
        libc::SIGTERM => String::from("SIGTERM"),
        libc::SIGABRT => String::from("SIGABRT"),
        other => format!("SIG{other}"),
    });
    json!({"exitCode": status.code(), "signal": signal})
}

impl Terminals {
    /// Handles one `terminal/*` request.
    pub fn handle(&mut self, method: &str, params: &Value, workspace: &Workspace) -> Handled {
        if method == "terminal/create" {
            return Handled::Now(self.create(params, workspace));
        }
        let id = params.get("terminalId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(terminal) = self.open.get_mut(&id) else {
            return Handled::Now(Err((INVALID_PARAMS, format!("no terminal `{id}`"))));
        };
        Handled::Now(match method {
            "terminal/output" => {
                let exit = terminal.poll().map(exit_json);
                let output = terminal.output.lock().unwrap_or_else(|e| e.into_inner());
                Ok(json!({"output": output.text(), "truncated": output.truncated(), "exitStatus": exit}))
            }
            "terminal/wait_for_exit" => match terminal.poll() {
                Some(status) => Ok(exit_json(status)),
                None => return Handled::WhenExited(id),
            },
            "terminal/kill" => {
                terminal.kill();
                Ok(json!({}))
            }
            "terminal/release" => {
                terminal.kill();
                self.open.remove(&id);
                Ok(json!({}))
            }
            _ => Err((super::client::METHOD_NOT_FOUND, format!("`{method}` is not offered by this client"))),
        })
    }

    fn create(&mut self, params: &Value, workspace: &Workspace) -> Answer {
        let command = params.get("command").and_then(Value::as_str).unwrap_or_default();
        let args: Vec<&str> = params.get("args").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) => workspace.resolve_read(cwd).map_err(|r| (INVALID_PARAMS, format!("cwd {cwd}: {r}")))?,
            None => workspace.root().to_path_buf(),
        };
        let limit = params.get("outputByteLimit").and_then(Value::as_u64).map_or(DEFAULT_LIMIT, |l| l as usize);
        // A command without `args` is a shell line, as ACP's reference client (Zed) runs it and
        // as claude-code-acp sends its Bash tool's command: run it with `sh -c`.
        let mut spawn = if args.is_empty() && command.contains(char::is_whitespace) {
            let mut shell = Command::new("sh");
            shell.arg("-c").arg(command);
            shell
        } else {
            let mut direct = Command::new(command);
            direct.args(&args);
            direct
        };
        spawn.current_dir(&cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
        for variable in params.get("env").and_then(Value::as_array).into_iter().flatten() {
            if let (Some(name), Some(value)) = (variable.get("name").and_then(Value::as_str), variable.get("value").and_then(Value::as_str)) {
                spawn.env(name, value);
            }
        }
        if let Some(fd) = self.netns {
            // SAFETY: one async-signal-safe call (setns) between fork and exec.
            unsafe { std::os::unix::process::CommandExt::pre_exec(&mut spawn, move || super::fence::join(fd)) };
        }
        let mut child = spawn.spawn().map_err(|e| (-32603, format!("cannot run `{command}`: {e}")))?;
        let output = Arc::new(Mutex::new(Tail::new(limit)));
        if let Some(stdout) = child.stdout.take() {
            let sink = Arc::clone(&output);
            std::thread::spawn(move || drain(stdout, sink));
        }
        if let Some(stderr) = child.stderr.take() {
            let sink = Arc::clone(&output);
            std::thread::spawn(move || drain(stderr, sink));
        }
        self.next += 1;
        let id = format!("term-{}", self.next);
        self.open.insert(id.clone(), Terminal { child, output, exit: None });
        Ok(json!({"terminalId": id}))
    }

    /// The exit answer for a terminal a `wait_for_exit` waits on, once it has exited (a
    /// released terminal answers as killed).
    pub fn exited(&mut self, id: &str) -> Option<Value> {
        match self.open.get_mut(id) {
            Some(terminal) => terminal.poll().map(exit_json),
            None => Some(json!({"exitCode": null, "signal": "SIGKILL"})),
        }
    }

    /// Kills every terminal still running.
    pub fn kill_all(&mut self) {
        for terminal in self.open.values_mut() {
            terminal.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_cut_from_the_front_on_a_character_boundary() {
        let mut output = Tail::new(4);
        output.push("ab".as_bytes());
        assert!(!output.truncated());
        output.push("cé".as_bytes()); // 5 bytes in all: cut one, then land on `c`
        assert_eq!(output.text(), "bcé");
        output.push("d".as_bytes()); // "bcéd" is 5 bytes: cut `b`
        assert_eq!(output.text(), "céd");
        assert!(output.truncated());
        output.push("é".as_bytes()); // "cédé" is 6: cut `c`, then `é` must go whole
        assert_eq!(output.text(), "dé");
    }

    #[test]
    fn a_command_line_without_args_runs_through_the_shell() {
        let workspace = Workspace::create().expect("workspace");
        let mut terminals = Terminals::default();
        let params = serde_json::json!({"sessionId": "s", "command": "printf '%s' one two"});
        let Handled::Now(Ok(created)) = terminals.handle("terminal/create", &params, &workspace) else { panic!("created") };
        let id = created["terminalId"].as_str().expect("id").to_owned();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while terminals.exited(&id).is_none() {
            assert!(std::time::Instant::now() < until, "the command exits");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let Handled::Now(Ok(output)) = terminals.handle("terminal/output", &serde_json::json!({"sessionId": "s", "terminalId": id}), &workspace) else { panic!("output") };
        assert_eq!(output["output"], "onetwo");
        terminals.kill_all();
    }
}
