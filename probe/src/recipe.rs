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
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};

use checkfu_wire::catalog::Protocol;

/// A recipe's `protocol`: a name the catalog has, refused with the known ones otherwise.
fn protocol<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Protocol>, D::Error> {
    let name = String::deserialize(d)?;
    match Protocol::from_name(&name) {
        Some(protocol) => Ok(Some(protocol)),
        None => {
            let known: Vec<&str> = Protocol::ALL.iter().map(|p| p.name()).collect();
            Err(serde::de::Error::custom(format!("the protocol {name:?} is not one the catalog has (known: {})", known.join(", "))))
        }
    }
}

/// A recipe that cannot be used, naming its file.
#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    #[error("cannot read the recipe {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("the recipe {} is not valid: {source}", path.display())]
    Invalid { path: PathBuf, source: serde_json::Error },
    #[error("the recipe {} {rule}", path.display())]
    Rule { path: PathBuf, rule: String },
    #[error("the recipe {}: {error}", path.display())]
    Declaration { path: PathBuf, error: checkfu_wire::oneshot::DecodeError },
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// `acp-v1` (the default) or `oneshot-v1`, a protocol the catalog names.
    #[serde(default, deserialize_with = "protocol")]
    pub protocol: Option<Protocol>,
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
    pub fn load(path: &Path) -> Result<Recipe, RecipeError> {
        let path_buf = path.to_path_buf();
        let text = std::fs::read_to_string(path).map_err(|source| RecipeError::Read { path: path_buf.clone(), source })?;
        let recipe: Recipe = serde_json::from_str(&text).map_err(|source| RecipeError::Invalid { path: path_buf.clone(), source })?;
        let rule = |rule: &str| Err(RecipeError::Rule { path: path_buf.clone(), rule: rule.to_owned() });
        match recipe.protocol.unwrap_or(Protocol::AcpV1) {
            Protocol::AcpV1 => {
                if recipe.command.is_empty() {
                    return rule("has an empty `command`");
                }
                if recipe.declaration.is_some() {
                    return rule("has a `declaration`, which only a `oneshot-v1` recipe has");
                }
            }
            Protocol::OneshotV1 => {
                if !recipe.command.is_empty() || !recipe.env.is_empty() || !recipe.home_files.is_empty() {
                    return rule("is `oneshot-v1`: its command, env and home files go in `declaration`");
                }
                let Some(declaration) = &recipe.declaration else {
                    return rule("is `oneshot-v1` but has no `declaration`");
                };
                checkfu_wire::oneshot::decode_value(declaration)
                    .map_err(|error| RecipeError::Declaration { path: path_buf.clone(), error })?;
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
        let error = Recipe::load(&file).expect_err("refused").to_string();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(error.contains("r.json") && error.contains("enviroment"), "{error}");
    }
}
