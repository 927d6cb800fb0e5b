//! The trace header: the admitted axes the turn ran under and the opted-in cases, and the
//! gating questions the checks ask of them.
//!
//! `{"trace": 1, "declared": {axis: value, ...}, "opt_in": [check, ...]}`. Every axis and
//! value must be in the generated [`catalog::AXES`]; every opt-in name must be a generated
//! [`catalog::CONFORMANCE_CHECKS`] entry marked opt-in. `declared` is required (an empty
//! object says the harness declared nothing); `opt_in` may be omitted. Other keys make the
//! header invalid, so a misspelled `opt_in` cannot silently skip a case.
//!
//! Gating is answered from the tables too: an observation kind is gated when a
//! [`catalog::GATED_EMISSIONS`] row lists it as `observation.<kind>`, and it is admitted when
//! the declared value of the row's axis is at least the row's value in that axis's order. An
//! axis the header does not mention is at its weakest (or its `absent`) value.

use serde_json::Value;

use crate::catalog::{self, Axis, ConformanceCheck, GatedEmission, Upgrade};

/// The parsed first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    declared: Vec<(&'static Axis, &'static str)>,
    opt_in: Vec<&'static ConformanceCheck>,
}

/// The trace format version this reader understands.
const TRACE_VERSION: u64 = 1;

impl Header {
    /// Parses the header line; the error is a message without the line number.
    pub fn parse(line: &str) -> Result<Header, String> {
        let value: Value = serde_json::from_str(line).map_err(|e| format!("missing header: not valid JSON: {e}"))?;
        let Value::Object(object) = value else {
            return Err(String::from("missing header: the first line must be a {\"trace\": 1, \"declared\": {...}} object"));
        };
        match object.get("trace") {
            Some(version) if version.as_u64() == Some(TRACE_VERSION) => {}
            Some(version) => return Err(format!("unsupported trace version {version} (this reader reads {TRACE_VERSION})")),
            None if object.contains_key("kind") => {
                return Err(String::from("missing header: the first line is an observation, not the trace header"))
            }
            None => return Err(String::from("missing header: the first line has no `trace` version")),
        }
        for key in object.keys() {
            if !matches!(key.as_str(), "trace" | "declared" | "opt_in") {
                return Err(format!("header has the unknown key {key:?} (expected trace, declared, opt_in)"));
            }
        }

        let declared = match object.get("declared") {
            Some(Value::Object(declared)) => declared,
            Some(_) => return Err(String::from("header `declared` must be an object of axis → value")),
            None => return Err(String::from("header lacks `declared` (use {} for a harness that declares nothing)")),
        };
        let mut axes = Vec::with_capacity(declared.len());
        for (name, value) in declared {
            let Some(axis) = catalog::axis(name) else {
                let known: Vec<&str> = catalog::AXES.iter().map(|a| a.name).collect();
                return Err(format!("unknown declared axis {name:?} (expected one of {})", known.join(", ")));
            };
            let Some(text) = value.as_str() else {
                return Err(format!("declared axis {name:?} must map to a string value, found {value}"));
            };
            let Some(rank) = axis.rank(text) else {
                return Err(format!("unknown value {text:?} for declared axis {name:?} (expected one of {})", axis.values.join(", ")));
            };
            axes.push((axis, axis.values[rank]));
        }

        let mut opt_in = Vec::new();
        match object.get("opt_in") {
            None => {}
            Some(Value::Array(names)) => {
                for name in names {
                    let Some(name) = name.as_str() else {
                        return Err(format!("header `opt_in` must list check names, found {name}"));
                    };
                    let Some(check) = catalog::CONFORMANCE_CHECKS.iter().find(|c| c.name() == name) else {
                        return Err(format!("header `opt_in` names the unknown check {name:?}"));
                    };
                    if !check.opt_in {
                        return Err(format!("header `opt_in` names {name:?}, which is not an opt-in check"));
                    }
                    opt_in.push(check);
                }
            }
            Some(_) => return Err(String::from("header `opt_in` must be an array of check names")),
        }
        Ok(Header { declared: axes, opt_in })
    }

    /// The declared value of an axis, if the header names it.
    pub fn declared(&self, axis: &str) -> Option<&'static str> {
        self.declared.iter().find(|(a, _)| a.name == axis).map(|(_, v)| *v)
    }

    /// Whether the declared value of `axis` is at least `value` in the axis's order.
    pub fn declares_at_least(&self, axis: &str, value: &str) -> bool {
        let Some(axis) = catalog::axis(axis) else {
            return false;
        };
        let held = self.declared(axis.name).or(axis.absent).and_then(|v| axis.rank(v)).unwrap_or(0);
        axis.rank(value).is_some_and(|needed| held >= needed)
    }

    /// Whether the trace opts in to the check of that name.
    pub fn opts_in(&self, check: &str) -> bool {
        self.opt_in.iter().any(|c| c.name() == check)
    }

    /// Whether a gated observation kind is admitted by the declaration; `true` for a kind no
    /// gate lists (lane-universal vocabulary).
    pub fn admits(&self, kind: &str) -> bool {
        gate(kind).is_none_or(|gate| self.declares_at_least(gate.axis, gate.value))
    }
}

/// The gated-emissions row listing an observation kind, if any.
pub fn gate(kind: &str) -> Option<&'static GatedEmission> {
    catalog::GATED_EMISSIONS.iter().find(|g| g.members.iter().any(|m| names_kind(m, kind)))
}

/// Whether a gated member (`observation.<kind>`) names the kind.
fn names_kind(member: &str, kind: &str) -> bool {
    member.strip_suffix(kind).is_some_and(|prefix| prefix.ends_with('.'))
}

/// The declaration upgrade whose passing case is the named check (the axis a tri-state
/// control check exercises): `steering_delivered` → mid_run_input native, and so on.
pub fn upgrade_evidenced_by(check: &str) -> Option<&'static Upgrade> {
    catalog::UPGRADES.iter().find(|u| u.evidence == Some(check))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_contract_example_header() {
        let header = Header::parse(r#"{"trace": 1, "declared": {"subagents": "observed", "mid_run_input": "native"}, "opt_in": []}"#)
            .expect("valid header");
        assert_eq!(header.declared("subagents"), Some("observed"));
        assert!(header.declares_at_least("mid_run_input", "native"));
        assert!(!header.declares_at_least("interrupt", "cooperative"));
        assert!(header.admits("steering") && header.admits("subagent_started") && header.admits("tool_use"));
        assert!(!header.opts_in("cooperative_interrupt_drained"));
    }

    #[test]
    fn gating_comes_from_the_gated_emissions_table() {
        for row in catalog::GATED_EMISSIONS {
            for member in row.members {
                let kind = member.rsplit('.').next().unwrap_or(member);
                assert_eq!(gate(kind), Some(row), "{member}");
                let silent = Header::parse(r#"{"trace": 1, "declared": {}}"#).expect("valid header");
                assert!(!silent.admits(kind), "{kind} admitted without its declaration");
            }
        }
        assert_eq!(gate("tool_use"), None);
        assert_eq!(gate("steer"), None, "a suffix that is not the whole kind does not match");
    }

    #[test]
    fn rejects_what_it_cannot_trust() {
        let cases = [
            ("", "missing header"),
            ("[]", "missing header"),
            (r#"{"kind": "ready"}"#, "is an observation"),
            (r#"{"declared": {}}"#, "no `trace` version"),
            (r#"{"trace": 2, "declared": {}}"#, "unsupported trace version 2"),
            (r#"{"trace": 1}"#, "lacks `declared`"),
            (r#"{"trace": 1, "declared": []}"#, "must be an object"),
            (r#"{"trace": 1, "declared": {"steer": "native"}}"#, "unknown declared axis \"steer\""),
            (r#"{"trace": 1, "declared": {"mid_run_input": "queued"}}"#, "unknown value \"queued\""),
            (r#"{"trace": 1, "declared": {"subagents": true}}"#, "must map to a string"),
            (r#"{"trace": 1, "declared": {}, "optin": []}"#, "unknown key \"optin\""),
            (r#"{"trace": 1, "declared": {}, "opt_in": ["drain"]}"#, "unknown check \"drain\""),
            (r#"{"trace": 1, "declared": {}, "opt_in": ["ready_handshake"]}"#, "not an opt-in check"),
            (r#"{"trace": 1, "declared": {}, "opt_in": "cooperative_interrupt_drained"}"#, "must be an array"),
        ];
        for (line, needle) in cases {
            match Header::parse(line) {
                Ok(header) => panic!("{line} parsed as {header:?}"),
                Err(message) => assert!(message.contains(needle), "{line}: {message}"),
            }
        }
    }

    #[test]
    fn every_axis_value_of_the_catalog_is_a_valid_declaration() {
        for axis in catalog::AXES {
            for value in axis.values {
                let line = serde_json::json!({"trace": 1, "declared": { axis.name: value }}).to_string();
                let header = Header::parse(&line).expect("valid header");
                assert_eq!(header.declared(axis.name), Some(*value));
            }
        }
    }
}
