//! How a harness's process ended, as both lanes report it: its exit, how teardown ended it,
//! what of its group was left, and the tail of its stderr.

use std::fmt::Write as _;
use std::process::ExitStatus;

use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use crate::outcome::{Kind, Reason};
use crate::session::{Ending, Teardown};

/// The end of one harness process: the members both lanes report for it.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessEnd {
    pub pid: u32,
    /// `{"code": n}` or `{"signal": n}`; `null` if it could not be reaped.
    pub exit: Value,
    /// How teardown ended it (`exited_on_eof`, `terminated`, `killed`, …).
    #[serde(serialize_with = "ending_name")]
    pub ending: Ending,
    /// Processes of its group that teardown had to end after the harness itself was gone.
    pub reaped_children: usize,
    /// Processes of its group still alive after teardown (always empty unless a process
    /// resisted SIGKILL).
    pub leftover_processes: Vec<u32>,
    pub stderr_bytes: u64,
    /// The last bytes of its stderr (at most `session::process::STDERR_TAIL`, cut on a character boundary).
    pub stderr_tail: String,
}

fn ending_name<S: Serializer>(ending: &Ending, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(ending.name())
}

impl ProcessEnd {
    /// The end of process `pid` as `teardown` found it, with its stderr (bytes written, tail).
    pub fn of(pid: u32, teardown: &Teardown, stderr: (u64, String)) -> ProcessEnd {
        ProcessEnd {
            pid,
            exit: exit_json(teardown.status),
            ending: teardown.ending,
            reaped_children: teardown.reaped_children,
            leftover_processes: teardown.leftover.clone(),
            stderr_bytes: stderr.0,
            stderr_tail: stderr.1,
        }
    }
}

/// Why a teardown is a failed step, if it is: a process of the group survived it, or the
/// harness had to be killed or could not be reaped. `who` names the harness (`harness`,
/// `CLI`); `ignored` what it ignored before SIGKILL.
pub fn teardown_fault(teardown: &Teardown, who: &str, ignored: &str) -> Option<Reason> {
    let words = if !teardown.leftover.is_empty() {
        format!("processes of the {who}'s group survived teardown: {:?}", teardown.leftover)
    } else {
        match teardown.ending {
            Ending::Killed => format!("the {who} ignored {ignored}; it was killed"),
            Ending::Unreaped => format!("the {who} could not be reaped after SIGKILL"),
            _ => return None,
        }
    };
    Some(Reason::new(Kind::Teardown, words))
}

/// An exit as the report writes it: `{"code": n}`, `{"signal": n}`, or `null` when the
/// harness could not be reaped.
pub fn exit_json(status: Option<ExitStatus>) -> Value {
    let Some(status) = status else { return Value::Null };
    match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => json!({"code": code}),
        (None, Some(signal)) => json!({"signal": signal}),
        (None, None) => Value::Null,
    }
}

/// The most lines of a harness's stderr the text report shows when a step failed.
const STDERR_LINES: usize = 20;

/// The end of a harness's stderr as the text report shows it when a step failed: its last
/// [`STDERR_LINES`] lines, each after `stderr   ` (a harness that prints its error and exits
/// says why here, not only in the JSON report). Empty when it wrote nothing.
pub fn stderr_lines(label: &str, tail: &str) -> String {
    let lines: Vec<&str> = tail.lines().filter(|l| !l.trim().is_empty()).collect();
    let shown = &lines[lines.len().saturating_sub(STDERR_LINES)..];
    let mut out = String::new();
    for line in shown {
        let _ = writeln!(out, "stderr   {label}{line}");
    }
    out
}

/// A conformance report as the `checks` member of a probe's JSON, as `conform --format json`
/// prints it: check name → verdict, in catalog order. Both lanes keep their checks as the
/// checker's values and write them only here.
pub fn serialize_checks<S: Serializer>(report: &checkfu_wire::conformance::Report, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(report.checks.len()))?;
    for (name, outcome) in &report.checks {
        map.serialize_entry(name, outcome)?;
    }
    map.end()
}
