//! The next steps a result hands back after an image run, as the page's author path has
//! them: after a build context, the commands that publish the image and the retest against
//! it; after an image, the platform's `checkfu harness add oci …` and `verify` commands.
//!
//! The steps are built from [`Facts`], the run as it ran, which the spine fills from the
//! plan's registration and the report.
//!
//! # What `add` carries
//!
//! `checkfu harness add oci` carries the page's flags: the name, the image, the protocol,
//! the entrypoint and the declaration's members (or the ACP agent's arguments), the working
//! directory and the selectors. It has no flag for the probe's `--env` and `--home-file`, nor
//! for a recipe's `env` and `home_files`, so a harness that needed one of them to pass is not
//! the harness `add` would register. Such a run's next steps list each of them in
//! `not_carried`, say `add_is_exact: false`, and advise baking them into the image.
//!
//! Two cases are not listed. An `--env` that sets a variable the probe sets for every harness
//! to the very value the probe gives it (`OPENAI_BASE_URL={relay_url}/v1`) changes nothing
//! in the run, so nothing is lost by not carrying it. And the relay's own values,
//! `{relay_url}` and `{api_key}`, are the platform's to supply: its relay and its key differ
//! from run to run, and it hands them to the harness itself (the probe, standing in for it,
//! sets `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`, `OPENAI_BASE_URL` and `OPENAI_API_KEY`).
//! A setting that holds one of them is still listed, since `add` does not carry it either,
//! but it cannot be baked with its value, so the advice then says to bake one that reads
//! those variables when the harness starts.

use std::fmt::Write as _;

use serde::Serialize;

use crate::image::run::Ephemeral;
use crate::image::source::Source;
use crate::image::tools::BuilderKind;
use crate::image::ImageReference;

/// The program of the probe, as the retest names it.
const PROBE_PROGRAM: &str = "checkfu-wire";
/// The platform's command line, as the `add` and `verify` commands name it.
const PLATFORM_PROGRAM: &str = "checkfu";
/// What the author fills in: where the image is published.
pub const PUBLISHED_NAME: &str = "<published-name>";

/// What the next steps are built from: the image run as it ran.
#[derive(Clone, Debug)]
pub struct Facts {
    /// The harness's name (`--name`): the profile's in `add` and `verify`.
    pub name: String,
    /// The image that ran, pinned by digest (after a build context, the pushed one).
    pub reference: ImageReference,
    /// Where the image was read from.
    pub source: Source,
    /// How the image was built, when it came from a build context.
    pub built: Option<Built>,
    /// Whether the run passed.
    pub passed: bool,
    /// The declared paths and values whose step did not run and pass (`member: value`):
    /// `add` registers them as declared, unproven.
    pub unproven: Vec<String>,
    /// The harness as it ran, as the flags that register it: `--protocol`, `--entrypoint`,
    /// the lane's own (`--arg`, or the declaration's members) and `--working-directory`.
    pub profile: Vec<String>,
    pub sandbox: Selector,
    pub model: Selector,
    /// The platform context both commands keep (`--api-url=…`, `--connection-file=…`), as
    /// given.
    pub context: Vec<String>,
    /// The probe's command line, for the retest.
    pub retest: Vec<RetestWord>,
    /// The variables the run set for the harness beyond the probe's own: the recipe's, then
    /// the command line's.
    pub env: Vec<Setting>,
    /// The files the run wrote into the harness's home: the recipe's, then the command
    /// line's.
    pub home_files: Vec<Setting>,
}

/// How a build context was built.
#[derive(Clone, Debug)]
pub struct Built {
    /// What the build reported (the builder, the context, the pushed reference).
    pub ephemeral: Ephemeral,
    /// `--dockerfile`, as given.
    pub dockerfile: Option<String>,
}

/// A profile the `add` and `verify` commands name (`--sandbox`, `--model`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Given on the command line: the commands name it.
    Given(String),
    /// In the connection file's `defaults`: the commands keep the file, which names it.
    InConnectionFile,
    Missing,
}

/// One word of the probe's command line, for the retest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetestWord {
    /// Kept as written (`--name=x`).
    Kept(String),
    /// Where `--build-context` was: the retest's `--image`.
    Image,
}

/// A variable or a home file the run used: its name (or relative path), its template as
/// given, and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub name: String,
    pub template: String,
    pub origin: Origin,
}

/// Where a setting came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    CommandLine,
    Recipe,
}

/// What a result hands back after an image run, as the page's author path has it: after a
/// build context, the commands that publish it and the retest against the published image;
/// after an image, the `add` and `verify` commands, or the flags they still need.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NextSteps {
    /// The next step, in a sentence.
    pub advice: String,
    /// After a passing build-context run: the same command with `--image` in place of
    /// `--build-context`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retest: Option<String>,
    /// After a passing build-context run: how to publish the image the retest names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub publish: Option<Publish>,
    /// After an image run: the exact `checkfu harness add oci …` command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add: Option<String>,
    /// After an image run: the `checkfu harness verify … --wait` command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verify: Option<String>,
    /// The verify command is a template (a selector is missing), not a step to run.
    pub verify_is_template: bool,
    /// The flags the add and verify commands still need (`--sandbox`, `--model`).
    pub required_flags: Vec<&'static str>,
    /// After a passing run: whether `add` registers the harness exactly as it passed (false
    /// when the run used something `add` cannot carry, `not_carried`, or a declared path or
    /// value did not run and pass, `unproven`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_is_exact: Option<bool>,
    /// After a passing run: what the declaration says and the run did not prove.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unproven: Vec<String>,
    /// What the run used that `add` cannot carry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_carried: Vec<NotCarried>,
    /// The temporary registry listened on every interface, or `add` names a reference on
    /// this machine's loopback.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// A setting `add` cannot carry: the flag and its value as given (`FOO=bar`,
/// `cfg/x.json={…}`), and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NotCarried {
    /// `--env` or `--home-file` (a recipe's `env` or `home_files`).
    pub flag: &'static str,
    pub value: String,
    pub origin: Origin,
}

/// The commands that publish a build context's image, reproducing the digest the retest
/// names: the builder and flags the probe built with, and [`PUBLISHED_NAME`] to fill in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Publish {
    pub build: String,
    pub push: String,
    /// The digest the run's image had, which the retest names.
    pub digest: String,
    /// Whether the build reproduces that digest (buildah and podman build with
    /// `--timestamp 0`; docker stamps the time, so the retest takes the digest its push
    /// prints).
    pub reproduces_digest: bool,
}

/// The variables or home files a run used: `declared`'s (a recipe's, or a one-shot
/// declaration's), but those the command line's `given` replaced, then `given`.
pub fn settings<'a>(declared: impl IntoIterator<Item = (&'a String, &'a String)>, given: &[(String, String)]) -> Vec<Setting> {
    let setting = |name: &str, template: &str, origin| Setting { name: name.to_owned(), template: template.to_owned(), origin };
    let mut out: Vec<Setting> = declared
        .into_iter()
        .filter(|(name, _)| !given.iter().any(|(n, _)| n == *name))
        .map(|(name, template)| setting(name, template, Origin::Recipe))
        .collect();
    out.extend(given.iter().map(|(name, template)| setting(name, template, Origin::CommandLine)));
    out
}

/// The next steps of an image run.
pub fn next_steps(facts: &Facts) -> NextSteps {
    let mut next = match &facts.built {
        Some(built) => after_build(facts, built),
        None => after_image(facts),
    };
    if facts.passed {
        let not_carried = not_carried(facts);
        next.add_is_exact = Some(not_carried.is_empty() && facts.unproven.is_empty());
        if !not_carried.is_empty() {
            next.advice = format!("{}; {}", next.advice, bake_advice(&not_carried));
        }
        if !facts.unproven.is_empty() {
            next.advice = format!(
                "{}; the declaration says {} and the run did not prove it: exercise it, or leave it out of the declaration",
                next.advice,
                facts.unproven.join(", ")
            );
        }
        next.not_carried = not_carried;
        next.unproven = facts.unproven.clone();
    }
    next
}

/// After a build context: the retest and the publish commands, once it passed.
fn after_build(facts: &Facts, built: &Built) -> NextSteps {
    let warning = built
        .ephemeral
        .all_interfaces
        .then(|| String::from("the temporary registry listened on every interface (--allow-registry-all-interfaces) while the run lasted"));
    if !facts.passed {
        return NextSteps {
            advice: String::from("fix what failed and run the build-context test again; publish only a passing image"),
            warning,
            ..NextSteps::default()
        };
    }
    let digest = facts.reference.digest().to_string();
    let image = format!("{PUBLISHED_NAME}@{digest}");
    let mut retest = vec![String::from("probe")];
    retest.extend(facts.retest.iter().map(|word| match word {
        RetestWord::Kept(text) => text.clone(),
        RetestWord::Image => format!("--image={image}"),
    }));
    let publish = Some(built.ephemeral.builder).map(|kind| {
        let mut publish = publish_commands(kind, &built.ephemeral.context, built.dockerfile.as_deref());
        publish.digest = digest.clone();
        publish
    });
    let advice = match &publish {
        Some(p) if !p.reproduces_digest => format!(
            "publish the image with the publish commands and rerun the retest command with its published name and the digest \
             the push prints ({} stamps the build's time, so it is not {digest}); the ephemeral localhost image is not one to \
             register",
            built.ephemeral.builder.tool().program()
        ),
        _ => format!(
            "publish the image with the publish commands (its digest is {digest} when built and pushed as the probe did) and \
             rerun the retest command with its published name; the ephemeral localhost image is not one to register"
        ),
    };
    NextSteps { advice, retest: Some(command_line(PROBE_PROGRAM, &retest)), publish, warning, ..NextSteps::default() }
}

/// After an image: the `add` and `verify` commands, or the flags they still need.
fn after_image(facts: &Facts) -> NextSteps {
    let required: Vec<&'static str> = [("--sandbox", &facts.sandbox), ("--model", &facts.model)]
        .into_iter()
        .filter(|(_, selector)| **selector == Selector::Missing)
        .map(|(flag, _)| flag)
        .collect();
    let mut selectors = Vec::new();
    for (flag, selector) in [("--sandbox", &facts.sandbox), ("--model", &facts.model)] {
        if let Selector::Given(value) = selector {
            selectors.push(format!("{flag}={value}"));
        }
    }
    let mut add = vec![String::from("harness"), String::from("add"), String::from("oci"), format!("--name={}", facts.name)];
    add.push(format!("--image={}", facts.reference));
    add.extend(facts.profile.iter().cloned());
    add.extend(selectors.iter().cloned());
    add.extend(facts.context.iter().cloned());
    let mut verify = vec![String::from("harness"), String::from("verify"), facts.name.clone()];
    verify.extend(selectors);
    for flag in &required {
        verify.push(format!("{flag}=<{}>", if *flag == "--sandbox" { "sandbox-profile" } else { "model-routing-profile" }));
    }
    verify.push(String::from("--wait"));
    verify.extend(facts.context.iter().cloned());
    let mut advice = if !facts.passed {
        String::from("the image did not pass: fix it before adding it")
    } else if required.is_empty() {
        String::from("run the add command, then the verify command for server-owned, signed evidence")
    } else {
        format!("run the add command with {}; the verify command is a template until then", required.join(" and "))
    };
    // The platform pulls the reference from its registry: an image read from this
    // machine's storage must be published there first.
    if facts.passed && facts.source != Source::Registry {
        advice = format!("it was read from {}: publish it as {} first, then {advice}", facts.source, facts.reference.pull_name());
    }
    NextSteps {
        advice,
        add: Some(command_line(PLATFORM_PROGRAM, &add)),
        verify: Some(command_line(PLATFORM_PROGRAM, &verify)),
        verify_is_template: !required.is_empty(),
        required_flags: required,
        warning: loopback_warning(&facts.reference),
        ..NextSteps::default()
    }
}

/// The warning an `add` naming a reference on this machine's loopback carries: the
/// platform pulls the image from its registry, and no other machine reaches this one's
/// loopback.
pub fn loopback_warning(reference: &ImageReference) -> Option<String> {
    reference.is_loopback_registry().then(|| {
        format!(
            "the add command names {}, a registry on this machine's loopback, which cannot be pulled from anywhere else: publish \
             the image to a registry the platform reaches and use that reference",
            reference.registry().unwrap_or_default()
        )
    })
}

/// The commands that build `context` (with `dockerfile`) as the probe does with `builder`,
/// and push it as [`PUBLISHED_NAME`]. The probe's own storage and registry flags are left
/// out: neither changes the image's digest, and the author's push goes to a registry of
/// their own. `digest` is left empty for the caller.
pub fn publish_commands(builder: BuilderKind, context: &str, dockerfile: Option<&str>) -> Publish {
    let program = builder.tool().program();
    let mut build: Vec<String> = match builder {
        BuilderKind::Buildah => ["bud", "--isolation", "chroot", "--timestamp", "0", "--layers=false"].map(String::from).to_vec(),
        BuilderKind::Podman => ["build", "--isolation", "chroot", "--timestamp", "0", "--layers=false"].map(String::from).to_vec(),
        BuilderKind::Docker => vec![String::from("build")],
    };
    if let Some(dockerfile) = dockerfile {
        build.extend([String::from("-f"), dockerfile.to_owned()]);
    }
    build.extend([String::from("-t"), PUBLISHED_NAME.to_owned(), context.to_owned()]);
    let push: Vec<String> = match builder {
        BuilderKind::Buildah | BuilderKind::Podman => {
            vec![String::from("push"), PUBLISHED_NAME.to_owned(), format!("docker://{PUBLISHED_NAME}")]
        }
        BuilderKind::Docker => vec![String::from("push"), PUBLISHED_NAME.to_owned()],
    };
    Publish {
        build: command_line(program, &build),
        push: command_line(program, &push),
        digest: String::new(),
        reproduces_digest: builder != BuilderKind::Docker,
    }
}

/// What the run used that `add` cannot carry: every home file, and every variable but one
/// the probe sets anyway to the same value.
fn not_carried(facts: &Facts) -> Vec<NotCarried> {
    let unchanged = probes_own_variables();
    let mut out: Vec<NotCarried> = facts
        .env
        .iter()
        .filter(|s| !unchanged.iter().any(|(name, value)| *name == s.name && *value == s.template))
        .map(|s| NotCarried { flag: "--env", value: format!("{}={}", s.name, s.template), origin: s.origin })
        .collect();
    out.extend(facts.home_files.iter().map(|s| NotCarried {
        flag: "--home-file",
        value: format!("{}={}", s.name, s.template),
        origin: s.origin,
    }));
    out
}

/// The variables the probe sets for every harness, as templates (`OPENAI_BASE_URL` is
/// `{relay_url}/v1`): the conventional ones, rendered with each placeholder standing for
/// itself.
fn probes_own_variables() -> Vec<(String, String)> {
    let itself = crate::launch::Placeholders {
        relay_url: String::from("{relay_url}"),
        api_key: String::from("{api_key}"),
        workspace: String::from("{workspace}"),
        home: String::from("{home}"),
    };
    crate::launch::conventional(&itself, None)
}

/// The advice for what `add` cannot carry.
fn bake_advice(not_carried: &[NotCarried]) -> String {
    let names: Vec<String> =
        not_carried.iter().map(|n| format!("{} {}", n.flag, n.value.split_once('=').map_or(n.value.as_str(), |(name, _)| name))).collect();
    let mut advice = format!(
        "add cannot carry {}: bake them into the image (ENV in the Dockerfile, files under the image's home), rebuild, and \
         retest without them",
        names.join(", ")
    );
    let relay_values = not_carried.iter().any(|n| n.value.contains("{relay_url}") || n.value.contains("{api_key}"));
    if relay_values {
        advice.push_str(
            "; {relay_url} and {api_key} are the platform's to supply, differently each run (the probe sets them in \
             ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY, OPENAI_BASE_URL and OPENAI_API_KEY): bake a setting that reads those \
             variables when the harness starts, not their values",
        );
    }
    advice
}

/// A command as a shell reads it: each word quoted when it holds anything but plain
/// characters.
pub fn command_line(program: &str, args: &[String]) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    let mut words = vec![program.to_owned()];
    for arg in args {
        if !arg.is_empty() && arg.chars().all(plain) {
            words.push(arg.clone());
        } else {
            words.push(format!("'{}'", arg.replace('\'', r"'\''")));
        }
    }
    words.join(" ")
}

/// The most characters of a not-carried value the text report shows.
const SHOWN_VALUE: usize = 80;

impl NextSteps {
    /// The lines the text report adds for the next steps (`next     …`, `warning  …`).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "next     {}", self.advice);
        if let Some(publish) = &self.publish {
            let _ = writeln!(out, "next     publish: {}", publish.build);
            let _ = writeln!(out, "next     publish: {}", publish.push);
        }
        for (label, command) in [("retest", &self.retest), ("add", &self.add), ("verify", &self.verify)] {
            if let Some(command) = command {
                let template = if label == "verify" && self.verify_is_template { " (a template)" } else { "" };
                let _ = writeln!(out, "next     {label}{template}: {command}");
            }
        }
        if !self.required_flags.is_empty() {
            let _ = writeln!(out, "next     required flags: {}", self.required_flags.join(", "));
        }
        for item in &self.not_carried {
            // A home file's template may be long and span lines: one line, cut short.
            let escaped: String = item.value.escape_debug().collect();
            let shown: String = escaped.chars().take(SHOWN_VALUE).collect();
            let cut = if shown.len() < escaped.len() { "…" } else { "" };
            let from = match item.origin {
                Origin::CommandLine => "",
                Origin::Recipe => " (the recipe's)",
            };
            let _ = writeln!(out, "next     not carried by add: {} {shown}{cut}{from}", item.flag);
        }
        if !self.unproven.is_empty() {
            let _ = writeln!(out, "next     declared, not proven by the run: {}", self.unproven.join(", "));
        }
        if let Some(warning) = &self.warning {
            let _ = writeln!(out, "warning  {warning}");
        }
        out
    }
}

#[cfg(test)]
mod tests;
