//! Compiles the integration tests that need an input this repository does not hold as
//! ignored unless the input is there.

fn main() {
    optional_test_inputs();
}

/// Tests that need what a machine may lack (the JSON-Schema-Test-Suite, an installed copy of
/// the TypeScript SDK agent, the real agents, the model SDKs, the image tools) are compiled as ignored, with
/// their reason, unless the variable naming it is set, so that the test runner never reports
/// them as passed.
fn optional_test_inputs() {
    let inputs = [
        ("JSTS_DIR", "checkfu_jsts"),
        ("CHECKFU_TS_AGENT", "checkfu_ts_agent"),
        // The real ACP agents (tests/real-agents/install.sh DIR) and the model SDKs the relay
        // is checked with (pip install -r tests/relay-sdk/requirements.txt, then
        // CHECKFU_RELAY_SDK=1).
        ("CHECKFU_REAL_AGENTS", "checkfu_real_agents"),
        ("CHECKFU_RELAY_SDK", "checkfu_relay_sdk"),
        // The real one-shot CLIs (tests/real-agents/install-oneshot.sh DIR).
        ("CHECKFU_REAL_ONESHOT", "checkfu_real_oneshot"),
        // Public schemas fetched by tests/public-schemas/fetch.sh DIR.
        ("CHECKFU_PUBLIC_SCHEMAS", "checkfu_public_schemas"),
        // The image lane's tools: buildah, skopeo, the distribution registry
        // (docker-registry) and busybox-static, installed (`.ci/run`), then
        // CHECKFU_IMAGE_TOOLS=1.
        ("CHECKFU_IMAGE_TOOLS", "checkfu_image_tools"),
        // podman as the image lane's builder (optional: apt-get install podman).
        ("CHECKFU_PODMAN", "checkfu_podman"),
        // A docker daemon the tests may use (DOCKER_HOST, or the default socket): docker as
        // an image source and as a runtime (`.ci/run` starts one).
        ("CHECKFU_DOCKER", "checkfu_docker"),
        // A JUnit reader from PyPI (pip install -r tests/report-formats/requirements.txt,
        // then CHECKFU_REPORT_CONSUMERS=1).
        ("CHECKFU_REPORT_CONSUMERS", "checkfu_report_consumers"),
    ];
    for (variable, cfg) in inputs {
        println!("cargo:rerun-if-env-changed={variable}");
        println!("cargo:rustc-check-cfg=cfg({cfg})");
        if std::env::var_os(variable).is_some() {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
