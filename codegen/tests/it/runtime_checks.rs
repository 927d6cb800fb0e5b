//! The checks the runtime compiles are the typed crate's, token for token: for every
//! schema module the runtime gets (`generated/schemas/`), each of its items (statics,
//! `check_*`, node functions, `deferred_*`) is the item of the same name in that schema's
//! whole module (`typed/generated/schemas/`), and the runtime's `DEFERRED` differs only by
//! `unreached` where a callee is not compiled. So the runtime and `checkfu-wire-typed`
//! decide every value alike, and the differential and round-trip tests, which run on the
//! typed crate, hold the runtime's checks too.

use std::collections::BTreeMap;
use std::path::Path;

use quote::ToTokens;

/// The items of a generated module's `pub mod checks { … }`, by name.
fn checks(source: &str, path: &str) -> BTreeMap<String, String> {
    let file = syn::parse_file(source).unwrap_or_else(|e| panic!("{path}: {e}"));
    let module = file
        .items
        .iter()
        .find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == "checks" => m.content.as_ref().map(|(_, items)| items),
            _ => None,
        })
        .unwrap_or_else(|| panic!("{path} has no `checks` module"));
    let mut named = BTreeMap::new();
    for item in module {
        let name = match item {
            syn::Item::Fn(f) => f.sig.ident.to_string(),
            syn::Item::Static(s) => s.ident.to_string(),
            syn::Item::Const(c) => c.ident.to_string(),
            syn::Item::Use(_) => continue,
            other => panic!("{path}: an item the checks do not emit: {}", other.to_token_stream()),
        };
        assert!(named.insert(name.clone(), item.to_token_stream().to_string()).is_none(), "{path}: `{name}` twice");
    }
    named
}

#[test]
fn every_runtime_check_is_the_typed_crates_check_of_that_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let generation = checkfu_wire_codegen::generate(&root).unwrap_or_else(|d| panic!("{d}"));
    let output = |path: &str| generation.outputs.iter().find(|o| o.path == Path::new(path)).map(|o| o.contents.as_str());
    let runtime_dir = format!("{}/", checkfu_wire_codegen::SCHEMA_MODULES_DIR);
    let mut compared = 0;
    for module in generation.outputs.iter().filter(|o| o.path.to_string_lossy().starts_with(&runtime_dir)) {
        let path = module.path.to_string_lossy().to_string();
        let typed_path = format!("{}/{}", checkfu_wire_codegen::TYPED_SCHEMA_MODULES_DIR, &path[runtime_dir.len()..]);
        let typed = checks(output(&typed_path).unwrap_or_else(|| panic!("{path} has no {typed_path}")), &typed_path);
        let runtime = checks(&module.contents, &path);
        assert!(runtime.len() < typed.len(), "{path}: the runtime compiles no fewer items than the whole module");
        for (name, tokens) in &runtime {
            match (name.as_str(), typed.get(name)) {
                // Stands in for the callees the runtime does not compile.
                ("unreached", None) => {}
                ("DEFERRED", Some(whole)) => {
                    let entries = |t: &str| t.split(',').count();
                    assert_eq!(entries(tokens), entries(whole), "{path}: `DEFERRED` keeps its length and order");
                }
                (_, Some(whole)) => assert_eq!(tokens, whole, "{path}: `{name}` is not the typed crate's"),
                (_, None) => panic!("{path}: `{name}` is not in {typed_path}"),
            }
            compared += 1;
        }
    }
    // 603 items when node functions with one body were first shared (1,100 and more before).
    assert!(compared > 500, "compared {compared} items");
}
