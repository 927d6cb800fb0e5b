//! Where an `--image` comes from: its registry (the default), the containers storage that
//! podman and buildah keep on this machine, the docker daemon's storage, or an OCI layout
//! directory. Every source ends the same way: one image in an OCI layout, tied to the
//! reference's digest, which the probe's `image::run` checks blob by blob and unpacks.
//!
//! How each source is tied to the digest:
//! - a loopback registry: the probe's own client ([`super::distribution`]) fetches the
//!   manifest `D` and checks it and every blob as it streams;
//! - a remote registry and containers storage: skopeo resolves `NAME@sha256:D` and checks
//!   the manifest it copies against `D` (a digest the source does not hold is refused with
//!   the tool's answer);
//! - an OCI layout: the crate finds the manifest whose digest is `D` (in `index.json` or
//!   among the blobs) and checks every blob itself;
//! - docker: the daemon keeps no manifest, only the digests it pulled or pushed an image
//!   by (`RepoDigests`). The daemon names the image it holds under `NAME@sha256:D`;
//!   skopeo exports exactly that image (by its ID), and the export must hold the layers
//!   (`rootfs.diff_ids`) and the command the daemon reports for it, each layer then checked
//!   against its diff ID as it is unpacked.

use checkfu_wire_sandbox::budget::Budget;
use std::fmt;
use std::path::{Path, PathBuf};

use super::layout::{Image, OciLayout, Selector};
use super::reference::{sha256_digest, Digest, ImageReference};
use super::tools::{self, ToolError};

/// Where `--image` is read from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// The registry the reference names (plain HTTP only for a loopback one).
    #[default]
    Registry,
    /// The containers storage podman and buildah use on this machine (the user's own).
    Podman,
    /// The docker daemon's storage (`DOCKER_HOST`, else the default socket).
    Docker,
    /// An OCI image layout directory.
    Layout(PathBuf),
}

impl Source {
    /// `registry`, `podman`, `docker` or `oci:DIR`.
    pub fn parse(text: &str) -> Result<Source, SourceError> {
        match text {
            "registry" => Ok(Source::Registry),
            "podman" | "containers-storage" => Ok(Source::Podman),
            "docker" => Ok(Source::Docker),
            _ => match text.strip_prefix("oci:") {
                Some("") => Err(SourceError::NoLayoutDirectory),
                Some(dir) => Ok(Source::Layout(PathBuf::from(dir))),
                None => Err(SourceError::Unknown(text.to_owned())),
            },
        }
    }

    /// The word the report uses.
    pub fn name(&self) -> &'static str {
        match self {
            Source::Registry => "registry",
            Source::Podman => "podman",
            Source::Docker => "docker",
            Source::Layout(_) => "oci-layout",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Layout(dir) => write!(f, "oci:{}", dir.display()),
            other => f.write_str(other.name()),
        }
    }
}

/// Why a source was not understood (`--image-source`), or the image could not be read
/// from it.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("`oci:` needs the layout's directory: oci:DIR")]
    NoLayoutDirectory,
    #[error("`{0}` is not an image source: registry, podman, docker or oci:DIR")]
    Unknown(String),
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// The source answered, and what it holds is not the image asked for, or is unreadable.
    #[error("{0}")]
    Refused(String),
}

/// The image found, checked against the reference, in a layout that is either the one the
/// user gave (read only) or `scratch`, which the caller removes.
pub struct Fetched {
    pub layout: OciLayout,
    pub image: Image,
}

/// Reads `reference` from `source` into an OCI layout (a copy under `scratch` for the
/// tools' sources; the given directory itself for a layout) and resolves its image. The
/// copy ends by `budget` (the run's: its deadline, its cancellation), its tool killed then.
pub fn fetch(source: &Source, reference: &ImageReference, scratch: &Path, budget: &Budget) -> Result<Fetched, SourceError> {
    let refused = |e: super::layout::LayoutError| SourceError::Refused(e.to_string());
    match source {
        Source::Registry => {
            tools::pull_to_layout(reference, scratch, budget)?;
            only(scratch)
        }
        Source::Podman => {
            let name = format!("containers-storage:{}", reference.pull_name());
            tools::copy_to_layout(&name, scratch, tools::Copy { user_storage: true, ..tools::Copy::default() }, budget)?;
            only(scratch)
        }
        Source::Docker => docker(reference, scratch, budget),
        Source::Layout(dir) => {
            let layout = OciLayout::open(dir).map_err(|e| SourceError::Refused(format!("oci:{}: {e}", dir.display())))?;
            let image = layout.image(Selector::Digest(reference.digest())).map_err(refused)?;
            Ok(Fetched { layout, image })
        }
    }
}

/// The one image a fresh copy holds (skopeo has checked it against the digest).
fn only(dir: &Path) -> Result<Fetched, SourceError> {
    let layout = OciLayout::open(dir).map_err(|e| SourceError::Refused(e.to_string()))?;
    let image = layout.image(Selector::Only).map_err(|e| SourceError::Refused(e.to_string()))?;
    Ok(Fetched { layout, image })
}

/// What `docker image inspect` says of an image, the members this needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspected {
    id: String,
    #[serde(default)]
    repo_digests: Vec<String>,
    #[serde(default)]
    config: Option<InspectedConfig>,
    #[serde(default)]
    root_f_s: Option<InspectedRoot>,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct InspectedConfig {
    #[serde(default)]
    entrypoint: Option<Vec<String>>,
    #[serde(default)]
    cmd: Option<Vec<String>>,
    #[serde(default)]
    env: Option<Vec<String>>,
    #[serde(default)]
    working_dir: Option<String>,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedRoot {
    #[serde(default)]
    layers: Vec<String>,
}

fn docker(reference: &ImageReference, scratch: &Path, budget: &Budget) -> Result<Fetched, SourceError> {
    let asked = reference.pull_name();
    let answer = tools::docker_inspect(&asked, budget)?;
    let inspected: Vec<Inspected> = serde_json::from_slice(&answer)
        .map_err(|e| SourceError::Refused(format!("docker image inspect {asked}: not the answer expected: {e}")))?;
    let [inspected] = <[Inspected; 1]>::try_from(inspected)
        .map_err(|all| SourceError::Refused(format!("docker image inspect {asked}: {} images, not one", all.len())))?;
    // The daemon resolves `NAME@sha256:D` only through the digests it pulled or pushed the
    // image by; said again here so a daemon that matched loosely is not believed.
    let digest = reference.digest().to_string();
    if !inspected.repo_digests.iter().any(|d| d.rsplit_once('@').is_some_and(|(_, held)| held == digest)) {
        return Err(SourceError::Refused(format!(
            "the docker daemon holds no image pulled or pushed as {asked} (its digests: {}); an image built locally has a \
             digest only once pushed",
            if inspected.repo_digests.is_empty() { String::from("none") } else { inspected.repo_digests.join(", ") }
        )));
    }
    let id = sha256_digest(&inspected.id).map_err(|e| SourceError::Refused(format!("docker's image ID `{}`: {e}", inspected.id)))?;
    let how = tools::Copy { daemon_host: std::env::var("DOCKER_HOST").ok(), ..tools::Copy::default() };
    tools::copy_to_layout(&format!("docker-daemon:{id}"), scratch, how, budget)?;
    let fetched = only(scratch)?;
    // The export must be the image the daemon described: the same layers in order (each is
    // checked against its diff ID when unpacked) and the same command and environment.
    let layers: Vec<String> = fetched.image.diff_ids().iter().map(Digest::to_string).collect();
    let expected = inspected.root_f_s.map(|r| r.layers).unwrap_or_default();
    if layers != expected {
        return Err(SourceError::Refused(format!(
            "docker exported {asked} with layers {layers:?}, but the daemon lists {expected:?} for it"
        )));
    }
    let config = inspected.config.unwrap_or_default();
    let ours = fetched.image.config.config().clone().unwrap_or_default();
    let same = ours.entrypoint().clone().unwrap_or_default() == config.entrypoint.unwrap_or_default()
        && ours.cmd().clone().unwrap_or_default() == config.cmd.unwrap_or_default()
        && ours.env().clone().unwrap_or_default() == config.env.unwrap_or_default()
        && ours.working_dir().clone().unwrap_or_default() == config.working_dir.unwrap_or_default();
    if !same {
        return Err(SourceError::Refused(format!("docker exported {asked} with a config other than the one the daemon reports")));
    }
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_parsed_and_refused_by_name() {
        assert_eq!(Source::parse("registry").ok(), Some(Source::Registry));
        assert_eq!(Source::parse("podman").ok(), Some(Source::Podman));
        assert_eq!(Source::parse("docker").ok(), Some(Source::Docker));
        assert_eq!(Source::parse("oci:/tmp/x").ok(), Some(Source::Layout(PathBuf::from("/tmp/x"))));
        assert!(Source::parse("oci:").unwrap_err().to_string().contains("oci:DIR"));
        assert!(Source::parse("quay").unwrap_err().to_string().contains("registry, podman, docker or oci:DIR"));
        assert_eq!(Source::parse("oci:/tmp/x").map(|s| s.to_string()).ok(), Some(String::from("oci:/tmp/x")));
    }
}
