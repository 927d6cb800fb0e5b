//! The `staged_files` step: a declared `staged_files: resource_links` exercised.
//!
//! The probe stages [`COUNT`] files in the workspace, read-only, each carrying a nonce of its
//! own, and sends, in a turn of its own, a prompt with one ACP `resource_link` per file, in
//! order. The relay looks for the nonces in every request of the turn; the files are read
//! back after it ([`verdict::staged`]).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use super::Run;
use crate::outcome::{Kind, Outcome};
use crate::verdict;
use crate::verdict::staged::{AfterTurn, StagedMiss};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;

/// How many files are staged: enough that an order can be wrong.
const COUNT: usize = 3;
/// The prefix of a staged file's nonce: neither the prompt's nonce nor a reply token.
const NONCE_PREFIX: &str = "cfa-";

/// One staged file: where it is on this machine, its name, and what it holds.
struct Staged {
    path: PathBuf,
    name: String,
    text: String,
}

impl Run<'_, '_, '_, '_> {
    /// Reports `staged_files`, after the prompt exchange.
    pub(super) fn staged_files(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        if let Some(reason) = self.exercise_skip(admitted, StepName::StagedFiles) {
            self.stage.steps.skipped(StepName::StagedFiles, &reason);
            return;
        }
        let started = Instant::now();
        let outcome = self.staged_turn(session_id);
        self.step(StepName::StagedFiles, started, outcome);
    }

    fn staged_turn(&mut self, session_id: &str) -> Outcome {
        let root = self.session.workspace().root().to_path_buf();
        let staged = match stage(&root) {
            Ok(staged) => staged,
            Err(e) => return Outcome::failed(Kind::Harness, format!("the probe could not stage its files: {e}")),
        };
        let nonces: Vec<String> = staged.iter().map(|s| nonce_of(&s.text)).collect();
        let nonce = crate::options::fresh_nonce();
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        relay.watch_marks(nonces);
        let turn = relay.turn();
        let text = format!(
            "Checkfu local diagnostic, staged files. The {COUNT} linked files are staged for you, in order: read each, quote its \
             nonce in that order, then reply with the nonce {nonce} and end the turn."
        );
        let mut prompt = vec![json!({"type": "text", "text": text})];
        for file in &staged {
            let path = self.session.workspace().harness_path(&file.path);
            prompt.push(json!({"type": "resource_link", "uri": format!("file://{}", path.to_string_lossy()),
                "name": file.name, "mimeType": "text/plain", "size": file.text.len()}));
        }
        let answered = self.exercise_turn(session_id, Value::Array(prompt));
        let after: Vec<AfterTurn> = staged.iter().map(|s| AfterTurn { name: s.name.clone(), change: change(s) }).collect();
        let orders: Vec<Vec<usize>> = self.stage.plane.relay.calls(turn).into_iter().map(|c| c.marks_in_request).collect();
        match verdict::staged::judge(&orders, &after) {
            Err(miss @ StagedMiss::Unasked) => Outcome::failed(Kind::Unasked, miss),
            Err(miss) => super::exercised::not_served(StepName::StagedFiles, miss),
            Ok(()) => answered.map_or_else(Outcome::Failed, |()| Outcome::Passed),
        }
    }
}

/// Writes the files, each with a fresh nonce, and makes them read-only: staged files are the
/// platform's, handed to the harness to read.
fn stage(root: &Path) -> std::io::Result<Vec<Staged>> {
    (1..=COUNT)
        .map(|n| {
            let name = format!("checkfu-staged-{n}.txt");
            let text = format!("Staged file {n} of {COUNT}. Its nonce is {}.\n", crate::relay::token::mint(NONCE_PREFIX));
            let path = root.join(&name);
            std::fs::write(&path, &text)?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444))?;
            Ok(Staged { path, name, text })
        })
        .collect()
}

/// The nonce a staged file's text carries (the probe wrote it: it is always there).
fn nonce_of(text: &str) -> String {
    crate::relay::token::find(text, NONCE_PREFIX).unwrap_or_default().to_owned()
}

/// What became of a staged file, `None` when it is byte for byte as staged (read no further
/// than one byte past what was staged, so a file grown without bound costs nothing).
fn change(staged: &Staged) -> Option<String> {
    use std::io::Read;
    let file = match std::fs::File::open(&staged.path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(String::from("it was removed")),
        Err(e) => return Some(format!("it cannot be read back ({e})")),
    };
    let mut now = Vec::new();
    if let Err(e) = file.take(staged.text.len() as u64 + 1).read_to_end(&mut now) {
        return Some(format!("it cannot be read back ({e})"));
    }
    (now != staged.text.as_bytes()).then(|| String::from("its bytes differ from what was staged"))
}
