//! Reviewed warnings: `catalog/acknowledged.toml` names each warning of generation that is an
//! upstream fact this project cannot change (a vendor's schema as published), says what it is
//! and why it is accepted, and so keeps it out of every run's output. `check --verbose` shows
//! them.
//!
//! The file sits beside the catalog rather than in it: the catalog's canonical sha256 is its
//! identity, pinned by the revision lock and published in the support snapshot, and a review
//! note about the build's output is not a fact of the contract.
//!
//! A warning is matched by its whole text, so a changed warning is a new one: it shows again,
//! and the acknowledgement it no longer matches fails generation (`E0011`), so an
//! acknowledgement cannot outlive what it reviewed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::diagnostic::{Class, Diagnostic, Diagnostics, FileId};

/// The file, relative to the project root. It may be absent: then nothing is acknowledged.
pub const ACKNOWLEDGED_FILE: &str = "catalog/acknowledged.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    acknowledged: Vec<Group>,
}

/// Warnings with one cause, and the review of that cause.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    /// What the warnings are about, in a sentence.
    what: String,
    /// Why they are accepted rather than fixed.
    why: String,
    /// The warnings, each with the exact text generation gives.
    warnings: Vec<Spanned<String>>,
}

/// A warning that matched an acknowledgement, with its review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Acknowledged {
    pub warning: String,
    pub what: String,
    pub why: String,
}

/// The reviewed warnings of one project, read from its `ACKNOWLEDGED_FILE`.
pub struct Reviewed {
    file: Option<FileId>,
    /// warning text → (group index, span of the string in the file)
    entries: BTreeMap<String, (usize, std::ops::Range<usize>)>,
    groups: Vec<(String, String)>,
}

impl Reviewed {
    /// Reads the file; problems with it are recorded in `diagnostics`.
    pub fn load(root: &Path, diagnostics: &mut Diagnostics) -> Reviewed {
        let mut reviewed = Reviewed { file: None, entries: BTreeMap::new(), groups: Vec::new() };
        let bytes = match std::fs::read(root.join(ACKNOWLEDGED_FILE)) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return reviewed,
            Err(e) => {
                diagnostics.push(Diagnostic::new(Class::Input, format!("cannot read {ACKNOWLEDGED_FILE}: {e}")));
                return reviewed;
            }
        };
        let file = match crate::catalog::decode(bytes, PathBuf::from(ACKNOWLEDGED_FILE), &mut diagnostics.sources) {
            Ok(file) => file,
            Err(d) => {
                diagnostics.push(d);
                return reviewed;
            }
        };
        reviewed.file = Some(file);
        let parsed = match toml::from_str::<File>(diagnostics.sources.text(file)) {
            Ok(parsed) => parsed,
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                diagnostics
                    .push(Diagnostic::new(Class::Input, format!("invalid {ACKNOWLEDGED_FILE}: {}", e.message())).at(file, span, "here"));
                return reviewed;
            }
        };
        for (index, group) in parsed.acknowledged.into_iter().enumerate() {
            for warning in group.warnings {
                let span = warning.span();
                let text = warning.into_inner();
                if let Some((_, first)) = reviewed.entries.get(&text) {
                    diagnostics.push(
                        Diagnostic::new(Class::UnknownOrDuplicate, "a warning is acknowledged twice")
                            .at(file, span, "acknowledged again here")
                            .related(first.clone(), "first acknowledged here"),
                    );
                    continue;
                }
                reviewed.entries.insert(text, (index, span));
            }
            reviewed.groups.push((group.what, group.why));
        }
        reviewed
    }

    /// Splits `warnings` into those still to print and those acknowledged; an acknowledgement
    /// that matched none of them is an error.
    pub fn apply(&self, warnings: Vec<String>, diagnostics: &mut Diagnostics) -> (Vec<String>, Vec<Acknowledged>) {
        let mut shown = Vec::new();
        let mut acknowledged = Vec::new();
        for warning in warnings {
            match self.entries.get(&warning) {
                Some((group, _)) => {
                    let (what, why) = &self.groups[*group];
                    acknowledged.push(Acknowledged { warning, what: what.clone(), why: why.clone() });
                }
                None => shown.push(warning),
            }
        }
        if let Some(file) = self.file {
            for (text, (_, span)) in &self.entries {
                if !acknowledged.iter().any(|a| &a.warning == text) {
                    diagnostics.push(
                        Diagnostic::new(Class::StaleAcknowledgement, "an acknowledged warning is no longer given")
                            .at(file, span.clone(), "generation gives no warning with this text")
                            .note("remove the acknowledgement, or update it to the warning generation gives now"),
                    );
                }
            }
        }
        (shown, acknowledged)
    }
}
