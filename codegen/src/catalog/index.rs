//! Name lookups over a catalog: axis ranks, upgrades by axis, drivers, lanes. (A provider's
//! routes and reachability are derived in `routes`.)
//!
//! Built once after loading and shared by validation, realizability and the renderers, so
//! that "is this value stronger than that one" has exactly one definition: the position in
//! the axis vocabulary.

use std::collections::HashMap;

use super::model::{Axis, AxisValues, Catalog, Driver, Harness, Lane, Upgrade};

pub struct Index<'c> {
    pub catalog: &'c Catalog,
    axes: HashMap<&'c str, &'c Axis>,
    drivers: HashMap<&'c str, &'c Driver>,
    lanes: HashMap<&'c str, &'c Lane>,
}

impl<'c> Index<'c> {
    pub fn new(catalog: &'c Catalog) -> Self {
        // First occurrence wins; duplicates are reported by validation.
        let mut axes = HashMap::new();
        for axis in &catalog.axes {
            axes.entry(axis.name.as_str()).or_insert(axis);
        }
        let mut drivers = HashMap::new();
        for driver in &catalog.drivers {
            drivers.entry(driver.name.as_str()).or_insert(driver);
        }
        let mut lanes = HashMap::new();
        for lane in &catalog.lanes {
            lanes.entry(lane.name.as_str()).or_insert(lane);
        }
        Index { catalog, axes, drivers, lanes }
    }

    pub fn axis(&self, name: &str) -> Option<&'c Axis> {
        self.axes.get(name).copied()
    }

    /// Position of `value` in the axis vocabulary: 0 is the weakest.
    pub fn rank(&self, axis: &str, value: &str) -> Option<usize> {
        self.axis(axis)?.values.iter().position(|v| v.as_str() == value)
    }

    /// The value of an axis in a map of axis values, defaulting an omitted axis to its
    /// `absent` value (the weakest) when it has one.
    pub fn value_rank(&self, values: &AxisValues, axis: &Axis) -> Option<usize> {
        let written = values.iter().find(|(k, _)| k.as_str() == axis.name.as_str());
        match written {
            Some((_, value)) => self.rank(axis.name.as_str(), value.as_str()),
            // An axis no envelope may carry is implicitly at its weakest in every envelope.
            None if !axis.in_envelope || axis.absent.is_some() => Some(0),
            None => None,
        }
    }

    pub fn driver(&self, name: &str) -> Option<&'c Driver> {
        self.drivers.get(name).copied()
    }

    pub fn lane(&self, name: &str) -> Option<&'c Lane> {
        self.lanes.get(name).copied()
    }

    /// The declaration upgrade that may raise `axis`, if any.
    pub fn upgrade_for_axis(&self, axis: &str) -> Option<&'c Upgrade> {
        self.catalog.declaration.upgrades.iter().find(|u| u.axis.as_str() == axis)
    }

    /// Whether the harness declares exactly the upgrade's member and value.
    pub fn declares(&self, harness: &Harness, upgrade: &Upgrade) -> bool {
        harness.declares.iter().any(|(m, v)| m.as_str() == upgrade.member.as_str() && v.as_str() == upgrade.value.as_str())
    }

    /// Whether the harness has signed evidence of the upgrade's passing case (or the upgrade
    /// needs none).
    pub fn has_evidence(&self, harness: &Harness, upgrade: &Upgrade) -> bool {
        match &upgrade.evidence {
            None => true,
            Some(case) => harness.evidence.iter().any(|e| e.as_str() == case.as_str()),
        }
    }
}
