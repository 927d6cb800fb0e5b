//! The data of the page's Mermaid diagram: each axis's values in order, where each server
//! envelope of a driver sits on it, and the one step a declaration may raise.
//!
//! The tables give these facts one at a time (the orders, the envelope rows, the upgrades);
//! the diagram puts them on one picture, so that how far a ceiling can rise above an
//! envelope is seen rather than worked out.

use serde::Serialize;

use crate::catalog::model::Catalog;

/// One driver's lattice.
#[derive(Serialize)]
pub struct Lattice {
    pub driver: String,
    pub axes: Vec<Axis>,
    /// The Mermaid ids of the values some envelope holds.
    pub envelope_nodes: Vec<String>,
}

#[derive(Serialize)]
pub struct Axis {
    /// A Mermaid id: catalog names may collide with Mermaid keywords (`end`).
    pub id: String,
    pub name: String,
    /// False when no envelope carries the axis; its absent value is where every run starts.
    pub in_envelope: bool,
    pub values: Vec<Value>,
    /// Consecutive pairs of values, weaker first, and the declaration that raises that step.
    pub steps: Vec<Step>,
}

#[derive(Serialize)]
pub struct Value {
    pub id: String,
    pub value: String,
    /// The retention modes whose envelope holds this value.
    pub envelopes: Vec<String>,
}

#[derive(Serialize)]
pub struct Step {
    pub from: String,
    pub to: String,
    /// `member: value` of the declaration that raises this step, if one does.
    pub declaration: Option<String>,
}

pub fn lattices(c: &Catalog) -> Vec<Lattice> {
    c.drivers
        .iter()
        .map(|d| {
            let mut envelope_nodes = Vec::new();
            let axes = c
                .axes
                .iter()
                .enumerate()
                .map(|(a, axis)| {
                    let values: Vec<Value> = axis
                        .values
                        .iter()
                        .enumerate()
                        .map(|(v, value)| {
                            let envelopes: Vec<String> = d
                                .envelopes
                                .iter()
                                .filter(|e| e.axes.iter().any(|(k, x)| k.as_str() == axis.name.as_str() && x.as_str() == value.as_str()))
                                .map(|e| e.retention.value.clone())
                                .collect();
                            let id = format!("a{a}v{v}");
                            if !envelopes.is_empty() {
                                envelope_nodes.push(id.clone());
                            }
                            Value { id, value: value.value.clone(), envelopes }
                        })
                        .collect();
                    let steps = values
                        .windows(2)
                        .map(|pair| {
                            let declaration = c
                                .declaration
                                .upgrades
                                .iter()
                                .find(|u| {
                                    u.axis.as_str() == axis.name.as_str()
                                        && u.from.as_str() == pair[0].value
                                        && u.to.as_str() == pair[1].value
                                })
                                .map(|u| format!("{}: {}", u.member.as_str(), u.value.as_str()));
                            Step { from: pair[0].id.clone(), to: pair[1].id.clone(), declaration }
                        })
                        .collect();
                    Axis { id: format!("a{a}"), name: axis.name.value.clone(), in_envelope: axis.in_envelope, values, steps }
                })
                .collect();
            Lattice { driver: d.name.value.clone(), axes, envelope_nodes }
        })
        .collect()
}
