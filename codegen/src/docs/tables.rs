//! The docs page's tables as plain cells, computed from the compiled catalog.
//!
//! Every cell is a fact from the catalog; the template only lays them out. Header cells
//! are those of the reference page, so the generated page can be compared cell by cell.
//! Identifiers (names, values, keys, methods) are set as code. A table too wide for
//! GitHub's column comes as parts that repeat its row key (see `table`).

use crate::catalog::model::{Catalog, Harness, Mode};
use crate::catalog::routes::Routes;
use crate::catalog::{Compiled, Index};

use super::cell::Cell;
use super::table::Table;

/// The cell for an undeclared value.
pub const UNDECLARED: &str = "—";

fn header(cells: &[&str]) -> Vec<Cell> {
    cells.iter().map(|h| Cell::plain(*h)).collect()
}

/// A value that may be undeclared: code, or `—`.
fn value_or_undeclared(value: Option<&str>) -> Cell {
    value.map_or(Cell::plain(UNDECLARED), Cell::code)
}

/// A group of the pinned ACP schema's methods (`generated/acp-grammar.json`), as the page
/// shows them: requests by the side that handles them, then every notification.
#[derive(serde::Serialize)]
pub struct MethodGroup {
    /// `request` or `notification`.
    pub kind: String,
    /// The side that handles the requests; empty for the notifications, whose table says.
    pub side: String,
    pub table: Table,
}

/// The methods of the pinned ACP schema. A request's row is its method, params and result;
/// a notification's, its method, the side that handles it and its params (it has no
/// result). Each group fits the page's column without a split.
pub fn acp_methods(grammar: &serde_json::Value) -> Vec<MethodGroup> {
    let methods: Vec<&serde_json::Value> = grammar["methods"].as_array().into_iter().flatten().collect();
    let text = |m: &serde_json::Value, k: &str| value_or_undeclared(m[k].as_str());
    let str_of = |m: &serde_json::Value, k: &str| m[k].as_str().unwrap_or(UNDECLARED).to_string();
    let mut groups: Vec<MethodGroup> = Vec::new();
    let mut notifications = Table::new(header(&["Method", "Handled by", "Params"]));
    for m in &methods {
        if str_of(m, "kind") == "notification" {
            notifications.rows.push(vec![text(m, "method"), text(m, "handled_by"), text(m, "params")]);
            continue;
        }
        let (kind, side) = (str_of(m, "kind"), str_of(m, "handled_by"));
        let position = groups.iter().position(|g| g.kind == kind && g.side == side);
        let group = match position {
            Some(i) => &mut groups[i],
            None => {
                let table = Table::new(header(&["Method", "Params", "Result"]));
                groups.push(MethodGroup { kind, side, table });
                let last = groups.len() - 1;
                &mut groups[last]
            }
        };
        group.table.rows.push(vec![text(m, "method"), text(m, "params"), text(m, "result")]);
    }
    if !notifications.rows.is_empty() {
        groups.push(MethodGroup { kind: "notification".into(), side: String::new(), table: notifications });
    }
    groups
}

pub fn slots(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Slot", "Carrier", "Direction", "Payload", "Status"]));
    for s in &c.slots {
        t.rows.push(vec![
            Cell::code(s.key.as_str()),
            Cell::words(s.carrier.as_str()),
            Cell::plain(s.direction.value.arrow()),
            Cell::plain(s.payload.as_str()),
            Cell::code(s.status.as_str()),
        ]);
    }
    t
}

/// The slots whose carrier ACP v2 moves (`carrier_v2`); every other slot rides the same
/// carrier in v2. A table of its own: the slot table above is the reference page's, cell for
/// cell.
pub fn slots_v2(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Slot", "Carrier under ACP v1", "Carrier under ACP v2"]));
    for s in &c.slots {
        let Some(v2) = &s.carrier_v2 else { continue };
        t.rows.push(vec![Cell::code(s.key.as_str()), Cell::words(s.carrier.as_str()), Cell::words(v2.as_str())]);
    }
    t
}

pub fn handshake(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Declaration", "Admitted axis", "Upgrade"]));
    for u in &c.declaration.upgrades {
        t.rows.push(vec![
            Cell::code(format!("{}: \"{}\"", u.member.as_str(), u.value.as_str())),
            Cell::code(u.axis.as_str()),
            Cell::codes([u.from.as_str(), u.to.as_str()], " → "),
        ]);
    }
    t
}

pub fn conformance(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Check", "Requirement"]));
    for k in &c.conformance {
        t.rows.push(vec![Cell::code(k.name.as_str()), Cell::plain(k.requirement.as_str())]);
    }
    t
}

fn evidence_cell(h: &Harness) -> Cell {
    if h.evidence.is_empty() {
        Cell::plain("none")
    } else {
        Cell::codes(h.evidence.iter().map(|e| e.as_str()), ", ")
    }
}

/// The support snapshot, in parts keyed by the harness.
pub fn support(c: &Catalog) -> Vec<Table> {
    let mut t = Table::new(header(&["Harness", "Supply", "Adoption", "Model lane", "MCP delivery", "Catalog evidence", "Tuple support"]));
    for h in &c.harnesses {
        t.rows.push(vec![
            Cell::code(h.name.as_str()),
            Cell::code(h.supply.as_str()),
            Cell::code(h.adoption.as_str()),
            Cell::code(h.model_lane.as_str()),
            Cell::code(h.mcp_delivery.as_str()),
            evidence_cell(h),
            Cell::code(h.tuple_support.as_str()),
        ]);
    }
    t.parts(1, &[])
}

/// The execution lane cell: the driver of a packaged entry, the lane of a connected one.
pub fn execution_lane(h: &Harness) -> String {
    let lane = match h.mode.value {
        Mode::Packaged => h.driver.as_ref(),
        Mode::Connected => h.lane.as_ref(),
    };
    lane.map_or(UNDECLARED.to_string(), |l| l.value.clone())
}

/// Every axis with its values in the catalog's order, weakest first.
pub fn axis_orders(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Axis", "Values, weakest → strongest"]));
    for axis in &c.axes {
        t.rows.push(vec![Cell::code(axis.name.as_str()), Cell::codes(axis.values.iter().map(|v| v.as_str()), " < ")]);
    }
    t
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

/// The catalog ceilings, in parts keyed by the entry: its mode, availability, protocol and
/// lane apart from its axes.
pub fn ceilings(index: &Index, compiled: &Compiled) -> Vec<Table> {
    let c = &compiled.catalog;
    let entry_columns = ["Mode", "Availability", "Release protocol", "Execution lane"];
    let mut cells = header(&["Entry"]);
    cells.extend(header(&entry_columns));
    cells.extend(c.axes.iter().map(|a| Cell::code(a.name.as_str())));
    let mut t = Table::new(cells);
    for (i, h) in c.harnesses.iter().enumerate() {
        let mut row = vec![
            Cell::code(h.name.as_str()),
            Cell::code(h.mode.value.as_str()),
            Cell::code(h.supply.as_str()),
            value_or_undeclared(h.release_protocol.as_ref().map(|p| p.as_str())),
        ];
        let lane = execution_lane(h);
        row.push(if lane == UNDECLARED { Cell::plain(lane) } else { Cell::code(lane) });
        for (_, value, star) in ceiling_cells(index, compiled, i) {
            row.push(match value {
                None => Cell::plain(UNDECLARED),
                Some(v) if star => Cell::code(v).then(Cell::plain("*")),
                Some(v) => Cell::code(v),
            });
        }
        t.rows.push(row);
    }
    t.parts(1, &[entry_columns.len()])
}

/// The server envelopes, in parts keyed by driver and retention.
pub fn envelopes(c: &Catalog) -> Vec<Table> {
    let axes: Vec<_> = c.axes.iter().filter(|a| a.in_envelope).collect();
    let mut cells = header(&["Driver", "Retention"]);
    cells.extend(axes.iter().map(|a| Cell::code(a.name.as_str())));
    let mut t = Table::new(cells);
    for d in &c.drivers {
        for e in &d.envelopes {
            let mut row = vec![Cell::code(d.name.as_str()), Cell::code(e.retention.as_str())];
            for axis in &axes {
                let v = e.axes.iter().find(|(k, _)| k.as_str() == axis.name.as_str());
                row.push(value_or_undeclared(v.map(|(_, v)| v.as_str())));
            }
            t.rows.push(row);
        }
    }
    t.parts(2, &[])
}

pub fn gated(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Declared axis", "Required value", "Gated observation members"]));
    for g in &c.gated_emissions {
        t.rows.push(vec![
            Cell::code(g.axis.as_str()),
            Cell::code(g.value.as_str()),
            Cell::codes(g.members.iter().map(|m| m.as_str()), ", "),
        ]);
    }
    t
}

/// Each dialect and its gateway path, as the derived routes carry them.
pub fn dialects(routes: &Routes) -> Table {
    let mut t = Table::new(header(&["Dialect", "Gateway request path"]));
    for d in routes.dialects {
        t.rows.push(vec![Cell::code(d.name.as_str()), Cell::code(d.gateway_path.as_str())]);
    }
    t
}

/// Reachability, in parts keyed by the entry: its declared dialects apart from the
/// providers' cells, which are the derived matrix's (`catalog::routes`).
pub fn reachability(routes: &Routes, c: &Catalog) -> Vec<Table> {
    let mut cells = header(&["Entry", "Declared dialects"]);
    cells.extend(c.providers.iter().map(|p| Cell::code(p.name.as_str())));
    let mut t = Table::new(cells);
    for (i, h) in c.harnesses.iter().enumerate() {
        let declared =
            if h.dialects.is_empty() { Cell::plain("undeclared") } else { Cell::codes(h.dialects.iter().map(|d| d.as_str()), ", ") };
        let mut row = vec![Cell::code(h.name.as_str()), declared];
        for p in 0..c.providers.len() {
            row.push(match routes.reachable(i, p) {
                None => Cell::plain(UNDECLARED),
                Some(true) => Cell::plain("reachable"),
                Some(false) => Cell::plain("unreachable"),
            });
        }
        t.rows.push(row);
    }
    t.parts(1, &[1])
}

/// What a one-shot declaration may declare: each closed member with the decoder's values.
pub fn oneshot_declares(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Member", "Values"]));
    for (member, values) in c.oneshot.declares_in_decoder_order() {
        t.rows.push(vec![Cell::code(member.as_str()), Cell::codes(values.iter().map(|v| v.as_str()), ", ")]);
    }
    t
}

/// The one-shot probe's steps and when each is reported. The pass conditions are a table of
/// their own ([`oneshot_passes`]): beside their long text, this column was too narrow to hold
/// an option's name on one line.
pub fn oneshot_steps(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Step", "Reported when"]));
    for s in &c.oneshot.steps {
        let when = match (&s.declared, &s.given) {
            (None, None) => Cell::plain("every run"),
            (Some(member), None) => Cell::code(member.as_str()).then(Cell::plain(" is declared")),
            (None, Some(option)) => Cell::plain("the probe is given ").then(Cell::code(option.as_str())),
            (Some(member), Some(option)) => {
                Cell::code(member.as_str()).then(Cell::plain(" is declared and the probe is given ")).then(Cell::code(option.as_str()))
            }
        };
        t.rows.push(vec![Cell::code(s.name.as_str()), when]);
    }
    t
}

/// Every value a harness may declare, the step of a probe run that proves it, and what
/// fails it: a run's realized set holds a declared value only when that step passed.
pub fn declared_proofs(c: &Catalog) -> Table {
    // The member and its value in columns of their own: as one code span (`member: "value"`)
    // the page's narrow column broke it at the space, which a reader then copies wrong.
    let mut t = Table::new(header(&["Declared", "Value", "Proved by", "Fails when"]));
    let d = &c.declaration;
    for u in &d.upgrades {
        t.rows.push(vec![
            Cell::code(u.member.as_str()),
            Cell::code(format!("\"{}\"", u.value.as_str())),
            Cell::code(u.proof.step.as_str()),
            Cell::plain(u.proof.fails.as_str()),
        ]);
    }
    for m in &d.mechanisms {
        for value in &m.values {
            let (member, value) = (Cell::code(m.member.as_str()), Cell::code(format!("\"{}\"", value.as_str())));
            t.rows.push(match &m.proof {
                Some(p) => vec![member, value, Cell::code(p.step.as_str()), Cell::plain(p.fails.as_str())],
                None => {
                    vec![member, value, Cell::plain("no step yet"), Cell::plain("reported as declared and not exercised; never realized")]
                }
            });
        }
    }
    t
}

/// The ACP lane's probe steps and when each passes (every one is reported).
pub fn acp_passes(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Step", "Passes when"]));
    for s in &c.acp_steps {
        t.rows.push(vec![Cell::code(s.name.as_str()), Cell::plain(s.pass.as_str())]);
    }
    t
}

/// The steps either lane reports when given what they name, and when each passes. What each
/// is reported with is said in its pass text: beside that long text, a column of its own was
/// too narrow to hold an option and its value on one line (as with the one-shot steps).
pub fn run_passes(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Step", "Passes when"]));
    for s in &c.run_steps {
        t.rows.push(vec![Cell::code(s.name.as_str()), Cell::plain(s.pass.as_str())]);
    }
    t
}

/// The one-shot probe's steps and when each passes.
pub fn oneshot_passes(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Step", "Passes when"]));
    for s in &c.oneshot.steps {
        t.rows.push(vec![Cell::code(s.name.as_str()), Cell::plain(s.pass.as_str())]);
    }
    t
}

/// Each normalized stream event and the observation it becomes.
pub fn oneshot_events(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Stream event", "Observation"]));
    for e in &c.oneshot.events {
        let observation = match (&e.observation, e.fails_turn) {
            (None, _) => Cell::plain("none"),
            (Some(o), false) => Cell::code(o.as_str()),
            (Some(o), true) => Cell::code(o.as_str()).then(Cell::plain(", the turn failed")),
        };
        t.rows.push(vec![Cell::code(e.kind.as_str()), observation]);
    }
    t
}

/// The requirement registry: each requirement's id with what it asks and where ACP says it,
/// its tier and what judges it in a probe run. The id leads its text in one cell: an id
/// breaks at its hyphens, and in a column of its own beside the text it was squeezed until
/// it did. The gates of the `capability` requirements are a table of their own
/// ([`requirement_gates`]), for the same want of room.
pub fn requirements(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Requirement: what it asks (where ACP says it)", "Tier", "Judged by"]));
    for r in &c.requirements {
        let judge = match (&r.step, &r.check) {
            (Some(step), _) => Cell::plain("step ").then(Cell::code(step.as_str())),
            (None, Some(check)) => Cell::plain("check ").then(Cell::code(check.as_str())),
            (None, None) => Cell::plain("the wire"),
        };
        let asks = Cell::code(r.id.as_str()).then(Cell::plain(format!(": {} ({})", r.text, r.citation.as_str())));
        t.rows.push(vec![asks, Cell::code(r.tier.as_str()), judge]);
    }
    t
}

/// The `capability` requirements and the capability that gates each: untested while the
/// agent does not offer it, failed only when it offers it and does not serve it.
pub fn requirement_gates(c: &Catalog) -> Table {
    let mut t = Table::new(header(&["Requirement", "Gated by"]));
    for r in &c.requirements {
        if let Some(gate) = &r.capability {
            t.rows.push(vec![Cell::code(r.id.as_str()), Cell::code(gate.as_str())]);
        }
    }
    t
}
