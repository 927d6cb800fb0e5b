//! The book under docs/ holds together: `docs/SUMMARY.md` lists every chapter there is and
//! no chapter that is missing, and every relative link of the README, the changelog and the
//! book names a file that exists, and, with a `#fragment` into a Markdown file, a heading of
//! that file (by the slug GitHub and mdBook give it). `mdbook build docs` in CI renders it.

use crate::support;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use support::project::project_root;

/// Every Markdown file under `dir`, recursively, in a stable order.
fn markdown_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<_> =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())).map(|e| e.expect("dir entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(markdown_under(&path));
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The lines of a Markdown text that are prose, with their 1-based numbers: fenced code
/// blocks are left out.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<(char, usize)> = None;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match (fence, marker) {
            (None, Some(c)) if run >= 3 => fence = Some((c, run)),
            (Some((c, open)), Some(m)) if m == c && run >= open && trimmed.trim_end().chars().all(|x| x == c) => fence = None,
            (None, _) => lines.push((n + 1, line)),
            _ => {}
        }
    }
    lines
}

/// `line` without its inline code spans (a run of backticks up to the next run of the same
/// length).
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|c| **c == '`').count();
        let mut j = i + run;
        let mut closed = None;
        while j < chars.len() {
            let other = chars[j..].iter().take_while(|c| **c == '`').count();
            if other == run {
                closed = Some(j + run);
                break;
            }
            j += other.max(1);
        }
        match closed {
            Some(end) => i = end,
            None => {
                out.extend(&chars[i..i + run]);
                i += run;
            }
        }
    }
    out
}

/// The targets of the inline links and link reference definitions of a prose line.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find([')', ' ']).unwrap_or(after.len());
        targets.push(after[..end].trim_matches(['<', '>']).to_string());
        rest = &after[end..];
    }
    let definition = line.trim_start();
    if definition.starts_with('[') && !definition.starts_with("[^") {
        if let Some((_, target)) = definition.split_once("]: ") {
            targets.push(target.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    targets
}

/// A heading's anchor as GitHub and mdBook make it: lowercase, everything but letters,
/// digits, spaces, hyphens and underscores dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (a repeated one also as `-1`, `-2`, …), through
/// mdBook's `{{#include FILE}}` too.
fn anchors(path: &Path) -> BTreeSet<String> {
    let text = read(path);
    let mut seen = BTreeSet::new();
    for (_, line) in prose_lines(&text) {
        let trimmed = line.trim();
        if let Some(included) = trimmed.strip_prefix("{{#include ").and_then(|l| l.strip_suffix("}}")) {
            seen.extend(anchors(&path.parent().expect("a parent").join(included.trim())));
            continue;
        }
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&level) && trimmed[level..].starts_with(' ') {
            let base = slug(&without_code_spans(&trimmed[level..].replace('`', "")));
            let mut anchor = base.clone();
            let mut n = 0;
            while !seen.insert(anchor.clone()) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
        }
    }
    seen
}

fn relative(path: &Path) -> String {
    path.strip_prefix(project_root()).unwrap_or(path).display().to_string()
}

#[test]
fn the_summary_lists_every_chapter_and_only_chapters_that_exist() {
    let docs = project_root().join("docs");
    let summary_path = docs.join("SUMMARY.md");
    let summary = read(&summary_path);
    let mut listed = BTreeSet::new();
    let mut failures = Vec::new();
    for (n, line) in prose_lines(&summary) {
        for target in link_targets(line) {
            let chapter = docs.join(&target);
            if !chapter.is_file() {
                failures.push(format!("docs/SUMMARY.md:{n}: the chapter {target} does not exist"));
            }
            listed.insert(chapter);
        }
    }
    for file in markdown_under(&docs) {
        if file != summary_path && !listed.contains(&file) {
            failures.push(format!("{}: a Markdown file under docs/ that docs/SUMMARY.md does not list", relative(&file)));
        }
    }
    assert!(failures.is_empty(), "the book's chapters:\n{}", failures.join("\n"));
}

#[test]
fn every_relative_link_names_a_file_and_heading_that_exist() {
    let root = project_root();
    let mut files = vec![root.join("README.md"), root.join("CHANGELOG.md")];
    files.extend(markdown_under(&root.join("docs")));
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = read(file);
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, fragment) = match target.split_once('#') {
                    Some((path, fragment)) => (path, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() { file.clone() } else { file.parent().expect("a parent").join(path) };
                if !resolved.exists() {
                    failures.push(format!("{}:{n}: {target}: no such file", relative(file)));
                    continue;
                }
                let Some(fragment) = fragment else { continue };
                if resolved.extension().is_some_and(|e| e == "md") && !anchors(&resolved).contains(fragment) {
                    failures.push(format!("{}:{n}: {target}: {} has no heading #{fragment}", relative(file), relative(&resolved)));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} relative links found: is the scan broken?");
    assert!(failures.is_empty(), "broken links:\n{}", failures.join("\n"));
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug(" How CI uses it"), "how-ci-uses-it");
    assert_eq!(slug(&"What `prompt_exchange` proves".replace('`', "")), "what-prompt_exchange-proves");
    assert_eq!(slug("Edit → rebuild"), "edit--rebuild");
    assert_eq!(link_targets("see [a](b.md#c) and `[x](y)`"), vec!["b.md#c".to_string()]);
}
