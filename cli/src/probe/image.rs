//! The image lane's flags (`--image`, `--build-context` and what goes with them), the image
//! they make ready, and the next steps a result hands back: the page's author path, from a
//! build context to a published image's `add` and `verify`.

use std::path::PathBuf;

use checkfu_wire_probe::image::run::{ImageRun, NextSteps};
use checkfu_wire_probe::image::runtime::RuntimeKind;
use checkfu_wire_probe::image::source::Source;
use checkfu_wire_probe::image::tools::BuilderKind;
use checkfu_wire_probe::image::ImageReference;
use checkfu_wire_probe::plan::{BuildPlan, ImagePlan, ImageSource};
use checkfu_wire_probe::ProbeError;

use super::Word;

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

/// Who registers the image afterwards, and how: what the next steps of an image run name.
pub struct Registration {
    /// The harness's name (`--name`).
    name: String,
    /// The selectors as given (`--sandbox`, `--model`)...
    sandbox: Option<String>,
    model: Option<String>,
    /// ...and as the connection file's defaults complete them.
    has_sandbox: bool,
    has_model: bool,
    /// The image as given (`--image`), with where it was read from; `None` after a build.
    pulled: Option<(ImageReference, Source)>,
    /// The command line that ran, for the retest and the context the next steps keep.
    line: Vec<Word>,
}

impl Flags {
    /// The image of the run, when `--image` or `--build-context` asks for one.
    pub fn plan(&self) -> Option<ImagePlan> {
        let source = match (&self.image, &self.build_context) {
            (Some(reference), _) => ImageSource::Pull { reference: reference.clone(), from: self.image_source.clone() },
            (None, Some(context)) => ImageSource::Build(BuildPlan {
                context: context.clone(),
                dockerfile: self.dockerfile.clone(),
                builder: self.builder.map(|b| match b {
                    Builder::Buildah => BuilderKind::Buildah,
                    Builder::Podman => BuilderKind::Podman,
                    Builder::Docker => BuilderKind::Docker,
                }),
                all_interfaces: self.allow_registry_all_interfaces,
                name: self.name.clone(),
            }),
            (None, None) => return None,
        };
        let runtime = self.runtime.map(|flag| match flag {
            RuntimeFlag::Bubblewrap => RuntimeKind::Bubblewrap,
            RuntimeFlag::Podman => RuntimeKind::Podman,
            RuntimeFlag::Docker => RuntimeKind::Docker,
        });
        Some(ImagePlan { source, runtime })
    }

    /// Who registers the image: the name, the selectors (the connection file's defaults
    /// read now, so a bad file is a usage error before anything starts) and the command
    /// line. `line` is the command line that ran ([`super::Given::line`]).
    pub fn registration(&self, line: &[Word]) -> Result<Registration, ProbeError> {
        let (defaults_sandbox, defaults_model) = match &self.connection_file {
            Some(path) => connection_defaults(path).map_err(ProbeError::Usage)?,
            None => (None, None),
        };
        Ok(Registration {
            name: self.name.clone(),
            sandbox: self.sandbox.clone(),
            model: self.model.clone(),
            has_sandbox: self.sandbox.is_some() || defaults_sandbox.is_some(),
            has_model: self.model.is_some() || defaults_model.is_some(),
            pulled: self.image.clone().map(|r| (r, self.image_source.clone())),
            line: line.to_vec(),
        })
    }
}

impl Registration {
    /// The next steps of a result: after a build context, the published-image retest (only
    /// when the run passed); after an image, the `add` command and the `verify` command, or
    /// its template and the flags it still needs.
    /// `profile` is the harness as it ran, as the flags that register it (the lane knows it:
    /// from the command line, the recipe or the image's own command): `--protocol`,
    /// `--entrypoint`, and the lane's own (`--arg`, or the declaration's members).
    pub fn next_steps(&self, image: &ImageRun, passed: bool, profile: &[String]) -> NextSteps {
        let warning = image.built.as_ref().filter(|b| b.all_interfaces).map(|_| {
            String::from("the temporary registry listened on every interface (--allow-registry-all-interfaces) while the run lasted")
        });
        let Some((reference, source)) = &self.pulled else {
            if !passed {
                return NextSteps {
                    advice: String::from("fix what failed and run the build-context test again; publish only a passing image"),
                    warning,
                    ..NextSteps::default()
                };
            }
            let digest = &image.digest;
            let published = format!("<published-name>@{digest}");
            return NextSteps {
                advice: format!(
                    "publish the image (its digest is {digest} when pushed as built) and rerun the retest command with its \
                     published name; the ephemeral localhost image is not one to register"
                ),
                retest: Some(command_line("checkfu-wire", &retest_args(&self.line, &published))),
                warning,
                ..NextSteps::default()
            };
        };
        let mut required = Vec::new();
        if !self.has_sandbox {
            required.push("--sandbox");
        }
        if !self.has_model {
            required.push("--model");
        }
        let context: Vec<String> = kept(&self.line, CONTEXT);
        let mut add = vec![String::from("harness"), String::from("add"), String::from("oci"), format!("--name={}", self.name)];
        add.push(format!("--image={reference}"));
        add.extend(profile.iter().cloned());
        add.extend(self.selectors());
        add.extend(context.iter().cloned());
        let mut verify = vec![String::from("harness"), String::from("verify"), self.name.clone()];
        verify.extend(self.selectors());
        for flag in &required {
            verify.push(format!("{flag}=<{}>", if *flag == "--sandbox" { "sandbox-profile" } else { "model-routing-profile" }));
        }
        verify.push(String::from("--wait"));
        verify.extend(context);
        let mut advice = if !passed {
            String::from("the image did not pass: fix it before adding it")
        } else if required.is_empty() {
            String::from("run the add command, then the verify command for server-owned, signed evidence")
        } else {
            format!("run the add command with {}; the verify command is a template until then", required.join(" and "))
        };
        // The platform pulls the reference from its registry: an image read from this
        // machine's storage must be published there first.
        if passed && *source != Source::Registry {
            advice = format!("it was read from {source}: publish it as {} first, then {advice}", reference.pull_name());
        }
        NextSteps {
            advice,
            add: Some(command_line("checkfu", &add)),
            verify: Some(command_line("checkfu", &verify)),
            verify_is_template: !required.is_empty(),
            required_flags: required,
            warning,
            ..NextSteps::default()
        }
    }

    /// `--sandbox` and `--model` as given (those from a connection file stay in it).
    fn selectors(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(sandbox) = &self.sandbox {
            out.push(format!("--sandbox={sandbox}"));
        }
        if let Some(model) = &self.model {
            out.push(format!("--model={model}"));
        }
        out
    }
}

/// The platform context both commands keep (clap's ids).
const CONTEXT: &[&str] = &["api_url", "connection_file"];

/// The flags of a build context, which the retest replaces with `--image` (clap's ids).
const BUILD: &[&str] = &["build_context", "dockerfile", "builder", "allow_registry_all_interfaces"];

/// The words of `line` whose argument is one of `ids`, in the order given.
fn kept(line: &[Word], ids: &[&str]) -> Vec<String> {
    line.iter().filter(|w| ids.contains(&w.id.as_str())).map(|w| w.text.clone()).collect()
}

/// The probe's command with the build-context flags left out and `--image` where
/// `--build-context` was.
fn retest_args(line: &[Word], image: &str) -> Vec<String> {
    let mut out = vec![String::from("probe")];
    for word in line {
        if word.id == "build_context" {
            out.push(format!("--image={image}"));
        } else if !BUILD.contains(&word.id.as_str()) {
            out.push(word.text.clone());
        }
    }
    out
}

/// A command as a shell reads it: each word quoted when it holds anything but plain
/// characters.
fn command_line(program: &str, args: &[String]) -> String {
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
            ("protocol", "--protocol=oneshot-v1"),
            ("argv", "--argv={prompt_path}"),
        ]);
        assert_eq!(
            retest_args(&given, "<published-name>@sha256:ab"),
            words("probe --name=c --image=<published-name>@sha256:ab --protocol=oneshot-v1 --argv={prompt_path}")
        );
    }

    #[test]
    fn the_context_is_kept_as_given() {
        let given = line(&[("format", "--format=json"), ("api_url", "--api-url=https://x"), ("deadline", "--deadline=3")]);
        assert_eq!(kept(&given, CONTEXT), words("--api-url=https://x"));
        assert_eq!(command_line("checkfu", &words("--argv={prompt_path} --x=it's")), "checkfu '--argv={prompt_path}' '--x=it'\\''s'");
    }
}
