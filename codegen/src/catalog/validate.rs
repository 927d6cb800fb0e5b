//! Consistency checks: every name resolves and is unique, every value is in its axis
//! vocabulary, envelopes never carry declaration-only axes, every declared dialect has a
//! priced provider, and no slot or gated emission is dead vocabulary.
//!
//! Failure classes 1, 5, 7 and 8 of CONTRACT.md section 2 live here; the ceiling-versus-
//! envelope classes (2, 3, 4, 6) are in `realize`. Every check runs to the end and pushes
//! a diagnostic, so one run reports everything.

use std::collections::HashSet;

use super::index::Index;
use super::model::{AxisValues, Catalog, Harness, Mode, Name, SlotClass};
use crate::diagnostic::{Class, Diagnostic, FileId};
use crate::schema::SchemaSet;

pub(crate) struct Validator<'c> {
    pub(super) file: FileId,
    pub(super) index: &'c Index<'c>,
    pub(crate) out: Vec<Diagnostic>,
}

impl<'c> Validator<'c> {
    pub(crate) fn new(file: FileId, index: &'c Index<'c>) -> Self {
        Validator { file, index, out: Vec::new() }
    }

    pub(super) fn error(&mut self, class: Class, at: &Name, message: String, label: &str) -> &mut Diagnostic {
        self.out.push(Diagnostic::new(class, message).at(self.file, at.span.clone(), label));
        let last = self.out.len() - 1;
        &mut self.out[last]
    }

    pub(super) fn unknown(&mut self, kind: &str, at: &Name, known: Vec<&str>) -> &mut Diagnostic {
        let d = self.error(Class::UnknownOrDuplicate, at, format!("unknown {kind} `{}`", at.as_str()), &format!("not a known {kind}"));
        d.notes.push(format!("known: {}", known.join(", ")));
        d
    }

    /// Reports every name that occurs a second time in `names`.
    pub(super) fn unique<'n>(&mut self, kind: &str, names: impl IntoIterator<Item = &'n Name>) {
        let mut seen = HashSet::new();
        for name in names {
            if !seen.insert(name.as_str()) {
                self.error(Class::UnknownOrDuplicate, name, format!("duplicate {kind} `{}`", name.as_str()), "defined again here");
            }
        }
    }

    /// `unique`, with the entry and the field each duplicate belongs to.
    pub(super) fn unique_in_entry<'n>(&mut self, kind: &str, entry: &str, field: &str, names: impl IntoIterator<Item = &'n Name>) {
        let before = self.out.len();
        self.unique(kind, names);
        for d in &mut self.out[before..] {
            d.entry = Some(entry.to_string());
            d.field = Some(field.to_string());
        }
    }

    pub(crate) fn run(&mut self, schemas: &SchemaSet) {
        let c: &Catalog = self.index.catalog;
        self.axes();
        self.vocabularies();
        self.pairings();
        for driver in &c.drivers {
            self.unique("retention mode", driver.envelopes.iter().map(|e| &e.retention));
            for envelope in &driver.envelopes {
                self.envelope(&envelope.axes, driver.name.as_str(), &envelope.retention);
            }
        }
        self.unique("driver", c.drivers.iter().map(|d| &d.name));
        self.unique("lane", c.lanes.iter().map(|l| &l.name));
        for lane in &c.lanes {
            self.envelope(&lane.envelope, lane.name.as_str(), &lane.name);
        }
        self.declaration();
        self.unique("harness entry", c.harnesses.iter().map(|h| &h.name));
        for harness in &c.harnesses {
            self.harness(harness);
        }
        self.slots(schemas);
        self.unique("observation kind", c.observations.kinds.iter());
        self.gated_emissions();
        self.unique("conformance check", c.conformance.iter().map(|k| &k.name));
        self.dialects_and_providers();
        self.revisions();
        self.oneshot(schemas);
        self.acp();
        self.requirements();
        let catalog = self.index.catalog;
        for file in [&catalog.golden.schema, &catalog.acp.schema, &catalog.acp_v2.schema] {
            if !schemas.files.contains_key(file.as_str()) {
                let known = schemas.files.keys().map(String::as_str).collect();
                self.unknown("schema file", file, known);
            }
        }
    }

    fn acp(&mut self) {
        let c = self.index.catalog;
        self.unique("method source", c.method_sources.iter().map(|m| &m.name));
    }

    fn axes(&mut self) {
        let c = self.index.catalog;
        self.unique("axis", c.axes.iter().map(|a| &a.name));
        for axis in &c.axes {
            self.unique(&format!("value of axis `{}`", axis.name.as_str()), axis.values.iter());
            if axis.values.is_empty() {
                self.error(
                    Class::UnknownOrDuplicate,
                    &axis.name,
                    format!("axis `{}` has an empty vocabulary", axis.name.as_str()),
                    "no values",
                );
            }
            if let Some(absent) = &axis.absent {
                if axis.values.first().map(|v| v.as_str()) != Some(absent.as_str()) {
                    self.error(
                        Class::UnknownOrDuplicate,
                        absent,
                        format!("the absent value of axis `{}` must be its weakest value", axis.name.as_str()),
                        "not the first value of the vocabulary",
                    );
                }
            }
        }
    }

    /// Axis keys and values of one axis map (an envelope or a ceiling): known axis, value
    /// in vocabulary. Returns nothing; problems become diagnostics.
    fn axis_values(&mut self, values: &AxisValues, owner: &str) {
        for (axis_name, value) in values {
            let Some(axis) = self.index.axis(axis_name.as_str()) else {
                let known = self.index.catalog.axes.iter().map(|a| a.name.as_str()).collect();
                self.unknown("axis", axis_name, known).entry = Some(owner.to_string());
                continue;
            };
            if self.index.rank(axis_name.as_str(), value.as_str()).is_none() {
                let vocabulary = axis.values.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(" < ");
                let d = self.error(
                    Class::UnknownOrDuplicate,
                    value,
                    format!("`{}` is not a value of axis `{}`", value.as_str(), axis_name.as_str()),
                    "outside the axis vocabulary",
                );
                d.entry = Some(owner.to_string());
                d.axis = Some(axis_name.value.clone());
                d.declared = Some(value.value.clone());
                d.notes.push(format!("vocabulary, weakest to strongest: {vocabulary}"));
            }
        }
    }

    fn envelope(&mut self, values: &AxisValues, owner: &str, at: &Name) {
        self.axis_values(values, owner);
        for axis_name in values.keys() {
            if self.index.axis(axis_name.as_str()).is_some_and(|a| !a.in_envelope) {
                let d = self.error(
                    Class::EnvelopeCarriesDeclaredAxis,
                    axis_name,
                    format!("envelope of `{owner}` carries `{}`", axis_name.as_str()),
                    "only declaration admission may raise this axis",
                );
                d.entry = Some(owner.to_string());
                d.axis = Some(axis_name.value.clone());
            }
        }
        for axis in &self.index.catalog.axes {
            if axis.in_envelope && !values.keys().any(|k| k.as_str() == axis.name.as_str()) {
                let d = self.error(
                    Class::UnknownOrDuplicate,
                    at,
                    format!("envelope of `{owner}` has no value for axis `{}`", axis.name.as_str()),
                    "envelope is missing an axis",
                );
                d.entry = Some(owner.to_string());
                d.axis = Some(axis.name.value.clone());
            }
        }
    }

    fn declaration(&mut self) {
        let c = self.index.catalog;
        let d = &c.declaration;
        let members = d.upgrades.iter().map(|u| &u.member).chain(d.mechanisms.iter().map(|m| &m.member));
        self.unique("declaration member", members);
        for m in &d.mechanisms {
            self.unique(&format!("value of declaration member `{}`", m.member.as_str()), m.values.iter());
        }
        self.unique("upgraded axis", d.upgrades.iter().map(|u| &u.axis));
        let checks: Vec<&str> = c.conformance.iter().map(|k| k.name.as_str()).collect();
        for upgrade in &d.upgrades {
            let Some(axis) = self.index.axis(upgrade.axis.as_str()) else {
                let known = c.axes.iter().map(|a| a.name.as_str()).collect();
                self.unknown("axis", &upgrade.axis, known);
                continue;
            };
            let from = self.index.rank(axis.name.as_str(), upgrade.from.as_str());
            let to = self.index.rank(axis.name.as_str(), upgrade.to.as_str());
            for (value, rank) in [(&upgrade.from, from), (&upgrade.to, to)] {
                if rank.is_none() {
                    let vocabulary = axis.values.iter().map(|v| v.as_str()).collect();
                    self.unknown(&format!("value of axis `{}`", axis.name.as_str()), value, vocabulary);
                }
            }
            if let (Some(from), Some(to)) = (from, to) {
                if to != from + 1 {
                    self.error(
                        Class::UnknownOrDuplicate,
                        &upgrade.to,
                        format!("upgrade of `{}` must be exactly one step", axis.name.as_str()),
                        "not the value right above `from`",
                    );
                }
            }
            if let Some(case) = &upgrade.evidence {
                if !checks.contains(&case.as_str()) {
                    self.unknown("conformance check", case, checks.clone());
                }
            }
        }
        // A proof is a step of the ACP lane or a conformance check: what the run reports.
        let proofs: Vec<&str> = c.acp_steps.iter().map(|s| s.name.as_str()).chain(checks.iter().copied()).collect();
        let given = d.upgrades.iter().map(|u| Some(&u.proof)).chain(d.mechanisms.iter().map(|m| m.proof.as_ref()));
        for proof in given.flatten() {
            if !proofs.contains(&proof.step.as_str()) {
                self.unknown("ACP step or conformance check", &proof.step, proofs.clone());
            }
        }
        for step in &c.acp_steps {
            if let Some(member) = &step.declared {
                if self.member_values(member.as_str()).is_none() {
                    let known = d.upgrades.iter().map(|u| u.member.as_str()).chain(d.mechanisms.iter().map(|m| m.member.as_str()));
                    self.unknown("declaration member", member, known.collect());
                }
            }
        }
        if !c.slots.iter().any(|s| s.key == d.slot && s.class.value == SlotClass::Declaration) {
            let known = c.slots.iter().filter(|s| s.class.value == SlotClass::Declaration);
            let known = known.map(|s| s.key.as_str()).collect();
            self.unknown("declaration slot", &d.slot, known);
        }
    }

    /// The values a declaration member admits, or `None` for an unknown member.
    fn member_values(&self, member: &str) -> Option<Vec<&'c str>> {
        let d = &self.index.catalog.declaration;
        if let Some(u) = d.upgrades.iter().find(|u| u.member.as_str() == member) {
            return Some(vec![u.value.as_str()]);
        }
        let m = d.mechanisms.iter().find(|m| m.member.as_str() == member)?;
        Some(m.values.iter().map(|v| v.as_str()).collect())
    }

    fn harness(&mut self, h: &Harness) {
        let c = self.index.catalog;
        let entry = h.name.as_str();
        match h.mode.value {
            Mode::Packaged => {
                match &h.driver {
                    Some(driver) if self.index.driver(driver.as_str()).is_none() => {
                        let known = c.drivers.iter().map(|d| d.name.as_str()).collect();
                        self.unknown("driver", driver, known).entry = Some(entry.to_string());
                    }
                    Some(_) => {}
                    None => {
                        self.error(
                            Class::UnknownOrDuplicate,
                            &h.name,
                            format!("packaged entry `{entry}` names no driver"),
                            "add `driver = \"...\"`",
                        );
                    }
                }
                if let Some(lane) = &h.lane {
                    self.error(
                        Class::UnknownOrDuplicate,
                        lane,
                        format!("packaged entry `{entry}` names a lane"),
                        "only connected entries run in a lane",
                    );
                }
            }
            Mode::Connected => match &h.lane {
                Some(lane) => match self.index.lane(lane.as_str()) {
                    None => {
                        let known = c.lanes.iter().map(|l| l.name.as_str()).collect();
                        self.unknown("lane", lane, known).entry = Some(entry.to_string());
                    }
                    Some(l) if l.mode.value != Mode::Connected => {
                        self.error(
                            Class::UnknownOrDuplicate,
                            lane,
                            format!("lane `{}` does not serve connected entries", lane.as_str()),
                            "lane mode differs",
                        );
                    }
                    Some(_) => {}
                },
                None => {
                    self.error(
                        Class::UnknownOrDuplicate,
                        &h.name,
                        format!("connected entry `{entry}` names no lane"),
                        "add `lane = \"...\"`",
                    );
                }
            },
        }
        self.axis_values(&h.ceiling, entry);
        for axis in &c.axes {
            let written = h.ceiling.keys().any(|k| k.as_str() == axis.name.as_str());
            if !written && axis.absent.is_none() {
                let d = self.error(
                    Class::UnknownOrDuplicate,
                    &h.name,
                    format!("ceiling of `{entry}` has no value for axis `{}`", axis.name.as_str()),
                    "ceiling is missing an axis",
                );
                d.entry = Some(entry.to_string());
                d.axis = Some(axis.name.value.clone());
            }
        }
        for (member, value) in &h.declares {
            match self.member_values(member.as_str()) {
                None => {
                    let d = &c.declaration;
                    let known = d.upgrades.iter().map(|u| u.member.as_str());
                    let known = known.chain(d.mechanisms.iter().map(|m| m.member.as_str())).collect();
                    self.unknown("declaration member", member, known).entry = Some(entry.to_string());
                }
                Some(values) if !values.contains(&value.as_str()) => {
                    let label = format!("declaration member `{}` value", member.as_str());
                    self.unknown(&label, value, values).entry = Some(entry.to_string());
                }
                Some(_) => {}
            }
        }
        let checks: Vec<&str> = c.conformance.iter().map(|k| k.name.as_str()).collect();
        self.unique_in_entry(&format!("evidence case of `{entry}`"), entry, "evidence", h.evidence.iter());
        for case in &h.evidence {
            if !checks.contains(&case.as_str()) {
                let d = self.unknown("conformance check", case, checks.clone());
                d.entry = Some(entry.to_string());
                d.field = Some("evidence".into());
            }
        }
        self.published(h);
        self.unique_in_entry(&format!("dialect of `{entry}`"), entry, "dialects", h.dialects.iter());
        if h.dialects.is_written() && h.dialects.is_empty() {
            let at = Name { value: String::new(), span: h.dialects.span.clone() };
            let d =
                self.error(Class::UnknownOrDuplicate, &at, format!("`{entry}` declares an empty list of dialects"), "declares no dialect");
            d.entry = Some(entry.to_string());
            d.field = Some("dialects".into());
            d.notes.push("omit `dialects` for an entry whose dialects are undeclared, or name at least one dialect".into());
        }
        for dialect in h.dialects.iter() {
            if !c.dialects.iter().any(|d| d.name == *dialect) {
                let known = c.dialects.iter().map(|d| d.name.as_str()).collect();
                self.unknown("dialect", dialect, known).entry = Some(entry.to_string());
                continue;
            }
            let served = c.providers.iter().any(|p| p.priced && p.accepts.contains(dialect));
            if !served {
                let d = self.error(
                    Class::UnservedDialect,
                    dialect,
                    format!("`{entry}` declares dialect `{}` that no priced provider accepts", dialect.as_str()),
                    "no priced provider serves this dialect",
                );
                d.entry = Some(entry.to_string());
                d.declared = Some(dialect.value.clone());
            }
        }
    }

    fn slots(&mut self, schemas: &SchemaSet) {
        let c = self.index.catalog;
        self.unique("slot", c.slots.iter().map(|s| &s.key));
        for slot in &c.slots {
            if let Err(why) = schemas.resolve(slot.schema.as_str()) {
                self.error(
                    Class::DeadVocabulary,
                    &slot.schema,
                    format!("slot `{}` has no payload schema: {why}", slot.key.as_str()),
                    "does not resolve to a schema under schemas/",
                )
                .entry = Some(slot.key.value.clone());
            }
        }
    }

    fn gated_emissions(&mut self) {
        let c = self.index.catalog;
        self.unique("gated axis", c.gated_emissions.iter().map(|g| &g.axis));
        for gate in &c.gated_emissions {
            match self.index.axis(gate.axis.as_str()) {
                None => {
                    self.error(
                        Class::DeadVocabulary,
                        &gate.axis,
                        format!("gated emission names unknown axis `{}`", gate.axis.as_str()),
                        "no such axis",
                    );
                }
                Some(axis) if self.index.rank(axis.name.as_str(), gate.value.as_str()).is_none() => {
                    let d = self.error(
                        Class::DeadVocabulary,
                        &gate.value,
                        format!("gated emission requires `{}`, not a value of axis `{}`", gate.value.as_str(), gate.axis.as_str()),
                        "no such value",
                    );
                    d.axis = Some(gate.axis.value.clone());
                }
                Some(_) => {}
            }
            self.unique(&format!("member gated by `{}`", gate.axis.as_str()), gate.members.iter());
            for member in &gate.members {
                let kind = member.as_str().strip_prefix("observation.");
                if !kind.is_some_and(|k| c.observations.kinds.iter().any(|o| o.as_str() == k)) {
                    let d = self.error(
                        Class::DeadVocabulary,
                        member,
                        format!("gated emission names unknown member `{}`", member.as_str()),
                        "not `observation.<kind>` of a known observation kind",
                    );
                    d.axis = Some(gate.axis.value.clone());
                }
            }
        }
    }

    fn dialects_and_providers(&mut self) {
        let c = self.index.catalog;
        self.unique("dialect", c.dialects.iter().map(|d| &d.name));
        self.unique("provider", c.providers.iter().map(|p| &p.name));
        for p in &c.providers {
            let kind = format!("dialect accepted by `{}`", p.name.as_str());
            self.unique_in_entry(&kind, p.name.as_str(), "accepts", p.accepts.iter());
        }
        self.unique_in_entry(
            "dialect accepted by an unlisted provider",
            "unlisted_provider",
            "accepts",
            c.unlisted_provider.accepts.iter(),
        );
        self.gateway_paths();
        let known: Vec<&str> = c.dialects.iter().map(|d| d.name.as_str()).collect();
        let accepted = c.providers.iter().flat_map(|p| p.accepts.iter());
        for dialect in accepted.chain(c.unlisted_provider.accepts.iter()) {
            if !known.contains(&dialect.as_str()) {
                self.unknown("dialect", dialect, known.clone());
            }
        }
    }

    fn revisions(&mut self) {
        let c = self.index.catalog;
        let r = &c.revisions;
        if self.index.driver(r.driver.as_str()).is_none() {
            let known = c.drivers.iter().map(|d| d.name.as_str()).collect();
            self.unknown("driver", &r.driver, known);
        }
        for driver in &c.drivers {
            if driver.protocol != r.protocol {
                self.error(
                    Class::UnknownOrDuplicate,
                    &driver.protocol,
                    format!("driver protocol `{}` is not the catalog protocol `{}`", driver.protocol.as_str(), r.protocol.as_str()),
                    "unknown protocol",
                );
            }
        }
        for h in &c.harnesses {
            if let Some(p) = &h.release_protocol {
                if *p != r.protocol {
                    let label = "unknown protocol";
                    self.error(Class::UnknownOrDuplicate, p, format!("unknown release protocol `{}`", p.as_str()), label).entry =
                        Some(h.name.value.clone());
                }
            }
        }
    }
}
