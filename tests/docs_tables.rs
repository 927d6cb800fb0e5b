//! The generated docs page against the reference page, cell by cell: every table of the
//! reference page has a generated table with the same header, and every identifier and
//! value cell is equal. Only the catalog sha256 (outside the tables) is ours.

use std::path::Path;

type Table = Vec<Vec<String>>;

/// Tables of the reference page: runs of tab-separated lines.
fn reference_tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut current: Table = Vec::new();
    for line in text.lines() {
        if line.contains('\t') {
            current.push(line.split('\t').map(|c| c.trim().to_string()).collect());
        } else if !current.is_empty() {
            tables.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tables.push(current);
    }
    tables
}

/// Splits a GitHub-flavoured Markdown table row on unescaped pipes and unescapes `\|`.
fn markdown_cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("cell").push('|');
            }
            '|' => cells.push(String::new()),
            c => cells.last_mut().expect("cell").push(c),
        }
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

fn markdown_tables(text: &str) -> Vec<Table> {
    let mut tables = Vec::new();
    let mut current: Table = Vec::new();
    for line in text.lines() {
        if line.starts_with('|') {
            if !line.starts_with("|---") {
                current.push(markdown_cells(line));
            }
        } else if !current.is_empty() {
            tables.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        tables.push(current);
    }
    tables
}

#[test]
fn every_reference_table_is_generated_cell_for_cell() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("tests/data/reference-page.txt")).expect("reference page");
    let generated = std::fs::read_to_string(root.join("docs/harness-wire-extensions.md")).expect("docs page");
    let reference = reference_tables(&reference);
    let generated = markdown_tables(&generated);
    assert_eq!(reference.len(), 9, "the reference page has nine tables");
    // The reference page's nine, plus the pinned ACP grammar, which the page only implies.
    assert_eq!(generated.len(), 10, "the docs page renders ten tables");
    assert!(generated.iter().any(|t| t[0] == ["Method", "Kind", "Handled by", "Params", "Result"]), "the ACP grammar table");
    for table in &reference {
        let header = &table[0];
        let ours = generated
            .iter()
            .find(|t| &t[0] == header)
            .unwrap_or_else(|| panic!("no generated table with header {header:?}"));
        assert_eq!(ours.len(), table.len(), "row count of table {header:?}");
        for (row, (theirs, mine)) in table.iter().zip(ours).enumerate() {
            assert_eq!(mine, theirs, "table {:?}, row {row}", header[0]);
        }
    }
}

#[test]
fn snapshot_line_carries_the_revision_identities_and_our_sha() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/harness-wire-extensions.md")).expect("docs page");
    let line = page.lines().find(|l| l.starts_with("Projection ")).expect("snapshot line");
    for identity in [
        "checkfu:harness-support@1",
        "checkfu:harness-experience-profiles@2",
        "checkfu:harness-conformance@9",
        "checkfu:harness-conformance-case-set@6",
        "checkfu:harness-conformance-evidence-identity@2",
        "checkfu:conformance-evidence-manifest@6",
        "checkfu:harness-readiness@2",
    ] {
        assert!(line.contains(identity), "{identity} missing from {line}");
    }
    let sha = checkfu_wire::catalog::CATALOG_SHA256;
    assert_eq!(sha.len(), 64);
    assert!(line.contains(&format!("catalog sha256:{sha}")), "{line}");
}
