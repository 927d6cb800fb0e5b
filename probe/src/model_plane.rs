//! The report's `model_plane`: what the relay served and refused, which fence held, and how
//! the harness's model traffic compares with what the catalog says of it.
//!
//! This is a section of the report, not a conformance check: the seven checks and the
//! literal that pins them are unchanged. What it adds to the verdict is in
//! [`ModelPlane::mismatches`] (a catalog entry that the harness contradicts) and in the
//! `prompt_exchange` step, which needs a served call that carried the nonce.

use serde::Serialize;
use serde_json::Value;

use crate::relay::{self, Call, Egress, Refusal};
use checkfu_wire::catalog::{self, Dialect};

/// Which fence kept the harness from leaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Fence {
    /// A network namespace whose loopback is all there is, holding the relay's port and the
    /// probe's MCP server's; the proxy variables are set as well.
    NetworkNamespace,
    /// The same, made without privileges: a network namespace inside a user namespace of
    /// the probe's user's own (the harness keeps its uid and gains nothing outside).
    UserNamespace,
    /// Only the proxy variables, a convention a harness may ignore.
    ProxyVariables,
}

/// The `--harness` entry against what the run showed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CatalogBinding {
    pub harness: String,
    /// The dialects the catalog declares for the entry.
    pub dialects: Vec<Dialect>,
    /// The matrix's cell for the provider served: `null` for an undeclared entry.
    pub reachable: Option<bool>,
    /// Each way the run contradicts the entry.
    pub mismatches: Vec<String>,
    /// The entry's supply and adoption, and whether either says it is blocked: said before
    /// the run and here, never a mismatch (the probe shows the physical facts either way).
    pub supply: &'static str,
    pub adoption: &'static str,
    pub blocked: bool,
}

/// Under the `tool` script: whether the model's tool call happened and its result came back.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ToolRound {
    pub called: bool,
    pub result_returned: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct ModelPlane {
    pub provider: String,
    pub fence: Fence,
    /// Why the namespace could not be made, when the proxy variables were the only fence
    /// (`null` when it held). Every key is present on every run, so a reader needs no
    /// per-run shape.
    pub fence_note: Option<String>,
    /// In an image, the fence its runtime kept, as the image's report says it: the harness
    /// ran there, not in [`ModelPlane::fence`] as a process does (under docker, not in the
    /// namespace at all). Only the text report reads it; the JSON has it in `image.fence`.
    #[serde(skip)]
    pub image_fence: Option<&'static str>,
    pub script: relay::ScriptKind,
    pub calls: Vec<Call>,
    pub refused: Vec<Refusal>,
    pub egress_attempts: Vec<Egress>,
    /// Calls, refusals and egress attempts past the record's limit, counted only.
    pub dropped: usize,
    pub dialects_used: Vec<Dialect>,
    /// The `--harness` binding (`null` without one).
    pub catalog: Option<CatalogBinding>,
    pub nonce_at_relay: bool,
    pub nonce_in_output: bool,
    /// The reply token (of a call that carried the nonce) that reached the output: the
    /// model's answer, which the harness cannot write itself (`null`: none did).
    pub reply_in_output: Option<String>,
    /// Whether the model called a tool and its result came back (under `nonce` the replay
    /// model calls none, so both are false).
    pub tool: ToolRound,
}

/// Dialects by their catalog names, `none` for no dialect.
fn names(dialects: &[Dialect]) -> String {
    if dialects.is_empty() {
        return String::from("none");
    }
    dialects.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
}

impl ModelPlane {
    pub fn new(provider: &str, fence: Fence, fence_note: Option<String>, script: relay::ScriptKind, record: relay::Record) -> ModelPlane {
        let mut dialects_used: Vec<Dialect> = Vec::new();
        for call in &record.calls {
            if !dialects_used.contains(&call.dialect) {
                dialects_used.push(call.dialect);
            }
        }
        let tool = ToolRound {
            // The platform tool turn's call is the probe's own, not the script's.
            called: record.calls.iter().any(|c| c.tool_called.is_some() && !c.platform.as_ref().is_some_and(|p| p.called)),
            result_returned: record.calls.iter().any(|c| c.token_returned),
        };
        ModelPlane {
            provider: provider.to_owned(),
            fence,
            fence_note,
            image_fence: None,
            script,
            nonce_at_relay: record.calls.iter().any(|c| c.nonce_in_request),
            calls: record.calls,
            refused: record.refused,
            egress_attempts: record.egress_attempts,
            dropped: record.dropped,
            dialects_used,
            catalog: None,
            nonce_in_output: false,
            reply_in_output: None,
            tool,
        }
    }

    /// Compares the run with the catalog entry: its declaration at `initialize` with the
    /// entry's `declares` (ACP only: `None` for a one-shot run, which has no handshake), and
    /// the dialects spoken with the entry's `dialects`.
    pub fn bind(&mut self, entry: &catalog::Harness, provider: Option<&str>, declaration: Option<&Value>) {
        let mut mismatches = Vec::new();
        let declared = declaration.and_then(Value::as_object);
        for (member, value) in entry.declares.iter().filter(|_| declaration.is_some()) {
            match declared.and_then(|d| d.get(*member)) {
                Some(Value::String(got)) if got == value => {}
                Some(got) => mismatches
                    .push(format!("the catalog says `{}` declares {member}: {value:?}; the harness declared {member}: {got}", entry.name)),
                None => mismatches
                    .push(format!("the catalog says `{}` declares {member}: {value:?}; the harness did not declare it", entry.name)),
            }
        }
        for (member, got) in declared.into_iter().flatten() {
            if !entry.declares.iter().any(|(m, _)| m == member) {
                mismatches.push(format!("the harness declared {member}: {got}, which the catalog does not record for `{}`", entry.name));
            }
        }
        for dialect in &self.dialects_used {
            if !entry.dialects.contains(dialect) {
                mismatches.push(format!(
                    "the harness spoke `{}`, which the catalog does not declare for `{}` (it declares {}): the reachability matrix is wrong about it",
                    dialect.name(),
                    entry.name,
                    names(entry.dialects)
                ));
            }
        }
        self.catalog = Some(CatalogBinding {
            harness: entry.name.to_owned(),
            dialects: entry.dialects.to_vec(),
            // The matrix's cell, read from the generated tables; the relay has refused an
            // unknown provider before any run, so an error here has no cell to give.
            reachable: catalog::reachable(entry.name, provider).ok().flatten(),
            mismatches,
            supply: entry.supply,
            adoption: entry.adoption,
            blocked: entry.blocked(),
        });
    }

    /// The served calls with their bodies, as `--record-model` writes them.
    pub fn calls_jsonl(&self) -> String {
        relay::record::calls_jsonl(&self.calls)
    }

    /// The catalog mismatches (empty without `--harness`).
    pub fn mismatches(&self) -> &[String] {
        self.catalog.as_ref().map_or(&[], |c| &c.mismatches)
    }

    /// A few lines for the text report.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let fence = match (self.image_fence, self.fence) {
            (Some(image), _) => image,
            (None, Fence::NetworkNamespace) => "network namespace (loopback only: the relay's port and the probe's MCP server's)",
            (None, Fence::UserNamespace) => {
                "user namespace holding a network namespace (loopback only: the relay's port and the probe's MCP server's)"
            }
            (None, Fence::ProxyVariables) => "proxy variables only",
        };
        out.push_str(&format!("model    provider {}, script {}, fence: {fence}\n", self.provider, self.script.name()));
        if let Some(note) = &self.fence_note {
            out.push_str(&format!("model    no namespace: {note}\n"));
        }
        let used = names(&self.dialects_used);
        out.push_str(&format!(
            "model    {} call(s) served ({used}), {} refused, {} egress attempt(s); nonce at relay: {}, in output: {}; reply token in output: {}\n",
            self.calls.len(),
            self.refused.len(),
            self.egress_attempts.len(),
            yes(self.nonce_at_relay),
            yes(self.nonce_in_output),
            self.reply_in_output.as_deref().unwrap_or("no"),
        ));
        for refusal in self.refused.iter().take(5) {
            out.push_str(&format!("refused  {} {}: {}\n", refusal.status_text(), refusal.path, refusal.reason));
        }
        if self.refused.len() > 5 {
            out.push_str(&format!("refused  … and {} more\n", self.refused.len() - 5));
        }
        if self.script == relay::ScriptKind::Tool {
            out.push_str(&format!("tool     called: {}, result returned: {}\n", yes(self.tool.called), yes(self.tool.result_returned)));
        }
        if let Some(binding) = &self.catalog {
            for mismatch in &binding.mismatches {
                out.push_str(&format!("catalog  MISMATCH {mismatch}\n"));
            }
            if binding.mismatches.is_empty() {
                out.push_str(&format!("catalog  `{}` as the catalog declares it\n", binding.harness));
            }
            if binding.blocked {
                out.push_str(&format!(
                    "catalog  `{}` is blocked in the catalog (supply {}, adoption {}): nothing can adopt it today\n",
                    binding.harness, binding.supply, binding.adoption
                ));
            }
        }
        out
    }
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}
