//! Realizability: can the envelope plus declaration admission produce an entry's ceiling?
//!
//! For a packaged entry there must be one retention mode of its driver under which every
//! axis of the ceiling is at most the envelope value, or, on an axis a declaration may
//! raise, exactly the one admitted step above it when the entry declares the member (and,
//! for the control axes, has the signed evidence of the passing case). A connected entry
//! is held to its lane's envelope the same way. Failure classes 2, 3, 4 and 6.

use super::index::Index;
use super::model::{AxisValues, Harness, Mode};
use crate::diagnostic::{Class, Diagnostic, FileId};

/// One envelope an entry may run under: a driver's retention row or a lane.
struct Row<'c> {
    label: String,
    values: &'c AxisValues,
}

fn rows<'c>(index: &Index<'c>, harness: &'c Harness) -> Option<(Vec<Row<'c>>, bool)> {
    match harness.mode.value {
        Mode::Packaged => {
            let driver = index.driver(harness.driver.as_ref()?.as_str())?;
            let rows = driver
                .envelopes
                .iter()
                .map(|e| Row { label: format!("{} / {}", driver.name.as_str(), e.retention.as_str()), values: &e.axes });
            Some((rows.collect(), false))
        }
        Mode::Connected => {
            let lane = index.lane(harness.lane.as_ref()?.as_str())?;
            Some((vec![Row { label: lane.name.value.clone(), values: &lane.envelope }], true))
        }
    }
}

/// What the ceiling cells mean once realized: which are above the envelope by admission.
#[derive(Debug, Default)]
pub struct Realization {
    /// The first envelope row under which the whole ceiling is realizable.
    pub row: Option<String>,
    /// Axis names whose ceiling value is above the envelope, realized by declaration.
    pub admitted_axes: Vec<String>,
}

pub(crate) fn realize(index: &Index, file: FileId, harness: &Harness, out: &mut Vec<Diagnostic>) -> Realization {
    let mut realization = Realization::default();
    // Unknown drivers, lanes, axes and values were reported by validation; there is no
    // envelope to compare against, so realizability says nothing more.
    let Some((rows, connected)) = rows(index, harness) else { return realization };
    let entry = harness.name.as_str();
    let mut fits_all = vec![true; rows.len()];
    let mut errors = 0;
    for axis in &index.catalog.axes {
        let Some(ceiling) = index.value_rank(&harness.ceiling, axis) else { continue };
        let envelope: Vec<Option<usize>> = rows.iter().map(|r| index.value_rank(r.values, axis)).collect();
        if envelope.iter().any(Option::is_none) {
            return realization;
        }
        let envelope: Vec<usize> = envelope.into_iter().flatten().collect();
        let upgrade = index.upgrade_for_axis(axis.name.as_str());
        let from = upgrade.and_then(|u| index.rank(axis.name.as_str(), u.from.as_str()));
        let to = upgrade.and_then(|u| index.rank(axis.name.as_str(), u.to.as_str()));
        let declared = upgrade.is_some_and(|u| index.declares(harness, u));
        let evidenced = upgrade.is_some_and(|u| index.has_evidence(harness, u));
        // What each row can realize on this axis, with and without the evidence gate.
        let admitted = |e: usize, gate: bool| -> usize {
            match (from, to) {
                (Some(f), Some(t)) if declared && e == f && (evidenced || !gate) => t,
                _ => e,
            }
        };
        let mut fits_any = false;
        for (i, &e) in envelope.iter().enumerate() {
            let fits = ceiling <= admitted(e, true);
            fits_all[i] &= fits;
            fits_any |= fits;
        }
        let top = envelope.iter().copied().max().unwrap_or(0);
        if fits_any {
            if ceiling > top {
                realization.admitted_axes.push(axis.name.value.clone());
            }
            continue;
        }
        errors += 1;
        let highest = envelope.iter().map(|&e| admitted(e, true)).max().unwrap_or(0);
        let ungated = envelope.iter().map(|&e| admitted(e, false)).max().unwrap_or(0);
        // A connected entry answers to its lane: anything but missing evidence is class 6.
        let class = match upgrade {
            Some(_) if ceiling <= ungated => Class::PromotionWithoutEvidence,
            _ if connected => Class::ExceedsLaneEnvelope,
            Some(_) => Class::UndeclaredPromotion,
            None => Class::ExceedsEnvelope,
        };
        let value_name = |rank: usize| axis.values.get(rank).map_or("?", |v| v.as_str()).to_string();
        let (at, declared_value) = match harness.ceiling.iter().find(|(k, _)| k.as_str() == axis.name.as_str()) {
            Some((_, v)) => (v.span.clone(), v.value.clone()),
            None => (harness.name.span.clone(), value_name(ceiling)),
        };
        let owner = if connected { "lane envelope" } else { "envelope" };
        let message = match class {
            Class::PromotionWithoutEvidence => format!("ceiling of `{entry}` promotes `{}` without signed evidence", axis.name.as_str()),
            Class::UndeclaredPromotion => {
                format!("ceiling of `{entry}` raises `{}` above the {owner} without the admitted declaration step", axis.name.as_str())
            }
            _ => format!("ceiling of `{entry}` exceeds the {owner} on `{}`", axis.name.as_str()),
        };
        let label = format!("`{}` is not realizable here", declared_value);
        let mut d = Diagnostic::new(class, message)
            .at(file, at, label)
            .entry(entry)
            .axis(axis.name.as_str())
            .declared(declared_value)
            .highest_realizable(value_name(highest));
        for (row, &e) in rows.iter().zip(&envelope) {
            d = d.note(format!("{} gives `{}`", row.label, value_name(e)));
        }
        if let Some(u) = upgrade {
            let why = match class {
                Class::PromotionWithoutEvidence => {
                    format!("the catalog records no signed `{}` evidence for `{entry}`", u.evidence.as_ref().map_or("", |e| e.as_str()))
                }
                _ if !declared => format!(
                    "`{entry}` does not declare `{}: \"{}\"`, which admits {} → {}",
                    u.member.as_str(),
                    u.value.as_str(),
                    u.from.as_str(),
                    u.to.as_str()
                ),
                _ => format!("admission raises exactly {} → {}, one step", u.from.as_str(), u.to.as_str()),
            };
            d = d.note(why);
        }
        out.push(d);
    }
    if errors == 0 {
        match fits_all.iter().position(|&f| f) {
            Some(i) => realization.row = Some(rows[i].label.clone()),
            None => {
                // Each axis fits some row, but no single row fits them all.
                let class = if connected { Class::ExceedsLaneEnvelope } else { Class::ExceedsEnvelope };
                let labels = rows.iter().map(|r| r.label.as_str()).collect::<Vec<_>>().join(", ");
                out.push(
                    Diagnostic::new(class, format!("no single retention mode realizes the ceiling of `{entry}`"))
                        .at(file, harness.name.span.clone(), "each axis fits some envelope, but not one envelope all")
                        .entry(entry)
                        .note(format!("envelopes tried: {labels}")),
                );
            }
        }
    }
    realization
}
