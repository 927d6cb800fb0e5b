//! Running an image pinned by digest: pulled by its digest into an OCI layout, unpacked in
//! the crate, and run by bubblewrap over the unpacked root filesystem.
//!
//! bubblewrap is started the way every harness is ([`crate::session::process::Harness`]):
//! in the probe's process group, after joining the probe's loopback-only network namespace.
//! It unshares every other namespace but the network, so the image's process sees only the
//! fence the probe made, and reaches the relay as a local command does. The root is
//! read-only; `/tmp` is a fresh tmpfs; the probe's workspace is mounted read-write at the
//! working directory and, like the fresh home and the lane's scratch files, at its own path
//! too, so every placeholder the probe expanded names the same file inside and out.
//! `--die-with-parent` ends the container with the probe, and both the layout and the root
//! are removed when the [`Container`] drops.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::layout::{ImageConfig, Limits, OciLayout, Selector};
use super::reference::ImageReference;
use super::tools::{self, Tool};
use super::TempDir;

/// Why an image could not be made ready: a tool is missing (a usage error: install it), or
/// the pull, a check or the unpack failed (the run's failure, with the tool's own answer).
#[derive(Debug)]
pub enum PullError {
    Missing(String),
    Failed(String),
}

impl From<String> for PullError {
    fn from(message: String) -> PullError {
        PullError::Failed(message)
    }
}

impl std::fmt::Display for PullError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PullError::Missing(m) | PullError::Failed(m) => f.write_str(m),
        }
    }
}

/// An image ready to run: its unpacked root and its config.
#[derive(Debug)]
pub struct Container {
    pub reference: ImageReference,
    pub config: ImageConfig,
    /// The bubblewrap that runs it.
    bwrap: PathBuf,
    rootfs: TempDir,
    /// Bytes of file content unpacked.
    pub unpacked_bytes: u64,
}

/// What the report says of the image that ran.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImageRun {
    /// The reference as given, pinned by digest.
    pub reference: String,
    pub digest: String,
    /// How it ran: `bubblewrap` over the unpacked root filesystem.
    pub runtime: &'static str,
    pub working_directory: String,
    pub unpacked_bytes: u64,
}

impl Container {
    /// Pulls `reference` by its digest (skopeo; plain HTTP only for a loopback registry),
    /// checks and unpacks it. Every error names what failed: the tool and its own message, or
    /// the blob or entry at fault.
    pub fn pull(reference: &ImageReference) -> Result<Container, PullError> {
        let missing = |e: tools::ToolError| match e {
            tools::ToolError::Missing { .. } => PullError::Missing(e.to_string()),
            other => PullError::Failed(other.to_string()),
        };
        let bwrap = Tool::Bubblewrap.find().map_err(missing)?;
        Tool::Skopeo.find().map_err(missing)?;
        let layout = TempDir::new("checkfu-image-layout").map_err(|e| format!("cannot make the image's layout directory: {e}"))?;
        let dir = layout.path().join("layout");
        tools::pull_to_layout(reference, &dir).map_err(missing)?;
        let oci = OciLayout::open(&dir).map_err(|e| e.to_string())?;
        // skopeo checked the manifest against the digest; the layout holds that one image.
        let image = oci.image(Selector::Only).map_err(|e| e.to_string())?;
        if image.config.os != "linux" {
            return Err(PullError::Failed(format!("{reference}: the image is for `{}`, not linux", image.config.os)));
        }
        let rootfs = TempDir::new("checkfu-image-rootfs").map_err(|e| format!("cannot make the image's root directory: {e}"))?;
        let report = oci.unpack(&image, rootfs.path(), Limits::default()).map_err(|e| e.to_string())?;
        drop(oci);
        layout.remove().map_err(|e| format!("cannot remove the image's layout: {e}"))?;
        Ok(Container { reference: reference.clone(), config: image.config, bwrap, rootfs, unpacked_bytes: report.bytes })
    }

    /// The command a harness runs by default: the image's `Entrypoint` then its `Cmd`, as a
    /// container runtime runs them.
    pub fn default_command(&self) -> Vec<String> {
        self.config.entrypoint.iter().chain(&self.config.cmd).cloned().collect()
    }

    /// The working directory: `given`, else the image's `WorkingDir`, else `/`.
    pub fn working_directory(&self, given: Option<&str>) -> String {
        given.map(str::to_owned).or_else(|| self.config.working_dir.clone().filter(|d| !d.is_empty())).unwrap_or_else(|| String::from("/"))
    }

    /// The image's `Env` as variables, each one the probe does not set itself (the probe's
    /// relay URL, key, home and fence variables win over the image's).
    pub fn env(&self, probe: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
        self.config
            .env
            .iter()
            .filter_map(|entry| entry.split_once('='))
            .filter(|(name, _)| !probe.iter().any(|(set, _)| set.as_os_str() == *name))
            .map(|(name, value)| (OsString::from(name), OsString::from(value)))
            .collect()
    }

    /// The argv that runs `command` (the entrypoint and its arguments, as inside the image)
    /// in the container: bubblewrap's, with `workspace` at `working_directory` and each of
    /// `shared` (the workspace, the home, the lane's scratch directory) at its own path.
    pub fn argv(&self, command: &[OsString], workspace: &Path, working_directory: &str, shared: &[&Path]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = vec![self.bwrap.clone().into_os_string()];
        let mut flag = |items: &[&dyn AsRef<std::ffi::OsStr>]| argv.extend(items.iter().map(|i| i.as_ref().to_owned()));
        flag(&[&"--die-with-parent", &"--new-session"]);
        // Every namespace but the network one, which is the probe's fence.
        flag(&[&"--unshare-user-try", &"--unshare-ipc", &"--unshare-pid", &"--unshare-uts", &"--unshare-cgroup-try"]);
        // The root is bound writable only until the mount points are made (an image need not
        // hold its working directory), then made read-only; it is this run's own copy.
        flag(&[&"--bind", &self.rootfs.path(), &"/"]);
        flag(&[&"--dev", &"/dev", &"--proc", &"/proc", &"--tmpfs", &"/tmp"]);
        for dir in shared {
            flag(&[&"--bind", dir, dir]);
        }
        if working_directory == "/" {
            // No working directory to mount it at: the harness starts in the workspace itself.
            flag(&[&"--remount-ro", &"/", &"--chdir", &workspace]);
        } else {
            flag(&[&"--bind", &workspace, &working_directory, &"--remount-ro", &"/", &"--chdir", &working_directory]);
        }
        flag(&[&"--"]);
        argv.extend(command.iter().cloned());
        argv
    }

    /// What the report says of it.
    pub fn run_report(&self, working_directory: &str) -> ImageRun {
        ImageRun {
            reference: self.reference.to_string(),
            digest: self.reference.digest().to_string(),
            runtime: "bubblewrap",
            working_directory: working_directory.to_owned(),
            unpacked_bytes: self.unpacked_bytes,
        }
    }
}
