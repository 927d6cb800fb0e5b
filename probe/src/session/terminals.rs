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
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::budget::Cancel;
use checkfu_wire::decode::tables::Method;
use checkfu_wire_sandbox::process::{inherit_on_exec, Group, Signal};

use super::client::{Answer, INVALID_PARAMS};
use super::process::{drain, working_directory, Inside, Tail};
use super::workspace::Workspace;

/// Output kept when the harness sets no limit.
const DEFAULT_LIMIT: usize = 1024 * 1024;

struct Terminal {
    group: Group,
    output: Arc<Mutex<Tail>>,
    /// The threads reading stdout and stderr into `output`, each done at end of file.
    readers: Vec<JoinHandle<()>>,
    /// The command's status, and when it was first seen.
    exit: Option<(ExitStatus, Instant)>,
}

/// How long after the command exits its output may still be read in, when something it
/// left running (`cmd &`) keeps a pipe open, so there is no end of file to wait for.
const OUTPUT_GRACE: Duration = Duration::from_secs(1);

impl Terminal {
    /// The command's status once it has exited and its output is all in: a command's last
    /// writes can still sit in the pipe when it exits (up to the pipe's 64 KiB), and
    /// `terminal/output` after `wait_for_exit` must hold them.
    fn poll(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            self.exit = self.group.exit_status().ok().flatten().map(|status| (status, Instant::now()));
        }
        let (status, seen) = self.exit?;
        (!self.output_open() || seen.elapsed() >= OUTPUT_GRACE).then_some(status)
    }

    /// Whether a reader still waits for the end of its pipe.
    fn output_open(&self) -> bool {
        !self.readers.iter().all(JoinHandle::is_finished)
    }

    /// Kills the command's process group (the command, or what it left holding its pipes),
    /// then reaps the command, whose zombie kept the group's id its own until then.
    fn kill(&mut self) {
        self.poll();
        if self.exit.is_none() || self.output_open() {
            self.group.signal(Signal::KILL);
        }
        if let Ok(status) = self.group.reap() {
            self.exit.get_or_insert((status, Instant::now()));
        }
    }
}

/// What a `terminal/*` request gets.
pub enum Handled {
    Now(Answer),
    /// `wait_for_exit` on a running terminal: answer when it exits.
    WhenExited(String),
}

/// Whether `method` is one of the `terminal/*` methods these terminals serve: the session
/// serves them when terminals are advertised, and names a call of one a breach otherwise.
pub fn serves(method: Method) -> bool {
    matches!(
        method,
        Method::TerminalCreate | Method::TerminalOutput | Method::TerminalWaitForExit | Method::TerminalKill | Method::TerminalRelease
    )
}

/// The session's terminals.
#[derive(Default)]
pub struct Terminals {
    next: u64,
    open: HashMap<String, Terminal>,
    /// The harness's network namespace: its commands run inside the same fence.
    netns: Option<checkfu_wire_sandbox::fence::Join>,
    /// The image the harness runs in, where its commands run too.
    inside: Option<Arc<Inside>>,
    /// The run's cancellation: a signal stops every command's group, and none starts after.
    cancel: Cancel,
}

impl Terminals {
    /// Terminals whose commands join `netns` (the harness's fence), if any, and run in the
    /// harness's image, if it has one, each spawned under `cancel` (the run's).
    pub fn fenced(netns: Option<checkfu_wire_sandbox::fence::Join>, inside: Option<Arc<Inside>>, cancel: Cancel) -> Terminals {
        Terminals { netns, inside, cancel, ..Terminals::default() }
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
    pub fn handle(&mut self, method: Method, params: &Value, workspace: &Workspace) -> Handled {
        if method == Method::TerminalCreate {
            return Handled::Now(self.create(params, workspace));
        }
        let id = params.get("terminalId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let Some(terminal) = self.open.get_mut(&id) else {
            return Handled::Now(Err((INVALID_PARAMS, format!("no terminal `{id}`"))));
        };
        Handled::Now(match method {
            Method::TerminalOutput => {
                let exit = terminal.poll().map(exit_json);
                let output = terminal.output.lock().unwrap_or_else(|e| e.into_inner());
                Ok(json!({"output": output.text(), "truncated": output.truncated(), "exitStatus": exit}))
            }
            Method::TerminalWaitForExit => match terminal.poll() {
                Some(status) => Ok(exit_json(status)),
                None => return Handled::WhenExited(id),
            },
            Method::TerminalKill => {
                terminal.kill();
                Ok(json!({}))
            }
            Method::TerminalRelease => {
                terminal.kill();
                self.open.remove(&id);
                Ok(json!({}))
            }
            _ => Err((super::client::METHOD_NOT_FOUND, format!("`{method}` is not offered by this client"))),
        })
    }

    fn create(&mut self, params: &Value, workspace: &Workspace) -> Answer {
        let command = params.get("command").and_then(Value::as_str).unwrap_or_default();
        let args: Vec<&str> =
            params.get("args").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) => workspace.resolve_read(cwd).map_err(|r| (INVALID_PARAMS, format!("cwd {cwd}: {r}")))?,
            None => workspace.root().to_path_buf(),
        };
        let limit = params.get("outputByteLimit").and_then(Value::as_u64).map_or(DEFAULT_LIMIT, |l| l as usize);
        // A command without `args` is a shell line, as ACP's reference client (Zed) runs it and
        // as claude-code-acp sends its Bash tool's command: run it with `sh -c`.
        let argv: Vec<OsString> = if args.is_empty() && command.contains(char::is_whitespace) {
            ["sh", "-c", command].iter().map(OsString::from).collect()
        } else {
            std::iter::once(command).chain(args.iter().copied()).map(OsString::from).collect()
        };
        // In an image, the command runs in it, from the directory as the harness sees it.
        let seen = workspace.harness_path(&cwd);
        // A terminal's own variables: for the command itself, inside the image when it runs
        // in one (never for the runtime's client on the host).
        let own_env: Vec<(OsString, OsString)> = params
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| Some((OsString::from(v.get("name")?.as_str()?), OsString::from(v.get("value")?.as_str()?))))
            .collect();
        let (argv, inherit) = match &self.inside {
            Some(inside) => {
                let command =
                    (inside.argv)(&argv, &seen, &own_env).map_err(|e| (-32603, format!("cannot run `{command}` in the image: {e}")))?;
                (command.argv, command.inherit)
            }
            None => (argv, None),
        };
        let Some((program, rest)) = argv.split_first() else {
            return Err((INVALID_PARAMS, String::from("no command")));
        };
        let mut spawn = Command::new(program);
        spawn.args(rest);
        spawn.current_dir(&cwd).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        if let Some(inside) = &self.inside {
            // The runtime's client runs on the host: its own variables only, from `/`.
            spawn.env_clear().envs(inside.env.iter().map(|(k, v)| (k, v))).current_dir("/");
            if let Some(fd) = &inherit {
                inherit_on_exec(&mut spawn, std::os::fd::AsRawFd::as_raw_fd(fd));
            }
        } else {
            // The command's `PWD` is its `cwd`, not the runner's; the harness's `env` may still set it.
            working_directory(&mut spawn, Some(&seen));
            spawn.envs(own_env.iter().map(|(k, v)| (k, v)));
        }
        if let Some(fd) = self.netns {
            checkfu_wire_sandbox::fence::join_on_exec(&mut spawn, fd);
        }
        // In a process group of its own, registered with `crate::interrupt` under the run's token.
        let mut group = Group::spawn(&mut spawn, &self.cancel).map_err(|e| (-32603, format!("cannot run `{command}`: {e}")))?;
        let output = Arc::new(Mutex::new(Tail::new(limit)));
        let mut readers = Vec::new();
        let (_, stdout, stderr) = group.take_stdio();
        if let Some(stdout) = stdout {
            let sink = Arc::clone(&output);
            readers.push(std::thread::spawn(move || drain(stdout, sink)));
        }
        if let Some(stderr) = stderr {
            let sink = Arc::clone(&output);
            readers.push(std::thread::spawn(move || drain(stderr, sink)));
        }
        self.next += 1;
        let id = format!("term-{}", self.next);
        self.open.insert(id.clone(), Terminal { group, output, readers, exit: None });
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

    /// Runs `line` through `sh -c` and answers its `terminal/output` once `exited` says it
    /// has exited, as a harness's `wait_for_exit` then `output` sees it.
    fn output_after_exit(terminals: &mut Terminals, workspace: &Workspace, line: &str) -> Value {
        let params = serde_json::json!({"sessionId": "s", "command": "sh", "args": ["-c", line]});
        let Handled::Now(Ok(created)) = terminals.handle(Method::TerminalCreate, &params, workspace) else { panic!("created") };
        let id = created["terminalId"].as_str().expect("id").to_owned();
        let until = Instant::now() + Duration::from_secs(20);
        while terminals.exited(&id).is_none() {
            assert!(Instant::now() < until, "the command exits");
            std::thread::sleep(Duration::from_millis(2));
        }
        let Handled::Now(Ok(output)) =
            terminals.handle(Method::TerminalOutput, &serde_json::json!({"sessionId": "s", "terminalId": id}), workspace)
        else {
            panic!("output")
        };
        output
    }

    #[test]
    fn output_still_in_a_pipe_when_the_command_exits_is_in_the_answer_after_it() {
        // `sh` exits at once; what it started writes 200 ms later and then closes the pipe,
        // well inside the grace. (Before, exit was answered as soon as `sh` was gone, and
        // under load a command's own last writes could be missed the same way.)
        let mut terminals = Terminals::default();
        let output = output_after_exit(&mut terminals, &Workspace::create().expect("workspace"), "(sleep 0.2; printf late) & printf early");
        assert_eq!(output["output"], "earlylate");
        assert_eq!(output["exitStatus"]["exitCode"], 0);
    }

    #[test]
    fn a_command_that_leaves_its_pipe_held_is_exited_after_the_grace() {
        let mut terminals = Terminals::default();
        // The background `sleep` keeps stdout open: no end of file comes.
        let output = output_after_exit(&mut terminals, &Workspace::create().expect("workspace"), "printf done; sleep 30 &");
        assert_eq!(output["output"], "done");
        let still_open = terminals.open.values().all(Terminal::output_open);
        assert!(still_open, "exited was answered while `sleep` still held the pipe, not when it ended");
        // Teardown kills what the command left in its group, so the readers end.
        terminals.kill_all();
        for terminal in terminals.open.values_mut() {
            let reader = terminal.readers.pop().expect("a reader");
            reader.join().expect("the reader ends once the group is killed");
        }
    }

    #[test]
    fn a_command_s_pwd_is_the_directory_it_runs_in() {
        let workspace = Workspace::create().expect("workspace");
        let mut terminals = Terminals::default();
        // `env`, not a shell, which would mend a `PWD` that does not name its directory.
        let output = output_after_exit(&mut terminals, &workspace, "exec env");
        let lines: Vec<&str> = output["output"].as_str().unwrap_or_default().lines().collect();
        assert!(lines.contains(&format!("PWD={}", workspace.root().display()).as_str()), "{lines:?}");
        assert!(!lines.iter().any(|l| l.starts_with("OLDPWD=")), "{lines:?}");
    }

    #[test]
    fn a_command_line_without_args_runs_through_the_shell() {
        let workspace = Workspace::create().expect("workspace");
        let mut terminals = Terminals::default();
        let params = serde_json::json!({"sessionId": "s", "command": "printf '%s' one two"});
        let Handled::Now(Ok(created)) = terminals.handle(Method::TerminalCreate, &params, &workspace) else { panic!("created") };
        let id = created["terminalId"].as_str().expect("id").to_owned();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while terminals.exited(&id).is_none() {
            assert!(std::time::Instant::now() < until, "the command exits");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let Handled::Now(Ok(output)) =
            terminals.handle(Method::TerminalOutput, &serde_json::json!({"sessionId": "s", "terminalId": id}), &workspace)
        else {
            panic!("output")
        };
        assert_eq!(output["output"], "onetwo");
        terminals.kill_all();
    }
}
