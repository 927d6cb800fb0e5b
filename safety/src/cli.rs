//! `checkfu-wire lint-schema FILE... [--format json|text]`: lints files and
//! writes the report; the root crate's argument parser calls [`run_cli`].
//!
//! Exit codes: 0 when every file passes, 1 when any file fails the profile,
//! 2 when no file was given or a file cannot be read (a usage or environment
//! problem outranks a verdict, so scripts can tell the two apart). Reading is
//! capped one byte past the size bound, so a huge file is refused as
//! `document-too-large` without being read whole.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::limits::MAX_DOCUMENT_BYTES;
use crate::report::{Verdict, Violation};

/// One file's entry in the JSON report.
#[derive(Serialize)]
struct FileReport<'v> {
    file: String,
    accepted: bool,
    violations: &'v [Violation],
}

/// Lints `files`, writes the report to `out` (JSON when `json`, else one
/// line per violation and a summary), and returns the exit code. Files that
/// cannot be read are named on standard error and left out of the report.
pub fn run_cli(files: &[PathBuf], json: bool, out: &mut dyn Write) -> i32 {
    if files.is_empty() {
        eprintln!("usage: checkfu-wire lint-schema FILE... [--format json|text]");
        return 2;
    }
    let mut verdicts: Vec<(String, Verdict)> = Vec::with_capacity(files.len());
    let mut unreadable = 0usize;
    for file in files {
        let name = file.display().to_string();
        match read_capped(file) {
            Ok((bytes, _)) if bytes.len() <= MAX_DOCUMENT_BYTES => verdicts.push((name, crate::lint_bytes(&bytes))),
            Ok((_, size)) => verdicts.push((name, crate::too_large(size))),
            Err(error) => {
                eprintln!("{name}: cannot read: {error}");
                unreadable += 1;
            }
        }
    }
    let written = if json { write_json(&verdicts, out) } else { write_text(&verdicts, unreadable, out) };
    if written.is_err() {
        return 2;
    }
    if unreadable > 0 {
        2
    } else if verdicts.iter().any(|(_, verdict)| !verdict.accepted) {
        1
    } else {
        0
    }
}

/// The file's first bytes, one past the bound, and its size when the file system knows it
/// (a regular file's length; not a pipe's), so that a refusal can state the real size
/// without reading the whole file.
fn read_capped(path: &Path) -> std::io::Result<(Vec<u8>, Option<u64>)> {
    let file = std::fs::File::open(path)?;
    let size = file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    let mut bytes = Vec::new();
    // One byte past the bound is enough to know the file is too large.
    file.take(MAX_DOCUMENT_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    // A file that grew or shrank since: what was read is the better witness.
    let size = size.filter(|size| *size >= bytes.len() as u64);
    Ok((bytes, size))
}

fn write_json(verdicts: &[(String, Verdict)], out: &mut dyn Write) -> std::io::Result<()> {
    let reports: Vec<FileReport<'_>> = verdicts
        .iter()
        .map(|(file, verdict)| FileReport { file: file.clone(), accepted: verdict.accepted, violations: &verdict.violations })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &reports)?;
    writeln!(out)
}

fn write_text(verdicts: &[(String, Verdict)], unreadable: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let mut violations = 0usize;
    for (file, verdict) in verdicts {
        for violation in &verdict.violations {
            violations += 1;
            // The document itself has the empty pointer; quote it so the
            // line still reads as "at <something>".
            let pointer = if violation.pointer.is_empty() { "\"\"" } else { violation.pointer.as_str() };
            writeln!(out, "{file}: {} at {pointer}: {}", violation.rule, violation.message)?;
        }
    }
    let rejected = verdicts.iter().filter(|(_, verdict)| !verdict.accepted).count();
    let mut summary = format!(
        "lint-schema: {} file(s) checked, {} accepted, {rejected} rejected, {violations} violation(s)",
        verdicts.len(),
        verdicts.len() - rejected,
    );
    if unreadable > 0 {
        summary.push_str(&format!(", {unreadable} unreadable"));
    }
    writeln!(out, "{summary}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file in a directory of its own, removed with the returned guard.
    fn scratch(name: &str, contents: &[u8]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join(name);
        std::fs::write(&path, contents).expect("write temp file");
        (dir, path)
    }

    #[test]
    fn scratch_files_are_removed_with_their_guard() {
        let (dir, path) = scratch("gone.json", b"{}");
        let parent = dir.path().to_path_buf();
        assert!(path.is_file());
        drop(dir);
        assert!(!path.exists() && !parent.exists(), "{} left behind", parent.display());
    }

    #[test]
    fn exit_codes() {
        let (_good_dir, good) = scratch("good.json", b"{\"type\": \"string\"}");
        let (_bad_dir, bad) = scratch("bad.json", b"{\"uniqueItems\": true}");
        let missing = good.with_file_name("does-not-exist.json");
        let mut sink = Vec::new();
        assert_eq!(run_cli(&[], false, &mut sink), 2);
        assert_eq!(run_cli(std::slice::from_ref(&good), false, &mut sink), 0);
        assert_eq!(run_cli(&[good.clone(), bad.clone()], false, &mut sink), 1);
        assert_eq!(run_cli(&[bad, missing], true, &mut sink), 2);
    }

    #[test]
    fn json_report_shape() {
        let (_dir, bad) = scratch("shape.json", b"{\"uniqueItems\": true}");
        let mut out = Vec::new();
        assert_eq!(run_cli(std::slice::from_ref(&bad), true, &mut out), 1);
        let report: serde_json::Value = serde_json::from_slice(&out).expect("report is JSON");
        assert_eq!(
            report,
            serde_json::json!([{
                "file": bad.display().to_string(),
                "accepted": false,
                "violations": [{
                    "rule": "unique-items",
                    "pointer": "/uniqueItems",
                    "message": "`uniqueItems: true` costs quadratic work per array and is not allowed"
                }]
            }])
        );
    }

    #[test]
    fn text_report_lines() {
        let (_dir, bad) = scratch("text.json", b"[1]");
        let mut out = Vec::new();
        assert_eq!(run_cli(std::slice::from_ref(&bad), false, &mut out), 1);
        let text = String::from_utf8(out).expect("UTF-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with(&format!("{}: not-a-schema at \"\": ", bad.display())));
        assert_eq!(lines[1], "lint-schema: 1 file(s) checked, 0 accepted, 1 rejected, 1 violation(s)");
    }

    #[test]
    fn oversized_file_is_not_read_whole() {
        let (_dir, big) = scratch("big.json", &vec![b' '; 4 * MAX_DOCUMENT_BYTES]);
        let (bytes, size) = read_capped(&big).expect("readable");
        assert_eq!(bytes.len(), MAX_DOCUMENT_BYTES + 1);
        assert_eq!(size, Some(4 * MAX_DOCUMENT_BYTES as u64));
        let mut out = Vec::new();
        assert_eq!(run_cli(&[big], true, &mut out), 1);
        assert!(String::from_utf8_lossy(&out).contains("document-too-large"));
    }

    #[test]
    fn an_oversized_file_is_reported_at_its_real_size() {
        for size in [MAX_DOCUMENT_BYTES + 1, 35_104, 50_000_000] {
            let (_dir, big) = scratch("big.json", &vec![b' '; size]);
            let mut out = Vec::new();
            assert_eq!(run_cli(&[big], false, &mut out), 1);
            let text = String::from_utf8_lossy(&out);
            let expected = format!("the document is {size} bytes, more than {MAX_DOCUMENT_BYTES}");
            assert!(text.contains(&expected), "{text}");
        }
    }
}
