//! Launch recipes: how to start a harness under the probe, as data (`recipes/*.json`), so
//! that a harness author can write one for their own harness without touching code.
//!
//! ```json
//! {
//!   "harness": "codex",
//!   "command": ["codex-acp"],
//!   "env": {"CODEX_HOME": "{home}/.codex"},
//!   "home_files": {".codex/config.toml": "model_provider = \"relay\"\n…"},
//!   "notes": "why each setting is there"
//! }
//! ```
//!
//! `harness` names the catalog entry the run is bound to (as `--harness`); `command` is run
//! unless a command follows `--`; `env` and `home_files` come before the command line's
//! `--env` and `--home-file`, which may override them. Placeholders are those of
//! [`super::launch`]. JSON rather than TOML: the runtime reads no TOML.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// `acp-v1` (the default) or `oneshot-v1`.
    #[serde(default)]
    pub protocol: Option<String>,
    #[serde(default)]
    pub harness: Option<String>,
    /// The ACP harness's command (`acp-v1`).
    #[serde(default)]
    pub command: Vec<String>,
    /// The one-shot launch declaration (`oneshot-v1`), decoded by the release decoder.
    #[serde(default)]
    pub declaration: Option<serde_json::Value>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub home_files: BTreeMap<String, String>,
    /// Free text for the reader of the recipe; ignored by the probe.
    #[serde(default)]
    pub notes: Option<String>,
}

impl Recipe {
    /// Reads a recipe file; errors name the file (and serde's line and column).
    pub fn load(path: &Path) -> Result<Recipe, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read the recipe {}: {e}", path.display()))?;
        let recipe: Recipe = serde_json::from_str(&text).map_err(|e| format!("the recipe {} is not valid: {e}", path.display()))?;
        match recipe.protocol.as_deref() {
            None | Some("acp-v1") => {
                if recipe.command.is_empty() {
                    return Err(format!("the recipe {} has an empty `command`", path.display()));
                }
                if recipe.declaration.is_some() {
                    return Err(format!("the recipe {} has a `declaration`, which only a `oneshot-v1` recipe has", path.display()));
                }
            }
            Some(checkfu_wire::oneshot::PROTOCOL) => {
                if !recipe.command.is_empty() || !recipe.env.is_empty() || !recipe.home_files.is_empty() {
                    return Err(format!(
                        "the recipe {} is `oneshot-v1`: its command, env and home files go in `declaration`",
                        path.display()
                    ));
                }
                let Some(declaration) = &recipe.declaration else {
                    return Err(format!("the recipe {} is `oneshot-v1` but has no `declaration`", path.display()));
                };
                checkfu_wire::oneshot::decode_value(declaration).map_err(|e| format!("the recipe {}: {e}", path.display()))?;
            }
            Some(other) => {
                return Err(format!(
                    "the recipe {} names the protocol {other:?}; known: acp-v1, {}",
                    path.display(),
                    checkfu_wire::oneshot::PROTOCOL
                ))
            }
        }
        Ok(recipe)
    }

    /// The one-shot declaration of a `oneshot-v1` recipe (checked by [`Recipe::load`]).
    pub fn oneshot(&self) -> Option<checkfu_wire::oneshot::Declaration> {
        self.declaration.as_ref().and_then(|d| checkfu_wire::oneshot::decode_value(d).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_members_are_refused_with_the_file_named() {
        let dir = std::env::temp_dir().join(format!("checkfu-recipe-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("r.json");
        std::fs::write(&file, r#"{"command": ["x"], "enviroment": {}}"#).expect("write");
        let error = Recipe::load(&file).expect_err("refused");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(error.contains("r.json") && error.contains("enviroment"), "{error}");
    }
}
