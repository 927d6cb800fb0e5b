//! Hand-made OCI layouts for the image lane's unit tests: tar entries written byte for
//! byte (the hostile ones no real builder emits), a layout on disk, and its unpacking.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::layout::{host_platform, LayoutError, Limits, OciLayout, Selector, UnpackReport};
use super::reference::{digest_of, Digest};

pub const GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
pub const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

/// A tar entry written byte for byte (the `tar` crate's setters refuse `..`, which these
/// tests need to write).
pub fn entry(tar: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, path: &[u8], mode: u32, data: &[u8], link: &[u8]) {
    let mut header = tar::Header::new_gnu();
    header.as_gnu_mut().expect("gnu").name[..path.len()].copy_from_slice(path);
    header.as_gnu_mut().expect("gnu").linkname[..link.len()].copy_from_slice(link);
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_size(data.len() as u64);
    header.set_cksum();
    tar.append(&header, data).expect("append");
}

pub fn file(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32, data: &[u8]) {
    entry(tar, tar::EntryType::Regular, path.as_bytes(), mode, data, b"");
}

pub fn dir(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) {
    entry(tar, tar::EntryType::Directory, path.as_bytes(), mode, b"", b"");
}

pub fn link(tar: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, path: &str, target: &str) {
    entry(tar, kind, path.as_bytes(), 0o777, b"", target.as_bytes());
}

pub fn tar_of(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    build(&mut tar);
    tar.into_inner().expect("tar")
}

pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, bytes).expect("gzip");
    encoder.finish().expect("gzip")
}

/// A layout on disk, and the descriptors it was written with (for tests to break).
pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub rootfs: tempfile::TempDir,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        fs::write(dir.path().join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).expect("oci-layout");
        Fixture { dir, rootfs: tempfile::tempdir().expect("rootfs") }
    }

    pub fn blob(&self, bytes: &[u8]) -> Digest {
        let digest = digest_of(bytes);
        fs::write(self.dir.path().join("blobs/sha256").join(digest.digest()), bytes).expect("blob");
        digest
    }

    /// Writes the config, the manifest (layers as `(tar, media type)`, gzipped when the
    /// type says so) and index.json; returns the manifest's digest.
    pub fn image(&self, layers: &[(Vec<u8>, &str)]) -> Digest {
        let blobs: Vec<_> = layers
            .iter()
            .map(|(tar, media_type)| {
                let blob = if media_type.ends_with("gzip") { gzip(tar) } else { tar.clone() };
                (blob, tar.clone(), *media_type)
            })
            .collect();
        self.image_blobs(&blobs)
    }

    /// [`Fixture::image`] with each layer's blob given as written (`(blob, decompressed
    /// stream, media type)`): a gzip of several members, say.
    pub fn image_blobs(&self, layers: &[(Vec<u8>, Vec<u8>, &str)]) -> Digest {
        let mut descriptors = Vec::new();
        let mut diff_ids = Vec::new();
        for (blob, tar, media_type) in layers {
            let digest = self.blob(blob);
            descriptors.push(serde_json::json!({"mediaType": media_type, "digest": digest.to_string(), "size": blob.len()}));
            diff_ids.push(digest_of(tar).to_string());
        }
        let config = serde_json::json!({
            "architecture": host_platform().1.to_string(), "os": "linux",
            "config": {"Env": ["PATH=/bin", "A=1"], "Entrypoint": ["/bin/tool"], "Cmd": ["--help"], "WorkingDir": "/work", "User": "1000"},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        })
        .to_string();
        let config_digest = self.blob(config.as_bytes());
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest.to_string(), "size": config.len()},
            "layers": descriptors,
        })
        .to_string();
        let digest = self.blob(manifest.as_bytes());
        self.index(&[(&digest, manifest.len(), "application/vnd.oci.image.manifest.v1+json")]);
        digest
    }

    pub fn index(&self, manifests: &[(&Digest, usize, &str)]) {
        let manifests: Vec<_> =
            manifests.iter().map(|(d, size, t)| serde_json::json!({"mediaType": t, "digest": d.to_string(), "size": size})).collect();
        let index = serde_json::json!({"schemaVersion": 2, "manifests": manifests}).to_string();
        fs::write(self.dir.path().join("index.json"), index).expect("index.json");
    }

    pub fn unpack(&self, limits: Limits) -> Result<UnpackReport, LayoutError> {
        let layout = OciLayout::open(self.dir.path())?;
        let image = layout.image(Selector::Only)?;
        layout.unpack(&image, self.rootfs.path(), limits)
    }

    pub fn root(&self, relative: &str) -> PathBuf {
        self.rootfs.path().join(relative)
    }
}

pub fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("metadata").permissions().mode() & 0o7777
}
