//! The harness fields the support snapshot publishes: each value is checked against its
//! closed vocabulary (catalog data under `[vocabularies]`), and every `[[pairings]]` rule is
//! checked for every entry (a model lane decides model_control; supply decides adoption).
//!
//! Both are class 1 of CONTRACT.md section 2: a value outside the vocabulary its field (or
//! its pair) allows.

use super::model::{Axis, Harness, Name, Pairing};
use super::validate::Validator;
use crate::diagnostic::{Class, Diagnostic};

/// The prefix that makes a pairing's `with` name an axis of the entry's ceiling.
const CEILING: &str = "ceiling.";

/// What a pairing's `with` refers to.
enum Target<'c> {
    Field(&'static str, &'c [Name]),
    Axis(&'c Axis),
}

impl<'c> Validator<'c> {
    pub(super) fn vocabularies(&mut self) {
        let vocabularies = &self.index.catalog.vocabularies;
        for (field, values) in vocabularies.fields() {
            self.unique(&format!("value of `{field}`"), values.iter());
            if values.is_empty() {
                self.out.push(
                    Diagnostic::new(Class::UnknownOrDuplicate, format!("the vocabulary of `{field}` is empty"))
                        .at(self.file, values.span.clone(), "no values")
                        .field(field)
                        .note("every published field needs at least one value"),
                );
            }
        }
    }

    /// The published fields of one entry, each in its vocabulary.
    pub(super) fn published(&mut self, h: &Harness) {
        let vocabularies = &self.index.catalog.vocabularies;
        for (field, values) in vocabularies.fields() {
            let Some(value) = h.published(field) else { continue };
            if !values.contains(value) {
                let known = values.iter().map(|v| v.as_str()).collect();
                let d = self.unknown(&format!("`{field}` value"), value, known);
                d.entry = Some(h.name.value.clone());
                d.field = Some(field.to_string());
                d.declared = Some(value.value.clone());
            }
        }
    }

    fn target(&mut self, with: &Name) -> Option<Target<'c>> {
        let c = self.index.catalog;
        if let Some(axis) = with.as_str().strip_prefix(CEILING) {
            if let Some(axis) = self.index.axis(axis) {
                return Some(Target::Axis(axis));
            }
        } else if let Some((field, values)) = c.vocabularies.fields().into_iter().find(|(f, _)| *f == with.as_str()) {
            return Some(Target::Field(field, values.as_slice()));
        }
        let fields = c.vocabularies.fields().map(|(f, _)| f.to_string());
        let axes = c.axes.iter().map(|a| format!("{CEILING}{}", a.name.as_str()));
        let known: Vec<String> = fields.into_iter().chain(axes).collect();
        self.unknown("pairing target", with, known.iter().map(String::as_str).collect());
        None
    }

    pub(super) fn pairings(&mut self) {
        let c = self.index.catalog;
        self.unique("paired field", c.pairings.iter().map(|p| &p.field));
        for pairing in &c.pairings {
            let Some(domain) = c.vocabularies.of(pairing.field.as_str()) else {
                let known = c.vocabularies.fields().map(|(f, _)| f).to_vec();
                self.unknown("published field", &pairing.field, known);
                continue;
            };
            let Some(target) = self.target(&pairing.with) else { continue };
            let range: Vec<&str> = match &target {
                Target::Field(_, values) => values.iter().map(|v| v.as_str()).collect(),
                Target::Axis(axis) => axis.values.iter().map(|v| v.as_str()).collect(),
            };
            let mut complete = true;
            for (from, to) in &pairing.pairs {
                if !domain.contains(from) {
                    let known = domain.iter().map(|v| v.as_str()).collect();
                    self.unknown(&format!("`{}` value", pairing.field.as_str()), from, known);
                }
                if !range.contains(&to.as_str()) {
                    self.unknown(&format!("`{}` value", pairing.with.as_str()), to, range.clone());
                }
            }
            for value in domain {
                if !pairing.pairs.contains_key(value) {
                    complete = false;
                    let d = self.error(
                        Class::UnknownOrDuplicate,
                        &pairing.field,
                        format!("the pairing of `{}` has no pair for `{}`", pairing.field.as_str(), value.as_str()),
                        "every value of the field needs a pair",
                    );
                    d.field = Some(pairing.field.value.clone());
                }
            }
            if complete {
                for h in &c.harnesses {
                    self.pair(h, pairing, &target, &range);
                }
            }
        }
    }

    /// One entry against one pairing. Values outside their vocabularies were reported
    /// already; a pair is only judged when both of its values are known.
    fn pair(&mut self, h: &Harness, pairing: &Pairing, target: &Target, range: &[&str]) {
        let Some(value) = h.published(pairing.field.as_str()) else { return };
        let Some((_, expected)) = pairing.pairs.iter().find(|(from, _)| *from == value) else { return };
        let (actual, at) = match target {
            Target::Field(field, _) => match h.published(field) {
                Some(v) => (v.value.clone(), Some(v.span.clone())),
                None => return,
            },
            Target::Axis(axis) => match h.ceiling.iter().find(|(k, _)| k.as_str() == axis.name.as_str()) {
                Some((_, v)) => (v.value.clone(), Some(v.span.clone())),
                // An omitted axis reads as its `absent` value; with none, validation already
                // reported the missing axis.
                None => match &axis.absent {
                    Some(absent) => (absent.value.clone(), None),
                    None => return,
                },
            },
        };
        if actual == expected.as_str() || !range.contains(&actual.as_str()) {
            return;
        }
        let (field, with) = (pairing.field.as_str(), pairing.with.as_str());
        let entry = h.name.as_str();
        let mut d =
            Diagnostic::new(Class::UnknownOrDuplicate, format!("`{entry}` pairs {field} `{}` with {with} `{actual}`", value.as_str()))
                .at(self.file, value.span.clone(), format!("{field} `{}` requires {with} `{}`", value.as_str(), expected.as_str()))
                .entry(entry)
                .field(field)
                .note(format!(
                    "the pairing of `{field}` with `{with}` maps `{}` to `{}` (see [[pairings]])",
                    value.as_str(),
                    expected.as_str()
                ));
        if let Some(at) = at {
            d = d.related(at, format!("{with} is `{actual}`"));
        }
        if let Target::Axis(axis) = target {
            d = d.axis(axis.name.as_str());
        }
        self.out.push(d);
    }
}
