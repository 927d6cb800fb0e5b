//! The verdict on one document: the rules of the profile, the violations found,
//! and how they serialize into the JSON report.
//!
//! Rule ids are part of the contract (tests, CI logs and the runtime's
//! rejection messages quote them), so they are spelled out once in
//! [`Rule::id`] and the serde form is derived from the same kebab-case names;
//! a unit test keeps the two in step.

use serde::Serialize;

/// One rule of the profile. The id (`rule.id()`) is stable kebab-case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The document is larger than [`crate::limits::MAX_DOCUMENT_BYTES`].
    DocumentTooLarge,
    /// The bytes are not UTF-8.
    NotUtf8,
    /// The bytes are not JSON.
    InvalidJson,
    /// A value in schema position is neither an object nor a boolean (or a
    /// keyword that holds schemas has the wrong shape).
    NotASchema,
    /// Nesting deeper than [`crate::limits::MAX_DEPTH`].
    TooDeep,
    /// More schemas than [`crate::limits::MAX_SCHEMAS`].
    TooManyNodes,
    /// More combinator branches than [`crate::limits::MAX_COMBINATOR_BRANCHES`].
    TooManyCombinators,
    /// A `$ref` to another document by absolute URI.
    RemoteRef,
    /// A `$ref` to another document by relative URI (a file name, a path).
    RelativeRef,
    /// A `$ref` to a plain-name fragment (`#name`, an `$anchor`).
    AnchorRef,
    /// A `$ref` that is not a string or whose fragment is not a JSON Pointer.
    InvalidRef,
    /// A `$ref` inside a subschema that carries its own `$id`, so that it is
    /// resolved against that embedded resource rather than the document.
    RefUnderId,
    /// `$dynamicRef` or `$dynamicAnchor`.
    DynamicRef,
    /// `$recursiveRef` or `$recursiveAnchor`.
    RecursiveRef,
    /// A `$ref` whose target does not exist or is not a schema.
    MissingRefTarget,
    /// A `$ref` that takes part in a cycle (including recursion to an
    /// ancestor and a reference to itself).
    RefCycle,
    /// A schema whose size with every reference inlined exceeds
    /// [`crate::limits::MAX_EXPANDED_SCHEMAS`].
    RefExpansion,
    /// A pattern that does not parse, or uses syntax outside portable
    /// ECMA-262.
    PatternSyntax,
    /// A group of any kind (capturing, non-capturing, named, lookaround) or
    /// inline flags.
    PatternGroup,
    /// A backreference.
    PatternBackreference,
    /// `*`, `+` or `{n,}`.
    PatternUnboundedRepetition,
    /// A lazy quantifier such as `??` or `{1,3}?`.
    PatternLazyQuantifier,
    /// Variable-width repetitions that can match the same characters where
    /// they meet, or a repetition of a repetition.
    PatternAmbiguousRepetition,
    /// A counted repetition above [`crate::limits::MAX_PATTERN_REPETITION`].
    PatternLargeRepetition,
    /// More distinct pattern text than
    /// [`crate::limits::MAX_PATTERN_TEXT_BYTES`].
    PatternBudget,
    /// `uniqueItems: true`.
    UniqueItems,
}

impl Rule {
    /// Every rule, in declaration order.
    pub const ALL: [Rule; 26] = [
        Rule::DocumentTooLarge,
        Rule::NotUtf8,
        Rule::InvalidJson,
        Rule::NotASchema,
        Rule::TooDeep,
        Rule::TooManyNodes,
        Rule::TooManyCombinators,
        Rule::RemoteRef,
        Rule::RelativeRef,
        Rule::AnchorRef,
        Rule::InvalidRef,
        Rule::RefUnderId,
        Rule::DynamicRef,
        Rule::RecursiveRef,
        Rule::MissingRefTarget,
        Rule::RefCycle,
        Rule::RefExpansion,
        Rule::PatternSyntax,
        Rule::PatternGroup,
        Rule::PatternBackreference,
        Rule::PatternUnboundedRepetition,
        Rule::PatternLazyQuantifier,
        Rule::PatternAmbiguousRepetition,
        Rule::PatternLargeRepetition,
        Rule::PatternBudget,
        Rule::UniqueItems,
    ];

    /// The stable kebab-case id of this rule.
    pub fn id(self) -> &'static str {
        match self {
            Rule::DocumentTooLarge => "document-too-large",
            Rule::NotUtf8 => "not-utf8",
            Rule::InvalidJson => "invalid-json",
            Rule::NotASchema => "not-a-schema",
            Rule::TooDeep => "too-deep",
            Rule::TooManyNodes => "too-many-nodes",
            Rule::TooManyCombinators => "too-many-combinators",
            Rule::RemoteRef => "remote-ref",
            Rule::RelativeRef => "relative-ref",
            Rule::AnchorRef => "anchor-ref",
            Rule::InvalidRef => "invalid-ref",
            Rule::RefUnderId => "ref-under-id",
            Rule::DynamicRef => "dynamic-ref",
            Rule::RecursiveRef => "recursive-ref",
            Rule::MissingRefTarget => "missing-ref-target",
            Rule::RefCycle => "ref-cycle",
            Rule::RefExpansion => "ref-expansion",
            Rule::PatternSyntax => "pattern-syntax",
            Rule::PatternGroup => "pattern-group",
            Rule::PatternBackreference => "pattern-backreference",
            Rule::PatternUnboundedRepetition => "pattern-unbounded-repetition",
            Rule::PatternLazyQuantifier => "pattern-lazy-quantifier",
            Rule::PatternAmbiguousRepetition => "pattern-ambiguous-repetition",
            Rule::PatternLargeRepetition => "pattern-large-repetition",
            Rule::PatternBudget => "pattern-budget",
            Rule::UniqueItems => "unique-items",
        }
    }

    /// The rule with this id, if any.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|rule| rule.id() == id)
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// One breach of the profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// Which rule was broken.
    pub rule: Rule,
    /// RFC 6901 JSON Pointer to the offending node (`""` is the document).
    pub pointer: String,
    /// One line saying what is wrong, in the author's terms.
    pub message: String,
}

/// The decision on one document.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// True exactly when `violations` is empty.
    pub accepted: bool,
    /// Every violation found, in document order within each rule family.
    pub violations: Vec<Violation>,
}

impl Verdict {
    /// The verdict for a list of violations: accepted when there are none.
    pub fn from_violations(violations: Vec<Violation>) -> Verdict {
        Verdict { accepted: violations.is_empty(), violations }
    }

    /// The distinct rules broken, sorted, for tallies and tests.
    pub fn rules(&self) -> Vec<Rule> {
        let mut rules: Vec<Rule> = self.violations.iter().map(|v| v.rule).collect();
        rules.sort();
        rules.dedup();
        rules
    }
}

/// Collects violations during a lint; the walkers share one.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    violations: Vec<Violation>,
}

impl Findings {
    pub(crate) fn push(&mut self, rule: Rule, pointer: String, message: String) {
        self.violations.push(Violation { rule, pointer, message });
    }

    pub(crate) fn into_verdict(self) -> Verdict {
        Verdict::from_violations(self.violations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_names_match_ids() {
        for rule in Rule::ALL {
            let json = serde_json::to_value(rule).expect("a rule serializes");
            assert_eq!(json, serde_json::Value::String(rule.id().to_owned()));
            assert_eq!(Rule::from_id(rule.id()), Some(rule));
        }
    }

    #[test]
    fn ids_are_unique_kebab_case() {
        let mut ids: Vec<&str> = Rule::ALL.iter().map(|r| r.id()).collect();
        assert!(ids.iter().all(|id| id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), Rule::ALL.len());
    }

    #[test]
    fn verdict_serializes_in_report_shape() {
        let mut findings = Findings::default();
        findings.push(Rule::UniqueItems, "/uniqueItems".into(), "no".into());
        let verdict = findings.into_verdict();
        assert!(!verdict.accepted);
        let json = serde_json::to_string(&verdict).expect("serializes");
        assert_eq!(json, r#"{"accepted":false,"violations":[{"rule":"unique-items","pointer":"/uniqueItems","message":"no"}]}"#);
    }
}
