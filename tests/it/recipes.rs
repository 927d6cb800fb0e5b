//! The launch recipes checked in under `recipes/` load and each names a catalog entry.

use checkfu_wire_probe::recipe::Recipe;

use crate::support::project::project_root;

#[test]
fn the_recipes_in_the_repository_load_and_name_catalog_entries() {
    let dir = project_root().join("recipes");
    let mut seen = 0;
    let oneshot = std::fs::read_dir(dir.join("oneshot")).into_iter().flatten();
    for entry in std::fs::read_dir(&dir).expect("recipes/").chain(oneshot) {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let recipe = Recipe::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let name = recipe.harness.expect("every checked-in recipe names its entry");
        assert!(checkfu_wire::catalog::HARNESSES.iter().any(|h| h.name == name), "{name} is a catalog entry");
        seen += 1;
    }
    assert!(seen >= 2, "claude-code and codex have recipes");
}
