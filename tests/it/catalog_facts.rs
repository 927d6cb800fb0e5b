//! Every consumer of the model plane's catalog facts against the generated tables: the
//! relay's routes, the probe's catalog binding, and the checked-in JSON projections
//! (`generated/gateway-allow-list.json`, the reachability of `generated/support-harnesses.json`).
//! codegen derives these facts once (`codegen/src/catalog/routes.rs`); a consumer that joined
//! a path or judged reachability on its own would fail here.

use checkfu_wire::catalog::{self, Dialect, Segment, GATEWAY_ROUTES, HARNESSES, REACHABILITY, UNLISTED_PROVIDER_ROUTES};
use checkfu_wire_probe::model_plane::{Fence, ModelPlane};
use checkfu_wire_probe::relay::{routes, Call, Record};
use serde_json::{json, Value};

fn generated(name: &str) -> Value {
    let path = format!("{}/generated/{name}", crate::support::project::project_root().display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every provider the relay can be asked for: each reviewed one by name, and the unlisted one.
fn providers() -> Vec<Option<&'static str>> {
    GATEWAY_ROUTES.iter().map(|p| Some(p.provider)).chain([None]).collect()
}

/// The generated routes of a provider, read from the tables directly.
fn table_routes(provider: Option<&str>) -> &'static [catalog::Route] {
    match provider {
        None => UNLISTED_PROVIDER_ROUTES,
        Some(name) => GATEWAY_ROUTES.iter().find(|p| p.provider == name).map(|p| p.routes).expect("a reviewed provider"),
    }
}

/// The path a route's segments spell, each placeholder written by `placeholder`.
fn fill(route: &catalog::Route, placeholder: impl Fn(&str) -> String) -> String {
    let segments = route.segments.iter().map(|s| match s {
        Segment::Literal(text) => text.to_string(),
        Segment::Placeholder(name) => placeholder(name),
    });
    segments.map(|s| format!("/{s}")).collect()
}

#[test]
fn the_relay_serves_exactly_the_generated_routes() {
    for provider in providers() {
        let served = routes::for_provider(provider).expect("a known provider");
        assert_eq!(served, table_routes(provider), "{provider:?}");
        for route in served {
            assert_eq!(fill(route, |name| format!("{{{name}}}")), route.path, "the segments are the path");
            assert_eq!(route.dialect.gateway_path(), route.path, "the route's path is its dialect's");
            // A concrete request on the route: each placeholder filled with one segment.
            let request = fill(route, |_| String::from("x"));
            assert_eq!(routes::matching(served, &request).map(|r| r.dialect), Some(route.dialect), "{request}");
        }
    }
    // The reviewed providers' accepted dialects are the dialects of their routes.
    for provider in catalog::PROVIDERS {
        let dialects: Vec<Dialect> = table_routes(Some(provider.name)).iter().map(|r| r.dialect).collect();
        let mut accepts = provider.accepts.to_vec();
        accepts.sort_by_key(|d| Dialect::ALL.iter().position(|a| a == d));
        assert_eq!(dialects, accepts, "{}", provider.name);
    }
}

#[test]
fn the_dialect_enum_is_the_catalog_dialects() {
    let page = generated("support-harnesses.json");
    for dialect in Dialect::ALL {
        assert_eq!(Dialect::from_name(dialect.name()), Some(*dialect));
    }
    assert_eq!(Dialect::from_name("no_such_dialect"), None);
    // Every dialect an entry declares in the support snapshot is a variant, in order.
    for (entry, harness) in page["harnesses"].as_array().expect("harnesses").iter().zip(HARNESSES) {
        let names: Vec<&str> = harness.dialects.iter().map(|d| d.name()).collect();
        assert_eq!(entry["declared_dialects"], json!(names), "{}", harness.name);
    }
}

#[test]
fn the_allow_list_json_is_the_generated_routes() {
    let list = generated("gateway-allow-list.json");
    let paths = |routes: &[catalog::Route]| -> Value { routes.iter().map(|r| r.path).collect() };
    let providers: serde_json::Map<String, Value> = GATEWAY_ROUTES.iter().map(|p| (p.provider.to_string(), paths(p.routes))).collect();
    assert_eq!(list["providers"], Value::Object(providers));
    assert_eq!(list[catalog::UNLISTED_PROVIDER], paths(UNLISTED_PROVIDER_ROUTES));
}

#[test]
fn the_support_snapshot_carries_the_reachability_matrix() {
    let snapshot = generated("support-harnesses.json");
    let entries = snapshot["harnesses"].as_array().expect("harnesses");
    assert_eq!(entries.len(), REACHABILITY.len());
    for (entry, row) in entries.iter().zip(REACHABILITY) {
        assert_eq!(entry["harness"], row.harness);
        let cells: serde_json::Map<String, Value> =
            GATEWAY_ROUTES.iter().zip(row.providers).map(|(p, cell)| (p.provider.to_string(), json!(cell))).collect();
        assert_eq!(entry["reachability"], Value::Object(cells), "{}", row.harness);
    }
}

#[test]
fn the_probe_binding_reads_the_matrix() {
    assert_eq!(REACHABILITY.len(), HARNESSES.len());
    for (harness, row) in HARNESSES.iter().zip(REACHABILITY) {
        assert_eq!(harness.name, row.harness, "one row per entry, in order");
        for (column, provider) in providers().into_iter().enumerate() {
            let expected = match provider {
                Some(_) => row.providers[column],
                None => row.unlisted,
            };
            let mut plane = ModelPlane::new(
                catalog::UNLISTED_PROVIDER,
                Fence::ProxyVariables,
                None,
                checkfu_wire_probe::relay::ScriptKind::Nonce,
                Record::default(),
            );
            plane.bind(harness, provider, None);
            let binding = plane.catalog.as_ref().expect("bound");
            assert_eq!(binding.reachable, expected, "{} through {provider:?}", harness.name);
            assert_eq!(binding.dialects, harness.dialects);
        }
    }
}

#[test]
fn the_probe_binding_compares_dialects_as_variants_and_reports_names() {
    let claude = HARNESSES.iter().find(|h| h.name == "claude-code").expect("claude-code");
    let spoke = |dialect: Dialect| Call {
        dialect,
        path: dialect.gateway_path().to_string(),
        model: String::from("m"),
        stream: false,
        status: Some(200),
        closed: None,
        started_ms: 0,
        ms: 0,
        nonce_in_request: true,
        turn: 1,
        earlier_reply_in_request: false,
        steer_in_request: false,
        reply_token: None,
        fault: None,
        retry_after: None,
        events_sent: None,
        paced: None,
        structured_output: None,
        structured_digest: None,
        schema_exact: None,
        structured_broken: false,
        nonce_anywhere: true,
        tool_called: None,
        token_returned: false,
        bodies: None,
        estimated_tokens: 1,
        messages: 1,
        scoping: None,
        marks_in_request: Vec::new(),
        platform: None,
    };
    // A dialect the entry does not declare, whichever the catalog's dialects are.
    let undeclared = *Dialect::ALL.iter().find(|d| !claude.dialects.contains(d)).expect("a dialect claude-code does not declare");
    let record = Record { calls: vec![spoke(undeclared)], ..Record::default() };
    let mut plane =
        ModelPlane::new(catalog::UNLISTED_PROVIDER, Fence::ProxyVariables, None, checkfu_wire_probe::relay::ScriptKind::Nonce, record);
    plane.bind(claude, None, None);
    assert_eq!(plane.mismatches().len(), 1, "{:?}", plane.mismatches());
    assert!(plane.mismatches()[0].contains(&format!("`{}`", undeclared.name())), "{:?}", plane.mismatches());
    let report = serde_json::to_value(&plane).expect("serializes");
    assert_eq!(report["dialects_used"], json!([undeclared.name()]));
    let declared: Vec<&str> = claude.dialects.iter().map(|d| d.name()).collect();
    assert_eq!(report["catalog"]["dialects"], json!(declared));
    assert_eq!(report["calls"][0]["dialect"], undeclared.name());
}

#[test]
fn an_unknown_provider_has_one_answer() {
    let relay = routes::for_provider(Some("nobody")).expect_err("the relay refuses it");
    let table = catalog::gateway_routes(Some("nobody")).expect_err("the tables refuse it");
    let cell = catalog::reachable("claude-code", Some("nobody")).expect_err("the matrix refuses it");
    for said in [relay.to_string(), table.to_string(), cell.to_string()] {
        assert!(said.contains("no provider `nobody` in the catalog"), "{said}");
        for known in GATEWAY_ROUTES {
            assert!(said.contains(known.provider), "{said} lists `{}`", known.provider);
        }
    }
}
