//! An OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`) read and unpacked in
//! the crate: the manifest selected by digest (through an image index to this machine's
//! platform), every blob checked against its digest and declared size before it is used,
//! the config read, and the layers applied in order into a root filesystem with file and
//! opaque-directory whiteouts.
//!
//! The image is untrusted. Nothing is written outside the root or through a symlink that
//! leaves it; total bytes, entries and path lengths are capped ([`Limits`]); an error names
//! the blob or the entry at fault.

use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Seek};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use oci_spec::image::{Descriptor, ImageConfiguration, ImageIndex, ImageManifest};
use sha2::Digest as _;

use super::reference::Digest;

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
/// Symlinks followed while resolving one entry's parent directory (Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;
/// The name that marks its directory opaque: lower layers' content below it is hidden.
const OPAQUE: &[u8] = b".wh..wh..opq";
/// The prefix of a file whiteout: `.wh.NAME` removes `NAME`.
const WHITEOUT: &[u8] = b".wh.";

/// Caps on what one unpack may do; exceeding one is an error, never a hang or an OOM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// File content written, over all layers (the decompressed streams may add
    /// [`FRAMING_PER_ENTRY`] per entry allowed on top, for tar's own framing).
    pub max_unpacked_bytes: u64,
    pub max_entries: u64,
    pub max_path_bytes: usize,
    /// The run's deadline (`--deadline`): checking and unpacking stop at it with an error
    /// naming the layer, so a large image cannot hold a run past it.
    pub deadline: Option<Instant>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { max_unpacked_bytes: MAX_UNPACKED_BYTES, max_entries: MAX_ENTRIES, max_path_bytes: MAX_PATH_BYTES, deadline: None }
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

/// What a container runtime reads from the image's config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageConfig {
    /// `NAME=VALUE` entries, in order.
    pub env: Vec<String>,
    /// Empty when the image has none (a runtime treats absent and empty alike).
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    pub architecture: String,
    pub os: String,
}

/// A manifest resolved to its config and layers, every one of them checked.
#[derive(Clone, Debug)]
pub struct Image {
    /// The manifest's own digest (the platform's manifest when an index was followed).
    pub manifest_digest: Digest,
    pub config_digest: Digest,
    pub config: ImageConfig,
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
    /// Device nodes and fifos, which an unprivileged sandbox cannot create: skipped.
    pub skipped_special: u64,
    /// File content written.
    pub bytes: u64,
}

/// Why a layout could not be read or unpacked.
#[derive(Debug)]
pub enum LayoutError {
    /// The layout's own files (`oci-layout`, `index.json`) or the file system.
    Io { context: String, source: io::Error },
    /// The layout is not a usable OCI layout, or does not hold what was asked.
    Layout(String),
    /// A blob that is missing, of the wrong size or digest, malformed or unsupported.
    Blob { digest: String, problem: String },
    /// A layer entry that was refused.
    Entry { layer: Digest, path: String, problem: String },
    /// A layer that is not a readable tar stream, or breaks a [`Limits`] cap.
    Layer { layer: Digest, problem: String },
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Io { context, source } => write!(f, "{context}: {source}"),
            LayoutError::Layout(message) => write!(f, "{message}"),
            LayoutError::Blob { digest, problem } => write!(f, "blob {digest}: {problem}"),
            LayoutError::Entry { layer, path, problem } => write!(f, "layer {layer}, entry `{path}`: {problem}"),
            LayoutError::Layer { layer, problem } => write!(f, "layer {layer}: {problem}"),
        }
    }
}

impl std::error::Error for LayoutError {}

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
                let listed = self.index.manifests().iter().find(|d| d.digest().as_ref() == wanted.to_string());
                (wanted.clone(), listed.map(|d| d.size()))
            }
        };
        self.resolve(&digest, size, 0)
    }

    fn resolve(&self, digest: &Digest, size: Option<u64>, depth: usize) -> Result<Image, LayoutError> {
        let bytes = self.read_json_blob(digest, size)?;
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| blob_error(digest, format!("not JSON: {e}")))?;
        if value.get("manifests").is_some() {
            if depth >= MAX_INDEX_DEPTH {
                return Err(blob_error(digest, format!("image indexes nested deeper than {MAX_INDEX_DEPTH}")));
            }
            let index = ImageIndex::from_reader(&bytes[..]).map_err(|e| blob_error(digest, format!("not an image index: {e}")))?;
            let (os, architecture) = ("linux", host_architecture());
            let chosen = index
                .manifests()
                .iter()
                .find(|m| m.platform().as_ref().is_some_and(|p| p.os().to_string() == os && p.architecture().to_string() == architecture));
            let Some(chosen) = chosen else {
                let available: Vec<String> = index
                    .manifests()
                    .iter()
                    .filter_map(|m| m.platform().as_ref().map(|p| format!("{}/{}", p.os(), p.architecture())))
                    .collect();
                return Err(blob_error(
                    digest,
                    format!("the image index has no {os}/{architecture} manifest (it has: {})", available.join(", ")),
                ));
            };
            return self.resolve(&descriptor_digest(chosen)?, Some(chosen.size()), depth + 1);
        }
        if value.get("layers").is_none() {
            return Err(blob_error(digest, "neither an image manifest nor an image index"));
        }
        let manifest = ImageManifest::from_reader(&bytes[..]).map_err(|e| blob_error(digest, format!("not an image manifest: {e}")))?;
        let config_digest = descriptor_digest(manifest.config())?;
        let config_type = manifest.config().media_type().to_string();
        if !matches!(config_type.as_str(), "application/vnd.oci.image.config.v1+json" | "application/vnd.docker.container.image.v1+json") {
            return Err(blob_error(&config_digest, format!("the manifest's config has media type {config_type}, not an image config")));
        }
        let config_bytes = self.read_json_blob(&config_digest, Some(manifest.config().size()))?;
        let configuration = ImageConfiguration::from_reader(&config_bytes[..])
            .map_err(|e| blob_error(&config_digest, format!("not an image config: {e}")))?;
        let layers = manifest.layers().iter().map(layer_of).collect::<Result<Vec<_>, _>>()?;
        let diff_ids = configuration
            .rootfs()
            .diff_ids()
            .iter()
            .map(|d| Digest::parse(d).map_err(|e| blob_error(&config_digest, format!("diff_id {d}: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if diff_ids.len() != layers.len() {
            return Err(blob_error(
                &config_digest,
                format!("the config lists {} diff_ids for the manifest's {} layers", diff_ids.len(), layers.len()),
            ));
        }
        Ok(Image { manifest_digest: digest.clone(), config_digest, config: image_config(&configuration), layers, diff_ids })
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        // The hex is checked (64 lowercase hex digits), so it is a plain file name.
        self.dir.join("blobs").join("sha256").join(digest.hex())
    }

    /// A JSON blob, read whole (at most [`MAX_JSON_BYTES`]) and checked against its digest
    /// and, when a descriptor declared it, its size.
    fn read_json_blob(&self, digest: &Digest, size: Option<u64>) -> Result<Vec<u8>, LayoutError> {
        if let Some(size) = size.filter(|&s| s > MAX_JSON_BYTES) {
            return Err(blob_error(digest, format!("declared size {size} is over the {MAX_JSON_BYTES}-byte cap for a JSON blob")));
        }
        let file = self.open_blob(digest)?;
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
        let actual = Digest::of(&bytes);
        if &actual != digest {
            return Err(blob_error(digest, format!("content does not match its digest (it hashes to {actual})")));
        }
        Ok(bytes)
    }

    fn open_blob(&self, digest: &Digest) -> Result<File, LayoutError> {
        File::open(self.blob_path(digest)).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => blob_error(digest, format!("missing from {}/blobs/sha256", self.dir.display())),
            _ => blob_error(digest, format!("opening: {e}")),
        })
    }

    /// Streams a layer blob through sha256 and checks its digest and size, before anything
    /// of it is applied; returns it rewound.
    fn verified_layer(&self, layer: &Layer, deadline: Option<Instant>) -> Result<File, LayoutError> {
        let mut file = self.open_blob(&layer.digest)?;
        let mut hasher = sha2::Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut total: u64 = 0;
        let mut limited = (&mut file).take(layer.size.saturating_add(1));
        loop {
            let n = match limited.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(blob_error(&layer.digest, format!("reading: {e}"))),
            };
            hasher.update(&buffer[..n]);
            total += n as u64;
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(blob_error(
                    &layer.digest,
                    format!("the run's deadline (--deadline) passed while checking it, at {total} of {} bytes", layer.size),
                ));
            }
        }
        if total != layer.size {
            return Err(blob_error(
                &layer.digest,
                format!("declared size {}, but the blob holds {}", layer.size, size_text(total, layer.size)),
            ));
        }
        let actual = Digest::from_sha256(hasher.finalize().into());
        if actual != layer.digest {
            return Err(blob_error(&layer.digest, format!("content does not match its digest (it hashes to {actual})")));
        }
        file.rewind().map_err(|e| blob_error(&layer.digest, format!("rewinding: {e}")))?;
        Ok(file)
    }

    /// Applies `image`'s layers in order into `rootfs` (an existing directory, normally
    /// empty). Every layer blob is checked before the first is applied; each layer's
    /// decompressed stream is checked against the config's diff_id. Ownership is not kept
    /// (the sandbox runs unprivileged); permission bits are, except setuid and setgid.
    pub fn unpack(&self, image: &Image, rootfs: &Path, limits: Limits) -> Result<UnpackReport, LayoutError> {
        let root = rootfs.canonicalize().map_err(io_error(format!("the root filesystem {}", rootfs.display())))?;
        let mut files = Vec::with_capacity(image.layers.len());
        for layer in &image.layers {
            files.push(self.verified_layer(layer, limits.deadline)?);
        }
        let stream_cap = limits.max_unpacked_bytes.saturating_add(limits.max_entries.saturating_mul(FRAMING_PER_ENTRY));
        let mut unpacker = Unpacker { root, limits, report: UnpackReport::default(), dir_modes: HashMap::new(), streamed: 0 };
        for ((layer, file), diff_id) in image.layers.iter().zip(files).zip(&image.diff_ids) {
            let decompressed: Box<dyn Read> =
                if layer.gzip { Box::new(flate2::read::GzDecoder::new(file.take(layer.size))) } else { Box::new(file.take(layer.size)) };
            let mut stream = Capped::new(decompressed, stream_cap - unpacker.streamed);
            let applied = unpacker.apply_layer(&mut stream, &layer.digest);
            // Past the tar's end-of-archive blocks the stream may hold padding: read it out
            // (bounded by the cap) so that the diff_id covers the whole stream.
            let drained = applied.and_then(|()| {
                io::copy(&mut stream, &mut io::sink())
                    .map(|_| ())
                    .map_err(|e| LayoutError::Layer { layer: layer.digest.clone(), problem: e.to_string() })
            });
            if stream.exceeded {
                return Err(LayoutError::Layer {
                    layer: layer.digest.clone(),
                    problem: format!("the decompressed layers exceed {stream_cap} bytes (content cap plus tar framing)"),
                });
            }
            if let Some(problem) = stream.refused.take() {
                return Err(LayoutError::Layer { layer: layer.digest.clone(), problem });
            }
            drained?;
            unpacker.streamed += stream.read;
            let actual = Digest::from_sha256(stream.hasher.finalize().into());
            if &actual != diff_id {
                return Err(LayoutError::Layer {
                    layer: layer.digest.clone(),
                    problem: format!("its decompressed content hashes to {actual}, but the config's diff_id is {diff_id}"),
                });
            }
            unpacker.report.layers += 1;
        }
        unpacker.finish()
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
    Digest::parse(&text).map_err(|e| blob_error(&text, e.to_string()))
}

fn layer_of(descriptor: &Descriptor) -> Result<Layer, LayoutError> {
    let digest = descriptor_digest(descriptor)?;
    let media_type = descriptor.media_type().to_string();
    let gzip = match media_type.as_str() {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar"
        | "application/vnd.docker.image.rootfs.diff.tar" => false,
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip"
        | "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip" => true,
        zstd if zstd.ends_with("+zstd") || zstd.ends_with(".zstd") => {
            return Err(blob_error(
                &digest,
                format!("unsupported layer media type {zstd}: zstd layers are not supported (rebuild with gzip layers)"),
            ))
        }
        other => return Err(blob_error(&digest, format!("unsupported layer media type {other}"))),
    };
    Ok(Layer { digest, size: descriptor.size(), gzip })
}

fn image_config(configuration: &ImageConfiguration) -> ImageConfig {
    let config = configuration.config().clone().unwrap_or_default();
    ImageConfig {
        env: config.env().clone().unwrap_or_default(),
        entrypoint: config.entrypoint().clone().unwrap_or_default(),
        cmd: config.cmd().clone().unwrap_or_default(),
        working_dir: config.working_dir().clone().filter(|w| !w.is_empty()),
        user: config.user().clone().filter(|u| !u.is_empty()),
        architecture: configuration.architecture().to_string(),
        os: configuration.os().to_string(),
    }
}

/// This machine's architecture as the image spec names it (Go's `GOARCH`).
pub(super) fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    }
}

/// A decompressed layer stream: hashed (for the diff_id), capped, so that a decompression
/// bomb ends in an error, and watched at tar's framing, so that a metadata record the tar
/// reader would hold in memory whole (a pax header, a GNU long name or link) is refused
/// over [`MAX_METADATA_BYTES`] before the reader allocates for it.
struct Capped<R> {
    inner: R,
    hasher: sha2::Sha256,
    read: u64,
    cap: u64,
    exceeded: bool,
    framing: Framing,
    /// Why the framing watch stopped the stream.
    refused: Option<String>,
}

impl<R: Read> Capped<R> {
    fn new(inner: R, cap: u64) -> Capped<R> {
        Capped { inner, hasher: sha2::Sha256::new(), read: 0, cap, exceeded: false, framing: Framing::default(), refused: None }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        if self.read > self.cap {
            self.exceeded = true;
            return Err(io::Error::other("the decompressed layer stream is over its cap"));
        }
        if let Err(problem) = self.framing.feed(&buf[..n]) {
            self.refused = Some(problem.clone());
            return Err(io::Error::other(problem));
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The largest pax header or GNU long-name record: a path of at most [`MAX_PATH_BYTES`] and
/// a few attributes (file capabilities, an ACL) are far below it.
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// Where tar's 512-byte headers are in a stream, followed as it passes: each header's size
/// (or the size a pax record gave it) says how far the next one is.
#[derive(Default)]
struct Framing {
    header: Vec<u8>,
    /// Content and padding bytes before the next header.
    skip: u64,
    /// A pax record being collected (its `size` applies to the next entry).
    pax: Option<Vec<u8>>,
    pax_remaining: u64,
    pax_size: Option<u64>,
}

impl Framing {
    fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            if self.skip > 0 {
                let take = usize::try_from(self.skip).unwrap_or(usize::MAX).min(data.len());
                if let Some(pax) = &mut self.pax {
                    let keep = usize::try_from(self.pax_remaining).unwrap_or(usize::MAX).min(take);
                    pax.extend_from_slice(&data[..keep]);
                    self.pax_remaining -= keep as u64;
                    if self.pax_remaining == 0 {
                        self.pax_size = pax_size(pax);
                        self.pax = None;
                    }
                }
                self.skip -= take as u64;
                data = &data[take..];
                continue;
            }
            let take = (512 - self.header.len()).min(data.len());
            self.header.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.header.len() == 512 {
                let header = std::mem::take(&mut self.header);
                self.header_done(&header)?;
            }
        }
        Ok(())
    }

    fn header_done(&mut self, header: &[u8]) -> Result<(), String> {
        if header.iter().all(|b| *b == 0) {
            return Ok(());
        }
        let kind = header[156];
        // A malformed size is the tar reader's to report; here it only ends the watch.
        let Some(mut size) = header_size(&header[124..136]) else {
            self.skip = u64::MAX;
            return Ok(());
        };
        if matches!(kind, b'x' | b'L' | b'K') {
            if size > MAX_METADATA_BYTES {
                let what = if kind == b'x' { "pax header" } else { "GNU long name" };
                return Err(format!("a {what} record of {size} bytes, over the {MAX_METADATA_BYTES}-byte cap"));
            }
            if kind == b'x' && size > 0 {
                self.pax = Some(Vec::with_capacity(size as usize));
                self.pax_remaining = size;
            }
        } else if let Some(pax_size) = self.pax_size.take() {
            size = pax_size;
        }
        self.skip = size.div_ceil(512).saturating_mul(512);
        Ok(())
    }
}

/// A tar size field: octal digits, or base-256 when its first byte's high bit is set.
fn header_size(field: &[u8]) -> Option<u64> {
    if field.first()? & 0x80 != 0 {
        let mut value: u64 = u64::from(field[0] & 0x7f);
        for byte in &field[1..] {
            value = value.checked_mul(256)?.checked_add(u64::from(*byte))?;
        }
        return Some(value);
    }
    let digits: Vec<u8> = field.iter().copied().filter(|b| *b != 0 && *b != b' ').collect();
    if digits.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(std::str::from_utf8(&digits).ok()?, 8).ok()
}

/// The `size` a pax record (`LEN key=value\n` records) gives the next entry.
fn pax_size(records: &[u8]) -> Option<u64> {
    let mut rest = records;
    let mut size = None;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ')?;
        let length: usize = std::str::from_utf8(&rest[..space]).ok()?.parse().ok()?;
        if length <= space || length > rest.len() {
            return size;
        }
        let record = &rest[space + 1..length];
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        if let Some(value) = record.strip_prefix(b"size=") {
            size = std::str::from_utf8(value).ok()?.parse().ok();
        }
        rest = &rest[length..];
    }
    size
}

struct Unpacker {
    root: PathBuf,
    limits: Limits,
    report: UnpackReport,
    /// Directories' modes from the image, applied at the end: until then every directory
    /// stays writable by us, so a read-only directory cannot stop a later entry or layer.
    dir_modes: HashMap<PathBuf, u32>,
    /// Decompressed bytes of the layers applied so far.
    streamed: u64,
}

/// What an entry wants at its path.
enum Kind {
    File,
    Directory,
    Symlink(OsString),
    HardLink(Vec<OsString>),
}

impl Unpacker {
    fn apply_layer(&mut self, stream: &mut dyn Read, layer: &Digest) -> Result<(), LayoutError> {
        let layer_error = |e: io::Error| LayoutError::Layer { layer: layer.clone(), problem: format!("not a readable tar stream: {e}") };
        let mut archive = tar::Archive::new(stream);
        // What this layer placed: an opaque marker hides lower layers' content only.
        let mut placed: HashSet<PathBuf> = HashSet::new();
        for entry in archive.entries().map_err(layer_error)? {
            let mut entry = entry.map_err(layer_error)?;
            self.report.entries += 1;
            if self.limits.deadline.is_some_and(|d| Instant::now() >= d) {
                let problem = format!("the run's deadline (--deadline) passed while unpacking it, at entry {}", self.report.entries);
                return Err(LayoutError::Layer { layer: layer.clone(), problem });
            }
            if self.report.entries > self.limits.max_entries {
                return Err(LayoutError::Layer { layer: layer.clone(), problem: format!("more than {} entries", self.limits.max_entries) });
            }
            let raw = entry.path_bytes().into_owned();
            let shown = String::from_utf8_lossy(&raw[..raw.len().min(self.limits.max_path_bytes)]).into_owned();
            let refuse = |problem: String| LayoutError::Entry { layer: layer.clone(), path: shown.clone(), problem };
            if raw.len() > self.limits.max_path_bytes {
                return Err(refuse(format!("the path is {} bytes, over the {}-byte cap", raw.len(), self.limits.max_path_bytes)));
            }
            let components = normalize(&raw).map_err(|p| refuse(p.to_owned()))?;
            let header_type = entry.header().entry_type();
            let Some((name, parents)) = components.split_last() else {
                // `./` or `/`: the root itself, which we made.
                if header_type.is_dir() {
                    continue;
                }
                return Err(refuse("a non-directory entry names the root".to_owned()));
            };
            let name_bytes = name.as_bytes();
            if name_bytes == OPAQUE {
                let dir = self.make_dir(parents).map_err(refuse)?;
                clear_lower(&dir, &placed, 0).map_err(|e| refuse(format!("emptying the opaque directory: {e}")))?;
                self.report.opaque_directories += 1;
                continue;
            }
            if let Some(hidden) = name_bytes.strip_prefix(WHITEOUT) {
                if hidden.is_empty() || hidden == b"." || hidden == b".." {
                    return Err(refuse("a whiteout names no file".to_owned()));
                }
                if let Some(dir) = self.resolve_dir(parents, false).map_err(refuse)? {
                    remove_any(&dir.join(OsStr::from_bytes(hidden))).map_err(|e| refuse(format!("applying the whiteout: {e}")))?;
                }
                self.report.whiteouts += 1;
                continue;
            }
            use tar::EntryType as T;
            let kind = match header_type {
                T::Regular | T::Continuous => Kind::File,
                T::Directory => Kind::Directory,
                T::Symlink | T::Link => {
                    let target = entry.link_name_bytes().map(|t| t.into_owned()).unwrap_or_default();
                    if target.is_empty() || target.len() > self.limits.max_path_bytes {
                        return Err(refuse(format!(
                            "a link target of {} bytes (1 to {} allowed)",
                            target.len(),
                            self.limits.max_path_bytes
                        )));
                    }
                    if header_type == T::Symlink {
                        // A symlink's target may be anything: nothing is ever written through
                        // one without resolving it inside the root.
                        Kind::Symlink(OsStr::from_bytes(&target).to_owned())
                    } else {
                        Kind::HardLink(normalize(&target).map_err(|p| refuse(format!("hard link target: {p}")))?)
                    }
                }
                T::Char | T::Block | T::Fifo => {
                    self.report.skipped_special += 1;
                    continue;
                }
                // pax global headers carry nothing we use.
                T::XGlobalHeader => continue,
                other => return Err(refuse(format!("unsupported entry type {other:?}"))),
            };
            let size = entry.size();
            if matches!(kind, Kind::File) {
                self.report.bytes = self.report.bytes.saturating_add(size);
                if self.report.bytes > self.limits.max_unpacked_bytes {
                    return Err(refuse(format!("the image's files exceed the {}-byte cap", self.limits.max_unpacked_bytes)));
                }
            }
            let dir = self.make_dir(parents).map_err(refuse)?;
            let path = dir.join(name);
            let mode = entry.header().mode().map_err(|e| refuse(format!("mode: {e}")))?;
            let existing = fs::symlink_metadata(&path).ok();
            let keep_dir = matches!(kind, Kind::Directory) && existing.as_ref().is_some_and(|m| m.is_dir());
            if existing.is_some() && !keep_dir {
                remove_any(&path).map_err(|e| refuse(format!("replacing what a lower layer put there: {e}")))?;
            }
            let written = match kind {
                Kind::Directory => {
                    self.report.directories += 1;
                    self.dir_modes.insert(path.clone(), mode & 0o1777);
                    if keep_dir {
                        Ok(())
                    } else {
                        create_dir(&path)
                    }
                }
                Kind::File => {
                    self.report.files += 1;
                    write_file(&path, &mut entry, mode & 0o777)
                }
                Kind::Symlink(target) => {
                    self.report.symlinks += 1;
                    std::os::unix::fs::symlink(target, &path)
                }
                Kind::HardLink(target) => {
                    self.report.hard_links += 1;
                    let Some((target_name, target_parents)) = target.split_last() else {
                        return Err(refuse("a hard link to the root".to_owned()));
                    };
                    let source = self
                        .resolve_dir(target_parents, false)
                        .map_err(|p| refuse(format!("hard link target: {p}")))?
                        .map(|d| d.join(target_name));
                    match source.as_ref().and_then(|s| fs::symlink_metadata(s).ok()) {
                        Some(m) if m.is_dir() => return Err(refuse("a hard link to a directory".to_owned())),
                        Some(_) => source.map_or_else(|| Err(io::ErrorKind::NotFound.into()), |source| fs::hard_link(source, &path)),
                        None => return Err(refuse("the hard link's target is not in the image".to_owned())),
                    }
                }
            };
            written.map_err(|e| refuse(format!("writing: {e}")))?;
            placed.insert(path);
        }
        Ok(())
    }

    /// The directory `components` name, inside the root: symlinks on the way are followed
    /// as the container would see them (an absolute target from the root), but one that
    /// would climb above the root is refused. Missing directories are made when `create`,
    /// otherwise `None` is returned for them. Every component of the result is a real
    /// directory, so nothing is written through a symlink.
    fn resolve_dir(&self, components: &[OsString], create: bool) -> Result<Option<PathBuf>, String> {
        let mut resolved = self.root.clone();
        let mut depth = 0usize;
        let mut pending: VecDeque<OsString> = components.iter().cloned().collect();
        let mut hops = 0;
        while let Some(component) = pending.pop_front() {
            if component.is_empty() || component == "." {
                continue;
            }
            if component == ".." {
                if depth == 0 {
                    return Err("its parent resolves through a symlink out of the root".to_owned());
                }
                resolved.pop();
                depth -= 1;
                continue;
            }
            let next = resolved.join(&component);
            match fs::symlink_metadata(&next) {
                Ok(m) if m.file_type().is_symlink() => {
                    hops += 1;
                    if hops > MAX_SYMLINK_HOPS {
                        return Err(format!("its parent resolves through more than {MAX_SYMLINK_HOPS} symlinks"));
                    }
                    let target = fs::read_link(&next).map_err(|e| format!("reading the symlink {}: {e}", next.display()))?;
                    if target.as_os_str().len() > self.limits.max_path_bytes {
                        return Err("its parent is a symlink with an over-long target".to_owned());
                    }
                    let target_bytes = target.as_os_str().as_bytes();
                    if target_bytes.starts_with(b"/") {
                        resolved = self.root.clone();
                        depth = 0;
                    }
                    for part in target_bytes.split(|b| *b == b'/').rev() {
                        pending.push_front(OsStr::from_bytes(part).to_owned());
                    }
                }
                Ok(m) if m.is_dir() => {
                    resolved = next;
                    depth += 1;
                }
                Ok(_) => return Err(format!("its parent `{}` is not a directory", component.to_string_lossy())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !create {
                        return Ok(None);
                    }
                    create_dir(&next).map_err(|e| format!("making its parent directory: {e}"))?;
                    resolved = next;
                    depth += 1;
                }
                Err(e) => return Err(format!("reading its parent: {e}")),
            }
        }
        Ok(Some(resolved))
    }

    /// [`Unpacker::resolve_dir`], making what is missing.
    fn make_dir(&self, components: &[OsString]) -> Result<PathBuf, String> {
        self.resolve_dir(components, true)?.ok_or_else(|| "its parent directory could not be made".to_owned())
    }

    /// Gives directories their image modes, deepest first (a read-only parent must not stop
    /// its children's changes).
    fn finish(self) -> Result<UnpackReport, LayoutError> {
        let mut dirs: Vec<(PathBuf, u32)> = self.dir_modes.into_iter().collect();
        dirs.sort_by_key(|(path, _)| std::cmp::Reverse(path.components().count()));
        for (path, mode) in dirs {
            if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                    .map_err(io_error(format!("setting the mode of {}", path.display())))?;
            }
        }
        Ok(self.report)
    }
}

/// An entry path made relative: `/` and `.` components dropped, `..` refused.
fn normalize(raw: &[u8]) -> Result<Vec<OsString>, &'static str> {
    let mut components = Vec::new();
    for part in raw.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err("a `..` component: the entry would leave the root"),
            part => components.push(OsStr::from_bytes(part).to_owned()),
        }
    }
    Ok(components)
}

/// A directory writable by us until [`Unpacker::finish`] gives it its mode.
fn create_dir(path: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o755);
    builder.create(path)
}

/// A new file (never opened through an existing path: `create_new` refuses one, a symlink
/// included) with the entry's content.
fn write_file(path: &Path, content: &mut dyn Read, mode: u32) -> io::Result<()> {
    let mut file = fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path)?;
    io::copy(content, &mut file)?;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

/// Removes whatever is at `path` (a directory with its content), never following a symlink.
fn remove_any(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => super::remove_tree(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Removes from `dir` everything this layer did not place; directories this layer placed
/// are kept and cleared the same way (an opaque directory hides everything lower layers put
/// below it).
fn clear_lower(dir: &Path, placed: &HashSet<PathBuf>, depth: usize) -> io::Result<()> {
    if depth > MAX_PATH_BYTES / 2 {
        return Err(io::Error::other("directories nested too deep"));
    }
    for child in fs::read_dir(dir)? {
        let child = child?.path();
        if placed.contains(&child) {
            if fs::symlink_metadata(&child)?.is_dir() {
                clear_lower(&child, placed, depth + 1)?;
            }
        } else {
            remove_any(&child)?;
        }
    }
    Ok(())
}

/// Unit tests of our code on hand-made layouts: the hostile cases no real builder emits,
/// and the opaque-directory marker, which buildah's `vfs` storage never emits (it writes a
/// `.wh.` file per removed name instead; see the checkfu-wire-tests `image` module, which
/// unpacks real buildah images).
#[cfg(test)]
mod tests {
    use super::*;

    const GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";
    const TAR: &str = "application/vnd.oci.image.layer.v1.tar";

    /// A tar entry written byte for byte (the `tar` crate's setters refuse `..`, which these
    /// tests need to write).
    fn entry(tar: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, path: &[u8], mode: u32, data: &[u8], link: &[u8]) {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().expect("gnu").name[..path.len()].copy_from_slice(path);
        header.as_gnu_mut().expect("gnu").linkname[..link.len()].copy_from_slice(link);
        header.set_entry_type(kind);
        header.set_mode(mode);
        header.set_size(data.len() as u64);
        header.set_cksum();
        tar.append(&header, data).expect("append");
    }

    fn file(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32, data: &[u8]) {
        entry(tar, tar::EntryType::Regular, path.as_bytes(), mode, data, b"");
    }

    fn dir(tar: &mut tar::Builder<Vec<u8>>, path: &str, mode: u32) {
        entry(tar, tar::EntryType::Directory, path.as_bytes(), mode, b"", b"");
    }

    fn link(tar: &mut tar::Builder<Vec<u8>>, kind: tar::EntryType, path: &str, target: &str) {
        entry(tar, kind, path.as_bytes(), 0o777, b"", target.as_bytes());
    }

    fn tar_of(build: impl FnOnce(&mut tar::Builder<Vec<u8>>)) -> Vec<u8> {
        let mut tar = tar::Builder::new(Vec::new());
        build(&mut tar);
        tar.into_inner().expect("tar")
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut encoder, bytes).expect("gzip");
        encoder.finish().expect("gzip")
    }

    /// A layout on disk, and the descriptors it was written with (for tests to break).
    struct Fixture {
        dir: tempfile::TempDir,
        rootfs: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().expect("tempdir");
            fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
            fs::write(dir.path().join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).expect("oci-layout");
            Fixture { dir, rootfs: tempfile::tempdir().expect("rootfs") }
        }

        fn blob(&self, bytes: &[u8]) -> Digest {
            let digest = Digest::of(bytes);
            fs::write(self.dir.path().join("blobs/sha256").join(digest.hex()), bytes).expect("blob");
            digest
        }

        /// Writes the config, the manifest (layers as `(tar, media type)`, gzipped when the
        /// type says so) and index.json; returns the manifest's digest.
        fn image(&self, layers: &[(Vec<u8>, &str)]) -> Digest {
            let mut descriptors = Vec::new();
            let mut diff_ids = Vec::new();
            for (tar, media_type) in layers {
                let blob = if media_type.ends_with("gzip") { gzip(tar) } else { tar.clone() };
                let digest = self.blob(&blob);
                descriptors.push(serde_json::json!({"mediaType": media_type, "digest": digest.to_string(), "size": blob.len()}));
                diff_ids.push(Digest::of(tar).to_string());
            }
            let config = serde_json::json!({
                "architecture": host_architecture(), "os": "linux",
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

        fn index(&self, manifests: &[(&Digest, usize, &str)]) {
            let manifests: Vec<_> =
                manifests.iter().map(|(d, size, t)| serde_json::json!({"mediaType": t, "digest": d.to_string(), "size": size})).collect();
            let index = serde_json::json!({"schemaVersion": 2, "manifests": manifests}).to_string();
            fs::write(self.dir.path().join("index.json"), index).expect("index.json");
        }

        fn unpack(&self, limits: Limits) -> Result<UnpackReport, LayoutError> {
            let layout = OciLayout::open(self.dir.path())?;
            let image = layout.image(Selector::Only)?;
            layout.unpack(&image, self.rootfs.path(), limits)
        }

        fn root(&self, relative: &str) -> PathBuf {
            self.rootfs.path().join(relative)
        }
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path).expect("metadata").permissions().mode() & 0o7777
    }

    #[test]
    fn layers_apply_in_order_with_file_and_opaque_whiteouts() {
        let fixture = Fixture::new();
        let lower = tar_of(|t| {
            dir(t, "etc/", 0o755);
            file(t, "etc/a", 0o644, b"a");
            file(t, "/etc/b", 0o600, b"b");
            dir(t, "./data/x/", 0o755);
            file(t, "data/x/y", 0o755, b"y");
            dir(t, "data/x/sub/", 0o755);
            file(t, "data/x/sub/deep", 0o644, b"deep");
            file(t, "bin/tool", 0o4755, b"#!");
            link(t, tar::EntryType::Symlink, "bin/sh", "tool");
            link(t, tar::EntryType::Link, "bin/hard", "bin/tool");
            dir(t, "ro/", 0o555);
            file(t, "ro/inside", 0o444, b"r");
            entry(t, tar::EntryType::Fifo, b"dev/fifo", 0o644, b"", b"");
            entry(t, tar::EntryType::Char, b"dev/null", 0o666, b"", b"");
        });
        let upper = tar_of(|t| {
            file(t, "etc/.wh.a", 0, b"");
            // Placed by this layer before the marker: the marker hides lower content only.
            file(t, "data/x/new", 0o640, b"new");
            file(t, "data/x/.wh..wh..opq", 0, b"");
            file(t, "ro/later", 0o644, b"l");
        });
        fixture.image(&[(lower, GZIP), (upper, TAR)]);
        let report = fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!((report.layers, report.whiteouts, report.opaque_directories, report.skipped_special), (2, 1, 1, 2));
        assert_eq!((report.symlinks, report.hard_links), (1, 1));
        assert!(!fixture.root("etc/a").exists());
        assert_eq!(fs::read(fixture.root("etc/b")).unwrap(), b"b");
        assert_eq!(mode(&fixture.root("etc/b")), 0o600);
        assert!(!fixture.root("data/x/y").exists() && !fixture.root("data/x/sub").exists());
        assert_eq!(fs::read(fixture.root("data/x/new")).unwrap(), b"new");
        assert_eq!(mode(&fixture.root("data/x/new")), 0o640);
        // setuid is dropped, the exec bits kept.
        assert_eq!(mode(&fixture.root("bin/tool")), 0o755);
        assert_eq!(fs::read_link(fixture.root("bin/sh")).unwrap(), Path::new("tool"));
        use std::os::unix::fs::MetadataExt;
        assert_eq!(fs::metadata(fixture.root("bin/hard")).unwrap().ino(), fs::metadata(fixture.root("bin/tool")).unwrap().ino());
        // A read-only directory got its mode at the end, after a later layer wrote into it.
        assert_eq!(mode(&fixture.root("ro")), 0o555);
        assert_eq!(fs::read(fixture.root("ro/later")).unwrap(), b"l");
        assert!(!fixture.root("dev/fifo").exists() && !fixture.root("dev/null").exists());
        // And the lane removes such a tree, read-only directories included.
        let rootfs = fixture.rootfs.path().to_owned();
        super::super::remove_tree(&rootfs).expect("remove");
        assert!(!rootfs.exists());
    }

    #[test]
    fn the_config_is_read() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), GZIP)]);
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        let image = layout.image(Selector::Digest(&manifest)).unwrap();
        assert_eq!(image.manifest_digest, manifest);
        assert_eq!(image.config.env, ["PATH=/bin", "A=1"]);
        assert_eq!(
            (image.config.entrypoint.as_slice(), image.config.cmd.as_slice()),
            (&["/bin/tool".to_owned()][..], &["--help".to_owned()][..])
        );
        assert_eq!((image.config.working_dir.as_deref(), image.config.user.as_deref()), (Some("/work"), Some("1000")));
        let other = Digest::of(b"absent");
        let error = layout.image(Selector::Digest(&other)).unwrap_err().to_string();
        assert_eq!(error, format!("blob {other}: missing from {}/blobs/sha256", fixture.dir.path().display()));
    }

    #[test]
    fn an_image_index_is_followed_to_this_platform() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let manifest_size = fs::metadata(fixture.dir.path().join("blobs/sha256").join(manifest.hex())).unwrap().len();
        let index = |arch: &str| {
            serde_json::json!({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [
                {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest.to_string(), "size": manifest_size,
                 "platform": {"os": "linux", "architecture": arch}}]})
            .to_string()
        };
        let good = index(host_architecture());
        let good_digest = fixture.blob(good.as_bytes());
        fixture.index(&[(&good_digest, good.len(), "application/vnd.oci.image.index.v1+json")]);
        let layout = OciLayout::open(fixture.dir.path()).unwrap();
        assert_eq!(layout.image(Selector::Digest(&good_digest)).unwrap().manifest_digest, manifest);
        let foreign = index("s390x");
        let foreign_digest = fixture.blob(foreign.as_bytes());
        let error = layout.image(Selector::Digest(&foreign_digest)).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("blob {foreign_digest}: the image index has no linux/{} manifest (it has: linux/s390x)", host_architecture())
        );
    }

    #[test]
    fn a_dotdot_entry_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "a/../../escaped", 0o644, b"x"));
        let layer_digest = Digest::of(&gzip(&layer));
        fixture.image(&[(layer, GZIP)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("layer {layer_digest}, entry `a/../../escaped`: a `..` component: the entry would leave the root"));
        let outside = fixture.rootfs.path().parent().unwrap().join("escaped");
        assert!(!outside.exists());
    }

    #[test]
    fn nothing_is_written_through_a_symlink_out_of_the_root() {
        let outside = tempfile::tempdir().unwrap();
        let fixture = Fixture::new();
        let climbing = format!("..{}", "/..".repeat(20));
        let lower = tar_of(|t| {
            link(t, tar::EntryType::Symlink, "up", &climbing);
            link(t, tar::EntryType::Symlink, "abs", &outside.path().display().to_string());
            link(t, tar::EntryType::Symlink, "file-link", &outside.path().join("victim").display().to_string());
        });
        let upper = tar_of(|t| {
            // An absolute target is the container's view: it lands inside the root.
            file(t, "abs/inside", 0o644, b"x");
            // The final component is replaced, never opened through the symlink.
            file(t, "file-link", 0o644, b"x");
        });
        fixture.image(&[(lower.clone(), TAR), (upper, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing outside");
        let inside = fixture.root(format!("{}/inside", outside.path().display()).trim_start_matches('/'));
        assert_eq!(fs::read(inside).unwrap(), b"x");
        assert!(fs::symlink_metadata(fixture.root("file-link")).unwrap().is_file());

        let fixture = Fixture::new();
        let upper = tar_of(|t| file(t, "up/pwned", 0o644, b"x"));
        let upper_digest = Digest::of(&upper);
        fixture.image(&[(lower, TAR), (upper, TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("layer {upper_digest}, entry `up/pwned`: its parent resolves through a symlink out of the root"));
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing outside");
    }

    #[test]
    fn a_hard_link_out_of_the_root_or_to_nothing_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| link(t, tar::EntryType::Link, "l", "../../etc/passwd"));
        fixture.image(&[(layer, TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.ends_with("entry `l`: hard link target: a `..` component: the entry would leave the root"), "{error}");
        let fixture = Fixture::new();
        fixture.image(&[(tar_of(|t| link(t, tar::EntryType::Link, "l", "/etc/passwd")), TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.ends_with("entry `l`: the hard link's target is not in the image"), "{error}");
    }

    #[test]
    fn a_blob_that_does_not_match_its_digest_or_size_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"original"));
        let blob = gzip(&layer);
        let digest = Digest::of(&blob);
        fixture.image(&[(layer, GZIP)]);
        let path = fixture.dir.path().join("blobs/sha256").join(digest.hex());
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
    fn a_manifest_whose_declared_size_differs_is_refused() {
        let fixture = Fixture::new();
        let manifest = fixture.image(&[(tar_of(|t| file(t, "f", 0o644, b"f")), TAR)]);
        let size = fs::metadata(fixture.dir.path().join("blobs/sha256").join(manifest.hex())).unwrap().len() as usize;
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
        let limits = Limits { max_unpacked_bytes: 1024, max_entries: 16, max_path_bytes: 64, deadline: None };
        let error = fixture.unpack(limits).unwrap_err().to_string();
        assert!(error.ends_with("the decompressed layers exceed 33792 bytes (content cap plus tar framing)"), "{error}");
    }

    /// A raw header of `kind` with `size`, for records the `tar` crate's builder would not
    /// write as given.
    fn raw_header(kind: u8, name: &[u8], size: u64) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.as_gnu_mut().expect("gnu").name[..name.len()].copy_from_slice(name);
        header.set_entry_type(tar::EntryType::new(kind));
        header.set_mode(0o644);
        header.set_size(size);
        header.set_cksum();
        header.as_bytes().to_vec()
    }

    fn padded(mut bytes: Vec<u8>) -> Vec<u8> {
        bytes.resize(bytes.len().div_ceil(512) * 512, 0);
        bytes
    }

    #[test]
    fn metadata_records_are_capped_before_the_tar_reader_holds_them() {
        // A GNU long name of 2 MiB: refused at its header, never read into memory.
        let mut layer = raw_header(b'L', b"././@LongLink", 2 << 20);
        layer.extend(padded(vec![b'a'; 2 << 20]));
        layer.extend(raw_header(b'0', b"f", 0));
        layer.extend([0u8; 1024]);
        let fixture = Fixture::new();
        fixture.image(&[(layer, GZIP)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.ends_with("a GNU long name record of 2097152 bytes, over the 1048576-byte cap"), "{error}");

        // A pax record's `size` moves the next header: the watch follows it, and still
        // finds the over-long record after it. The file's own header says 0 bytes.
        let pax = b"12 size=700\n".to_vec();
        let mut layer = raw_header(b'x', b"PaxHeaders/f", pax.len() as u64);
        layer.extend(padded(pax));
        layer.extend(raw_header(b'0', b"f", 0));
        // Content that would read as a long-name header if the watch ignored the pax size.
        layer.extend(padded(raw_header(b'L', b"decoy", 2 << 20).into_iter().chain(std::iter::repeat_n(b'c', 188)).collect()));
        let mut long_path = raw_header(b'L', b"././@LongLink", 200);
        long_path.extend(padded(vec![b'd'; 200]));
        layer.extend(long_path);
        layer.extend(raw_header(b'0', b"ignored", 0));
        layer.extend([0u8; 1024]);
        let fixture = Fixture::new();
        fixture.image(&[(layer, TAR)]);
        let report = fixture.unpack(Limits::default()).expect("aligned through the pax size");
        assert_eq!(report.files, 2);
        assert_eq!(fs::metadata(fixture.root("f")).unwrap().len(), 700);
        assert!(fixture.root(&"d".repeat(200)).is_file(), "the GNU long name applied");
    }

    #[test]
    fn unsupported_layers_are_named() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "f", 0o644, b"f"));
        let digest = Digest::of(&layer);
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
