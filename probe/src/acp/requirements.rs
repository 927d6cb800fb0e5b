//! The requirement registry judged over one run of the ACP lane: every requirement of the
//! catalog (`checkfu_wire::catalog::Requirement`), each `passed`, `failed` or `not_tested`
//! with the reason, and the verdict ACP's test kit (`acp-tck`) would draw from them.
//!
//! A requirement's judge is the catalog's: a step of the report or a conformance check
//! decides by its own outcome (skipped or not reported: not tested); the wire fails one on a
//! breach of its id, or on what the run's own exchange answered, and passes it only when
//! the run exercised what it asks. Nothing passes for want of a failure: a requirement the
//! run never put to the agent is `not_tested`, which keeps a mandatory one from a
//! conformant verdict.

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::report::{AcpReport, Cancellation};
use crate::outcome::Outcome;
use crate::report::steps::Step;
use crate::verdict::TurnTelemetry;
use checkfu_wire::catalog::{Judge, Requirement, StepName, Tier};
use checkfu_wire::decode::tables::PROTOCOL_VERSION;

/// The stop reason a cancelled prompt must end with.
const CANCELLED: &str = "cancelled";

/// A requirement's status in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    Failed,
    NotTested,
}

/// One requirement as the run judged it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judged {
    #[serde(serialize_with = "requirement_id")]
    pub id: Requirement,
    #[serde(serialize_with = "tier_name")]
    pub tier: Tier,
    pub status: Status,
    /// Why it failed, what passed it, or why it was not tested.
    pub reason: String,
}

fn requirement_id<S: Serializer>(r: &Requirement, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.id())
}

fn tier_name<S: Serializer>(t: &Tier, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(t.name())
}

/// The kit's verdict over the requirements: conformant only with no mandatory requirement
/// failed or not tested and no capability requirement failed (a capability the agent did
/// not offer stays untested without cost). Advisory and informational ones never count.
/// `not_judged` says why the kit gave no verdict at all (a run in a protocol version whose
/// requirements the registry does not hold): `conformant` is then false, for want of a
/// verdict, and the report prints neither "conformant" nor "not conformant".
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct KitVerdict {
    pub conformant: bool,
    pub mandatory_failed: Vec<&'static str>,
    pub mandatory_not_tested: Vec<&'static str>,
    pub capability_failed: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_judged: Option<&'static str>,
}

/// Why an ACP v2 run has no kit verdict: the registry's requirements are ACP v1's.
pub const NOT_RUN_UNDER_V2: &str = "not run under ACP v2: the test kit's requirements are ACP v1's; the v2 run is judged by its own steps";

impl KitVerdict {
    pub fn of(judged: &[Judged]) -> KitVerdict {
        let ids = |tier: Tier, status: Status| -> Vec<&'static str> {
            judged.iter().filter(|j| j.tier == tier && j.status == status).map(|j| j.id.id()).collect()
        };
        let mandatory_failed = ids(Tier::Mandatory, Status::Failed);
        let mandatory_not_tested = ids(Tier::Mandatory, Status::NotTested);
        let capability_failed = ids(Tier::Capability, Status::Failed);
        let conformant = mandatory_failed.is_empty() && mandatory_not_tested.is_empty() && capability_failed.is_empty();
        KitVerdict { conformant, mandatory_failed, mandatory_not_tested, capability_failed, not_judged: None }
    }

    /// No verdict, saying why (`NOT_RUN_UNDER_V2`).
    pub fn not_judged(why: &'static str) -> KitVerdict {
        KitVerdict { not_judged: Some(why), ..KitVerdict::default() }
    }

    /// The verdict in one line: the counts by status, then what keeps it from conformant.
    pub fn line(&self, judged: &[Judged]) -> String {
        if let Some(why) = self.not_judged {
            return format!("requirements: none of {} judged; acp-tck verdict: not judged ({why})", judged.len());
        }
        let count = |status: Status| judged.iter().filter(|j| j.status == status).count();
        let mut line = format!(
            "requirements {} passed, {} failed, {} not tested; acp-tck verdict: ",
            count(Status::Passed),
            count(Status::Failed),
            count(Status::NotTested)
        );
        if self.conformant {
            line.push_str("conformant");
            return line;
        }
        line.push_str("not conformant (");
        let mut causes = Vec::new();
        for (what, ids) in [
            ("mandatory failed", &self.mandatory_failed),
            ("capability failed", &self.capability_failed),
            ("mandatory not tested", &self.mandatory_not_tested),
        ] {
            if !ids.is_empty() {
                causes.push(format!("{what}: {}", few(ids)));
            }
        }
        line.push_str(&causes.join("; "));
        line.push(')');
        line
    }
}

/// At most the first three ids, then how many more.
fn few(ids: &[&str]) -> String {
    const SHOWN: usize = 3;
    let mut text = ids.iter().take(SHOWN).copied().collect::<Vec<_>>().join(", ");
    if ids.len() > SHOWN {
        text.push_str(&format!(" and {} more", ids.len() - SHOWN));
    }
    text
}

/// What the run put to the agent that no step or check reports, for the wire's requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exercised {
    /// Responses that answered a pending request of the client's.
    pub responses: usize,
    /// Notifications the client sent.
    pub notifications_sent: usize,
    /// A prompt was sent: a turn ran.
    pub turn: bool,
    /// The client advertised file system access, and terminals.
    pub client_fs: bool,
    pub terminals: bool,
    /// Permission requests the client refused in a turn.
    pub permissions_refused: usize,
    /// The `initialize` result, when `initialize` was answered with one.
    pub initialize: Option<Value>,
    /// The main session's stdout beside well-formed messages, and its `session/new` results.
    pub hygiene: crate::session::Hygiene,
    pub sessions: Vec<Value>,
    /// Why the fresh agent process of the requirement probes did not run, when it did not.
    pub probe_skipped: Option<String>,
}

/// Every requirement of the registry, judged over `report` and the run's `steps`.
pub fn judge(report: &AcpReport, steps: &[(StepName, Step)]) -> Vec<Judged> {
    // The registry is the test kit's ACP v1 requirements: a v2 run is judged by its own steps
    // (`super::v2`), and none of these is put to it.
    let v2 = report.acp_version == super::negotiate::V2;
    Requirement::ALL
        .iter()
        .map(|&id| {
            let (status, reason) = match id.judge() {
                _ if v2 => (Status::NotTested, String::from(NOT_RUN_UNDER_V2)),
                Judge::Step(step) => by_step(step, steps),
                Judge::Check(check) => by_check(check.name(), report),
                Judge::Wire => by_wire(id, report),
            };
            Judged { id, tier: id.tier(), status, reason }
        })
        .collect()
}

fn by_step(name: StepName, steps: &[(StepName, Step)]) -> (Status, String) {
    let Some((_, step)) = steps.iter().find(|(n, _)| *n == name) else {
        return (Status::NotTested, format!("step `{name}` was not reported in this run"));
    };
    match &step.outcome {
        Outcome::Passed => (Status::Passed, format!("step `{name}` passed")),
        Outcome::Failed(reason) => (Status::Failed, format!("step `{name}`: {reason}")),
        Outcome::Skipped(why) => (Status::NotTested, format!("step `{name}` skipped: {why}")),
    }
}

fn by_check(name: &str, report: &AcpReport) -> (Status, String) {
    match report.report.outcome(name).map(Outcome::from) {
        Some(Outcome::Passed) => (Status::Passed, format!("check `{name}` passed")),
        Some(Outcome::Failed(reason)) => (Status::Failed, format!("check `{name}`: {reason}")),
        Some(Outcome::Skipped(why)) => (Status::NotTested, format!("check `{name}` skipped: {why}")),
        None => (Status::NotTested, format!("check `{name}` was not made in this run")),
    }
}

/// A wire requirement: failed by a breach of it, else by the rule of what the run exercised.
fn by_wire(id: Requirement, report: &AcpReport) -> (Status, String) {
    let probe = report.requirement_probe.as_ref();
    let probe_breaches = probe.into_iter().flat_map(|p| p.breaches.iter());
    let breaches: Vec<_> = report.wire.breaches.iter().chain(probe_breaches).filter(|b| b.requirement() == id).collect();
    if let Some(first) = breaches.first() {
        let more = if breaches.len() > 1 { format!(" ({} breaches in all)", breaches.len()) } else { String::new() };
        return (Status::Failed, format!("{first}{more}"));
    }
    if let Some(judged) = over_every_process(id, report) {
        return judged;
    }
    if let Some((_, status, reason)) = probe.and_then(|p| p.judged.iter().find(|(r, ..)| *r == id)) {
        return (*status, format!("{reason} (the fresh agent process)"));
    }
    let unprobed = || match (&report.exercised.probe_skipped, id.capability()) {
        (Some(why), _) => (Status::NotTested, format!("the fresh agent process of the requirement probes did not run: {why}")),
        (None, Some(gate)) if probe.is_some() => (Status::NotTested, format!("the agent does not offer `{gate}`")),
        (None, _) => (Status::NotTested, String::from("the probe does not exercise it yet")),
    };
    exercised(id, report).unwrap_or_else(unprobed)
}

/// The requirements judged over the stdout and the sessions of every agent process of the
/// run (the main one, and the fresh one when it ran); `None` for the others.
fn over_every_process(id: Requirement, report: &AcpReport) -> Option<(Status, String)> {
    let probe = report.requirement_probe.as_ref();
    let hygiene: Vec<&crate::session::Hygiene> = std::iter::once(&report.exercised.hygiene).chain(probe.map(|p| &p.hygiene)).collect();
    let lines: usize = hygiene.iter().map(|h| h.lines).sum();
    let processes = hygiene.len();
    let read = || (Status::Passed, format!("{lines} line(s) read from the stdout of {processes} agent process(es)"));
    let none_read = || (Status::NotTested, String::from("the agent wrote nothing on stdout"));
    let first = |pick: &dyn Fn(&crate::session::Hygiene) -> Option<String>| hygiene.iter().find_map(|h| pick(h));
    use Requirement as R;
    Some(match id {
        R::ACPTRANSPORT001 => {
            match first(&|h| h.not_json.clone().map(|l| format!("{} line(s) on stdout were no JSON, the first `{l}`", h.not_json_lines))) {
                Some(reason) => (Status::Failed, reason),
                None if lines > 0 => read(),
                None => none_read(),
            }
        }
        R::ACPTRANSPORT002 => {
            match first(&|h| h.not_utf8.clone().map(|l| format!("{} line(s) on stdout were not UTF-8, the first `{l}`", h.not_utf8_lines)))
            {
                Some(reason) => (Status::Failed, reason),
                None if lines > 0 => read(),
                None => none_read(),
            }
        }
        R::ACPSCHEMA001 => match first(&|h| h.rejections.first().map(|(why, _)| format!("a message the schema refuses: {why}"))) {
            Some(reason) => (Status::Failed, reason),
            None if lines > 0 => (Status::Passed, format!("every one of {lines} message(s) the schema accepts")),
            None => none_read(),
        },
        R::ACPJSONRPC002 => {
            match first(&|h| h.rejections.iter().find(|(_, response)| *response).map(|(why, _)| format!("a response refused: {why}"))) {
                Some(reason) => (Status::Failed, reason),
                None if report.exercised.responses > 0 => {
                    (Status::Passed, String::from("every response held `result` or a well-formed `error`"))
                }
                None => (Status::NotTested, String::from("no response to a request of the client's arrived")),
            }
        }
        R::ACPPROMPT002 => {
            let updates: usize = hygiene.iter().map(|h| h.prompt_updates).sum();
            match first(&|h| h.foreign_update.clone()) {
                Some(reason) => (Status::Failed, reason),
                None if updates > 0 => (Status::Passed, format!("{updates} update(s) of prompted sessions, each naming its session")),
                None => (Status::NotTested, String::from("no `session/update` arrived while a prompt was out")),
            }
        }
        R::ACPCONFIG003 => {
            let sessions: Vec<&Value> = report.exercised.sessions.iter().chain(probe.into_iter().flat_map(|p| p.sessions.iter())).collect();
            boolean_options(&sessions)
        }
        R::ACPAUTH002 => terminal_auth(report.exercised.initialize.as_ref()),
        _ => return None,
    })
}

/// ACP-CONFIG-003 over the `session/new` results: the client never advertises boolean
/// config options.
fn boolean_options(sessions: &[&Value]) -> (Status, String) {
    if sessions.is_empty() {
        return (Status::NotTested, String::from("no `session/new` was answered with a result"));
    }
    let options = sessions.iter().flat_map(|s| s.get("configOptions").and_then(Value::as_array).into_iter().flatten());
    let boolean = options.filter(|o| o.get("type").and_then(Value::as_str) == Some("boolean")).find_map(|o| o.get("id"));
    match boolean {
        Some(id) => (Status::Failed, format!("`session/new` offered the boolean config option {id}, which the client did not advertise")),
        None => (Status::Passed, format!("{} `session/new` result(s) offered no boolean config option", sessions.len())),
    }
}

/// ACP-AUTH-002 over the `initialize` result: the client never advertises terminal
/// authentication.
fn terminal_auth(result: Option<&Value>) -> (Status, String) {
    let Some(result) = result else { return (Status::NotTested, String::from("`initialize` was not answered with a result")) };
    let methods = result.get("authMethods").and_then(Value::as_array).into_iter().flatten();
    match methods.filter(|m| m.get("type").and_then(Value::as_str) == Some("terminal")).find_map(|m| m.get("id")) {
        Some(id) => (Status::Failed, format!("`initialize` offered the terminal auth method {id}, which the client did not advertise")),
        None => (Status::Passed, String::from("`initialize` offered no terminal auth method")),
    }
}

/// What the run shows of a wire requirement it exercises; `None` for one it does not.
fn exercised(id: Requirement, report: &AcpReport) -> Option<(Status, String)> {
    let e = &report.exercised;
    let not_tested = |why: &str| Some((Status::NotTested, why.to_owned()));
    let no_turn = || not_tested("no prompt turn ran");
    use Requirement as R;
    match id {
        R::ACPJSONRPC001 if e.responses > 0 => {
            Some((Status::Passed, format!("{} response(s) answered the client's requests, each with its id as sent", e.responses)))
        }
        R::ACPJSONRPC001 => not_tested("no response to a request of the client's arrived"),
        R::ACPJSONRPC003 if e.notifications_sent > 0 => {
            Some((Status::Passed, format!("{} notification(s) sent and none answered", e.notifications_sent)))
        }
        R::ACPJSONRPC003 => not_tested("the client sent no notification"),
        R::ACPINIT002 => initialize_version(e.initialize.as_ref()),
        R::ACPINIT004 => agent_info(e.initialize.as_ref()),
        R::ACPCANCEL001 => cancelled(report.cancellation.as_ref()),
        R::ACPCANCEL002 => match report.cancellation.as_ref().and_then(|c| c.stop_reason.as_deref()) {
            Some(CANCELLED) => {
                Some((Status::Passed, String::from("the cancelled prompt's answer was followed by no update of its session")))
            }
            _ => not_tested("no prompt was answered `cancelled`"),
        },
        R::ACPCLIENTCAP001 if e.client_fs => not_tested("the client advertised file system access (`--no-client-fs` does not)"),
        R::ACPCLIENTCAP002 if e.terminals => not_tested("the client advertised terminals (`--allow-terminals`)"),
        R::ACPCLIENTCAP001 | R::ACPCLIENTCAP002 | R::ACPCLIENTCAP003 if !e.turn => no_turn(),
        R::ACPCLIENTCAP001 => Some((Status::Passed, String::from("no `fs/*` call in a turn without file system access advertised"))),
        R::ACPCLIENTCAP002 => Some((Status::Passed, String::from("no `terminal/*` call in a turn without terminals advertised"))),
        R::ACPCLIENTCAP003 => Some((Status::Passed, String::from("no `elicitation/create` in a turn; elicitation is never advertised"))),
        R::CHECKFUPERMISSION001 if e.permissions_refused > 0 => Some((
            Status::Passed,
            format!("{} permission request(s) refused and no write or terminal followed in the turn", e.permissions_refused),
        )),
        R::CHECKFUPERMISSION001 => not_tested("no permission request was refused in a turn (`--permission reject` refuses them)"),
        R::CHECKFUTELEMETRY001 => telemetry(report.turn_telemetry.as_ref()),
        _ => None,
    }
}

fn initialize_version(result: Option<&Value>) -> Option<(Status, String)> {
    let Some(result) = result else { return Some((Status::NotTested, String::from("`initialize` was not answered with a result"))) };
    Some(match result.get("protocolVersion") {
        Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => {
            (Status::Passed, format!("asked for version {PROTOCOL_VERSION}, it answered {PROTOCOL_VERSION}"))
        }
        Some(v) => (Status::Failed, format!("asked for version {PROTOCOL_VERSION}, it answered {v}")),
        None => (Status::Failed, String::from("the `initialize` result has no `protocolVersion`")),
    })
}

fn agent_info(result: Option<&Value>) -> Option<(Status, String)> {
    let Some(result) = result else { return Some((Status::NotTested, String::from("`initialize` was not answered with a result"))) };
    let info = &result["agentInfo"];
    Some(match (info["name"].as_str(), info["version"].as_str()) {
        (Some(name), Some(version)) => (Status::Passed, format!("`agentInfo` names {name} {version}")),
        _ => (Status::Failed, String::from("the `initialize` result has no `agentInfo` with a `name` and a `version`")),
    })
}

fn cancelled(cancellation: Option<&Cancellation>) -> Option<(Status, String)> {
    let Some(c) = cancellation else { return Some((Status::NotTested, String::from("no prompt was cancelled in flight"))) };
    Some(match (c.stop_reason.as_deref(), c.settle_ms) {
        (Some(CANCELLED), Some(ms)) => (Status::Passed, format!("the cancelled prompt was answered `cancelled` {ms} ms after the cancel")),
        (Some(other), _) => (Status::Failed, format!("the cancelled prompt was answered `{other}`, not `cancelled`")),
        (None, Some(_)) => (Status::Failed, String::from("the cancelled prompt was answered without a stop reason (an error)")),
        (None, None) => (Status::Failed, String::from("the cancelled prompt was not answered within the window")),
    })
}

fn telemetry(telemetry: Option<&TurnTelemetry>) -> Option<(Status, String)> {
    let Some(t) = telemetry else { return Some((Status::NotTested, String::from("the agent sent no `checkfu.turn`"))) };
    Some(match t.mismatches.first() {
        None => (Status::Passed, String::from("`checkfu.turn` agrees with the relay's record of the turn")),
        Some(first) => (Status::Failed, format!("checkfu.turn {first}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(id: Requirement, status: Status) -> Judged {
        Judged { id, tier: id.tier(), status, reason: String::new() }
    }

    /// One requirement of each tier, from the registry itself.
    fn of_tier(tier: Tier) -> Requirement {
        *Requirement::ALL.iter().find(|r| r.tier() == tier).expect("the registry has a requirement of each tier")
    }

    #[test]
    fn the_kit_s_verdict_counts_mandatory_untested_and_failed_capabilities_only() {
        let [mandatory, capability, advisory, informational] =
            [Tier::Mandatory, Tier::Capability, Tier::Advisory, Tier::Informational].map(of_tier);
        // A capability not offered, an advisory or informational failure: still conformant.
        let all = [
            judged(mandatory, Status::Passed),
            judged(capability, Status::NotTested),
            judged(advisory, Status::Failed),
            judged(informational, Status::Failed),
        ];
        assert!(KitVerdict::of(&all).conformant);
        assert!(KitVerdict::of(&all).line(&all).ends_with("acp-tck verdict: conformant"));
        for (changed, status, blocked) in [
            (0, Status::NotTested, "mandatory not tested"),
            (0, Status::Failed, "mandatory failed"),
            (1, Status::Failed, "capability failed"),
        ] {
            let mut run = all.clone();
            run[changed].status = status;
            let verdict = KitVerdict::of(&run);
            assert!(!verdict.conformant, "{run:?}");
            let line = verdict.line(&run);
            assert!(line.contains(&format!("{blocked}: {}", run[changed].id)), "{line}");
        }
    }

    /// A run with no kit verdict (ACP v2) says so, and never "not conformant" for
    /// requirements it did not run.
    #[test]
    fn a_run_the_kit_does_not_judge_prints_no_verdict() {
        let all: Vec<Judged> = Requirement::ALL.iter().map(|&id| judged(id, Status::NotTested)).collect();
        let verdict = KitVerdict::not_judged(NOT_RUN_UNDER_V2);
        let line = verdict.line(&all);
        assert!(line.contains("acp-tck verdict: not judged (not run under ACP v2"), "{line}");
        assert!(!line.contains("conformant ("), "{line}");
        assert_eq!(serde_json::to_value(&verdict).expect("json")["not_judged"], NOT_RUN_UNDER_V2);
        assert_eq!(serde_json::to_value(KitVerdict::of(&all)).expect("json").get("not_judged"), None);
    }

    #[test]
    fn a_boolean_config_option_or_a_terminal_auth_method_fails_its_requirement() {
        use serde_json::json;
        let select =
            json!({"sessionId": "a", "configOptions": [{"id": "m", "name": "M", "type": "select", "currentValue": "x", "options": []}]});
        let boolean = json!({"sessionId": "b", "configOptions": [{"id": "auto", "name": "A", "type": "boolean", "currentValue": true}]});
        assert_eq!(boolean_options(&[&select]).0, Status::Passed);
        let (status, reason) = boolean_options(&[&select, &boolean]);
        assert_eq!(status, Status::Failed);
        assert!(reason.contains("\"auto\""), "{reason}");
        assert_eq!(boolean_options(&[]).0, Status::NotTested);
        let agent = json!({"authMethods": [{"id": "k", "name": "Key"}]});
        let terminal = json!({"authMethods": [{"id": "k", "name": "Key"}, {"type": "terminal", "id": "login", "name": "Log in"}]});
        assert_eq!(terminal_auth(Some(&agent)).0, Status::Passed);
        let (status, reason) = terminal_auth(Some(&terminal));
        assert_eq!(status, Status::Failed);
        assert!(reason.contains("\"login\""), "{reason}");
        assert_eq!(terminal_auth(None).0, Status::NotTested);
    }

    #[test]
    fn a_long_list_of_ids_is_cut_to_three_and_a_count() {
        assert_eq!(few(&["A", "B", "C", "D", "E"]), "A, B, C and 2 more");
        assert_eq!(few(&["A"]), "A");
    }
}
