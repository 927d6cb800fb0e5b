//! The workspace's integration tests, one binary (`cargo test -p checkfu-wire-tests --test
//! it`; a module's tests alone: `cargo test -p checkfu-wire-tests --test it relay::`). Each
//! module was a test binary of its own: one binary links the crates once, so a change to one
//! relinks one executable, not 28.
//!
//! Modules that run the `checkfu-wire` command (as `checkfu-wire-dup`, built only with this
//! crate's `cli` feature) or need the probe compile only with those features, so the
//! runtime's own tests also run with `--no-default-features` (`.ci/run`).

// `unsafe` lives in `checkfu-wire-sandbox` alone, but for the counting allocator of
// `exact_numbers`, which `GlobalAlloc` asks to be `unsafe` (tests/it/layers.rs holds this).
#![deny(unsafe_code)]

#[cfg(feature = "cli")]
mod probe_support;
mod support;

mod book;
#[cfg(feature = "probe")]
mod catalog_facts;
#[cfg(feature = "cli")]
mod cli_generate;
#[cfg(feature = "cli")]
mod compaction;
#[cfg(feature = "cli")]
mod conform_cli;
#[cfg(feature = "cli")]
mod decode_cli;
mod decode_fuzz;
mod decode_policy;
#[cfg(feature = "acp-v2")]
mod decode_v2;
mod dependency_tree;
mod differential;
mod docs_tables;
#[cfg(feature = "exact-numbers")]
mod exact_numbers;
mod gates;
mod golden;
#[cfg(feature = "probe")]
mod golden_oneshot;
mod hostile_schemas;
#[cfg(feature = "probe")]
mod image;
#[cfg(feature = "cli")]
mod image_caps;
#[cfg(feature = "cli")]
mod image_lane;
#[cfg(feature = "cli")]
mod image_publish;
#[cfg(feature = "cli")]
mod image_real;
#[cfg(feature = "cli")]
mod image_runtime;
#[cfg(feature = "cli")]
mod image_store;
#[cfg(feature = "probe")]
mod image_untrusted_layers;
#[cfg(feature = "cli")]
mod image_untrusted_registry;
#[cfg(feature = "cli")]
mod interrupt;
mod json_schema_suite;
mod layers;
#[cfg(feature = "cli")]
mod lint_schema_cli;
#[cfg(feature = "cli")]
mod mid_turn;
#[cfg(feature = "cli")]
mod model_plane;
#[cfg(feature = "cli")]
mod oneshot;
mod pattern_feature;
#[cfg(feature = "cli")]
mod probe;
#[cfg(feature = "cli")]
mod probe_v2;
mod public_schemas;
#[cfg(feature = "cli")]
mod readme;
#[cfg(feature = "cli")]
mod real_agents;
#[cfg(feature = "cli")]
mod real_oneshot;
#[cfg(feature = "probe")]
mod recipes;
mod reference_graphs;
#[cfg(feature = "cli")]
mod relay;
#[cfg(feature = "cli")]
mod report_formats;
#[cfg(feature = "cli")]
mod requirement_probes;
mod sdk_traffic;
#[cfg(feature = "acp-v2")]
mod sdk_traffic_v2;
#[cfg(feature = "cli")]
mod structured;
#[cfg(feature = "cli")]
mod ts_agent_v2;
#[cfg(feature = "cli")]
mod unprivileged_fence;
