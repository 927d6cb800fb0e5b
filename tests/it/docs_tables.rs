//! The generated docs page against the reference page: every table of the reference page
//! is on the page, cell for cell (a wide one as parts that repeat its row key, every other
//! cell in exactly one part), with the reference page's headings, identifiers set as code,
//! revision literals as code, and the axis orders shown. Only the catalog sha256 (outside
//! the tables) is ours. How wide the tables render is the docs check's
//! (`tests/docs-render/check.mjs`, run by `.ci/run`).

type Table = Vec<Vec<String>>;

fn read(path: &str) -> String {
    let root = crate::support::project::project_root();
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn reference_page() -> String {
    read("tests/data/reference-page.txt")
}

fn page() -> String {
    read("docs/harness-wire-extensions.md")
}

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

/// Headings of the reference page, a plain-text rendering: a line alone between blank
/// lines, short, not a sentence or a lead-in (no final `.` or `:`), not a table row and not
/// a command.
fn reference_headings(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut headings = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let alone = (i == 0 || lines[i - 1].is_empty()) && lines.get(i + 1).is_some_and(|l| l.is_empty());
        let heading = !line.is_empty()
            && alone
            && line.chars().count() < 70
            && !line.contains('\t')
            && !line.ends_with(['.', ':'])
            && !line.starts_with("checkfu ");
        if heading {
            headings.push(line.to_string());
        }
    }
    headings
}

/// A cell's rendered text: code spans unwrapped (CommonMark: a run of n backticks up to
/// the next run of exactly n, one space stripped from each end when both are there).
fn unwrap_code(cell: &str) -> String {
    let chars: Vec<char> = cell.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            let n = chars[j..].iter().take_while(|&&c| c == '`').count();
            if n == run {
                close = Some(j);
                break;
            }
            j += n.max(1);
        }
        match close {
            Some(end) => {
                let mut inner: String = chars[i + run..end].iter().collect();
                if inner.len() > 1 && inner.starts_with(' ') && inner.ends_with(' ') {
                    inner = inner[1..inner.len() - 1].to_string();
                }
                out.push_str(&inner);
                i = end + run;
            }
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
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

/// The page's tables as Markdown cells (code spans kept).
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

fn rendered(table: &Table) -> Table {
    table.iter().map(|row| row.iter().map(|c| unwrap_code(c)).collect()).collect()
}

/// The reference table rebuilt from the page's parts of it: the tables whose first header
/// cell is the reference's and whose header cells all belong to it. The key is the columns
/// every part shares; every other column must be in exactly one part, each part must name
/// the same rows by the same keys, and the result is in the reference's column order.
fn reassemble(reference: &Table, page: &[Table]) -> Table {
    let header = &reference[0];
    let parts: Vec<&Table> = page.iter().filter(|t| t[0][0] == header[0] && t[0].iter().all(|h| header.contains(h))).collect();
    assert!(!parts.is_empty(), "no table on the page for {header:?}");
    let key: Vec<&String> = header.iter().filter(|h| parts.iter().all(|p| p[0].contains(h))).collect();
    for (i, h) in key.iter().enumerate() {
        assert!(parts.iter().all(|p| &&p[0][i] == h), "{header:?}: every part starts with the key {key:?}");
    }
    for h in header.iter().filter(|h| !key.contains(h)) {
        let holders = parts.iter().filter(|p| p[0].contains(h)).count();
        assert_eq!(holders, 1, "{header:?}: column {h:?} is in {holders} parts, not exactly one");
    }
    let rows = parts[0].len();
    for p in &parts {
        assert_eq!(p.len(), rows, "{header:?}: every part has the same rows");
        for (r, row) in p.iter().enumerate() {
            assert_eq!(row[..key.len()], parts[0][r][..key.len()], "{header:?}: row {r} is keyed alike in every part");
        }
    }
    (0..rows)
        .map(|r| {
            header
                .iter()
                .map(|h| {
                    let part = parts.iter().find(|p| p[0].contains(h)).expect("held");
                    let column = part[0].iter().position(|x| x == h).expect("column");
                    part[r][column].clone()
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_reference_table_is_on_the_page_cell_for_cell() {
    let reference = reference_tables(&reference_page());
    assert_eq!(reference.len(), 9, "the reference page has nine tables");
    let tables: Vec<Table> = markdown_tables(&page()).iter().map(rendered).collect();
    for table in &reference {
        let ours = reassemble(table, &tables);
        assert_eq!(ours.len(), table.len(), "row count of table {:?}", table[0]);
        for (row, (theirs, mine)) in table.iter().zip(&ours).enumerate() {
            assert_eq!(mine, theirs, "table {:?}, row {row}", table[0][0]);
        }
    }
    // Beyond the reference page's: the axis orders and the pinned ACP grammar.
    assert!(tables.iter().any(|t| t[0] == ["Axis", "Values, weakest → strongest"]), "the axis orders");
    assert!(tables.iter().any(|t| t[0] == ["Method", "Params", "Result"]), "the ACP requests");
}

#[test]
fn the_page_has_the_reference_pages_headings_in_order() {
    let theirs = reference_headings(&reference_page());
    assert_eq!(theirs.len(), 17, "the reference page's headings: {theirs:#?}");
    let page = page();
    let ours: Vec<&str> = page.lines().filter_map(|l| l.trim_start_matches('#').strip_prefix(' ').filter(|_| l.starts_with('#'))).collect();
    // The same text gives the same GitHub anchor; ours may add headings between them.
    let mut at = 0;
    for heading in &theirs {
        match ours[at..].iter().position(|h| h == heading) {
            Some(i) => at += i + 1,
            None => panic!("no heading {heading:?} (in order) among {ours:#?}"),
        }
    }
}

#[test]
fn every_tables_row_key_is_set_as_code() {
    for table in markdown_tables(&page()) {
        for row in &table[1..] {
            let key = &row[0];
            assert!(key.starts_with('`') && key.ends_with('`') && !key.contains("` "), "{:?}: key {key:?} is not code", table[0]);
        }
    }
}

#[test]
fn revision_literals_and_the_catalog_sha_are_code() {
    let page = page();
    let sha = checkfu_wire::catalog::CATALOG_SHA256;
    assert_eq!(sha.len(), 64);
    let mut literals: Vec<String> = checkfu_wire::catalog::Revision::ALL.iter().map(|r| r.literal().to_string()).collect();
    literals.push(format!("sha256:{sha}"));
    for literal in &literals {
        let mut found = false;
        let part_of_name = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || "-_.:/@".contains(c));
        for (at, _) in page.match_indices(literal.as_str()) {
            let before = page[..at].chars().next_back();
            let after = page[at + literal.len()..].chars().next();
            // Only the literal itself, not a longer name it is part of (`acp-v1` in a path).
            if part_of_name(before) || part_of_name(after) {
                continue;
            }
            found = true;
            let context = &page[at.saturating_sub(30)..(at + literal.len() + 10).min(page.len())];
            assert!(before == Some('`') && after == Some('`'), "`{literal}` appears outside a code span: …{context}…");
        }
        assert!(found, "{literal} is not on the page");
    }
}

#[test]
fn the_axis_orders_are_the_catalogs() {
    let tables: Vec<Table> = markdown_tables(&page()).iter().map(rendered).collect();
    let orders = tables.iter().find(|t| t[0] == ["Axis", "Values, weakest → strongest"]).expect("the axis orders");
    let axes = checkfu_wire::catalog::AXES;
    assert_eq!(orders.len() - 1, axes.len());
    for (row, axis) in orders[1..].iter().zip(axes) {
        assert_eq!(row, &vec![axis.name.to_string(), axis.values.join(" < ")]);
    }
}

#[test]
fn code_spans_unwrap_as_commonmark_says() {
    assert_eq!(unwrap_code("`observed`*"), "observed*");
    assert_eq!(unwrap_code("``a`b``"), "a`b");
    assert_eq!(unwrap_code("`` `a ``"), "`a");
    assert_eq!(unwrap_code("a ` b"), "a ` b");
}
