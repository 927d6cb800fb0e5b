//! A run resolved once: what the command line (or any caller) asks for, as one typed plan
//! the spine runs. The plan holds the lane and its options, the options both lanes share,
//! the image and where it comes from, and who registers it afterwards ([`Registration`]). Nothing reads the
//! command line again once the plan is made.

use std::path::PathBuf;

use crate::acp::AcpOptions;
use crate::budget::Budget;
use crate::error::ProbeError;
use crate::image::run::{BuildRequest, PreparedImage, PullError};
use crate::image::runtime::{Runtime, RuntimeKind};
use crate::image::source::Source;
use crate::image::store::{ImageCache, Store, StorePlan};
use crate::image::tools::BuilderKind;
use crate::image::ImageReference;
use crate::lane::Lane;
use crate::next::{RetestWord, Selector};
use crate::oneshot::OneshotPlan;
use crate::options::RunOptions;
use crate::Progress;
use checkfu_wire::catalog::Protocol;

/// A run, resolved.
#[derive(Clone, Debug)]
pub struct Plan {
    pub run: RunOptions,
    pub lane: LanePlan,
    /// The image the harness runs in, when one is asked for.
    pub image: Option<ImagePlan>,
    /// Who registers the image afterwards: what an image run's next steps name.
    pub registration: Option<Registration>,
}

/// Who registers an image afterwards, and how: the members of an image run's next steps
/// that the run itself does not know ([`crate::next::Facts`] holds the rest).
#[derive(Clone, Debug)]
pub struct Registration {
    /// The harness's name (`--name`).
    pub name: String,
    pub sandbox: Selector,
    pub model: Selector,
    /// The platform context both commands keep (`--api-url=…`, `--connection-file=…`).
    pub context: Vec<String>,
    /// The probe's command line, for the retest.
    pub retest: Vec<RetestWord>,
    /// `--dockerfile`, as given, for the publish commands.
    pub dockerfile: Option<String>,
}

/// The lane a run takes, with its own options. The one place that knows every lane: the
/// spine runs whichever it holds through [`LanePlan::lane`].
#[derive(Clone, Debug)]
pub enum LanePlan {
    Acp(AcpOptions),
    Oneshot(OneshotPlan),
}

impl LanePlan {
    pub fn protocol(&self) -> Protocol {
        self.lane().protocol()
    }

    /// The lane, as the interface the spine runs.
    pub(crate) fn lane(&self) -> &dyn Lane {
        match self {
            LanePlan::Acp(options) => options,
            LanePlan::Oneshot(plan) => plan,
        }
    }
}

/// The image a harness runs in: where it comes from, and the runtime that runs it.
#[derive(Clone, Debug)]
pub struct ImagePlan {
    pub source: ImageSource,
    /// The runtime asked for (`--runtime`); `None`: the first found.
    pub runtime: Option<RuntimeKind>,
    /// The image store (`--image-cache`, `--image-cache-max`); `None`: `--no-image-cache`.
    pub store: Option<StorePlan>,
}

/// Where the image comes from.
#[derive(Clone, Debug)]
pub enum ImageSource {
    /// An image pinned by digest, read from `from` (`--image`, `--image-source`).
    Pull { reference: ImageReference, from: Source },
    /// A build context built into an ephemeral image (`--build-context`).
    Build(BuildPlan),
}

/// What `--build-context` asks for.
#[derive(Clone, Debug)]
pub struct BuildPlan {
    pub context: PathBuf,
    pub dockerfile: Option<PathBuf>,
    /// The builder; `None`: the first of buildah, podman and docker found.
    pub builder: Option<BuilderKind>,
    /// The temporary registry listens on every interface.
    pub all_interfaces: bool,
    /// The image's repository name (`--name`).
    pub name: String,
}

impl ImagePlan {
    /// Builds or pulls the image and unpacks it, by `budget` (the run's). A tool that is
    /// not installed is the user's to install; a build, push or pull that failed is the
    /// run's failure, with the tool's own words.
    pub(crate) fn prepare(&self, budget: &Budget, progress: &mut dyn FnMut(Progress)) -> Result<PreparedImage, ProbeError> {
        // The runtime is found before anything is pulled or built.
        let runtime = match self.runtime {
            Some(kind) => Runtime::find(kind),
            None => Runtime::detect(),
        }
        .map_err(|e| ProbeError::invalid("--runtime", e))?;
        let failed = |what: String, e: PullError| match e {
            PullError::Missing(_) => ProbeError::MissingTool(e),
            source => ProbeError::Image { what, source },
        };
        match &self.source {
            ImageSource::Pull { reference, from } => {
                let (store, off) = self.open_store(runtime.kind);
                let mut prepared =
                    PreparedImage::pull(reference, from, runtime, store.as_ref(), budget).map_err(|e| failed(reference.to_string(), e))?;
                if prepared.cache == ImageCache::Off {
                    prepared.cache_detail = off;
                }
                Ok(prepared)
            }
            ImageSource::Build(build) => {
                if build.all_interfaces {
                    progress(Progress::Note(
                        "--allow-registry-all-interfaces: the temporary registry listens on every interface while this run lasts; \
                         anyone who reaches this machine can read and write its images",
                    ));
                }
                let request = BuildRequest {
                    context: &build.context,
                    dockerfile: build.dockerfile.as_deref(),
                    builder: build.builder,
                    runtime,
                    all_interfaces: build.all_interfaces,
                    name: &build.name,
                };
                let mut prepared = PreparedImage::build(&request, budget).map_err(|e| failed(build.context.display().to_string(), e))?;
                prepared.cache_detail = Some(String::from("a build context's image is ephemeral"));
                Ok(prepared)
            }
        }
    }
}

impl ImagePlan {
    /// The store a pull by digest uses, or why none: asked off, or a runtime other than
    /// bubblewrap (podman's `--rootfs` may make its own files in the root it is given, and
    /// docker imports the root into its daemon anyway), or a store that cannot be opened
    /// (the run then goes on without it, and says why).
    fn open_store(&self, runtime: RuntimeKind) -> (Option<Store>, Option<String>) {
        let Some(plan) = &self.store else {
            return (None, Some(String::from("--no-image-cache")));
        };
        if runtime != RuntimeKind::Bubblewrap {
            return (None, Some(format!("the image store serves bubblewrap runs only; this run's runtime is {}", runtime.name())));
        }
        match Store::open(plan) {
            Ok(store) => (Some(store), None),
            Err(e) => (None, Some(e.to_string())),
        }
    }
}

impl Plan {
    /// When the run must end, and what stops it sooner (a signal).
    pub fn budget(&self) -> &Budget {
        &self.run.budget
    }
}
