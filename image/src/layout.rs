//! An OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`) read and unpacked in
//! the crate: the manifest selected by digest (through an image index to this machine's
//! platform), every blob checked against its digest and declared size before it is used,
//! the config read, and the layers applied in order into a root filesystem with file and
//! opaque-directory whiteouts.
//!
//! The image is untrusted. A blob is used only if it is a regular file of its declared size
//! (a FIFO, a device or a symlink is refused before a byte is read); every layer is checked
//! before the first is applied, one open file at a time, and checked again as it is applied.
//! The entries are placed by [`super::unpack`], confined by the kernel; total bytes,
//! entries and path lengths are capped ([`Limits`]); an error names the blob or the entry at
//! fault and is at most [`MAX_ERROR_BYTES`] long.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use oci_spec::image::{Arch, Descriptor, ImageConfiguration, ImageIndex, ImageManifest, MediaType, Os, ToDockerV2S2};
use sha2::Digest as _;

use super::reference::{digest_from_sha256, digest_of, is_sha256, sha256_digest, Digest};
pub use super::tarentry::MAX_METADATA_BYTES;
use super::tarstream::Capped;
pub use super::unpack::EntryProblem;
use super::unpack::Unpacker;
use checkfu_wire_sandbox::budget::Budget;
use checkfu_wire_sandbox::dir::Dir;

/// The most bytes of file content an image may unpack to, over all its layers: larger
/// than any harness image we expect (a 100 MB node image unpacks to about 300 MB), small
/// enough that a decompression bomb stops long before it fills a disk.
pub const MAX_UNPACKED_BYTES: u64 = 4 << 30;
/// The most tar entries over all layers: a full Debian root with node is about 30,000.
pub const MAX_ENTRIES: u64 = 1_000_000;
/// The longest entry path or link target, in bytes: Linux's `PATH_MAX`.
pub const MAX_PATH_BYTES: usize = 4096;
/// The largest JSON blob (manifest, index, config) and `index.json`: real ones are a few
/// KiB; this one is read into memory, so it is capped well below anything harmful.
pub const MAX_JSON_BYTES: u64 = 4 << 20;
/// Tar framing per entry beyond its content (a 512-byte header, padding up to 511 bytes, a
/// pax or long-name record): what the decompressed stream may add to the content cap.
const FRAMING_PER_ENTRY: u64 = 2048;
/// Image indexes nested in indexes: one level is usual, more is suspicious.
const MAX_INDEX_DEPTH: usize = 4;
/// The longest error the image lane prints: long enough to name a blob and an entry, short
/// enough that a hostile image cannot flood a terminal or a report.
pub const MAX_ERROR_BYTES: usize = 1024;
/// Platforms an error lists when an image index has none for this machine.
const SHOWN_PLATFORMS: usize = 8;

/// Caps on what one unpack may do; exceeding one is an error, never a hang or an OOM.
#[derive(Clone, Debug)]
pub struct Limits {
    /// File content written, over all layers (the decompressed streams may add
    /// [`FRAMING_PER_ENTRY`] per entry allowed on top, for tar's own framing).
    pub max_unpacked_bytes: u64,
    pub max_entries: u64,
    pub max_path_bytes: usize,
    /// The run's budget (`--deadline`, and its cancellation by a signal): checking and
    /// unpacking stop at either, with an error naming the layer, so a large image cannot
    /// hold a run past them.
    pub budget: Option<Budget>,
}

impl Limits {
    /// Why the work must stop now, if it must: the deadline passed or a signal came.
    pub(super) fn stop_reason(&self) -> Option<String> {
        let budget = self.budget.as_ref()?;
        if let Some(why) = budget.cancelled() {
            return Some(format!("interrupted by {}", checkfu_wire_sandbox::budget::describe(why)));
        }
        budget.expired().then(|| String::from("the run's deadline (--deadline) passed"))
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_unpacked_bytes: MAX_UNPACKED_BYTES, max_entries: MAX_ENTRIES, max_path_bytes: MAX_PATH_BYTES, budget: None }
    }
}

/// Which manifest of the layout to use.
#[derive(Clone, Copy, Debug)]
pub enum Selector<'a> {
    /// The manifest (or image index) with this digest: listed in `index.json`, or a blob of
    /// the layout.
    Digest(&'a Digest),
    /// The only manifest `index.json` lists (what `skopeo copy …@sha256:D oci:DIR` into a
    /// fresh directory leaves; skopeo has checked the manifest against D).
    Only,
}

/// A manifest resolved to its config and layers, every one of them checked.
#[derive(Clone, Debug)]
pub struct Image {
    /// The manifest's own digest (the platform's manifest when an index was followed).
    pub manifest_digest: Digest,
    pub config_digest: Digest,
    /// The image's config (its `os` is checked by the caller, which knows what runs it).
    pub config: ImageConfiguration,
    layers: Vec<Layer>,
    /// The config's `rootfs.diff_ids`: each layer's decompressed digest.
    diff_ids: Vec<Digest>,
}

impl Image {
    /// The config's `rootfs.diff_ids`, bottom first: what each layer decompresses to.
    pub fn diff_ids(&self) -> &[Digest] {
        &self.diff_ids
    }

    /// The layers' digests, bottom first.
    pub fn layer_digests(&self) -> impl Iterator<Item = &Digest> {
        self.layers.iter().map(|l| &l.digest)
    }
}

#[derive(Clone, Debug)]
struct Layer {
    digest: Digest,
    size: u64,
    gzip: bool,
}

/// What an unpack did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnpackReport {
    pub layers: usize,
    pub entries: u64,
    pub files: u64,
    pub directories: u64,
    pub symlinks: u64,
    pub hard_links: u64,
    /// `.wh.NAME` entries applied.
    pub whiteouts: u64,
    /// `.wh..wh..opq` entries applied.
    pub opaque_directories: u64,
    /// Names the opaque markers' walks looked at: at most about one per entry placed and
    /// one per entry a marker removed, however the markers nest or repeat.
    pub opaque_visits: u64,
    /// Device nodes and fifos, which an unprivileged sandbox cannot create: skipped.
    pub skipped_special: u64,
    /// File content written.
    pub bytes: u64,
}

/// Why a layout could not be read or unpacked. Every message is at most
/// [`MAX_ERROR_BYTES`] long, cut where it must be: a hostile image names its own blobs and entries.
#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    /// The layout's own files (`oci-layout`, `index.json`) or the file system.
    #[error("{}", bounded(format!("{context}: {source}")))]
    Io { context: String, source: io::Error },
    /// The layout is not a usable OCI layout, or does not hold what was asked.
    #[error("{}", bounded(.0.clone()))]
    Layout(String),
    /// A blob that is missing, of the wrong size or digest, malformed or unsupported.
    #[error("{}", bounded(format!("blob {digest}: {problem}")))]
    Blob { digest: String, problem: String },
    /// A layer entry that was refused.
    #[error("{}", bounded(format!("layer {layer}, entry `{path}`: {problem}")))]
    Entry { layer: Digest, path: String, problem: Box<EntryProblem> },
    /// A layer that is not a readable tar stream, or breaks a [`Limits`] cap.
    #[error("{}", bounded(format!("layer {layer}: {problem}")))]
    Layer { layer: Digest, problem: String },
}

/// `text` cut to [`MAX_ERROR_BYTES`] at a character boundary, marked where it was cut.
fn bounded(mut text: String) -> String {
    if text.len() <= MAX_ERROR_BYTES {
        return text;
    }
    let mut end = MAX_ERROR_BYTES - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
    text
}

fn io_error(context: impl Into<String>) -> impl FnOnce(io::Error) -> LayoutError {
    let context = context.into();
    move |source| LayoutError::Io { context, source }
}

fn blob_error(digest: &impl fmt::Display, problem: impl Into<String>) -> LayoutError {
    LayoutError::Blob { digest: digest.to_string(), problem: problem.into() }
}

/// An opened OCI image layout.
#[derive(Debug)]
pub struct OciLayout {
    dir: PathBuf,
    index: ImageIndex,
}

impl OciLayout {
    /// Reads `DIR/oci-layout` and `DIR/index.json`.
    pub fn open(dir: &Path) -> Result<OciLayout, LayoutError> {
        let marker = read_capped(&dir.join("oci-layout"), 4096)?;
        let version = serde_json::from_slice::<serde_json::Value>(&marker)
            .ok()
            .and_then(|v| v.get("imageLayoutVersion").and_then(|v| v.as_str()).map(str::to_owned));
        if version.as_deref() != Some("1.0.0") {
            return Err(LayoutError::Layout(format!(
                "{}/oci-layout does not declare imageLayoutVersion 1.0.0: not an OCI image layout",
                dir.display()
            )));
        }
        let index = read_capped(&dir.join("index.json"), MAX_JSON_BYTES)?;
        let index = ImageIndex::from_reader(&index[..])
            .map_err(|e| LayoutError::Layout(format!("{}/index.json is not an image index: {e}", dir.display())))?;
        Ok(OciLayout { dir: dir.to_owned(), index })
    }

    /// The image `selector` names, resolved through image indexes to this machine's
    /// platform, with its manifest and config checked and its layers' media types known.
    pub fn image(&self, selector: Selector<'_>) -> Result<Image, LayoutError> {
        let (digest, size) = match selector {
            Selector::Only => match self.index.manifests().as_slice() {
                [only] => (descriptor_digest(only)?, Some(only.size())),
                [] => return Err(LayoutError::Layout(format!("{}/index.json lists no manifest", self.dir.display()))),
                many => {
                    return Err(LayoutError::Layout(format!(
                        "{}/index.json lists {} manifests: name one by digest",
                        self.dir.display(),
                        many.len()
                    )))
                }
            },
            Selector::Digest(wanted) => {
                let listed = self.index.manifests().iter().find(|d| d.digest() == wanted);
                (wanted.clone(), listed.map(|d| d.size()))
            }
        };
        self.resolve(&digest, size, 0)
    }

    /// The image `digest` names: a manifest, or an image index followed to this machine's
    /// platform. The blob is read once and parsed once: its JSON is read into a value, and
    /// that value, not the bytes again, becomes oci-spec's index or manifest.
    fn resolve(&self, digest: &Digest, size: Option<u64>, depth: usize) -> Result<Image, LayoutError> {
        let bytes = self.read_json_blob(digest, size)?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| blob_error(digest, format!("not JSON: {e}")))?;
        drop(bytes);
        if value.get("manifests").is_some() {
            if depth >= MAX_INDEX_DEPTH {
                return Err(blob_error(digest, format!("image indexes nested deeper than {MAX_INDEX_DEPTH}")));
            }
            let index: ImageIndex = serde_json::from_value(value).map_err(|e| blob_error(digest, format!("not an image index: {e}")))?;
            let chosen = platform_manifest(&index, digest)?;
            return self.resolve(&descriptor_digest(chosen)?, Some(chosen.size()), depth + 1);
        }
        if value.get("layers").is_none() {
            return Err(blob_error(digest, "neither an image manifest nor an image index"));
        }
        let manifest: ImageManifest =
            serde_json::from_value(value).map_err(|e| blob_error(digest, format!("not an image manifest: {e}")))?;
        self.image_of(digest, &manifest)
    }

    /// The config and layers `manifest` lists, checked.
    fn image_of(&self, digest: &Digest, manifest: &ImageManifest) -> Result<Image, LayoutError> {
        let config_digest = descriptor_digest(manifest.config())?;
        let config_type = manifest.config().media_type();
        if !is_image_config(config_type) {
            return Err(blob_error(&config_digest, format!("the manifest's config has media type {config_type}, not an image config")));
        }
        let config_bytes = self.read_json_blob(&config_digest, Some(manifest.config().size()))?;
        let config: ImageConfiguration =
            serde_json::from_slice(&config_bytes).map_err(|e| blob_error(&config_digest, format!("not an image config: {e}")))?;
        let layers = manifest.layers().iter().map(layer_of).collect::<Result<Vec<_>, _>>()?;
        let diff_ids = config
            .rootfs()
            .diff_ids()
            .iter()
            .map(|d| sha256_digest(d).map_err(|e| blob_error(&config_digest, format!("diff_id {d}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if diff_ids.len() != layers.len() {
            return Err(blob_error(
                &config_digest,
                format!("the config lists {} diff_ids for the manifest's {} layers", diff_ids.len(), layers.len()),
            ));
        }
        Ok(Image { manifest_digest: digest.clone(), config_digest, config, layers, diff_ids })
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        // Only a sha256 digest is opened ([`OciLayout::open_blob`]), whose value oci-spec
        // has checked to be 64 lowercase hex digits: a plain file name.
        self.dir.join("blobs").join("sha256").join(digest.digest())
    }

    /// A JSON blob, read whole (at most [`MAX_JSON_BYTES`]) and checked against its digest
    /// and, when a descriptor declared it, its size.
    fn read_json_blob(&self, digest: &Digest, size: Option<u64>) -> Result<Vec<u8>, LayoutError> {
        if let Some(size) = size.filter(|&s| s > MAX_JSON_BYTES) {
            return Err(blob_error(digest, format!("declared size {size} is over the {MAX_JSON_BYTES}-byte cap for a JSON blob")));
        }
        let (file, _) = self.open_blob(digest, size)?;
        let mut bytes = Vec::new();
        file.take(size.unwrap_or(MAX_JSON_BYTES) + 1).read_to_end(&mut bytes).map_err(|e| blob_error(digest, format!("reading: {e}")))?;
        match size {
            Some(size) if bytes.len() as u64 != size => {
                return Err(blob_error(digest, format!("declared size {size}, but the blob holds {}", size_text(bytes.len() as u64, size))))
            }
            None if bytes.len() as u64 > MAX_JSON_BYTES => {
                return Err(blob_error(digest, format!("over the {MAX_JSON_BYTES}-byte cap for a JSON blob")))
            }
            _ => {}
        }
        let actual = digest_of(&bytes);
        if &actual != digest {
            return Err(blob_error(digest, format!("content does not match its digest (it hashes to {actual})")));
        }
        Ok(bytes)
    }

    /// Opens a blob, which must be a regular file of `size` bytes when a descriptor declared
    /// one (of at most [`MAX_JSON_BYTES`] otherwise): with `O_NOFOLLOW`, so a symlink (to
    /// `/dev/zero`, say) is refused, and `O_NONBLOCK`, so opening a FIFO does not wait for a
    /// writer; `fstat` then says what it is before one byte is read. Returns the file's
    /// identity (device and inode) with it.
    fn open_blob(&self, digest: &Digest, size: Option<u64>) -> Result<(File, (u64, u64)), LayoutError> {
        if !is_sha256(digest) {
            return Err(blob_error(digest, "not a sha256 digest: an OCI layout here holds sha256 blobs only"));
        }
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(self.blob_path(digest))
            .map_err(|e| match (e.kind(), e.raw_os_error()) {
                (io::ErrorKind::NotFound, _) => blob_error(digest, format!("missing from {}/blobs/sha256", self.dir.display())),
                (_, Some(libc::ELOOP)) => blob_error(digest, "a symbolic link, not a regular file: refused"),
                _ => blob_error(digest, format!("opening: {e}")),
            })?;
        let metadata = file.metadata().map_err(|e| blob_error(digest, format!("reading its metadata: {e}")))?;
        let file_type = metadata.file_type();
        if !file_type.is_file() {
            use std::os::unix::fs::FileTypeExt;
            let what = if file_type.is_fifo() {
                "a FIFO"
            } else if file_type.is_char_device() || file_type.is_block_device() {
                "a device"
            } else if file_type.is_dir() {
                "a directory"
            } else {
                "a socket or other special file"
            };
            return Err(blob_error(digest, format!("{what}, not a regular file: refused")));
        }
        match size {
            Some(size) if metadata.len() != size => {
                return Err(blob_error(digest, format!("declared size {size}, but the blob holds {}", size_text(metadata.len(), size))))
            }
            None if metadata.len() > MAX_JSON_BYTES => {
                return Err(blob_error(digest, format!("over the {MAX_JSON_BYTES}-byte cap for a JSON blob")))
            }
            _ => {}
        }
        Ok((file, (metadata.dev(), metadata.ino())))
    }

    /// Streams a layer blob through sha256 and checks its digest and size, before anything
    /// of it is applied; the file is closed again (an image may have thousands of layers)
    /// and its identity returned, for [`OciLayout::unpack`] to reopen the same file.
    fn verify_layer(&self, layer: &Layer, limits: &Limits) -> Result<(u64, u64), LayoutError> {
        let (file, identity) = self.open_blob(&layer.digest, Some(layer.size))?;
        let mut hashed = Hashed::new(file.take(layer.size.saturating_add(1)));
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match hashed.read(&mut buffer) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(blob_error(&layer.digest, format!("reading: {e}"))),
            }
            if let Some(reason) = limits.stop_reason() {
                return Err(blob_error(&layer.digest, format!("{reason} while checking it, at {} of {} bytes", hashed.total, layer.size)));
            }
        }
        hashed.check(layer)?;
        Ok(identity)
    }

    /// Applies `image`'s layers in order into `rootfs` (an existing directory, normally
    /// empty). Every layer blob is checked before the first is applied, and is hashed again
    /// as it is applied; each layer's decompressed stream is checked against the config's
    /// diff_id. Ownership is not kept (the sandbox runs unprivileged); permission bits are,
    /// except setuid and setgid.
    pub fn unpack(&self, image: &Image, rootfs: &Path, limits: Limits) -> Result<UnpackReport, LayoutError> {
        let context = || format!("the root filesystem {}", rootfs.display());
        let root = rootfs.canonicalize().and_then(|root| Dir::open(&root)).map_err(io_error(context()))?;
        // One layer file open at a time: 5,000 layers must not need 5,000 descriptors.
        let mut identities = Vec::with_capacity(image.layers.len());
        for layer in &image.layers {
            identities.push(self.verify_layer(layer, &limits)?);
        }
        let stream_cap = limits.max_unpacked_bytes.saturating_add(limits.max_entries.saturating_mul(FRAMING_PER_ENTRY));
        let mut unpacker = Unpacker::new(root, limits);
        for ((layer, identity), diff_id) in image.layers.iter().zip(identities).zip(&image.diff_ids) {
            let (file, reopened) = self.open_blob(&layer.digest, Some(layer.size))?;
            if reopened != identity {
                return Err(blob_error(&layer.digest, "replaced after it was checked"));
            }
            let mut raw = Hashed::new(file.take(layer.size.saturating_add(1)));
            self.apply(&mut unpacker, &mut raw, layer, diff_id, stream_cap)?;
            // The compressed blob's digest over what was applied: the file may have been
            // rewritten in place since it was checked. What the decompressor left unread
            // (gzip's trailer, padding) is hashed too.
            io::copy(&mut raw, &mut io::sink()).map_err(|e| blob_error(&layer.digest, format!("reading: {e}")))?;
            if raw.check(layer).is_err() {
                return Err(blob_error(&layer.digest, "changed while it was applied: it no longer matches its digest and size"));
            }
            unpacker.report.layers += 1;
        }
        unpacker.finish()
    }

    /// One layer's decompressed stream, applied and checked against its diff_id.
    fn apply(
        &self,
        unpacker: &mut Unpacker,
        raw: &mut dyn Read,
        layer: &Layer,
        diff_id: &Digest,
        stream_cap: u64,
    ) -> Result<(), LayoutError> {
        let decompressed: Box<dyn Read + '_> = if layer.gzip { Box::new(flate2::read::MultiGzDecoder::new(raw)) } else { Box::new(raw) };
        let mut stream = Capped::new(decompressed, stream_cap - unpacker.streamed);
        let applied = unpacker.apply_layer(&mut stream, &layer.digest);
        // Past the tar's end-of-archive block the stream may hold padding: read it out
        // (bounded by the cap) so that the diff_id covers the whole stream, and refuse
        // anything but zeros, which other tar readers would read on into.
        let drained = applied.and_then(|()| {
            super::tarentry::drain_padding(&mut stream)
                .map_err(|e| LayoutError::Layer { layer: layer.digest.clone(), problem: e.to_string() })
        });
        if stream.exceeded {
            return Err(LayoutError::Layer {
                layer: layer.digest.clone(),
                problem: format!("the decompressed layers exceed {stream_cap} bytes (content cap plus tar framing)"),
            });
        }
        drained?;
        unpacker.streamed += stream.read;
        let actual = digest_from_sha256(std::mem::take(&mut stream.hasher).finalize().into());
        if &actual != diff_id {
            return Err(LayoutError::Layer {
                layer: layer.digest.clone(),
                problem: format!("its decompressed content hashes to {actual}, but the config's diff_id is {diff_id}"),
            });
        }
        Ok(())
    }
}

/// A blob's bytes as they are read, hashed and counted.
struct Hashed<R> {
    inner: R,
    hasher: sha2::Sha256,
    total: u64,
}

impl<R: Read> Hashed<R> {
    fn new(inner: R) -> Hashed<R> {
        Hashed { inner, hasher: sha2::Sha256::new(), total: 0 }
    }

    /// Whether what was read is the layer's declared size and digest.
    fn check(self, layer: &Layer) -> Result<(), LayoutError> {
        if self.total != layer.size {
            return Err(blob_error(
                &layer.digest,
                format!("declared size {}, but the blob holds {}", layer.size, size_text(self.total, layer.size)),
            ));
        }
        let actual = digest_from_sha256(self.hasher.finalize().into());
        if actual != layer.digest {
            return Err(blob_error(&layer.digest, format!("content does not match its digest (it hashes to {actual})")));
        }
        Ok(())
    }
}

impl<R: Read> Read for Hashed<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.total += n as u64;
        Ok(n)
    }
}

fn size_text(actual: u64, declared: u64) -> String {
    if actual > declared {
        "more".to_owned()
    } else {
        format!("{actual} bytes")
    }
}

/// Reads a layout file (not a blob) of at most `cap` bytes.
fn read_capped(path: &Path, cap: u64) -> Result<Vec<u8>, LayoutError> {
    let file = File::open(path).map_err(io_error(format!("reading {}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes).map_err(io_error(format!("reading {}", path.display())))?;
    if bytes.len() as u64 > cap {
        return Err(LayoutError::Layout(format!("{} is over {cap} bytes", path.display())));
    }
    Ok(bytes)
}

fn descriptor_digest(descriptor: &Descriptor) -> Result<Digest, LayoutError> {
    let text = descriptor.digest().to_string();
    sha256_digest(&text).map_err(|e| blob_error(&text, e.to_string()))
}

/// The platform this machine runs: linux on its own architecture, as the image spec names
/// it (Go's `GOARCH`, which oci-spec's default `Arch` follows).
pub(super) fn host_platform() -> (Os, Arch) {
    (Os::Linux, Arch::default())
}

/// The manifest `index` lists for [`host_platform`]; the error names the platforms it has
/// (at most [`SHOWN_PLATFORMS`], so that a hostile index cannot make it long).
fn platform_manifest<'a>(index: &'a ImageIndex, digest: &Digest) -> Result<&'a Descriptor, LayoutError> {
    let (os, architecture) = host_platform();
    let chosen =
        index.manifests().iter().find(|m| m.platform().as_ref().is_some_and(|p| *p.os() == os && *p.architecture() == architecture));
    chosen.ok_or_else(|| {
        let platforms = index.manifests().iter().filter_map(|m| m.platform().as_ref());
        let count = platforms.clone().count();
        let mut available: Vec<String> = platforms.take(SHOWN_PLATFORMS).map(|p| format!("{}/{}", p.os(), p.architecture())).collect();
        if count > SHOWN_PLATFORMS {
            available.push(format!("and {} more", count - SHOWN_PLATFORMS));
        }
        blob_error(digest, format!("the image index has no {os}/{architecture} manifest (it has: {})", available.join(", ")))
    })
}

/// Whether a config descriptor's media type is an image config: OCI's, or Docker's (which
/// oci-spec reads as `Other` and names with `to_docker_v2s2`).
fn is_image_config(media_type: &MediaType) -> bool {
    match media_type {
        MediaType::ImageConfig => true,
        MediaType::Other(other) => MediaType::ImageConfig.to_docker_v2s2().is_ok_and(|docker| docker == other),
        _ => false,
    }
}

/// Docker's uncompressed and foreign gzip layer types, which oci-spec has no name for
/// (its `to_docker_v2s2` names only Docker's gzip layer).
const DOCKER_TAR_LAYER: &str = "application/vnd.docker.image.rootfs.diff.tar";
const DOCKER_FOREIGN_GZIP_LAYER: &str = "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip";

fn layer_of(descriptor: &Descriptor) -> Result<Layer, LayoutError> {
    let digest = descriptor_digest(descriptor)?;
    let media_type = descriptor.media_type();
    let docker_gzip = MediaType::ImageLayerGzip.to_docker_v2s2().ok();
    let gzip = match media_type {
        MediaType::ImageLayer | MediaType::ImageLayerNonDistributable => false,
        MediaType::ImageLayerGzip | MediaType::ImageLayerNonDistributableGzip => true,
        MediaType::Other(other) if other == DOCKER_TAR_LAYER => false,
        MediaType::Other(other) if other == DOCKER_FOREIGN_GZIP_LAYER || Some(other.as_str()) == docker_gzip => true,
        MediaType::ImageLayerZstd | MediaType::ImageLayerNonDistributableZstd => return Err(zstd_layer(&digest, media_type)),
        MediaType::Other(other) if other.ends_with("+zstd") || other.ends_with(".zstd") => return Err(zstd_layer(&digest, media_type)),
        other => return Err(blob_error(&digest, format!("unsupported layer media type {other}"))),
    };
    Ok(Layer { digest, size: descriptor.size(), gzip })
}

fn zstd_layer(digest: &Digest, media_type: &MediaType) -> LayoutError {
    blob_error(digest, format!("unsupported layer media type {media_type}: zstd layers are not supported (rebuild with gzip layers)"))
}

/// Unit tests of our code on hand-made layouts ([`super::fixture`]): the layout, its blobs
/// and their checks. The entries' placement is tested in [`super::unpack`].
#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::*;
    use std::fs;

    #[test]
    fn the_config_is_read() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), GZIP)]);
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        let image = layout.image(Selector::Digest(&manifest)).unwrap();
        assert_eq!(image.manifest_digest, manifest);
        let config = image.config.config().clone().unwrap_or_default();
        assert_eq!(config.env().as_deref(), Some(&["PATH=/bin".to_owned(), "A=1".to_owned()][..]));
        assert_eq!(
            (config.entrypoint().as_deref(), config.cmd().as_deref()),
            (Some(&["/bin/tool".to_owned()][..]), Some(&["--help".to_owned()][..]))
        );
        assert_eq!((config.working_dir().as_deref(), config.user().as_deref()), (Some("/work"), Some("1000")));
        assert_eq!((image.config.os(), image.config.architecture()), (&Os::Linux, &host_platform().1));
        let other = digest_of(b"absent");
        let error = layout.image(Selector::Digest(&other)).unwrap_err().to_string();
        assert_eq!(error, format!("blob {other}: missing from {}/blobs/sha256", fixture.dir.path().display()));
        // oci-spec's digest may name another algorithm; a layout here holds sha256 blobs.
        let sha512: Digest = format!("sha512:{}", "ab".repeat(64)).parse().unwrap();
        let error = layout.image(Selector::Digest(&sha512)).unwrap_err().to_string();
        assert_eq!(error, format!("blob {sha512}: not a sha256 digest: an OCI layout here holds sha256 blobs only"));
    }

    #[test]
    fn an_image_index_is_followed_to_this_platform() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let manifest_size = fs::metadata(fixture.dir.path().join("blobs/sha256").join(manifest.digest())).unwrap().len();
        let index = |arch: &str| {
            serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest.to_string(), "size": manifest_size,
                 "platform": {"os": "linux", "architecture": arch}}]})
            .to_string()
        };
        let good = index(&host_platform().1.to_string());
        let good_digest = fixture.blob(good.as_bytes());
        fixture.index(&[(&good_digest, good.len(), "application/vnd.oci.image.index.v1+json")]);
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        assert_eq!(layout.image(Selector::Digest(&good_digest)).unwrap().manifest_digest, manifest);
        let foreign = index("s390x");
        let foreign_digest = fixture.blob(foreign.as_bytes());
        let error = layout.image(Selector::Digest(&foreign_digest)).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("blob {foreign_digest}: the image index has no linux/{} manifest (it has: linux/s390x)", host_platform().1)
        );
    }

    #[test]
    fn a_blob_that_does_not_match_its_digest_or_size_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"original"));
        let blob = gzip(&layer);
        let digest = digest_of(&blob);
        fixture.image(&[(layer, GZIP)]);
        let path = fixture.dir.path().join("blobs/sha256").join(digest.digest());
        let mut tampered = blob.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        fs::write(&path, &tampered).unwrap();
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.starts_with(&format!("blob {digest}: content does not match its digest (it hashes to sha256:")), "{error}");
        assert_eq!(fs::read_dir(fixture.rootfs.path()).unwrap().count(), 0, "nothing applied from an unchecked blob");

        tampered.push(0);
        fs::write(&path, &tampered).unwrap();
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("blob {digest}: declared size {}, but the blob holds more", blob.len()));
        tampered.truncate(10);
        fs::write(&path, &tampered).unwrap();
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("blob {digest}: declared size {}, but the blob holds 10 bytes", blob.len()));
    }

    #[test]
    fn a_blob_that_is_not_a_regular_file_is_refused_before_it_is_read() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"f"));
        let digest = digest_of(&layer);
        fixture.image(&[(layer, TAR)]);
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        let mut image = layout.image(Selector::Only).unwrap();
        let path = fixture.dir.path().join("blobs/sha256").join(digest.digest());
        // A symlink to /dev/zero, declared at 64 GiB: once hashed for 83 s, now refused at
        // its open.
        image.layers[0].size = 64 << 30;
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let error = layout.unpack(&image, fixture.rootfs.path(), Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("blob {digest}: a symbolic link, not a regular file: refused"));
        // A FIFO, which no one writes: once a hang, now refused without waiting for a writer.
        fs::remove_file(&path).unwrap();
        checkfu_wire_sandbox::file::make_fifo(&path, 0o644).expect("mkfifo");
        let error = layout.unpack(&image, fixture.rootfs.path(), Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("blob {digest}: a FIFO, not a regular file: refused"));
        // A directory in a blob's place.
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        let error = layout.unpack(&image, fixture.rootfs.path(), Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("blob {digest}: a directory, not a regular file: refused"));
        assert_eq!(fs::read_dir(fixture.rootfs.path()).unwrap().count(), 0, "nothing applied");

        // The manifest itself as a FIFO.
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let path = fixture.dir.path().join("blobs/sha256").join(manifest.digest());
        fs::remove_file(&path).unwrap();
        checkfu_wire_sandbox::file::make_fifo(&path, 0o644).expect("mkfifo");
        let error = OciLayout::open(fixture.dir.path()).unwrap().image(Selector::Digest(&manifest)).unwrap_err().to_string();
        assert_eq!(error, format!("blob {manifest}: a FIFO, not a regular file: refused"));
    }

    #[test]
    fn an_index_of_many_foreign_platforms_gives_a_short_error() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let one = serde_json::json!({"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest.to_string(),
            "size": 1, "platform": {"os": "linux", "architecture": "s390x"}});
        let index = serde_json::json!({"schemaVersion": 2, "manifests": vec![one; 18_000]}).to_string();
        let digest = fixture.blob(index.as_bytes());
        let error = OciLayout::open(fixture.dir.path()).unwrap().image(Selector::Digest(&digest)).unwrap_err().to_string();
        assert!(error.len() <= MAX_ERROR_BYTES, "{} bytes", error.len());
        assert!(error.ends_with("(it has: linux/s390x, linux/s390x, linux/s390x, linux/s390x, linux/s390x, linux/s390x, linux/s390x, linux/s390x, and 17992 more)"), "{error}");
    }

    #[test]
    fn a_manifest_whose_declared_size_differs_is_refused() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let size = fs::metadata(fixture.dir.path().join("blobs/sha256").join(manifest.digest())).unwrap().len() as usize;
        fixture.index(&[(&manifest, size + 1, "application/vnd.oci.image.manifest.v1+json")]);
        let error = OciLayout::open(fixture.dir.path()).unwrap().image(Selector::Only).unwrap_err().to_string();
        assert_eq!(error, format!("blob {manifest}: declared size {}, but the blob holds {size} bytes", size + 1));
    }

    #[test]
    fn a_diff_id_that_does_not_match_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"f"));
        fixture.image(&[(layer, GZIP)]);
        // Rewrite the layer as another valid blob under the manifest's own bookkeeping:
        // digest and size match, the config's diff_id does not.
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        let mut image = layout.image(Selector::Only).unwrap();
        let other = gzip(&tar_of(|t| file(t, "g", 0o644, b"g")));
        image.layers[0] = Layer { digest: fixture.blob(&other), size: other.len() as u64, gzip: true };
        let error = layout.unpack(&image, fixture.rootfs.path(), Limits::default()).unwrap_err().to_string();
        assert!(error.contains("its decompressed content hashes to sha256:") && error.contains("but the config's diff_id is"), "{error}");
    }

    #[test]
    fn the_caps_end_in_errors() {
        let layer = tar_of(|t| {
            file(t, "a", 0o644, &[7u8; 1000]);
            file(t, "b", 0o644, &[7u8; 1000]);
        });
        let fixture = Fixture::new();
        fixture.image(&[(layer.clone(), GZIP)]);
        let limits = Limits { max_unpacked_bytes: 1500, ..Limits::default() };
        let error = fixture.unpack(limits).unwrap_err().to_string();
        assert!(error.ends_with("entry `b`: the image's files exceed the 1500-byte cap"), "{error}");

        let fixture = Fixture::new();
        fixture.image(&[(layer, GZIP)]);
        let error = fixture.unpack(Limits { max_entries: 1, ..Limits::default() }).unwrap_err().to_string();
        assert!(error.ends_with("more than 1 entries"), "{error}");

        let fixture = Fixture::new();
        fixture.image(&[(tar_of(|t| file(t, "a-rather-long-name", 0o644, b"")), TAR)]);
        let error = fixture.unpack(Limits { max_path_bytes: 8, ..Limits::default() }).unwrap_err().to_string();
        assert!(error.ends_with("entry `a-rather`: the path is 18 bytes, over the 8-byte cap"), "{error}");

        // A decompression bomb: a small gzip blob of a long zero stream (tar's end blocks
        // and then padding), stopped by the stream cap, not read to its end.
        let fixture = Fixture::new();
        let bomb = vec![0u8; 8 << 20];
        fixture.image(&[(bomb, GZIP)]);
        let limits = Limits { max_unpacked_bytes: 1024, max_entries: 16, max_path_bytes: 64, budget: None };
        let error = fixture.unpack(limits).unwrap_err().to_string();
        assert!(error.ends_with("the decompressed layers exceed 33792 bytes (content cap plus tar framing)"), "{error}");
    }

    #[test]
    fn unsupported_layers_are_named() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"f"));
        let digest = digest_of(&layer);
        fixture.image(&[(layer, "application/vnd.oci.image.layer.v1.tar+zstd")]);
        let error = OciLayout::open(fixture.dir.path()).unwrap().image(Selector::Only).unwrap_err().to_string();
        assert_eq!(
            error,
            format!(
                "blob {digest}: unsupported layer media type application/vnd.oci.image.layer.v1.tar+zstd: zstd layers are not supported (rebuild with gzip layers)"
            )
        );
        let fixture = Fixture::new();
        fs::remove_file(fixture.dir.path().join("oci-layout")).unwrap();
        let error = OciLayout::open(fixture.dir.path()).unwrap_err().to_string();
        assert!(error.starts_with("reading ") && error.contains("oci-layout"), "{error}");
    }
}
