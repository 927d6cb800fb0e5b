//! Checks of the `[[requirements]]` registry: every id unique and of the `ACP-…`/`CHECKFU-…`
//! form, every tier one of the test kit's four, a capability exactly on the `capability`
//! tier, and exactly one judge that the probe's report has (a step it reports, a conformance
//! check, or the wire). The probe cannot be seen from here: that every breach its session
//! names is a `wire` requirement is the probe's own unit test.

use super::model::{Name, Requirement, CAPABILITY_TIER, TIERS};
use super::validate::Validator;
use crate::diagnostic::Class;

/// The prefixes a requirement id may take: the test kit's, and this project's own.
const PREFIXES: [&str; 2] = ["ACP", "CHECKFU"];

/// How a gate that is no `agentCapabilities` member is written (the kit's form: a mode list
/// or config options the agent returns, a member Checkfu's extensions carry).
const INFERRED: &str = "inferred:";
const AGENT_CAPABILITIES: &str = "agentCapabilities.";

/// Whether `id` is `PREFIX-AREA[-AREA…]-NNN`: a known prefix, one or more areas of capital
/// letters, and a three-digit number.
pub(crate) fn well_formed(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    let (Some(first), Some(last)) = (parts.first(), parts.last()) else { return false };
    // An id of one part has no areas (and no range `1..0` to slice).
    let areas = parts.get(1..parts.len().saturating_sub(1)).unwrap_or_default();
    PREFIXES.contains(first)
        && !areas.is_empty()
        && areas.iter().all(|a| !a.is_empty() && a.bytes().all(|b| b.is_ascii_uppercase()))
        && last.len() == 3
        && last.bytes().all(|b| b.is_ascii_digit())
}

impl Validator<'_> {
    pub(super) fn requirements(&mut self) {
        let c = self.index.catalog;
        self.unique("requirement", c.requirements.iter().map(|r| &r.id));
        for r in &c.requirements {
            self.requirement(r);
        }
    }

    fn requirement(&mut self, r: &Requirement) {
        let id = r.id.as_str();
        if !well_formed(id) {
            let d = self.error(Class::UnknownOrDuplicate, &r.id, format!("requirement id `{id}` is not well formed"), "not `ACP-AREA-NNN`");
            d.notes.push(String::from("an id is `ACP-` (the test kit's) or `CHECKFU-`, one or more areas in capitals, and three digits"));
        }
        if !TIERS.contains(&r.tier.as_str()) {
            self.unknown("requirement tier", &r.tier, TIERS.to_vec()).entry = Some(id.to_owned());
        }
        match (&r.capability, r.tier.as_str() == CAPABILITY_TIER) {
            (None, true) => {
                self.error(
                    Class::UnknownOrDuplicate,
                    &r.tier,
                    format!("capability requirement `{id}` names no capability"),
                    "add `capability = \"agentCapabilities.…\"`",
                );
            }
            (Some(capability), false) => {
                self.error(
                    Class::UnknownOrDuplicate,
                    capability,
                    format!("requirement `{id}` names a capability but its tier is `{}`", r.tier.as_str()),
                    "only a `capability` requirement is gated",
                );
            }
            (Some(capability), true)
                if !capability.as_str().starts_with(AGENT_CAPABILITIES) && !capability.as_str().starts_with(INFERRED) =>
            {
                self.error(
                    Class::UnknownOrDuplicate,
                    capability,
                    format!("capability `{}` of `{id}` is not a gate", capability.as_str()),
                    "not `agentCapabilities.…` or `inferred:…`",
                );
            }
            _ => {}
        }
        if r.citation.as_str().trim().is_empty() || r.text.trim().is_empty() {
            self.error(Class::UnknownOrDuplicate, &r.id, format!("requirement `{id}` has no citation or no text"), "say where and what");
        }
        self.judge(r);
    }

    /// Exactly one judge, and one the report has.
    fn judge(&mut self, r: &Requirement) {
        let c = self.index.catalog;
        let id = r.id.as_str();
        if let Some(wire) = r.wire.as_ref().filter(|w| !w.value) {
            let at = Name { value: String::from("false"), span: wire.span.clone() };
            self.error(
                Class::UnknownOrDuplicate,
                &at,
                format!("requirement `{id}` writes `wire = false`"),
                "write `wire = true` or leave it out",
            );
        }
        let judges = usize::from(r.step.is_some()) + usize::from(r.check.is_some()) + usize::from(r.wire.as_ref().is_some_and(|w| w.value));
        if judges != 1 {
            let d = self.error(
                Class::UnknownOrDuplicate,
                &r.id,
                format!("requirement `{id}` has {judges} judges"),
                "give exactly one of `step`, `check`, `wire = true`",
            );
            d.entry = Some(id.to_owned());
        }
        if let Some(step) = &r.step {
            let steps: Vec<&str> = c.acp_steps.iter().map(|s| s.name.as_str()).chain(c.run_steps.iter().map(|s| s.name.as_str())).collect();
            if !steps.contains(&step.as_str()) {
                self.unknown("ACP lane step", step, steps).entry = Some(id.to_owned());
            }
        }
        if let Some(check) = &r.check {
            let checks: Vec<&str> = c.conformance.iter().map(|k| k.name.as_str()).collect();
            if !checks.contains(&check.as_str()) {
                self.unknown("conformance check", check, checks).entry = Some(id.to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::well_formed;

    #[test]
    fn an_id_is_a_known_prefix_areas_in_capitals_and_three_digits() {
        for good in ["ACP-JSONRPC-001", "ACP-INFO-PARSE-001", "CHECKFU-PERMISSION-001"] {
            assert!(well_formed(good), "{good}");
        }
        for bad in ["ACP-001", "acp-INIT-001", "ACP-INIT-01", "ACP-Init-001", "TCK-INIT-001", "ACP--001", "ACP-INIT-0001", ""] {
            assert!(!well_formed(bad), "{bad}");
        }
    }
}
