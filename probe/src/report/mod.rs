//! The report of a probe run, whichever lane ran: one [`Report`] with the members every lane
//! has (the steps, the nonce, the model plane, the image and what to do next), then the
//! lane's own, a [`LaneReport`] the lane's module implements. It is the one type every
//! run ends with, written as one JSON object (`--format json`) or a few lines
//! ([`text`]).
//!
//! - [`steps`]: each step's record and the bookkeeping both lanes share;
//! - [`process`]: how a harness process ended, as both lanes report it;
//! - [`cases`]: the report as test cases, which `--format junit` and `--format ctrf` write.

pub mod cases;
mod ctrf;
mod junit;
pub mod process;
pub mod steps;
mod text;

use std::any::Any;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

use crate::image::run::ImageRun;
use crate::model_plane::ModelPlane;
use crate::next::NextSteps;
use crate::outcome::Outcome;
use crate::verdict::compaction::CompactionCheck;
pub use cases::Case;
use checkfu_wire::catalog::{self, Protocol, StepName};
pub(crate) use steps::Steps;
pub use steps::{Step, StepStatus};

/// The qualification every local result carries: useful author feedback, never evidence.
pub const QUALIFICATION: &str = "unsigned_local_only";

/// The reason of every turn check when no prompt was sent (and of `context_compaction` for a
/// lane that judged no turn's compaction).
pub const NO_TURN: &str = "no turn was observed";

/// The result of a probe run.
#[derive(Debug, Serialize)]
pub struct Report {
    pub qualification: &'static str,
    /// The lane that ran (`acp-v1`, `oneshot-v1`).
    #[serde(serialize_with = "protocol_name")]
    pub protocol: Protocol,
    /// Name → step, in the order they ended.
    #[serde(rename = "steps", serialize_with = "steps_map")]
    pub steps: Vec<(StepName, Step)>,
    #[serde(flatten)]
    pub lane: Box<dyn LaneReport>,
    pub nonce: String,
    /// What the relay served and refused, and the catalog binding (`--harness`).
    pub model_plane: ModelPlane,
    /// The image the harness ran in (`--image`, `--build-context`), and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageRun>,
    /// The signal that stopped the run (`SIGINT`, `SIGTERM`, `SIGHUP`), if one did
    /// ([`crate::interrupt`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<&'static str>,
    /// What to do next after an image run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<NextSteps>,
    /// What the run noticed that may explain a failure without failing it: a home file that
    /// does not parse as its format ([`crate::config_file`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The harness as the flags that register it (`--protocol`, `--entrypoint`, the lane's
    /// own), for the next steps.
    #[serde(skip)]
    pub profile: Vec<String>,
}

/// The lane's own part of the report, written beside the shared members. The spine, the
/// text and the CI formats ask it only through these methods, so a new lane is a new
/// implementation (in its own module), never a new arm here. Its readers outside the probe
/// (a bench, a test) reach the lane's own type through [`LaneReport::as_any`].
pub trait LaneReport: std::fmt::Debug + Send + Sync + Any {
    /// The lane's members as JSON, flattened into the report's object.
    fn members(&self) -> serde_json::Value;

    /// What drove the harness (the ACP driver, the one-shot's), a property of the CI formats.
    fn driver(&self) -> &str;

    /// The lane's own run properties of the CI formats (the ACP lane's: the version that ran).
    fn properties(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// What besides a step fails the run, first: a check, the grammar, a breach, ….
    fn first_failure(&self) -> Option<String>;

    /// The observation trace `--trace` writes.
    fn trace(&self) -> &str;

    /// The recorded wire `--record` writes; `None` for a lane without one.
    fn wire_record(&self) -> Option<&[u8]> {
        None
    }

    /// The lane's check of the turn's compaction under an enforced window, when it made one.
    fn context_compaction(&self) -> Option<&CompactionCheck> {
        None
    }

    /// The declared paths and values whose step did not run and pass, as `member: value`.
    /// `add` registers the declaration whole, so a run that left one of them unproven did
    /// not pass as `add` would register it.
    fn unproven(&self, steps: &[(StepName, Step)]) -> Vec<String>;

    /// Judges the lane's requirements once every step of the run has ended (teardown too).
    fn judge_requirements(&mut self, _steps: &[(StepName, Step)]) {}

    /// Sets the catalog entry's ceiling beside what the run realized (`--harness`), for a
    /// lane that admits a declaration.
    fn bind_ceiling(&mut self, _entry: &catalog::Harness) {}

    /// The text report's lines before the steps (what ran).
    fn text_head(&self, out: &mut String);

    /// The text report's lines after the steps: the harness's own words when a step
    /// `failed`, then anything the lane says before the model plane's summary.
    fn text_after_steps(&self, out: &mut String, failed: bool);

    /// The text report's lines after the model plane's summary (`report` is the whole).
    fn text_tail(&self, out: &mut String, report: &Report);

    /// The lane's test cases after the steps' (its checks, its requirements); `wire` is the
    /// excerpt a failed case without an observation of its own carries.
    fn cases(&self, cases: &mut Vec<Case>, wire: Option<&str>);

    /// The lane's own report type, for a reader that knows the lane.
    fn as_any(&self) -> &dyn Any;
}

impl Serialize for dyn LaneReport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.members().serialize(s)
    }
}

/// When a run started and stopped by the wall clock, which the formats a CI reads carry
/// (the report itself times its steps on the monotonic clock).
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub start: SystemTime,
    pub stop: SystemTime,
}

impl Window {
    pub fn duration(&self) -> Duration {
        self.stop.duration_since(self.start).unwrap_or_default()
    }

    fn start_ms(&self) -> u64 {
        epoch_ms(self.start)
    }

    fn stop_ms(&self) -> u64 {
        epoch_ms(self.stop)
    }
}

fn epoch_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn protocol_name<S: Serializer>(protocol: &Protocol, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(protocol.name())
}

fn steps_map<S: Serializer>(list: &[(StepName, Step)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(list.len()))?;
    for (name, step) in list {
        map.serialize_entry(name.name(), step)?;
    }
    map.end()
}

impl Report {
    /// Every step passed, no check failed, the harness kept to its grammar, it matched its
    /// catalog entry, and no signal stopped the run.
    pub fn passed(&self) -> bool {
        self.first_failure().is_none()
    }

    /// What failed the run first, in one line: a step, then a check or the grammar, then
    /// the catalog binding, then a signal; `None` when it passed.
    pub fn first_failure(&self) -> Option<String> {
        let step = self.steps.iter().find_map(|(name, s)| match &s.outcome {
            Outcome::Failed(reason) => Some((name, reason)),
            _ => None,
        });
        if let Some((name, reason)) = step {
            return Some(format!("step {name}: {reason}"));
        }
        self.lane
            .first_failure()
            .or_else(|| self.model_plane.mismatches().first().map(|m| format!("catalog: {m}")))
            .or_else(|| self.interrupted.map(|signal| format!("interrupted by {signal}")))
    }

    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        text.push('\n');
        text
    }

    pub fn to_text(&self) -> String {
        text::render(self)
    }

    /// The report as JUnit XML (`--format junit`), for a run that took `window`.
    pub fn to_junit(&self, window: Window) -> Result<String, quick_junit::SerializeError> {
        junit::render(self, window)
    }

    /// The report as a CTRF document (`--format ctrf`), for a run that took `window`.
    pub fn to_ctrf(&self, window: Window) -> String {
        ctrf::render(self, window)
    }

    /// The observation trace `--trace` writes (the one-shot lane's first run's).
    pub fn trace(&self) -> &str {
        self.lane.trace()
    }

    /// The recorded wire `--record` writes; `None` for a lane without an ACP wire.
    pub fn wire_record(&self) -> Option<&[u8]> {
        self.lane.wire_record()
    }

    /// The model calls the relay served, as `--record-model` writes them (JSON Lines).
    pub fn model_calls(&self) -> String {
        self.model_plane.calls_jsonl()
    }
}
