//! The docs page's tables as plain cells, computed from the compiled catalog.
//!
//! Every cell is a fact from the catalog; the template only lays them out. Header cells
//! are those of the reference page, so the generated page can be compared cell by cell.

use serde::Serialize;

use crate::catalog::model::{Catalog, Harness, Mode};
use crate::catalog::{Compiled, Index};

/// A table: header cells and rows of cells, in display order.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Self {
        Table { header: header.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }
}

/// The cell for an undeclared value.
pub const UNDECLARED: &str = "—";

fn strings<'a>(items: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    items.into_iter().map(str::to_string).collect()
}

/// The ACP methods of the pinned schema (`generated/acp-grammar.json`).
pub fn acp_methods(grammar: &serde_json::Value) -> Table {
    let mut t = Table::new(&["Method", "Kind", "Handled by", "Params", "Result"]);
    for m in grammar["methods"].as_array().into_iter().flatten() {
        let text = |k: &str| m[k].as_str().map_or(UNDECLARED.to_string(), |v| format!("`{v}`"));
        t.rows.push(vec![text("method"), text("kind"), text("handled_by"), text("params"), text("result")]);
    }
    t
}

pub fn slots(c: &Catalog) -> Table {
    let mut t = Table::new(&["Slot", "Carrier", "Direction", "Payload", "Status"]);
    for s in &c.slots {
        t.rows.push(vec![
            s.key.value.clone(),
            s.carrier.value.clone(),
            s.direction.value.arrow().to_string(),
            s.payload.clone(),
            s.status.value.clone(),
        ]);
    }
    t
}

pub fn handshake(c: &Catalog) -> Table {
    let mut t = Table::new(&["Declaration", "Admitted axis", "Upgrade"]);
    for u in &c.declaration.upgrades {
        t.rows.push(vec![
            format!("{}: \"{}\"", u.member.as_str(), u.value.as_str()),
            u.axis.value.clone(),
            format!("{} → {}", u.from.as_str(), u.to.as_str()),
        ]);
    }
    t
}

pub fn conformance(c: &Catalog) -> Table {
    let mut t = Table::new(&["Check", "Requirement"]);
    for k in &c.conformance {
        t.rows.push(vec![k.name.value.clone(), k.requirement.clone()]);
    }
    t
}

fn evidence_cell(h: &Harness) -> String {
    if h.evidence.is_empty() {
        "none".to_string()
    } else {
        strings(h.evidence.iter().map(|e| e.as_str())).join(", ")
    }
}

pub fn support(c: &Catalog) -> Table {
    let header = ["Harness", "Supply", "Adoption", "Model lane", "MCP delivery", "Catalog evidence", "Tuple support"];
    let mut t = Table::new(&header);
    for h in &c.harnesses {
        t.rows.push(vec![
            h.name.value.clone(),
            h.supply.value.clone(),
            h.adoption.value.clone(),
            h.model_lane.value.clone(),
            h.mcp_delivery.value.clone(),
            evidence_cell(h),
            h.tuple_support.value.clone(),
        ]);
    }
    t
}

/// The execution lane cell: the driver of a packaged entry, the lane of a connected one.
pub fn execution_lane(h: &Harness) -> String {
    let lane = match h.mode.value {
        Mode::Packaged => h.driver.as_ref(),
        Mode::Connected => h.lane.as_ref(),
    };
    lane.map_or(UNDECLARED.to_string(), |l| l.value.clone())
}

/// The ceiling cells of one entry, axis by axis: the value, `*` when declaration-admitted,
/// `—` when the axis is undeclared (its absent value).
pub fn ceiling_cells(index: &Index, compiled: &Compiled, i: usize) -> Vec<(String, Option<String>, bool)> {
    let h = &compiled.catalog.harnesses[i];
    let admitted = &compiled.realizations[i].admitted_axes;
    let mut cells = Vec::new();
    for axis in &index.catalog.axes {
        let written = h.ceiling.iter().find(|(k, _)| k.as_str() == axis.name.as_str()).map(|(_, v)| v.as_str());
        let value = written.or(axis.absent.as_ref().map(|a| a.as_str()));
        let declared = value.filter(|v| axis.absent.as_ref().is_none_or(|a| a.as_str() != *v));
        let star = admitted.contains(&axis.name.value);
        cells.push((axis.name.value.clone(), declared.map(str::to_string), star));
    }
    cells
}

pub fn ceilings(index: &Index, compiled: &Compiled) -> Table {
    let c = &compiled.catalog;
    let mut header = strings(["Entry", "Mode", "Availability", "Release protocol", "Execution lane"]);
    header.extend(c.axes.iter().map(|a| a.name.value.clone()));
    let mut t = Table { header, rows: Vec::new() };
    for (i, h) in c.harnesses.iter().enumerate() {
        let mut row = vec![
            h.name.value.clone(),
            h.mode.value.as_str().to_string(),
            h.supply.value.clone(),
            h.release_protocol.as_ref().map_or(UNDECLARED.to_string(), |p| p.value.clone()),
            execution_lane(h),
        ];
        for (_, value, star) in ceiling_cells(index, compiled, i) {
            row.push(match value {
                None => UNDECLARED.to_string(),
                Some(v) if star => format!("{v}*"),
                Some(v) => v,
            });
        }
        t.rows.push(row);
    }
    t
}

pub fn envelopes(c: &Catalog) -> Table {
    let axes: Vec<_> = c.axes.iter().filter(|a| a.in_envelope).collect();
    let mut header = strings(["Driver", "Retention"]);
    header.extend(axes.iter().map(|a| a.name.value.clone()));
    let mut t = Table { header, rows: Vec::new() };
    for d in &c.drivers {
        for e in &d.envelopes {
            let mut row = vec![d.name.value.clone(), e.retention.value.clone()];
            for axis in &axes {
                let v = e.axes.iter().find(|(k, _)| k.as_str() == axis.name.as_str());
                row.push(v.map_or(UNDECLARED.to_string(), |(_, v)| v.value.clone()));
            }
            t.rows.push(row);
        }
    }
    t
}

pub fn gated(c: &Catalog) -> Table {
    let mut t = Table::new(&["Declared axis", "Required value", "Gated observation members"]);
    for g in &c.gated_emissions {
        let members = strings(g.members.iter().map(|m| m.as_str())).join(", ");
        t.rows.push(vec![g.axis.value.clone(), g.value.value.clone(), members]);
    }
    t
}

pub fn dialects(c: &Catalog) -> Table {
    let mut t = Table::new(&["Dialect", "Gateway request path"]);
    for d in &c.dialects {
        t.rows.push(vec![d.name.value.clone(), d.gateway_path.value.clone()]);
    }
    t
}

/// Whether an entry's declared dialects meet what a provider accepts; `None` when the
/// entry declares none (undeclared is unconstrained, not universal).
pub fn reachable(index: &Index, h: &Harness, provider: &str) -> Option<bool> {
    if h.dialects.is_empty() {
        return None;
    }
    let accepts = index.provider_accepts(provider);
    Some(h.dialects.iter().any(|d| accepts.contains(&d.as_str())))
}

pub fn reachability(index: &Index, c: &Catalog) -> Table {
    let mut header = strings(["Entry", "Declared dialects"]);
    header.extend(c.providers.iter().map(|p| p.name.value.clone()));
    let mut t = Table { header, rows: Vec::new() };
    for h in &c.harnesses {
        let declared = if h.dialects.is_empty() {
            "undeclared".to_string()
        } else {
            strings(h.dialects.iter().map(|d| d.as_str())).join(", ")
        };
        let mut row = vec![h.name.value.clone(), declared];
        for p in &c.providers {
            row.push(match reachable(index, h, p.name.as_str()) {
                None => UNDECLARED.to_string(),
                Some(true) => "reachable".to_string(),
                Some(false) => "unreachable".to_string(),
            });
        }
        t.rows.push(row);
    }
    t
}
