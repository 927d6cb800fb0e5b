//! Checks of the `[oneshot]` lane against what it restates: the revision literals, the
//! release decoder's closed values (read from the authoring schema derived from its type)
//! and the normalized stream schema's event kinds. Every mismatch is an `E0001` pointing at
//! the catalog value, or at the list that lacks one, so the lane cannot drift from the
//! decoder or the stream it describes.

use super::model::Name;
use super::validate::Validator;
use crate::diagnostic::Class;
use crate::oneshot::{authoring_schema, event_kinds, members};
use crate::schema::SchemaSet;

impl Validator<'_> {
    pub(super) fn oneshot(&mut self, schemas: &SchemaSet) {
        let c = self.index.catalog;
        let lane = &c.oneshot;
        let r = &c.revisions;
        for (written, literal, key) in
            [(&lane.protocol, &r.oneshot_protocol, "oneshot_protocol"), (&lane.driver, &r.oneshot_driver, "oneshot_driver")]
        {
            if written != literal {
                self.error(
                    Class::UnknownOrDuplicate,
                    written,
                    format!("`{}` is not the catalog's `revisions.{key}` `{}`", written.as_str(), literal.as_str()),
                    "unknown literal",
                );
            }
        }
        let decoder = checkfu_wire_vocab::oneshot::PROTOCOL;
        if lane.protocol.as_str() != decoder {
            self.error(
                Class::UnknownOrDuplicate,
                &lane.protocol,
                format!("`{}` is not the protocol the release decoder reads (`{decoder}`)", lane.protocol.as_str()),
                "not the decoder's protocol",
            );
        }
        let exchanges = lane.exchanges.as_str();
        if exchanges.is_empty() || exchanges.starts_with('/') || exchanges.split('/').any(|s| s == ".." || s == "." || s.is_empty()) {
            self.error(
                Class::UnknownOrDuplicate,
                &lane.exchanges,
                format!("`{exchanges}` is not a directory path relative to the project root"),
                "not a plain relative path",
            );
        }
        self.oneshot_declares();
        self.unique("one-shot step", lane.steps.iter().map(|s| &s.name));
        self.unique("ACP step", self.index.catalog.acp_steps.iter().map(|s| &s.name));
        self.unique("run step", self.index.catalog.run_steps.iter().map(|s| &s.name));
        let optional = members(&authoring_schema()).optional;
        for step in &lane.steps {
            if let Some(member) = &step.declared {
                if !optional.iter().any(|m| m == member.as_str()) {
                    let known = optional.iter().map(String::as_str).collect();
                    self.unknown("optional declaration member", member, known).entry = Some(step.name.value.clone());
                }
            }
        }
        self.oneshot_events(schemas);
    }

    /// Every closed-valued member of the declaration, with exactly the decoder's values.
    fn oneshot_declares(&mut self) {
        let c = self.index.catalog;
        let declares = &c.oneshot.declares;
        let closed = members(&authoring_schema());
        for (member, values) in declares.iter() {
            let Some(variants) = closed.closed(member.as_str()) else {
                let known = closed.closed.iter().map(|(m, _)| m.as_str()).collect();
                self.unknown("closed declaration member", member, known);
                continue;
            };
            let kind = format!("value of declaration member `{}`", member.as_str());
            self.unique(&kind, values.iter());
            for value in values.iter() {
                if !variants.contains(&value.value) {
                    let d = self.unknown(&kind, value, variants.iter().map(String::as_str).collect());
                    d.notes.push("the values are the release decoder's (checkfu_wire_vocab::oneshot), as serde names them".into());
                }
            }
            for variant in variants {
                if !values.iter().any(|v| v.as_str() == variant) {
                    let at = Name { value: String::new(), span: values.span.clone() };
                    self.error(
                        Class::UnknownOrDuplicate,
                        &at,
                        format!("declaration member `{}` lacks `{variant}`, which the release decoder admits", member.as_str()),
                        "a value is missing",
                    )
                    .notes
                    .push("list every value the decoder reads, so the docs and the runtime tables show them all".into());
                }
            }
        }
        for (member, variants) in &closed.closed {
            if !declares.keys().any(|k| k.as_str() == member) {
                let at = Name { value: String::new(), span: declares.span.clone() };
                self.error(
                    Class::UnknownOrDuplicate,
                    &at,
                    format!("`[oneshot.declares]` lacks `{member}`, a closed member of the release decoder"),
                    "a member is missing",
                )
                .notes
                .push(format!("add `{member} = [{}]`", variants.iter().map(|v| format!("\"{v}\"")).collect::<Vec<_>>().join(", ")));
            }
        }
    }

    /// Every event kind of the stream schema, each once, each mapped to a known observation.
    fn oneshot_events(&mut self, schemas: &SchemaSet) {
        let c = self.index.catalog;
        let lane = &c.oneshot;
        self.unique("stream event kind", lane.events.iter().map(|e| &e.kind));
        for event in &lane.events {
            if let Some(observation) = &event.observation {
                if !c.observations.kinds.iter().any(|k| k == observation) {
                    let known = c.observations.kinds.iter().map(|k| k.as_str()).collect();
                    self.unknown("observation kind", observation, known).entry = Some(event.kind.value.clone());
                }
            }
        }
        let Some(stream) = schemas.files.get(lane.stream_schema.as_str()) else {
            let known = schemas.files.keys().map(String::as_str).collect();
            self.unknown("schema file", &lane.stream_schema, known);
            return;
        };
        let kinds = event_kinds(stream);
        for event in &lane.events {
            if !kinds.contains(&event.kind.value) {
                let known = kinds.iter().map(String::as_str).collect();
                let d = self.unknown("stream event kind", &event.kind, known);
                d.notes.push(format!("the kinds are the `type` constants of schemas/{}'s `$defs`", lane.stream_schema.as_str()));
            }
        }
        for kind in &kinds {
            if !lane.events.iter().any(|e| e.kind.as_str() == kind) {
                self.error(
                    Class::UnknownOrDuplicate,
                    &lane.stream_schema,
                    format!("the stream event `{kind}` has no `[[oneshot.events]]` entry"),
                    "this schema has an event the catalog does not map",
                )
                .notes
                .push("say which observation it becomes (or none: omit `observation`)".into());
            }
        }
    }
}
