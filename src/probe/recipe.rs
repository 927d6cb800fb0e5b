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
    #[serde(default)]
    pub harness: Option<String>,
    pub command: Vec<String>,
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
        if recipe.command.is_empty() {
            return Err(format!("the recipe {} has an empty `command`", path.display()));
        }
        Ok(recipe)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recipes_in_the_repository_load_and_name_catalog_entries() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("recipes");
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("recipes/") {
            let path = entry.expect("entry").path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let recipe = Recipe::load(&path).unwrap_or_else(|e| panic!("{e}"));
            let name = recipe.harness.expect("every checked-in recipe names its entry");
            assert!(crate::catalog::HARNESSES.iter().any(|h| h.name == name), "{name} is a catalog entry");
            seen += 1;
        }
        assert!(seen >= 2, "claude-code and codex have recipes");
    }

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
