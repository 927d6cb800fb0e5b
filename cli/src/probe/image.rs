//! The image lane's flags (`--image`, `--build-context` and what goes with them), the image
//! they make ready, and the next steps a result hands back: the page's author path, from a
//! build context to a published image's `add` and `verify`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use checkfu_wire_probe::image::run::{BuildRequest, Container, PullError};
use checkfu_wire_probe::image::runtime::{Runtime, RuntimeKind};
use checkfu_wire_probe::image::source::Source;
use checkfu_wire_probe::image::tools::BuilderKind;
use checkfu_wire_probe::image::ImageReference;
use checkfu_wire_probe::next::{self, Built, Facts, NextSteps, Origin, RetestWord, Selector, Setting};

use super::{usage, Word};

/// The image a harness runs in, and the selectors of the platform commands a result hands
/// back.
#[derive(clap::Args)]
#[command(next_help_heading = "Images", group(clap::ArgGroup::new("image_lane").args(["image", "build_context"])))]
pub struct Flags {
    /// Run the harness inside this image, pinned by digest (`NAME@sha256:<64 hex>`): pulled
    /// from its registry (plain HTTP only for a loopback one) or `--image-source`, every blob
    /// checked, unpacked and run by `--runtime` inside the probe's fence.
    #[arg(long, value_name = "NAME@sha256:DIGEST", value_parser = image_reference, conflicts_with = "build_context")]
    pub image: Option<ImageReference>,
    /// Where `--image` is read from: its registry, the machine's podman (containers) storage,
    /// the docker daemon's storage (an image it pulled or pushed by that digest), or an OCI
    /// layout directory (`oci:DIR`).
    #[arg(long, value_name = "SOURCE", value_parser = Source::parse, default_value = "registry", requires = "image")]
    pub image_source: Source,
    /// Build this context into an ephemeral image (a real builder: buildah, podman or docker),
    /// push it to a temporary registry on 127.0.0.1 and run exactly the pushed digest.
    #[arg(long, value_name = "DIR")]
    pub build_context: Option<PathBuf>,
    /// The Dockerfile of the build context (default: its `Dockerfile`).
    #[arg(long, value_name = "FILE", requires = "build_context")]
    pub dockerfile: Option<PathBuf>,
    /// The builder (default: the first of buildah, podman and docker on PATH).
    #[arg(long, value_enum, requires = "build_context")]
    pub builder: Option<Builder>,
    /// Let the temporary registry listen on every interface (anyone who reaches this machine
    /// can then read and write its images while the run lasts).
    #[arg(long, requires = "build_context")]
    pub allow_registry_all_interfaces: bool,
    /// The runtime that runs the image (default: the first found of bubblewrap, podman and
    /// docker): bubblewrap and podman run the unpacked root inside the probe's fence;
    /// docker runs the image in its daemon (the user's: `DOCKER_HOST` or its default
    /// socket), in a pause container's loopback to which the probe forwards the relay's port
    /// (root only: the probe enters that namespace).
    #[arg(long, value_enum, requires = "image_lane")]
    pub runtime: Option<RuntimeFlag>,
    /// The harness's entrypoint inside the image (default: the image's Entrypoint and Cmd).
    #[arg(long, value_name = "PATH")]
    pub entrypoint: Option<String>,
    /// The harness's name: the built image's repository, and the profile's in the next steps.
    #[arg(long, value_name = "NAME", default_value = "checkfu-probe")]
    pub name: String,
    /// The sandbox profile the `add` and `verify` commands name.
    #[arg(long, value_name = "PROFILE")]
    pub sandbox: Option<String>,
    /// The model routing profile the `add` and `verify` commands name.
    #[arg(long, value_name = "PROFILE")]
    pub model: Option<String>,
    /// A connection file whose `defaults` may hold `sandbox` and `model` (JSON:
    /// `{"defaults": {"sandbox": "…", "model": "…"}}`); kept in the next steps.
    #[arg(long, value_name = "FILE")]
    pub connection_file: Option<PathBuf>,
    /// The platform's API URL, kept in the next steps.
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Builder {
    Buildah,
    Podman,
    Docker,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum RuntimeFlag {
    Bubblewrap,
    Podman,
    Docker,
}

/// `--image`: a reference pinned by digest, refused before anything starts otherwise.
fn image_reference(text: &str) -> Result<ImageReference, String> {
    ImageReference::parse(text).map_err(|e| e.to_string())
}

/// An image made ready for a run.
pub struct Prepared {
    pub container: Arc<Container>,
    /// The selectors, from the flags or the connection file's defaults.
    sandbox: Option<String>,
    model: Option<String>,
    /// The command line that ran, for the retest and the context the next steps keep.
    line: Vec<Word>,
}

impl Flags {
    /// Whether the run is to be in an image.
    pub fn wants_image(&self) -> bool {
        self.image.is_some() || self.build_context.is_some()
    }

    /// Builds or pulls the image and unpacks it; `None` without `--image` or
    /// `--build-context`. `Err` is the exit code, the reason said: 2 for a usage error or a
    /// missing tool, 1 for a build, push or pull that failed (with the tool's own words).
    /// `line` is the command line that ran ([`super::Given::line`]). The pull and the unpack
    /// end by `deadline`, the run's.
    pub fn prepare(&self, line: &[Word], deadline: Instant) -> Result<Option<Prepared>, i32> {
        if !self.wants_image() {
            return Ok(None);
        }
        let (defaults_sandbox, defaults_model) = match &self.connection_file {
            Some(path) => connection_defaults(path).map_err(usage)?,
            None => (None, None),
        };
        let failed = |what: &str, e: PullError| match e {
            PullError::Missing(m) => usage(m),
            PullError::Failed(m) => {
                eprintln!("error: {what}: {m}");
                1
            }
        };
        // The runtime is found before anything is pulled or built.
        let runtime = match self.runtime {
            Some(flag) => Runtime::find(match flag {
                RuntimeFlag::Bubblewrap => RuntimeKind::Bubblewrap,
                RuntimeFlag::Podman => RuntimeKind::Podman,
                RuntimeFlag::Docker => RuntimeKind::Docker,
            }),
            None => Runtime::detect(),
        }
        .map_err(|e| usage(format!("--runtime: {e}")))?;
        let container = match (&self.image, &self.build_context) {
            (Some(reference), _) => {
                Container::pull(reference, &self.image_source, runtime, deadline).map_err(|e| failed(&reference.to_string(), e))?
            }
            (None, Some(context)) => {
                if self.allow_registry_all_interfaces {
                    eprintln!(
                        "warning: --allow-registry-all-interfaces: the temporary registry listens on every interface while this \
                         run lasts; anyone who reaches this machine can read and write its images"
                    );
                }
                let request = BuildRequest {
                    context,
                    dockerfile: self.dockerfile.as_deref(),
                    builder: self.builder.map(|b| match b {
                        Builder::Buildah => BuilderKind::Buildah,
                        Builder::Podman => BuilderKind::Podman,
                        Builder::Docker => BuilderKind::Docker,
                    }),
                    runtime,
                    all_interfaces: self.allow_registry_all_interfaces,
                    name: &self.name,
                };
                Container::build(&request, deadline).map_err(|e| failed(&context.display().to_string(), e))?
            }
            (None, None) => return Ok(None),
        };
        Ok(Some(Prepared {
            container: Arc::new(container),
            sandbox: self.sandbox.clone().or(defaults_sandbox),
            model: self.model.clone().or(defaults_model),
            line: line.to_vec(),
        }))
    }

    /// The next steps of a result ([`next::next_steps`]), from the run as it ran.
    /// `profile` is the harness as it ran, as the flags that register it (the lane knows it:
    /// from the command line, the recipe or the image's own command): `--protocol`,
    /// `--entrypoint`, and the lane's own (`--arg`, or the declaration's members). `env` and
    /// `home_files` are the variables and home files the run used ([`settings`]).
    pub fn next_steps(
        &self,
        prepared: &Prepared,
        passed: bool,
        profile: &[String],
        env: Vec<Setting>,
        home_files: Vec<Setting>,
    ) -> NextSteps {
        let selector = |flag: &Option<String>, resolved: &Option<String>| match (flag, resolved) {
            (Some(value), _) => Selector::Given(value.clone()),
            (None, Some(_)) => Selector::InConnectionFile,
            (None, None) => Selector::Missing,
        };
        let container = &prepared.container;
        next::next_steps(&Facts {
            name: self.name.clone(),
            reference: container.reference.clone(),
            source: container.source.clone(),
            built: container
                .built
                .clone()
                .map(|ephemeral| Built { ephemeral, dockerfile: self.dockerfile.as_ref().map(|d| d.display().to_string()) }),
            passed,
            profile: profile.to_vec(),
            sandbox: selector(&self.sandbox, &prepared.sandbox),
            model: selector(&self.model, &prepared.model),
            context: kept(&prepared.line, CONTEXT),
            retest: retest_words(&prepared.line),
            env,
            home_files,
        })
    }
}

/// The variables or home files a run used: `recipe`'s, but those the command line's
/// `given` replaced, then `given`.
pub fn settings<'a>(recipe: impl IntoIterator<Item = (&'a String, &'a String)>, given: &[(String, String)]) -> Vec<Setting> {
    let setting = |name: &str, template: &str, origin| Setting { name: name.to_owned(), template: template.to_owned(), origin };
    let mut out: Vec<Setting> = recipe
        .into_iter()
        .filter(|(name, _)| !given.iter().any(|(n, _)| n == *name))
        .map(|(name, template)| setting(name, template, Origin::Recipe))
        .collect();
    out.extend(given.iter().map(|(name, template)| setting(name, template, Origin::CommandLine)));
    out
}

/// The platform context both commands keep (clap's ids).
const CONTEXT: &[&str] = &["api_url", "connection_file"];

/// The flags of a build context, which the retest replaces with `--image` (clap's ids).
const BUILD: &[&str] = &["build_context", "dockerfile", "builder", "allow_registry_all_interfaces"];

/// The probe's command for the retest: the build-context flags left out, and `--image`
/// where `--build-context` was.
fn retest_words(line: &[Word]) -> Vec<RetestWord> {
    line.iter()
        .filter(|w| w.id == "build_context" || !BUILD.contains(&w.id.as_str()))
        .map(|w| if w.id == "build_context" { RetestWord::Image } else { RetestWord::Kept(w.text.clone()) })
        .collect()
}

/// The words of `line` whose argument is one of `ids`, in the order given.
fn kept(line: &[Word], ids: &[&str]) -> Vec<String> {
    line.iter().filter(|w| ids.contains(&w.id.as_str())).map(|w| w.text.clone()).collect()
}

/// The `defaults` of a connection file: `sandbox` and `model`, each a string when present.
fn connection_defaults(path: &std::path::Path) -> Result<(Option<String>, Option<String>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--connection-file {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}:{}:{}: not JSON: {e}", path.display(), e.line(), e.column()))?;
    let defaults = value.get("defaults");
    let member = |name: &str| -> Result<Option<String>, String> {
        match defaults.and_then(|d| d.get(name)) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("{}: /defaults/{name} must be a string", path.display())),
        }
    };
    Ok((member("sandbox")?, member("model")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[(&str, &str)]) -> Vec<Word> {
        words.iter().map(|(id, text)| Word { id: (*id).to_owned(), text: (*text).to_owned() }).collect()
    }

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn the_retest_replaces_the_build_context_with_the_image() {
        let given = line(&[
            ("name", "--name=c"),
            ("build_context", "--build-context=./c"),
            ("dockerfile", "--dockerfile=./c/D"),
            ("allow_registry_all_interfaces", "--allow-registry-all-interfaces"),
            ("env", "--env=FOO=bar"),
            ("argv", "--argv={prompt_path}"),
        ]);
        let kept = |t: &str| RetestWord::Kept(t.to_owned());
        assert_eq!(retest_words(&given), vec![kept("--name=c"), RetestWord::Image, kept("--env=FOO=bar"), kept("--argv={prompt_path}")]);
    }

    #[test]
    fn the_command_lines_settings_replace_the_recipes_of_the_same_name() {
        let recipe: std::collections::BTreeMap<String, String> =
            [("A", "1"), ("B", "2")].into_iter().map(|(k, v)| (k.to_owned(), v.to_owned())).collect();
        let given = vec![(String::from("B"), String::from("3"))];
        let names: Vec<(String, String, Origin)> = settings(&recipe, &given).into_iter().map(|s| (s.name, s.template, s.origin)).collect();
        assert_eq!(names, vec![("A".into(), "1".into(), Origin::Recipe), ("B".into(), "3".into(), Origin::CommandLine)]);
    }

    #[test]
    fn the_context_is_kept_as_given() {
        let given = line(&[("format", "--format=json"), ("api_url", "--api-url=https://x"), ("deadline", "--deadline=3")]);
        assert_eq!(kept(&given, CONTEXT), words("--api-url=https://x"));
    }
}
