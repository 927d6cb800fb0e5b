//! The image lane's flags (`--image`, `--build-context` and what goes with them), the image
//! they make ready, and the next steps a result hands back: the page's author path, from a
//! build context to a published image's `add` and `verify`.

use std::path::PathBuf;

use checkfu_wire_probe::image::runtime::RuntimeKind;
use checkfu_wire_probe::image::source::Source;
use checkfu_wire_probe::image::store::{self, StorePlan};
use checkfu_wire_probe::image::tools::BuilderKind;
use checkfu_wire_probe::image::{ImageReference, ReferenceError};
use checkfu_wire_probe::next::{RetestWord, Selector};
use checkfu_wire_probe::plan::{BuildPlan, ImagePlan, ImageSource, Registration};
use checkfu_wire_probe::ProbeError;

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
    /// Where images run by digest are kept unpacked between runs, so the next run of the
    /// same digest skips the pull, the checks and the unpack (default:
    /// `$XDG_CACHE_HOME/checkfu-wire/images`, else `~/.cache/checkfu-wire/images`). Used
    /// with the bubblewrap runtime; each entry is sealed and checked before a run.
    #[arg(long, value_name = "DIR", conflicts_with = "no_image_cache")]
    pub image_cache: Option<PathBuf>,
    /// Do not use the image store: pull, check and unpack the image for this run alone.
    #[arg(long)]
    pub no_image_cache: bool,
    /// The image store's bound (bytes, or with K, M, G, T: powers of 1024); the least
    /// recently used entries go to keep it, and a larger image is run without being stored.
    #[arg(long, value_name = "SIZE", value_parser = store::parse_size, default_value = IMAGE_CACHE_MAX)]
    pub image_cache_max: u64,
    /// The harness's entrypoint inside the image (default: the image's Entrypoint and Cmd).
    #[arg(long, value_name = "PATH")]
    pub entrypoint: Option<String>,
    /// The harness's name: the built image's repository, and the profile's in the next steps.
    #[arg(long, value_name = "NAME", default_value = NAME)]
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

/// The defaults of the flags that have one, so the retest can leave out what was not
/// changed.
pub(super) const IMAGE_CACHE_MAX: &str = "10G";
pub(super) const NAME: &str = "checkfu-probe";

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
fn image_reference(text: &str) -> Result<ImageReference, ReferenceError> {
    ImageReference::parse(text)
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
        Some(ImagePlan { source, runtime, store: self.store_plan() })
    }

    /// The platform context both commands keep, as flags: `--connection-file`, `--api-url`.
    pub(super) fn context(&self) -> Vec<String> {
        let file = self.connection_file.iter().map(|f| format!("--connection-file={}", f.display()));
        file.chain(self.api_url.iter().map(|url| format!("--api-url={url}"))).collect()
    }

    /// The image store asked for; `None` with `--no-image-cache`, or when no directory is
    /// given and the user has no cache directory (no absolute `XDG_CACHE_HOME` or `HOME`).
    fn store_plan(&self) -> Option<StorePlan> {
        if self.no_image_cache {
            return None;
        }
        let dir = self.image_cache.clone().or_else(StorePlan::default_dir)?;
        Some(StorePlan { dir, max_bytes: self.image_cache_max })
    }

    /// Who registers the image: the name, the selectors (the connection file's defaults
    /// read now, so a bad file is a usage error before anything starts), the context and the
    /// retest's words ([`super::Args::retest`]).
    pub fn registration(&self, retest: Vec<RetestWord>) -> Result<Registration, ProbeError> {
        let (defaults_sandbox, defaults_model) = match &self.connection_file {
            Some(path) => connection_defaults(path).map_err(|e| ProbeError::invalid("", e))?,
            None => (None, None),
        };
        let selector = |flag: &Option<String>, default: Option<String>| match (flag, default) {
            (Some(value), _) => Selector::Given(value.clone()),
            (None, Some(_)) => Selector::InConnectionFile,
            (None, None) => Selector::Missing,
        };
        Ok(Registration {
            name: self.name.clone(),
            sandbox: selector(&self.sandbox, defaults_sandbox),
            model: selector(&self.model, defaults_model),
            context: self.context(),
            retest,
            dockerfile: self.dockerfile.as_ref().map(|d| d.display().to_string()),
        })
    }
}

/// The `defaults` of a connection file: `sandbox` and `model`, each a string when present.
fn connection_defaults(path: &std::path::Path) -> Result<(Option<String>, Option<String>), ConnectionFileError> {
    let file = || path.to_owned();
    let text = std::fs::read_to_string(path).map_err(|source| ConnectionFileError::Read { path: file(), source })?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|source| ConnectionFileError::NotJson { path: file(), source })?;
    let defaults = value.get("defaults");
    let member = |name: &'static str| -> Result<Option<String>, ConnectionFileError> {
        match defaults.and_then(|d| d.get(name)) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ConnectionFileError::NotAString { path: file(), name }),
        }
    };
    Ok((member("sandbox")?, member("model")?))
}

/// Why a connection file's defaults cannot be read.
#[derive(Debug, thiserror::Error)]
enum ConnectionFileError {
    #[error("--connection-file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}:{}:{}: not JSON: {source}", path.display(), source.line(), source.column())]
    NotJson { path: PathBuf, source: serde_json::Error },
    #[error("{}: /defaults/{name} must be a string", path.display())]
    NotAString { path: PathBuf, name: &'static str },
}
