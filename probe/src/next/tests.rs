use super::*;
use crate::image::tools::BuilderKind;

const DIGEST: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn reference(name: &str) -> ImageReference {
    ImageReference::parse(&format!("{name}@{DIGEST}")).expect("reference")
}

fn words(text: &str) -> Vec<String> {
    text.split(' ').map(String::from).collect()
}

fn setting(name: &str, template: &str, origin: Origin) -> Setting {
    Setting { name: name.to_owned(), template: template.to_owned(), origin }
}

/// A passing run of `registry.example/cli`, with both selectors given.
fn image_run() -> Facts {
    Facts {
        name: String::from("cli"),
        reference: reference("registry.example/cli"),
        source: Source::Registry,
        built: None,
        passed: true,
        unproven: Vec::new(),
        profile: words("--protocol=oneshot-v1 --entrypoint=/bin/cli --prompt-transport=stdin --output-mode=text"),
        sandbox: Selector::Given(String::from("s")),
        model: Selector::Given(String::from("m")),
        context: words("--api-url=https://api.example"),
        retest: Vec::new(),
        env: Vec::new(),
        home_files: Vec::new(),
    }
}

/// A passing build-context run, built by `builder`.
fn build_run(builder: BuilderKind) -> Facts {
    let ephemeral =
        Ephemeral { builder, context: String::from("./c"), pushed: format!("127.0.0.1:5000/cli@{DIGEST}"), all_interfaces: false };
    Facts {
        reference: reference("127.0.0.1:5000/cli"),
        built: Some(Built { ephemeral, dockerfile: Some(String::from("./c/D")) }),
        retest: vec![
            RetestWord::Kept(String::from("--name=cli")),
            RetestWord::Image,
            RetestWord::Kept(String::from("--protocol=oneshot-v1")),
            RetestWord::Kept(String::from("--env=FOO=bar")),
        ],
        ..image_run()
    }
}

#[test]
fn a_run_that_needed_nothing_more_is_exact() {
    let next = next_steps(&image_run());
    assert_eq!(next.add_is_exact, Some(true));
    assert!(next.not_carried.is_empty());
    assert_eq!(
        next.add.as_deref(),
        Some(
            "checkfu harness add oci --name=cli --image=registry.example/cli@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa \
             --protocol=oneshot-v1 --entrypoint=/bin/cli --prompt-transport=stdin --output-mode=text --sandbox=s --model=m \
             --api-url=https://api.example"
        )
    );
    assert_eq!(next.verify.as_deref(), Some("checkfu harness verify cli --sandbox=s --model=m --wait --api-url=https://api.example"));
    assert_eq!(next.warning, None);
    let json = serde_json::to_value(&next).expect("json");
    assert_eq!(json["add_is_exact"], true);
    assert!(json.get("not_carried").is_none() && json.get("publish").is_none(), "{json}");
}

#[test]
fn a_declared_path_the_run_did_not_prove_makes_add_inexact() {
    let facts = Facts { unproven: vec![String::from("output_schema_flag: --output-schema")], ..image_run() };
    let next = next_steps(&facts);
    assert_eq!(next.add_is_exact, Some(false));
    assert!(next.not_carried.is_empty());
    assert!(
        next.advice.contains("the declaration says output_schema_flag: --output-schema and the run did not prove it"),
        "{}",
        next.advice
    );
    assert!(next.to_text().contains("next     declared, not proven by the run: output_schema_flag: --output-schema"));
    let json = serde_json::to_value(&next).expect("json");
    assert_eq!(json["unproven"], serde_json::json!(["output_schema_flag: --output-schema"]));
}

#[test]
fn what_add_cannot_carry_is_listed_with_the_advice() {
    let mut facts = image_run();
    facts.env = vec![
        setting("FOO", "bar", Origin::CommandLine),
        // What the probe sets anyway, to the same value: nothing is lost without it.
        setting("OPENAI_BASE_URL", "{relay_url}/v1", Origin::CommandLine),
        setting("MY_KEY", "{api_key}", Origin::Recipe),
    ];
    facts.home_files = vec![setting("cfg/x.json", "{\"a\": 1}", Origin::CommandLine)];
    let next = next_steps(&facts);
    assert_eq!(next.add_is_exact, Some(false));
    assert_eq!(
        next.not_carried,
        vec![
            NotCarried { flag: "--env", value: String::from("FOO=bar"), origin: Origin::CommandLine },
            NotCarried { flag: "--env", value: String::from("MY_KEY={api_key}"), origin: Origin::Recipe },
            NotCarried { flag: "--home-file", value: String::from("cfg/x.json={\"a\": 1}"), origin: Origin::CommandLine },
        ]
    );
    assert!(next.advice.contains("add cannot carry --env FOO, --env MY_KEY, --home-file cfg/x.json"), "{}", next.advice);
    assert!(next.advice.contains("bake them into the image (ENV in the Dockerfile, files under the image's home)"), "{}", next.advice);
    assert!(next.advice.contains("retest without them"), "{}", next.advice);
    assert!(next.advice.contains("reads those variables when the harness starts"), "{}", next.advice);
    // The add command itself is the one the page's flags make: nothing of the settings.
    assert!(!next.add.as_deref().unwrap_or_default().contains("FOO"), "{:?}", next.add);
    let json = serde_json::to_value(&next).expect("json");
    assert_eq!(json["not_carried"][1], serde_json::json!({"flag": "--env", "value": "MY_KEY={api_key}", "origin": "recipe"}));
    let text = next.to_text();
    assert!(text.contains("next     not carried by add: --env FOO=bar\n"), "{text}");
    assert!(text.contains("next     not carried by add: --env MY_KEY={api_key} (the recipe's)\n"), "{text}");
    // A value without relay placeholders gets no word about them.
    facts.env.truncate(1);
    facts.home_files.clear();
    assert!(!next_steps(&facts).advice.contains("ANTHROPIC_BASE_URL"));
}

#[test]
fn a_failed_run_says_nothing_of_what_add_carries() {
    let mut facts = image_run();
    facts.passed = false;
    facts.env = vec![setting("FOO", "bar", Origin::CommandLine)];
    let next = next_steps(&facts);
    assert_eq!((next.add_is_exact, next.not_carried.len()), (None, 0));
    let mut built = build_run(BuilderKind::Buildah);
    built.passed = false;
    let next = next_steps(&built);
    assert!(next.publish.is_none() && next.retest.is_none(), "{next:?}");
}

#[test]
fn a_loopback_reference_in_add_carries_a_warning() {
    for name in ["127.0.0.1:5000/cli", "localhost/cli", "[::1]:5000/cli"] {
        let facts = Facts { reference: reference(name), ..image_run() };
        let warning = next_steps(&facts).warning.unwrap_or_default();
        assert!(warning.contains("cannot be pulled from anywhere else"), "{name}: {warning}");
    }
    assert_eq!(next_steps(&image_run()).warning, None);
    let text = next_steps(&Facts { reference: reference("localhost:5000/cli"), ..image_run() }).to_text();
    assert!(text.contains("warning  the add command names localhost:5000, a registry on this machine's loopback"), "{text}");
}

#[test]
fn a_build_context_hands_back_the_publish_commands_and_the_retest() {
    let next = next_steps(&build_run(BuilderKind::Buildah));
    let publish = next.publish.clone().expect("publish");
    assert_eq!(publish.build, "buildah bud --isolation chroot --timestamp 0 --layers=false -f ./c/D -t '<published-name>' ./c");
    assert_eq!(publish.push, "buildah push '<published-name>' 'docker://<published-name>'");
    assert_eq!((publish.digest.as_str(), publish.reproduces_digest), (DIGEST, true));
    assert_eq!(
        next.retest.as_deref(),
        Some(format!("checkfu-wire probe --name=cli '--image=<published-name>@{DIGEST}' --protocol=oneshot-v1 --env=FOO=bar").as_str())
    );
    assert!(next.add.is_none() && next.verify.is_none());
    // The retest keeps every flag, and what add cannot carry is still said.
    assert_eq!(next.add_is_exact, Some(true), "no settings in this run's facts");
    let podman = next_steps(&build_run(BuilderKind::Podman)).publish.expect("publish");
    assert!(podman.build.starts_with("podman build --isolation chroot --timestamp 0 --layers=false "), "{}", podman.build);
    assert_eq!(podman.push, "podman push '<published-name>' 'docker://<published-name>'");
    let docker = next_steps(&build_run(BuilderKind::Docker));
    let publish = docker.publish.clone().expect("publish");
    assert_eq!((publish.build.as_str(), publish.reproduces_digest), ("docker build -f ./c/D -t '<published-name>' ./c", false));
    assert!(docker.advice.contains("the digest the push prints"), "{}", docker.advice);
    let text = next.to_text();
    assert!(text.contains("next     publish: buildah bud "), "{text}");
    assert!(text.contains("next     retest: checkfu-wire probe "), "{text}");
}

#[test]
fn an_image_read_from_this_machine_is_published_first() {
    let facts = Facts { source: Source::Podman, sandbox: Selector::InConnectionFile, model: Selector::Missing, ..image_run() };
    let next = next_steps(&facts);
    assert!(next.advice.starts_with("it was read from podman: publish it as registry.example/cli@"), "{}", next.advice);
    assert_eq!(next.required_flags, vec!["--model"]);
    assert!(next.verify_is_template);
    assert!(next.verify.as_deref().is_some_and(|v| v.contains("'--model=<model-routing-profile>'")), "{:?}", next.verify);
}

#[test]
fn a_command_is_quoted_as_a_shell_reads_it() {
    assert_eq!(command_line("checkfu", &words("--argv={prompt_path} --x=it's")), "checkfu '--argv={prompt_path}' '--x=it'\\''s'");
}
