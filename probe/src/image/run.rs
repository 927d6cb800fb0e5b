//! Running an image pinned by digest: pulled by its digest into an OCI layout, unpacked in
//! the crate, and run by a runtime over the unpacked root filesystem ([`super::runtime`]:
//! bubblewrap, podman, or docker, which imports that root into its daemon).
//!
//! With bubblewrap, the default: bubblewrap is started the way every harness is ([`crate::session::process::Harness`]):
//! in the probe's process group, after joining the probe's loopback-only network namespace.
//! It unshares every other namespace but the network, so the image's process sees only the
//! fence the probe made, and reaches the relay as a local command does. The root is
//! read-only; `/tmp` is a fresh tmpfs; the probe's workspace is mounted read-write at the
//! working directory and, like the fresh home and the lane's scratch files, at its own path
//! too, so every placeholder the probe expanded names the same file inside and out.
//! `--die-with-parent` ends the container with the probe, and the layout is removed once
//! unpacked. With the image store ([`super::store`], bubblewrap only) the root is an entry
//! of the store, kept for the next run of the digest and bound read-only from the start;
//! without it, the root is the run's own and removed when the [`PreparedImage`] drops. podman and docker keep the same promises
//! (the fence, the mounts, the variables, the command); see [`super::runtime`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::host_env;
use super::in_root;
use oci_spec::image::{Config, Os};

use super::host_env::ConfigRefused;
use super::in_root::InRootError;
use super::layout::{LayoutError, Limits};
use super::reference::ImageReference;
use super::runtime::{ImageFence, RunSpec, RunningContainer, Runtime, RuntimeError, RuntimeKind};
use super::source::{self, Source, SourceError};
use super::store::{ImageCache, Lookup, NewEntry, Pending, Store, StoreError};
use super::tools::{self, Tool};
use super::TempDir;

/// Why an image could not be made ready: a tool is missing (a usage error: install it), or
/// the pull, a check or the unpack failed (the run's failure, with the tool's own answer).
#[derive(Debug, thiserror::Error)]
pub enum PullError {
    /// A tool the lane needs is not installed ([`tools::ToolError::Missing`]).
    #[error(transparent)]
    Missing(tools::ToolError),
    /// A tool failed, with its own words.
    #[error(transparent)]
    Tool(tools::ToolError),
    /// The source refused the image, or was not one.
    #[error(transparent)]
    Source(SourceError),
    #[error("{reference}: the image is for `{os}`, not linux")]
    NotLinux { reference: String, os: Os },
    #[error(transparent)]
    Config(#[from] ConfigRefused),
    #[error("cannot make the image's layout directory: {source}")]
    LayoutDirectory { source: std::io::Error },
    #[error("cannot make the image's root directory: {source}")]
    RootDirectory { source: std::io::Error },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{reference}: the run's deadline (--deadline) passed before the image was unpacked")]
    Deadline { reference: String },
    #[error(transparent)]
    Unpack(#[from] LayoutError),
    #[error("cannot remove the image's layout: {source}")]
    RemoveLayout { source: std::io::Error },
    /// A directory the run needs could not be made inside the root.
    #[error(transparent)]
    InRoot(#[from] InRootError),
}

/// A tool that is not installed is the user's to install (a usage error); any other failure
/// of a tool is the run's, with the tool's own words.
impl From<tools::ToolError> for PullError {
    fn from(e: tools::ToolError) -> PullError {
        match e {
            tools::ToolError::Missing { .. } => PullError::Missing(e),
            other => PullError::Tool(other),
        }
    }
}

/// A source's tool is a tool like any other; what a source refused is the run's failure.
impl From<SourceError> for PullError {
    fn from(e: SourceError) -> PullError {
        match e {
            SourceError::Tool(tool) => PullError::from(tool),
            other => PullError::Source(other),
        }
    }
}

/// An image's `Entrypoint` then its `Cmd`, as a container runtime runs them (an absent one
/// is empty).
fn command_of(config: &Config) -> Vec<String> {
    config.entrypoint().iter().flatten().chain(config.cmd().iter().flatten()).cloned().collect()
}

/// The `PATH` docker and podman give a container whose image sets none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// An image ready to run: its unpacked root and its config.
#[derive(Debug)]
pub struct PreparedImage {
    pub reference: ImageReference,
    /// Where it was read from.
    pub source: Source,
    /// The image config's runtime part (`Env`, `Entrypoint`, `Cmd`, `WorkingDir`, `User`),
    /// empty when the image has none; its `os` was checked to be linux.
    pub config: Config,
    /// The runtime that runs it.
    runtime: Runtime,
    root: Root,
    /// Bytes of file content unpacked.
    pub unpacked_bytes: u64,
    /// How it was built, when it came from a build context.
    pub built: Option<Ephemeral>,
    /// Whether it came from the image store, and why not when it did not.
    pub cache: ImageCache,
    pub cache_detail: Option<String>,
}

/// The root filesystem a run binds: this run's own (removed when it drops), or an entry of
/// the image store, bound read-only and never written by a run (a directory it lacks is
/// made in a private copy of it, [`super::store::Entry::make_dir`]).
#[derive(Debug)]
enum Root {
    Own { _dir: TempDir, path: PathBuf },
    Stored(Box<super::store::Entry>),
}

impl Root {
    fn path(&self) -> PathBuf {
        match self {
            Root::Own { path, .. } => path.clone(),
            Root::Stored(entry) => entry.root(),
        }
    }

    fn make_dir(&self, path: &str) -> Result<String, InRootError> {
        match self {
            Root::Own { path: root, .. } => in_root::make_dir(&in_root::open(root)?, path),
            Root::Stored(entry) => entry.make_dir(path),
        }
    }

    fn make_mount_point(&self, path: &Path) -> Result<(), InRootError> {
        match self {
            Root::Own { path: root, .. } => in_root::make_mount_point(&in_root::open(root)?, path),
            Root::Stored(entry) => entry.make_mount_point(path),
        }
    }
}

/// Where the layers are unpacked: a directory of the run's own, or an entry of the store
/// being written.
enum Unpacking<'a> {
    Own(TempDir),
    Pending(&'a Store, Pending),
}

impl Unpacking<'_> {
    /// The run's root from what was unpacked at `root`: this run's own directory; or, with
    /// a store, the entry committed (a miss), or kept as this run's own when it could not
    /// be stored, with why (after `removed`, why a stored entry was removed).
    fn settle(
        self,
        root: PathBuf,
        new: &NewEntry<'_>,
        removed: Option<String>,
        deadline: Instant,
    ) -> Result<(Root, ImageCache, Option<String>), PullError> {
        let (store, pending) = match self {
            Unpacking::Own(dir) => return Ok((Root::Own { _dir: dir, path: root }, ImageCache::Off, None)),
            Unpacking::Pending(store, pending) => (store, pending),
        };
        // The mount points every run needs are made now: a run of the stored root makes none.
        let held = in_root::open(&root)?;
        for mount_point in ["/dev", "/proc", "/tmp"] {
            in_root::make_mount_point(&held, Path::new(mount_point))?;
        }
        match store.commit(pending, new, Some(deadline)) {
            Ok(entry) => Ok((Root::Stored(entry), ImageCache::Miss, removed)),
            Err((pending, why)) => {
                let detail = removed.map_or(why.clone(), |r| format!("{r}; {why}"));
                Ok((Root::Own { _dir: pending.into_dir(), path: root }, ImageCache::Miss, Some(detail)))
            }
        }
    }
}

/// What the report says of the image that ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImageRun {
    /// The reference as given, pinned by digest.
    pub reference: String,
    pub digest: String,
    /// Where it was read from: `registry`, `podman`, `docker` or `oci:DIR`.
    #[serde(serialize_with = "as_text")]
    pub source: Source,
    /// How it ran: `bubblewrap` or `podman` over the unpacked root filesystem, or `docker`
    /// over that root imported into its daemon.
    pub runtime: RuntimeKind,
    /// The runtime was the first found (`bubblewrap`, else `podman`, else `docker`), not
    /// asked for with `--runtime`.
    pub runtime_detected: bool,
    /// Which fence held the harness and how it reached the relay (`""` before it started).
    #[serde(serialize_with = "fence_or_empty")]
    pub fence: Option<ImageFence>,
    /// The container's name under podman or docker (the last run's, for a lane that runs
    /// the image twice); its pause container is `<name>-pause`, its image `<name>:run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// What removing the runtime's container, image or storage failed on, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub teardown_fault: Option<String>,
    pub working_directory: String,
    pub unpacked_bytes: u64,
    /// Whether the image came from the store (`hit`), was pulled and stored (`miss`), or
    /// the store was not used (`off`).
    pub cache: ImageCache,
    /// Why a stored entry was removed, the image not stored, or the store not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_detail: Option<String>,
    /// With `--build-context`: how the image was built and where it was pushed for this run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub built: Option<Ephemeral>,
}

/// A value as its `Display` writes it.
fn as_text<T: std::fmt::Display, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}

/// The fence as the report says it; `""` for a run that never started its container.
fn fence_or_empty<S: serde::Serializer>(fence: &Option<ImageFence>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(fence.map_or("", ImageFence::describe))
}

impl PreparedImage {
    /// Reads `reference` from `source` (by default its registry: a loopback one by the
    /// probe over plain HTTP, any other by skopeo with TLS verified), tied to its digest,
    /// and checks and unpacks it, all by `deadline` (the run's `--deadline`). Every error
    /// names what failed: the tool and its own message, the blob or entry at fault, or what
    /// the deadline cut off.
    pub fn pull(
        reference: &ImageReference,
        source: &Source,
        runtime: Runtime,
        store: Option<&Store>,
        deadline: Instant,
    ) -> Result<PreparedImage, PullError> {
        let mut removed = None;
        if let Some(store) = store {
            match store.lookup(reference.digest(), Some(deadline)) {
                Lookup::Hit(entry) => return PreparedImage::stored(reference, source, runtime, entry),
                Lookup::Miss(why) => removed = why,
            }
        }
        let pulled_by_probe = match source {
            Source::Registry => reference.is_loopback_registry(),
            Source::Layout(_) => true,
            Source::Podman | Source::Docker => false,
        };
        if !pulled_by_probe {
            Tool::Skopeo.find()?;
        }
        let scratch = TempDir::new("checkfu-image-layout").map_err(|source| PullError::LayoutDirectory { source })?;
        let fetched = source::fetch(source, reference, &scratch.path().join("layout"), deadline)?;
        let image = fetched.image;
        if *image.config.os() != Os::Linux {
            return Err(PullError::NotLinux { reference: reference.to_string(), os: image.config.os().clone() });
        }
        let config = image.config.config().clone().unwrap_or_default();
        // Refused before anything is unpacked or started, naming the limit.
        host_env::check_image_config(config.env().as_deref().unwrap_or_default(), &command_of(&config))?;
        let (unpacking, root) = match store {
            Some(store) => {
                let pending = store.begin()?;
                let root = pending.root();
                (Unpacking::Pending(store, pending), root)
            }
            None => {
                let own = TempDir::new("checkfu-image-rootfs").map_err(|source| PullError::RootDirectory { source })?;
                let root = own.path().to_owned();
                (Unpacking::Own(own), root)
            }
        };
        if Instant::now() >= deadline {
            return Err(PullError::Deadline { reference: reference.to_string() });
        }
        let limits = Limits { deadline: Some(deadline), ..Limits::default() };
        let report = fetched.layout.unpack(&image, &root, limits)?;
        drop(fetched.layout);
        scratch.remove().map_err(|source| PullError::RemoveLayout { source })?;
        // The image's own working directory is made inside its root now, and an image
        // whose `WorkingDir` cannot be is refused before anything runs.
        if let Some(working_dir) = config.working_dir().as_deref().filter(|d| !d.is_empty()) {
            in_root::make_dir(&in_root::open(&root)?, working_dir)?;
        }
        let new = NewEntry { digest: reference.digest(), reference: reference.to_string(), config: &config, unpacked_bytes: report.bytes };
        let (root, cache, cache_detail) = unpacking.settle(root, &new, removed, deadline)?;
        Ok(PreparedImage {
            reference: reference.clone(),
            source: source.clone(),
            config,
            runtime,
            root,
            unpacked_bytes: report.bytes,
            built: None,
            cache,
            cache_detail,
        })
    }

    /// A run of a stored entry: nothing pulled, checked or unpacked.
    fn stored(
        reference: &ImageReference,
        source: &Source,
        runtime: Runtime,
        entry: Box<super::store::Entry>,
    ) -> Result<PreparedImage, PullError> {
        let config = entry.meta.config.clone();
        host_env::check_image_config(config.env().as_deref().unwrap_or_default(), &command_of(&config))?;
        Ok(PreparedImage {
            reference: reference.clone(),
            source: source.clone(),
            config,
            runtime,
            unpacked_bytes: entry.meta.unpacked_bytes,
            root: Root::Stored(entry),
            built: None,
            cache: ImageCache::Hit,
            cache_detail: None,
        })
    }

    /// The command a harness runs by default: the image's `Entrypoint` then its `Cmd`, as a
    /// container runtime runs them.
    pub fn default_command(&self) -> Vec<String> {
        command_of(&self.config)
    }

    /// The working directory: `given`, else the image's `WorkingDir`, else `/`; made inside
    /// the image's root ([`in_root::make_dir`]) and named with every symlink resolved, so
    /// no runtime creates it. `Err` names the path and why it cannot be.
    pub fn working_directory(&self, given: Option<&str>) -> Result<String, InRootError> {
        let wanted = given
            .map(str::to_owned)
            .or_else(|| self.config.working_dir().clone().filter(|d| !d.is_empty()))
            .unwrap_or_else(|| String::from("/"));
        self.root.make_dir(&wanted)
    }

    /// The image's `Env` as variables, each one the probe does not set itself (the probe's
    /// relay URL, key, home and fence variables win over the image's), the `PATH` a
    /// container runtime gives an image that sets none, and `PWD`, the working directory
    /// (none for `/`, where the harness starts in the workspace's own path). The harness
    /// starts from these and the probe's alone: nothing else of the caller's environment
    /// enters the image.
    pub fn env(&self, probe: &[(OsString, OsString)], working_directory: &str) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = self
            .config
            .env()
            .iter()
            .flatten()
            .filter_map(|entry| entry.split_once('='))
            .filter(|(name, _)| !probe.iter().any(|(set, _)| set.as_os_str() == *name))
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect();
        let has_path = |vars: &[(OsString, OsString)]| vars.iter().any(|(name, _)| name == "PATH");
        if !has_path(&env) && !has_path(probe) {
            env.push((OsString::from("PATH"), OsString::from(DEFAULT_PATH)));
        }
        if working_directory != "/" {
            env.push((OsString::from("PWD"), OsString::from(working_directory)));
        }
        env
    }

    /// Prepares one run of `command` (the entrypoint and its arguments, as inside the image)
    /// with its runtime: `workspace` at `working_directory`, each of `shared` (the workspace,
    /// the home, the lane's scratch directory) at its own path, the harness's variables
    /// `env` (the client's environment holds them), the relay at `relay` inside `fence`.
    /// The returned [`RunningContainer`] holds the argv to spawn, and removes what the run leaves
    /// once finished.
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &self,
        command: &[OsString],
        workspace: &Path,
        working_directory: &str,
        shared: &[&Path],
        env: &[(OsString, OsString)],
        relay: std::net::SocketAddr,
        fence: Option<checkfu_wire_sandbox::fence::Join>,
    ) -> Result<RunningContainer, RuntimeError> {
        // Every mount point exists inside the root before the runtime starts, at exactly its
        // path: a runtime then makes none itself from the image's paths.
        for mount_point in [Path::new("/dev"), Path::new("/proc"), Path::new("/tmp")].into_iter().chain(shared.iter().copied()) {
            self.root.make_mount_point(mount_point)?;
        }
        if self.root.make_dir(working_directory)? != working_directory {
            return Err(RuntimeError::WorkingDirectory(working_directory.to_owned()));
        }
        let rootfs = self.root.path();
        let read_only_root = matches!(self.root, Root::Stored(_));
        let spec = RunSpec { command, rootfs: &rootfs, read_only_root, workspace, working_directory, shared, env, relay, fence };
        self.runtime.start(&spec)
    }

    /// What the report says of it; `started` is the run's, for what the runtime said of the
    /// fence and its container.
    pub fn run_report(&self, working_directory: &str, started: Option<&RunningContainer>) -> ImageRun {
        ImageRun {
            reference: self.reference.to_string(),
            digest: self.reference.digest().to_string(),
            source: self.source.clone(),
            runtime: self.runtime.kind,
            runtime_detected: self.runtime.detected,
            fence: started.map(|s| s.fence),
            container: started.and_then(|s| s.container.clone()),
            teardown_fault: None,
            working_directory: working_directory.to_owned(),
            unpacked_bytes: self.unpacked_bytes,
            cache: self.cache,
            cache_detail: self.cache_detail.clone(),
            built: self.built.clone(),
        }
    }
}

/// Where the image of a `--build-context` run came from, for the report: built here, pushed
/// to a registry that lived for this run only, so its reference is never one to register.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ephemeral {
    pub builder: tools::BuilderKind,
    pub context: String,
    /// The reference the run pulled, on the temporary registry (gone now).
    pub pushed: String,
    /// The registry listened on every interface (`--allow-registry-all-interfaces`).
    pub all_interfaces: bool,
}

/// What `--build-context` asks for.
pub struct BuildRequest<'a> {
    pub context: &'a Path,
    pub dockerfile: Option<&'a Path>,
    /// The builder (`--builder`); `None`: the first of buildah, podman and docker found.
    pub builder: Option<tools::BuilderKind>,
    /// The runtime that will run the built image.
    pub runtime: Runtime,
    pub all_interfaces: bool,
    /// The image's name (`--name`), a repository name.
    pub name: &'a str,
}

impl PreparedImage {
    /// Builds the context with a real builder, pushes it to a temporary registry on
    /// 127.0.0.1 (every interface only when asked), pulls back exactly the pushed digest and
    /// unpacks it. The registry, the builder's image and its storage are gone when this
    /// returns, whatever happened; the container keeps only its own root, and how it was
    /// built (`built`). The build, the push, the pull and the unpack end by `deadline` (the
    /// run's).
    pub fn build(request: &BuildRequest<'_>, deadline: Instant) -> Result<PreparedImage, PullError> {
        // Every tool is found before anything is built (the pull from the loopback
        // registry is the probe's own).
        Tool::Registry.find()?;
        let builder = match request.builder {
            Some(kind) => tools::Builder::new(kind),
            None => tools::Builder::detect(),
        }?;
        let builder_kind = builder.kind();
        let tag = format!("localhost/{}:checkfu-probe", request.name);
        let built = tools::build(&builder, request.context, request.dockerfile, &tag, deadline).map_err(PullError::from);
        let pushed = built.and_then(|()| {
            let registry = tools::Registry::start(tools::RegistryOptions { all_interfaces: request.all_interfaces })?;
            let pushed = tools::push(&builder, &tag, &registry, deadline)?;
            // Pulled while the registry lives, then the registry goes.
            // A build context's image is ephemeral: never stored.
            let container = PreparedImage::pull(&pushed, &Source::Registry, request.runtime.clone(), None, deadline);
            registry.stop()?;
            Ok((container?, pushed))
        });
        // The builder's image and storage go whether or not the build got that far.
        let _ = tools::remove_image(&builder, &tag);
        let removed = builder.remove_storage();
        let (mut container, pushed): (PreparedImage, ImageReference) = pushed?;
        removed?;
        container.built = Some(Ephemeral {
            builder: builder_kind,
            context: request.context.display().to_string(),
            pushed: pushed.to_string(),
            all_interfaces: request.all_interfaces,
        });
        Ok(container)
    }
}

/// The lines the text report adds for an image run: which image ran and how (`image   …`).
pub fn text_lines(image: Option<&ImageRun>) -> String {
    let mut out = String::new();
    if let Some(image) = image {
        // The reference holds the digest; the runtime has a line of its own.
        out.push_str(&format!("image    {}, from {}, in {}\n", image.reference, image.source, image.working_directory));
        let how = if image.runtime_detected { "detected" } else { "asked for" };
        let detail = image.cache_detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default();
        out.push_str(&format!("image    store: {}{detail}\n", image.cache.name()));
        out.push_str(&format!(
            "image    runtime {} ({how}); fence: {}\n",
            image.runtime.name(),
            image.fence.map_or("", ImageFence::describe)
        ));
        if let Some(fault) = &image.teardown_fault {
            out.push_str(&format!("image    teardown failed: {fault}\n"));
        }
        if let Some(built) = &image.built {
            let exposed = if built.all_interfaces { ", registry on every interface" } else { "" };
            out.push_str(&format!(
                "image    built by {} from {}, pushed as {}{exposed}\n",
                built.builder.tool().program(),
                built.context,
                built.pushed
            ));
        }
    }
    out
}
