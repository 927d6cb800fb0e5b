//! A table of the docs page, and its split into parts that fit GitHub's column.
//!
//! GitHub shows Markdown in a column 980 px wide with 45 px of padding, and its CSS makes a
//! wider table a scrolling block: the columns past 890 px are seen only by scrolling away
//! from the first. A wide table is therefore split by columns into parts that each fit, and
//! every part repeats the row key (the leading columns that name the row), so that every
//! other cell appears exactly once and can still be read against its row.

use serde::Serialize;

use super::cell::Cell;

/// The width a part may take, in px: GitHub's 890 px of content less a margin for fonts
/// wider than the estimate's (the docs check measures the real rendering).
pub const BUDGET: f64 = 850.0;

/// A table: header cells and rows of cells, in display order.
#[derive(Clone, Debug, Serialize)]
pub struct Table {
    pub header: Vec<Cell>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new(header: Vec<Cell>) -> Self {
        Table { header, rows: Vec::new() }
    }

    fn column_width(&self, column: usize) -> f64 {
        let header = self.header[column].width(true);
        self.rows.iter().filter_map(|r| r.get(column)).map(|c| c.width(false)).fold(header, f64::max)
    }

    /// The estimated width of the table when no cell wraps. Keeping every part within the
    /// budget at this width means no identifier is ever broken to make a table fit.
    pub fn width(&self) -> f64 {
        (0..self.header.len()).map(|c| self.column_width(c)).sum()
    }

    fn columns(&self, key: usize, columns: &[usize]) -> Table {
        let pick = |row: &Vec<Cell>| (0..key).chain(columns.iter().copied()).map(|c| row[c].clone()).collect();
        Table { header: pick(&self.header), rows: self.rows.iter().map(pick).collect() }
    }

    /// The table as parts within [`BUDGET`]: the table itself when it fits; otherwise each
    /// part holds the `key` leading columns and a run of the others. The columns after the
    /// key are grouped by `groups` (their counts, in order; what is left over is one more
    /// group), and a part never mixes two groups: entry facts stay apart from axes. Each
    /// group takes as few parts as fit, balanced so that no part is much wider than another.
    pub fn parts(&self, key: usize, groups: &[usize]) -> Vec<Table> {
        if self.width() <= BUDGET || self.header.len() <= key {
            return vec![self.clone()];
        }
        let key_width: f64 = (0..key).map(|c| self.column_width(c)).sum();
        let room = BUDGET - key_width;
        let mut parts = Vec::new();
        let mut start = key;
        let mut bounds: Vec<usize> = groups.to_vec();
        let used: usize = groups.iter().sum();
        if key + used < self.header.len() {
            bounds.push(self.header.len() - key - used);
        }
        for count in bounds {
            let end = (start + count).min(self.header.len());
            let widths: Vec<f64> = (start..end).map(|c| self.column_width(c)).collect();
            for run in balanced_runs(&widths, room) {
                let columns: Vec<usize> = run.map(|i| start + i).collect();
                parts.push(self.columns(key, &columns));
            }
            start = end;
        }
        parts
    }
}

/// Splits `widths` into the fewest contiguous runs whose sums are within `room` (a column
/// wider than `room` alone is a run of its own), and among those the one whose widest run
/// is narrowest.
fn balanced_runs(widths: &[f64], room: f64) -> Vec<std::ops::Range<usize>> {
    let n = widths.len();
    if n == 0 {
        return Vec::new();
    }
    let sum = |a: usize, b: usize| widths[a..b].iter().sum::<f64>();
    let fits = |a: usize, b: usize| b - a == 1 || sum(a, b) <= room;
    // best[i][k]: the narrowest widest run splitting widths[..i] into k runs that fit, and
    // where its last run starts.
    let mut best = vec![vec![None::<(f64, usize)>; n + 1]; n + 1];
    best[0][0] = Some((0.0, 0));
    for i in 1..=n {
        for k in 1..=i {
            for j in (k - 1)..i {
                let Some((widest, _)) = best[j][k - 1] else { continue };
                if !fits(j, i) {
                    continue;
                }
                let candidate = widest.max(sum(j, i));
                if best[i][k].is_none_or(|(w, _)| candidate < w) {
                    best[i][k] = Some((candidate, j));
                }
            }
        }
    }
    // One column per run always fits, so some k is found; were none, each column alone.
    let Some(k) = (1..=n).find(|&k| best[n][k].is_some()) else {
        return (0..n).map(|i| i..i + 1).collect();
    };
    let mut runs = Vec::new();
    let (mut i, mut k) = (n, k);
    while k > 0 {
        let Some((_, j)) = best[i][k] else { break };
        runs.push(j..i);
        i = j;
        k -= 1;
    }
    runs.reverse();
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(widths: &[usize]) -> Table {
        // A code cell of n characters is n × 8.16 + 37.88 px wide.
        let cells = |prefix: &str| widths.iter().enumerate().map(|(i, &n)| Cell::code(format!("{prefix}{i}{}", "x".repeat(n)))).collect();
        let mut t = Table::new(cells("h"));
        t.rows.push(cells("v"));
        t
    }

    #[test]
    fn a_table_that_fits_is_one_part() {
        let t = table(&[10, 10, 10]);
        assert!(t.width() < BUDGET);
        assert_eq!(t.parts(1, &[]).len(), 1);
    }

    #[test]
    fn parts_repeat_the_key_and_hold_every_other_column_once() {
        let t = table(&[16, 20, 20, 20, 20, 20, 20, 20, 20]);
        let parts = t.parts(1, &[2]);
        assert!(parts.len() >= 3, "{}", parts.len());
        let mut seen = Vec::new();
        for part in &parts {
            assert_eq!(part.header[0], t.header[0], "every part starts with the key");
            assert!(part.width() <= BUDGET, "{}", part.width());
            seen.extend(part.header[1..].iter().map(Cell::text));
        }
        let expected: Vec<String> = t.header[1..].iter().map(Cell::text).collect();
        assert_eq!(seen, expected, "each column once, in order");
        // The first group (two columns) is a part of its own.
        assert_eq!(parts[0].header.len(), 3);
    }

    #[test]
    fn runs_are_balanced() {
        assert_eq!(balanced_runs(&[4.0; 6], 16.0), vec![0..3, 3..6]);
        assert_eq!(balanced_runs(&[20.0, 1.0], 10.0), vec![0..1, 1..2]);
        assert_eq!(balanced_runs(&[], 10.0), Vec::<std::ops::Range<usize>>::new());
    }
}
