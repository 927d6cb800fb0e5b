//! The mutation test of issue #13: single edits of the real catalog, each run through every
//! check `generate` makes (in-process, see `common::Checker`). Every field value is replaced
//! by each other value of its vocabulary, every list entry is duplicated and removed (and,
//! for closed lists, every missing value added), every map entry is removed, and every axis
//! order is reversed.
//!
//! Each edit must either be refused with diagnostics that all point into the catalog, or be
//! one of the kinds CONTRACT.md allows (`allowed`), and the edited catalog must still keep
//! the contract's rules as this file restates them from the reference page (`contract`),
//! independently of the generator's own checks. README.md lists the kinds that pass.

use crate::common;

use std::collections::BTreeMap;
use std::ops::Range;

use checkfu_wire_codegen::catalog::model::{AxisValues, Catalog, Harness, Mode, Name};
use checkfu_wire_codegen::diagnostic::Class;
use common::Checker;

/// What an edit touched, which decides whether passing is allowed.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A published harness field (`supply`, `model_lane`, ...) given another value.
    Published(&'static str),
    /// A ceiling value moved from one rank to another.
    Ceiling {
        from: usize,
        to: usize,
    },
    /// A driver envelope value changed.
    Envelope,
    /// The connected lane's envelope value changed.
    LaneEnvelope,
    /// A declared member given another value of its member vocabulary.
    Declares,
    /// An entry's mode, an upgrade's field, a pairing's value, a dialect's path.
    Other(&'static str),
    Duplicate(&'static str),
    Remove(&'static str),
    Add(&'static str),
    RemoveKey(&'static str),
    Reverse,
}

struct Mutation {
    kind: Kind,
    what: String,
    text: String,
}

struct Mutations<'t> {
    text: &'t str,
    out: Vec<Mutation>,
}

fn quoted(value: &str) -> String {
    format!("\"{value}\"")
}

impl Mutations<'_> {
    fn splice(&mut self, kind: Kind, what: String, range: Range<usize>, with: &str) {
        let text = format!("{}{}{}", &self.text[..range.start], with, &self.text[range.end..]);
        self.out.push(Mutation { kind, what, text });
    }

    /// Replaces a value by each other value of its vocabulary.
    fn values(&mut self, kind: impl Fn(usize, usize) -> Kind, what: &str, at: &Name, vocabulary: &[&str]) {
        let Some(from) = vocabulary.iter().position(|v| *v == at.as_str()) else { return };
        for (to, other) in vocabulary.iter().enumerate().filter(|(to, _)| *to != from) {
            self.splice(kind(from, to), format!("{what}: {} -> {other}", at.as_str()), at.span.clone(), &quoted(other));
        }
    }

    /// The range that removes one element of an array or inline table, with its separator.
    fn removal(&self, span: Range<usize>) -> Range<usize> {
        let bytes = self.text.as_bytes();
        let mut end = span.end;
        while end < bytes.len() && bytes[end] == b' ' {
            end += 1;
        }
        if end < bytes.len() && bytes[end] == b',' {
            end += 1;
            while end < bytes.len() && matches!(bytes[end], b' ' | b'\n') {
                end += 1;
            }
            return span.start..end;
        }
        let mut start = span.start;
        while start > 0 && matches!(bytes[start - 1], b' ' | b'\n') {
            start -= 1;
        }
        if start > 0 && bytes[start - 1] == b',' {
            return start - 1..span.end;
        }
        span
    }

    /// Duplicates and removes each entry of a list of names; adds each missing value of its
    /// vocabulary when the list is closed. `empty` is where `[]` stands when the list is
    /// empty.
    fn list(&mut self, list: &'static str, owner: &str, items: &[Name], vocabulary: Option<&[&str]>, empty: Option<Range<usize>>) {
        for item in items {
            let what = format!("{owner} {list}: {}", item.as_str());
            self.splice(
                Kind::Duplicate(list),
                format!("{what} duplicated"),
                item.span.start..item.span.start,
                &format!("{}, ", quoted(item.as_str())),
            );
            let removal = self.removal(item.span.clone());
            self.splice(Kind::Remove(list), format!("{what} removed"), removal, "");
        }
        for value in vocabulary.unwrap_or_default() {
            if items.iter().any(|i| i.as_str() == *value) {
                continue;
            }
            let what = format!("{owner} {list}: {value} added");
            match (items.last(), &empty) {
                (Some(last), _) => self.splice(Kind::Add(list), what, last.span.end..last.span.end, &format!(", {}", quoted(value))),
                (None, Some(empty)) => self.splice(Kind::Add(list), what, empty.clone(), &format!("[{}]", quoted(value))),
                (None, None) => {}
            }
        }
    }

    /// Removes each key of a map (a ceiling, an envelope, a declaration).
    fn keys(&mut self, map: &'static str, owner: &str, entries: &BTreeMap<Name, Name>) {
        for (key, value) in entries {
            let removal = self.removal(key.span.start..value.span.end);
            self.splice(Kind::RemoveKey(map), format!("{owner} {map}: {} removed", key.as_str()), removal, "");
        }
    }

    /// Replaces each axis value of a map with every other value of its axis.
    fn axis_values(&mut self, c: &Catalog, kind: impl Fn(usize, usize) -> Kind + Copy, owner: &str, values: &AxisValues) {
        for (axis, value) in values {
            let Some(a) = c.axes.iter().find(|a| a.name == *axis) else { continue };
            let vocabulary: Vec<&str> = a.values.iter().map(|v| v.as_str()).collect();
            self.values(kind, &format!("{owner} {}", axis.as_str()), value, &vocabulary);
        }
    }
}

fn strs(names: &[Name]) -> Vec<&str> {
    names.iter().map(|n| n.as_str()).collect()
}

fn mutations(text: &str, c: &Catalog) -> Vec<Mutation> {
    let mut m = Mutations { text, out: Vec::new() };
    let checks: Vec<&str> = c.conformance.iter().map(|k| k.name.as_str()).collect();
    let dialects: Vec<&str> = c.dialects.iter().map(|d| d.name.as_str()).collect();
    for h in &c.harnesses {
        let entry = h.name.as_str();
        for (field, vocabulary) in c.vocabularies.fields() {
            if let Some(value) = h.published(field) {
                m.values(|_, _| Kind::Published(field), &format!("{entry} {field}"), value, &strs(vocabulary));
            }
        }
        let mode = Name { value: h.mode.value.as_str().to_string(), span: h.mode.span.clone() };
        m.values(|_, _| Kind::Other("mode"), &format!("{entry} mode"), &mode, &["packaged", "connected"]);
        m.axis_values(c, |from, to| Kind::Ceiling { from, to }, entry, &h.ceiling);
        m.keys("ceiling", entry, &h.ceiling);
        for (member, value) in &h.declares {
            let d = &c.declaration;
            let upgrade = d.upgrades.iter().find(|u| u.member == *member).map(|u| vec![u.value.as_str()]);
            let mechanism = d.mechanisms.iter().find(|x| x.member == *member).map(|x| strs(&x.values));
            let vocabulary = upgrade.or(mechanism).unwrap_or_default();
            m.values(|_, _| Kind::Declares, &format!("{entry} declares {}", member.as_str()), value, &vocabulary);
        }
        m.keys("declares", entry, &h.declares);
        let from_entry = h.name.span.start;
        let empty_evidence = text[from_entry..].find("evidence = []").map(|i| {
            let start = from_entry + i + "evidence = ".len();
            start..start + 2
        });
        m.list("evidence", entry, &h.evidence, Some(&checks), empty_evidence);
        if h.dialects.is_written() {
            m.list("dialects", entry, &h.dialects, Some(&dialects), None);
        } else if let Some(eol) = text[h.name.span.end..].find('\n') {
            // An undeclared entry gains its first declared dialect.
            let at = h.name.span.end + eol;
            for d in &dialects {
                m.splice(
                    Kind::Add("dialects"),
                    format!("{entry} dialects: {d} declared"),
                    at..at,
                    &format!("\ndialects = [{}]", quoted(d)),
                );
            }
        }
    }
    for driver in &c.drivers {
        for envelope in &driver.envelopes {
            let owner = format!("{} / {}", driver.name.as_str(), envelope.retention.as_str());
            m.axis_values(c, |_, _| Kind::Envelope, &owner, &envelope.axes);
            m.keys("envelope", &owner, &envelope.axes);
        }
    }
    for lane in &c.lanes {
        m.axis_values(c, |_, _| Kind::LaneEnvelope, lane.name.as_str(), &lane.envelope);
        m.keys("lane envelope", lane.name.as_str(), &lane.envelope);
    }
    for axis in &c.axes {
        m.list("axis values", axis.name.as_str(), &axis.values, None, None);
        if let (Some(first), Some(last)) = (axis.values.first(), axis.values.last()) {
            if axis.values.len() > 1 {
                let reversed: Vec<String> = axis.values.iter().rev().map(|v| quoted(v.as_str())).collect();
                let what = format!("axis {} reversed", axis.name.as_str());
                m.splice(Kind::Reverse, what, first.span.start..last.span.end, &reversed.join(", "));
            }
        }
    }
    for upgrade in &c.declaration.upgrades {
        let Some(axis) = c.axes.iter().find(|a| a.name == upgrade.axis) else { continue };
        let owner = format!("upgrade {}", upgrade.member.as_str());
        m.values(|_, _| Kind::Other("upgrade"), &format!("{owner} from"), &upgrade.from, &strs(&axis.values));
        m.values(|_, _| Kind::Other("upgrade"), &format!("{owner} to"), &upgrade.to, &strs(&axis.values));
        if let Some(evidence) = &upgrade.evidence {
            m.values(|_, _| Kind::Other("upgrade"), &format!("{owner} evidence"), evidence, &checks);
        }
    }
    for mechanism in &c.declaration.mechanisms {
        m.list("mechanism values", mechanism.member.as_str(), &mechanism.values, None, None);
    }
    for gate in &c.gated_emissions {
        m.list("gated members", gate.axis.as_str(), &gate.members, None, None);
    }
    m.list("observation kinds", "observations", &c.observations.kinds, None, None);
    for (field, vocabulary) in c.vocabularies.fields() {
        m.list("vocabulary", field, vocabulary, None, None);
    }
    for pairing in &c.pairings {
        let range: Vec<&str> = match pairing.with.as_str().strip_prefix("ceiling.") {
            Some(axis) => c.axes.iter().find(|a| a.name.as_str() == axis).map(|a| strs(&a.values)).unwrap_or_default(),
            None => c.vocabularies.of(pairing.with.as_str()).map(strs).unwrap_or_default(),
        };
        for (from, to) in &pairing.pairs {
            m.values(|_, _| Kind::Other("pairing"), &format!("pairing {} {}", pairing.field.as_str(), from.as_str()), to, &range);
        }
    }
    m.list("gateway placeholders", "gateway", &c.gateway.placeholders, None, None);
    let paths: Vec<&str> = c.dialects.iter().map(|d| d.gateway_path.as_str()).collect();
    for dialect in &c.dialects {
        m.values(|_, _| Kind::Other("gateway path"), &format!("{} gateway_path", dialect.name.as_str()), &dialect.gateway_path, &paths);
    }
    for provider in &c.providers {
        m.list("accepts", provider.name.as_str(), &provider.accepts, Some(&dialects), None);
    }
    m.list("accepts", "unlisted provider", &c.unlisted_provider.accepts, Some(&dialects), None);
    // The one-shot lane restates the decoder and the stream schema, and its data is pinned
    // by the one-shot driver literal: every edit of it must be refused.
    let lane = &c.oneshot;
    for (member, values) in lane.declares.iter() {
        m.list("oneshot declares", member.as_str(), values, None, None);
    }
    let observations = strs(&c.observations.kinds);
    let kinds: Vec<&str> = lane.events.iter().map(|e| e.kind.as_str()).collect();
    for event in &lane.events {
        let owner = format!("oneshot event {}", event.kind.as_str());
        m.values(|_, _| Kind::Other("oneshot event"), &format!("{owner} kind"), &event.kind, &kinds);
        if let Some(observation) = &event.observation {
            m.values(|_, _| Kind::Other("oneshot event"), &format!("{owner} observation"), observation, &observations);
        }
    }
    let declared: Vec<&str> = lane.steps.iter().filter_map(|s| s.declared.as_ref().map(|d| d.as_str())).collect();
    for step in &lane.steps {
        if let Some(member) = &step.declared {
            m.values(|_, _| Kind::Other("oneshot step"), &format!("oneshot step {} declared", step.name.as_str()), member, &declared);
        }
    }
    m.out
}

/// Why CONTRACT.md allows an edit of this kind to pass, or `None` when it must be refused.
fn allowed(kind: &Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Published("mcp_delivery") => "MCP delivery: the page ties it to no other field",
        Kind::Ceiling { from, to } if to < from => "a ceiling lowered: a ceiling may sit below its envelope",
        Kind::Ceiling { .. } => "a ceiling raised within what its envelope (plus admission) realizes",
        Kind::RemoveKey("ceiling") => "an undeclared axis dropped from a ceiling: it reads as its absent (weakest) value",
        Kind::Declares => "a mechanism member's value changed: mechanisms promote nothing",
        Kind::RemoveKey("declares") => "a declaration dropped that the ceiling does not rely on",
        Kind::Add("evidence") => "evidence recorded: it permits a promotion but makes none",
        Kind::Add("dialects") | Kind::Remove("dialects") => "an entry's declared dialects changed: declared data, each still priced",
        Kind::Add("accepts") | Kind::Remove("accepts") => {
            "a provider's accepted dialects changed: reviewed data, each declared dialect still priced"
        }
        Kind::LaneEnvelope => "the connected lane's envelope changed and still covers its entry's ceiling",
        _ => return None,
    })
}

/// The contract's rules a passing edit must still keep, restated from CONTRACT.md and the
/// reference page rather than taken from the generator: the page's published values and
/// pairs, realizability (section 2) and priced dialects (section 4).
fn contract(c: &Catalog) -> Result<(), String> {
    const PAGE_VALUES: [(&str, &[&str]); 5] = [
        ("supply", &["image_required", "blocked"]),
        ("adoption", &["bring_your_own_image", "blocked"]),
        ("model_lane", &["platform_model_gateway", "harness_owned_model", "connected_runtime"]),
        ("mcp_delivery", &["session_http", "none", "undeclared"]),
        ("tuple_support", &["preflight_required"]),
    ];
    const LANE_CONTROL: [(&str, &str); 3] =
        [("platform_model_gateway", "platform_enforced"), ("harness_owned_model", "harness_owned"), ("connected_runtime", "opaque")];
    const SUPPLY_ADOPTION: [(&str, &str); 2] = [("image_required", "bring_your_own_image"), ("blocked", "blocked")];
    for h in &c.harnesses {
        let entry = h.name.as_str();
        for (field, values) in PAGE_VALUES {
            let value = h.published(field).map_or("", |v| v.as_str());
            if !values.contains(&value) {
                return Err(format!("{entry}: {field} `{value}` is not a value the page shows"));
            }
        }
        let control = h.ceiling.iter().find(|(k, _)| k.as_str() == "model_control").map_or("", |(_, v)| v.as_str());
        if !LANE_CONTROL.contains(&(h.model_lane.as_str(), control)) {
            return Err(format!("{entry}: model lane `{}` with model_control `{control}`", h.model_lane.as_str()));
        }
        if !SUPPLY_ADOPTION.contains(&(h.supply.as_str(), h.adoption.as_str())) {
            return Err(format!("{entry}: supply `{}` with adoption `{}`", h.supply.as_str(), h.adoption.as_str()));
        }
        if !realizable(c, h) {
            return Err(format!("{entry}: the ceiling is not realizable"));
        }
        for d in h.dialects.iter() {
            if !c.providers.iter().any(|p| p.priced && p.accepts.contains(d)) {
                return Err(format!("{entry}: dialect `{}` has no priced provider", d.as_str()));
            }
        }
    }
    Ok(())
}

/// Section 2: one envelope row under which every axis of the ceiling is at most the
/// envelope, or exactly the admitted step above it when declared (and evidenced).
fn realizable(c: &Catalog, h: &Harness) -> bool {
    let rank = |axis: &str, value: &str| c.axes.iter().find(|a| a.name.as_str() == axis)?.values.iter().position(|v| v.as_str() == value);
    let rows: Vec<&AxisValues> = match h.mode.value {
        Mode::Packaged => {
            c.drivers.iter().filter(|d| Some(&d.name) == h.driver.as_ref()).flat_map(|d| d.envelopes.iter().map(|e| &e.axes)).collect()
        }
        Mode::Connected => c.lanes.iter().filter(|l| Some(&l.name) == h.lane.as_ref()).map(|l| &l.envelope).collect(),
    };
    let value = |values: &AxisValues, axis: &str| values.iter().find(|(k, _)| k.as_str() == axis).map(|(_, v)| v.as_str().to_string());
    rows.iter().any(|row| {
        c.axes.iter().all(|axis| {
            let name = axis.name.as_str();
            let weakest = axis.values.first().map(|v| v.as_str().to_string());
            let (Some(ceiling), Some(envelope)) = (value(&h.ceiling, name).or(weakest.clone()), value(row, name).or(weakest)) else {
                return false;
            };
            let (Some(ceiling), Some(envelope)) = (rank(name, &ceiling), rank(name, &envelope)) else { return false };
            ceiling <= envelope
                || c.declaration.upgrades.iter().any(|u| {
                    u.axis.as_str() == name
                        && h.declares.iter().any(|(m, v)| *m == u.member && *v == u.value)
                        && rank(name, u.from.as_str()) == Some(envelope)
                        && rank(name, u.to.as_str()) == Some(ceiling)
                        && u.evidence.as_ref().is_none_or(|e| h.evidence.contains(e))
                })
        })
    })
}

#[test]
fn every_single_edit_is_refused_or_allowed() {
    let checker = Checker::new();
    let text = checker.catalog();
    let original = checkfu_wire_codegen::catalog::parse(&text, checkfu_wire_codegen::diagnostic::FileId(0)).expect("the catalog parses");
    contract(&original).expect("the real catalog keeps the restated contract");
    let all = mutations(&text, &original);
    let mut problems = Vec::new();
    // kind (as written) -> (edits, refused)
    let mut tally: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut passed: BTreeMap<&'static str, usize> = BTreeMap::new();
    for mutation in &all {
        assert_ne!(mutation.text, text, "{}: the edit changes nothing", mutation.what);
        let label = format!("{:?}", mutation.kind).split(['(', ' ']).next().unwrap_or_default().to_string();
        let counts = tally.entry(label).or_default();
        counts.0 += 1;
        match checker.check(&mutation.text) {
            Err(d) => {
                counts.1 += 1;
                if let Some(loose) = d.items.iter().find(|i| i.location.is_none()) {
                    problems.push(format!("{}: refused without a span: {}", mutation.what, loose.message));
                }
                if mutation.kind == Kind::Reverse && !d.items.iter().any(|i| i.class == Class::Reinterpretation) {
                    problems.push(format!("{}: refused, but not as a change of pinned axis order", mutation.what));
                }
            }
            Ok(compiled) => match (allowed(&mutation.kind), contract(&compiled.catalog)) {
                (Some(reason), Ok(())) => *passed.entry(reason).or_default() += 1,
                (None, _) => problems.push(format!("{}: passed, and no allowed kind covers it", mutation.what)),
                (Some(_), Err(why)) => problems.push(format!("{}: passed, but breaks the contract: {why}", mutation.what)),
            },
        }
    }
    let refused: usize = tally.values().map(|(_, r)| r).sum();
    eprintln!("{} single edits, {refused} refused, {} passed", all.len(), all.len() - refused);
    for (kind, (edits, refused)) in &tally {
        eprintln!("  {kind}: {edits} edits, {refused} refused");
    }
    for (reason, n) in &passed {
        eprintln!("  passed {n}: {reason}");
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
    assert!(all.len() > 300, "the table of edits shrank to {}", all.len());
    assert!(refused > 0 && refused < all.len(), "edits both refused and passing are exercised");
}
