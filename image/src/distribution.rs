//! A small OCI distribution client for a loopback registry, over plain HTTP/1.1, writing a
//! standard OCI image layout (`oci-layout`, `index.json`, `blobs/sha256/…`) that
//! [`super::layout::OciLayout`] reads and checks again, unchanged.
//!
//! It exists because a registry is untrusted input and skopeo, given plain HTTP, follows a
//! loopback registry's redirect or token realm to any host with TLS checks off, reads a
//! blob past its declared size and waits on a trickling server for its own 20 minutes.
//! Here:
//! - every byte goes to the registry named and nowhere else: a redirect (`3xx Location`)
//!   or a `Bearer` token realm on another `HOST:PORT` is refused, naming that host;
//! - every body is capped as it streams: a manifest, index or config at the layout
//!   reader's [`MAX_JSON_BYTES`], a blob at its descriptor's size (a `Content-Length` over
//!   it is refused before a byte is read), and each is checked against its digest;
//! - the free space at the destination is checked against the declared sizes before a
//!   layer is fetched;
//! - the whole pull ends at the run's deadline, whatever the server does.
//!
//! Remote registries are pulled by skopeo with TLS verified ([`super::tools`]).

use checkfu_wire_sandbox::budget::Budget;
use std::fs::File;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::body::Incoming;
use hyper::header::{
    HeaderMap, HeaderValue, InvalidHeaderValue, ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST, LOCATION, USER_AGENT,
    WWW_AUTHENTICATE,
};
use hyper::http::uri::InvalidUri;
use hyper::{Request, Response, StatusCode, Uri};
use sha2::Digest as _;

use oci_spec::image::{Descriptor, ImageIndex, ImageManifest, MediaType, ToDockerV2S2};

use super::layout::{host_platform, MAX_JSON_BYTES};
use super::reference::{digest_from_sha256, digest_of, sha256_digest, Digest, ImageReference, ReferenceError};

/// What a manifest request accepts: OCI and Docker v2 manifests and their indexes.
fn manifest_types() -> String {
    let oci = [MediaType::ImageManifest, MediaType::ImageIndex];
    let docker = oci.iter().filter_map(|t| t.to_docker_v2s2().ok().map(str::to_owned));
    oci.iter().map(MediaType::to_string).chain(docker).collect::<Vec<_>>().join(", ")
}
/// Redirects followed for one request: a registry redirects a blob once, to its storage.
const MAX_REDIRECTS: usize = 5;
/// Image indexes nested in indexes (as the layout reader allows).
const MAX_INDEX_DEPTH: usize = 4;
/// The largest token answer read: real ones are a few KiB.
const MAX_TOKEN_BYTES: u64 = 64 * 1024;
/// The most of an error answer's body quoted in the error.
const MAX_QUOTED: usize = 200;
/// Every error is at most this long (the lane's bound on what it prints).
const MAX_ERROR: usize = 1024;
/// Platforms named when an index has none for this machine.
const PLATFORMS_NAMED: usize = 5;

/// Why a pull was refused or failed: one message of at most 1 KB naming the registry, the
/// blob, the host or the deadline at fault, and the whole cause behind it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct PullFailure {
    message: String,
    #[source]
    cause: Box<DistributionError>,
}

impl PullFailure {
    fn new(cause: DistributionError) -> PullFailure {
        let mut message = cause.to_string();
        if message.len() > MAX_ERROR {
            let mut end = MAX_ERROR - 3;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push_str("...");
        }
        PullFailure { message, cause: Box::new(cause) }
    }

    /// What failed, in full.
    pub fn cause(&self) -> &DistributionError {
        &self.cause
    }
}

/// What refused or failed a pull, each naming the registry, the blob, the host or the
/// deadline at fault; [`PullFailure`] bounds its message.
#[derive(Debug, thiserror::Error)]
pub enum DistributionError {
    #[error("{registry} is not a loopback registry: the probe pulls only those over plain HTTP")]
    NotLoopback { registry: String },
    #[error("cannot start the client for {registry}: {source}")]
    ClientStart { registry: String, source: std::io::Error },
    #[error("the run's deadline (--deadline) passed, and the pull from {registry} was cut off while {cut_off}")]
    Deadline { registry: String, cut_off: String },
    #[error("interrupted by {signal}: the pull from {registry} was stopped while {cut_off}")]
    Interrupted { signal: &'static str, registry: String, cut_off: String },
    #[error("cannot make {}: {source}", path.display())]
    MakeDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("the manifest {digest} is declared at {cap} bytes, over the {}-byte cap", MAX_JSON_BYTES)]
    ManifestOverCap { digest: Digest, cap: u64 },
    #[error("the manifest {digest} is declared at {size} bytes, but the registry sent {sent}")]
    ManifestSize { digest: Digest, size: u64, sent: usize },
    #[error("the registry sent a manifest for {digest} that hashes to {actual}")]
    ManifestDigest { digest: Digest, actual: Digest },
    #[error("the manifest {digest} is not JSON: {source}")]
    ManifestNotJson { digest: Digest, source: serde_json::Error },
    #[error("the index {digest}: image indexes nested deeper than {}", MAX_INDEX_DEPTH)]
    IndexTooDeep { digest: Digest },
    #[error("the index {digest} is not an image index: {source}")]
    NotAnIndex { digest: Digest, source: serde_json::Error },
    #[error("the index {digest} lists `{listed}`: {source}")]
    IndexListing { digest: Digest, listed: String, source: Box<ReferenceError> },
    /// `platform`: this machine's, `OS/ARCHITECTURE`.
    #[error("the index {digest} has no {platform} manifest ({listed} listed, among them: {named})")]
    NoPlatform { digest: Digest, platform: String, listed: usize, named: String },
    #[error("the manifest {digest} is not an image manifest: {source}")]
    NotAManifest { digest: Digest, source: serde_json::Error },
    #[error("the manifest's declared sizes overflow")]
    SizesOverflow,
    #[error("the image's blobs are declared at {declared} bytes, and {} has only {free} free", dir.display())]
    NoRoom { declared: u64, dir: PathBuf, free: u64 },
    #[error("the config {digest} is declared at {size} bytes, over the {}-byte cap", MAX_JSON_BYTES)]
    ConfigOverCap { digest: String, size: u64 },
    #[error("the {role} `{listed}`: {source}")]
    BlobListing { role: Role, listed: String, source: Box<ReferenceError> },
    #[error("the {role} {digest} is declared at {size} bytes, but the registry announced {length}: refused")]
    BlobAnnounced { role: Role, digest: Digest, size: u64, length: u64 },
    #[error("the {role} {digest}: {source}")]
    BlobStream { role: Role, digest: Digest, source: StreamError },
    #[error("the {role} {digest} is declared at {size} bytes, but the registry sent {read}")]
    BlobSize { role: Role, digest: Digest, size: u64, read: u64 },
    #[error("the registry sent a {role} for {digest} that hashes to {actual}")]
    BlobDigest { role: Role, digest: Digest, actual: Digest },
    #[error("the registry {registry} answered GET {path} with {status}: {quoted}")]
    Answered { registry: String, path: String, status: StatusCode, quoted: String },
    #[error("the registry {registry} redirected GET {path} more than {} times", MAX_REDIRECTS)]
    Redirects { registry: String, path: String },
    #[error("cannot connect to the registry {registry}: {source}")]
    Connect { registry: String, source: std::io::Error },
    #[error("the registry {registry}: {source}")]
    Handshake { registry: String, source: hyper::Error },
    #[error("the registry's token is not a header value")]
    TokenNotHeader(#[source] InvalidHeaderValue),
    #[error("GET {path}: {source}")]
    Request { path: String, source: hyper::http::Error },
    #[error("the registry {registry} (GET {path}): {source}")]
    Send { registry: String, path: String, source: hyper::Error },
    #[error("the registry {registry} {how} to `{url}`, not a URL")]
    NotAUrl {
        registry: String,
        how: &'static str,
        url: String,
        #[source]
        source: InvalidUri,
    },
    #[error("the registry {registry} {how} to {authority} ({url}): refused, plain HTTP goes to the registry named and no other host")]
    OtherHost { registry: String, how: &'static str, authority: String, url: String },
    #[error("the registry {registry} asks for credentials (`{challenge}`), which the probe does not send")]
    Credentials { registry: String, challenge: String },
    #[error("the registry {registry}'s token realm answered {status}")]
    RealmAnswered { registry: String, status: StatusCode },
    #[error("the token answer is not JSON: {0}")]
    TokenNotJson(#[source] serde_json::Error),
    #[error("the token answer holds no token")]
    NoToken,
    #[error("{what} is announced at {length} bytes, over its cap of {cap}: refused")]
    Announced { what: String, length: u64, cap: u64 },
    #[error("reading {what}: {source}")]
    Reading { what: String, source: hyper::Error },
    #[error("{what} runs past its cap of {cap} bytes: cut off")]
    PastCap { what: String, cap: u64 },
    #[error("cannot read the free space of {}: {source}", dir.display())]
    FreeSpace { dir: PathBuf, source: std::io::Error },
}

/// Which blob of a manifest a blob is: its config, or its layer N (from 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Config,
    Layer(usize),
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Role::Config => f.write_str("config"),
            Role::Layer(n) => write!(f, "layer {n}"),
        }
    }
}

/// Why a blob's body stopped streaming into its file.
#[derive(Debug, thiserror::Error)]
pub enum StreamError {
    #[error("reading after {read} bytes: {source}")]
    Reading { read: u64, source: hyper::Error },
    #[error("the registry sent more than the {size} bytes declared: cut off")]
    PastSize { size: u64 },
    #[error("writing: {0}")]
    Writing(#[source] std::io::Error),
}

/// How often a pull looks whether a signal stopped the run.
const INTERRUPT_TICK: std::time::Duration = std::time::Duration::from_millis(50);

/// Why a pull stopped before it ended.
enum Stopped {
    Deadline,
    Interrupted,
}

/// Pulls `reference` (whose registry must be this machine's loopback) by its digest into a
/// new OCI layout at `dir`, by `budget` (its deadline, or its cancellation by a signal).
pub fn pull(reference: &ImageReference, dir: &Path, budget: &Budget) -> Result<(), PullFailure> {
    let registry = reference.registry().unwrap_or_default().to_owned();
    let address = reference
        .loopback_registry_address()
        .ok_or_else(|| PullFailure::new(DistributionError::NotLoopback { registry: registry.clone() }))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|source| PullFailure::new(DistributionError::ClientStart { registry: registry.clone(), source }))?;
    let mut client = Client { registry, address, repository: reference.repository().to_owned(), token: None, current: String::new() };
    let outcome = runtime.block_on(async {
        let until = tokio::time::Instant::from_std(budget.instant());
        let mut pulling = std::pin::pin!(client.pull(reference.digest(), dir));
        // Woken every tick to see whether a signal cancelled the budget.
        loop {
            let tick = (tokio::time::Instant::now() + INTERRUPT_TICK).min(until);
            match tokio::time::timeout_at(tick, &mut pulling).await {
                Ok(result) => return Ok(result),
                Err(_) if budget.cancelled().is_some() => return Err(Stopped::Interrupted),
                Err(_) if tokio::time::Instant::now() >= until => return Err(Stopped::Deadline),
                Err(_) => {}
            }
        }
    });
    // Dropping the runtime ends every connection still open.
    drop(runtime);
    let cut_off = if client.current.is_empty() { String::from("connecting") } else { client.current };
    let registry = client.registry;
    match outcome {
        // The caller names the reference; each message names the registry or the blob.
        Ok(result) => result.map_err(PullFailure::new),
        Err(Stopped::Deadline) => Err(PullFailure::new(DistributionError::Deadline { registry, cut_off })),
        Err(Stopped::Interrupted) => Err(PullFailure::new(DistributionError::Interrupted {
            signal: budget.cancelled().map_or("a signal", checkfu_wire_sandbox::budget::describe),
            registry,
            cut_off,
        })),
    }
}

/// One pull's connection details and progress.
struct Client {
    /// `HOST[:PORT]` as the reference names it: the only authority requests go to.
    registry: String,
    address: SocketAddr,
    repository: String,
    /// A bearer token from the registry's own realm, once it asked for one.
    token: Option<String>,
    /// What the pull is doing, for the deadline's error.
    current: String,
}

impl Client {
    async fn pull(&mut self, digest: &Digest, dir: &Path) -> Result<(), DistributionError> {
        let blobs = dir.join("blobs").join("sha256");
        std::fs::create_dir_all(&blobs).map_err(|source| DistributionError::MakeDir { path: blobs.clone(), source })?;
        let (media_type, size) = self.manifest(digest, None, dir, 0).await?;
        write_file(&dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        let index = serde_json::json!({
            "schemaVersion": 2,
            "manifests": [{"mediaType": media_type.to_string(), "digest": digest.to_string(), "size": size}],
        });
        write_file(&dir.join("index.json"), index.to_string().as_bytes())
    }

    /// Fetches the manifest or index `digest` (its size checked when a descriptor declared
    /// it), follows an index to this machine's platform, then fetches the config and the
    /// layers. Returns the media type and size of what `digest` named.
    async fn manifest(
        &mut self,
        digest: &Digest,
        declared: Option<u64>,
        dir: &Path,
        depth: usize,
    ) -> Result<(MediaType, u64), DistributionError> {
        self.current = format!("reading the manifest {digest}");
        let path = format!("/v2/{}/manifests/{digest}", self.repository);
        let response = self.get(&path, Some(&manifest_types())).await?;
        let header_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let cap = declared.unwrap_or(MAX_JSON_BYTES);
        if cap > MAX_JSON_BYTES {
            return Err(DistributionError::ManifestOverCap { digest: digest.clone(), cap });
        }
        let bytes = read_capped(response, cap, &format!("the manifest {digest}")).await?;
        if let Some(size) = declared.filter(|&s| s != bytes.len() as u64) {
            return Err(DistributionError::ManifestSize { digest: digest.clone(), size, sent: bytes.len() });
        }
        let actual = digest_of(&bytes);
        if &actual != digest {
            return Err(DistributionError::ManifestDigest { digest: digest.clone(), actual });
        }
        write_file(&dir.join("blobs").join("sha256").join(digest.digest()), &bytes)?;
        // Parsed once: the JSON value becomes oci-spec's index or manifest.
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|source| DistributionError::ManifestNotJson { digest: digest.clone(), source })?;
        let is_index = value.get("manifests").is_some();
        let media_type = match value.get("mediaType").and_then(|t| t.as_str()) {
            Some(declared) => MediaType::from(declared),
            None => match header_type.split(';').next().unwrap_or_default().trim() {
                "" if is_index => MediaType::ImageIndex,
                "" => MediaType::ImageManifest,
                other => MediaType::from(other),
            },
        };
        if is_index {
            if depth >= MAX_INDEX_DEPTH {
                return Err(DistributionError::IndexTooDeep { digest: digest.clone() });
            }
            let index: ImageIndex =
                serde_json::from_value(value).map_err(|source| DistributionError::NotAnIndex { digest: digest.clone(), source })?;
            let chosen = platform_manifest(&index, digest)?;
            let listed = chosen.digest().to_string();
            let chosen_digest = sha256_digest(&listed).map_err(|source| DistributionError::IndexListing {
                digest: digest.clone(),
                listed: listed.clone(),
                source: Box::new(source),
            })?;
            Box::pin(self.manifest(&chosen_digest, Some(chosen.size()), dir, depth + 1)).await?;
        } else {
            let manifest: ImageManifest =
                serde_json::from_value(value).map_err(|source| DistributionError::NotAManifest { digest: digest.clone(), source })?;
            self.image(&manifest, dir).await?;
        }
        Ok((media_type, bytes.len() as u64))
    }

    /// The config and the layers of `manifest`, after the free space was checked.
    async fn image(&mut self, manifest: &ImageManifest, dir: &Path) -> Result<(), DistributionError> {
        let mut declared: u64 = 0;
        for descriptor in std::iter::once(manifest.config()).chain(manifest.layers()) {
            declared = declared.checked_add(descriptor.size()).ok_or(DistributionError::SizesOverflow)?;
        }
        let free = free_bytes(dir)?;
        if declared > free {
            return Err(DistributionError::NoRoom { declared, dir: dir.to_owned(), free });
        }
        if manifest.config().size() > MAX_JSON_BYTES {
            return Err(DistributionError::ConfigOverCap {
                digest: manifest.config().digest().to_string(),
                size: manifest.config().size(),
            });
        }
        self.blob(Role::Config, manifest.config(), dir).await?;
        for (n, layer) in manifest.layers().iter().enumerate() {
            self.blob(Role::Layer(n + 1), layer, dir).await?;
        }
        Ok(())
    }

    /// Streams one blob into the layout: cut off past its declared size, hashed as it
    /// streams, written under a temporary name and renamed once it checks.
    async fn blob(&mut self, role: Role, descriptor: &Descriptor, dir: &Path) -> Result<(), DistributionError> {
        let listed = descriptor.digest().to_string();
        let digest = sha256_digest(&listed).map_err(|source| DistributionError::BlobListing {
            role,
            listed: listed.clone(),
            source: Box::new(source),
        })?;
        let size = descriptor.size();
        let blobs = dir.join("blobs").join("sha256");
        let target = blobs.join(digest.digest());
        if target.exists() {
            // The same blob listed twice was fetched and checked already.
            return Ok(());
        }
        self.current = format!("reading the {role} {digest} ({size} bytes declared)");
        let response = self.get(&format!("/v2/{}/blobs/{digest}", self.repository), None).await?;
        if let Some(length) = content_length(response.headers()) {
            if length != size {
                return Err(DistributionError::BlobAnnounced { role, digest, size, length });
            }
        }
        let partial = blobs.join(format!("{}.partial", digest.digest()));
        let mut file = File::create(&partial).map_err(|source| DistributionError::Write { path: partial.clone(), source })?;
        let streamed = stream_into(response.into_body(), &mut file, size).await;
        drop(file);
        let checked = match streamed {
            Err(source) => Err(DistributionError::BlobStream { role, digest, source }),
            Ok((read, _)) if read != size => Err(DistributionError::BlobSize { role, digest, size, read }),
            Ok((_, hash)) => match digest_from_sha256(hash) {
                actual if actual != digest => Err(DistributionError::BlobDigest { role, digest, actual }),
                _ => Ok(()),
            },
        };
        match checked {
            Ok(()) => std::fs::rename(&partial, &target).map_err(|source| DistributionError::Write { path: target, source }),
            Err(e) => {
                let _ = std::fs::remove_file(&partial);
                Err(e)
            }
        }
    }

    /// `GET path` on the registry, following redirects to the same `HOST:PORT` only and
    /// answering a bearer challenge from the registry's own realm only; `Err` for any
    /// answer but 200.
    async fn get(&mut self, path: &str, accept: Option<&str>) -> Result<Response<Incoming>, DistributionError> {
        let mut path = path.to_owned();
        let mut authenticated = false;
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send(&path, accept, self.token.clone()).await?;
            let status = response.status();
            if status == StatusCode::OK {
                return Ok(response);
            }
            if status.is_redirection() {
                let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()).unwrap_or_default();
                path = self.same_registry(location, "redirected")?;
                continue;
            }
            if status == StatusCode::UNAUTHORIZED && !authenticated {
                let challenge = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                self.token = Some(self.bearer_token(&challenge).await?);
                authenticated = true;
                continue;
            }
            let quoted = read_capped(response, MAX_QUOTED as u64, "an error answer").await.unwrap_or_default();
            let quoted: String = String::from_utf8_lossy(&quoted).chars().filter(|c| !c.is_control()).take(MAX_QUOTED).collect();
            return Err(DistributionError::Answered { registry: self.registry.clone(), path, status, quoted });
        }
        Err(DistributionError::Redirects { registry: self.registry.clone(), path })
    }

    /// One request on a fresh connection to the registry.
    async fn send(&self, path: &str, accept: Option<&str>, token: Option<String>) -> Result<Response<Incoming>, DistributionError> {
        let registry = || self.registry.clone();
        let stream = tokio::net::TcpStream::connect(self.address)
            .await
            .map_err(|source| DistributionError::Connect { registry: registry(), source })?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|source| DistributionError::Handshake { registry: registry(), source })?;
        // The connection is driven by its own task, which ends when the response's body is
        // read or dropped, or when the pull's runtime is dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let mut request = Request::get(path).header(HOST, &self.registry).header(USER_AGENT, "checkfu-wire-probe");
        if let Some(accept) = accept {
            request = request.header(ACCEPT, accept);
        }
        if let Some(token) = token {
            let value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(DistributionError::TokenNotHeader)?;
            request = request.header(AUTHORIZATION, value);
        }
        let request = request.body(Empty::<Bytes>::new()).map_err(|source| DistributionError::Request { path: path.to_owned(), source })?;
        sender.send_request(request).await.map_err(|source| DistributionError::Send { registry: registry(), path: path.to_owned(), source })
    }

    /// The path of `url` when it names the registry itself over plain HTTP (or is a path
    /// on it); otherwise the refusal, naming the host it would have left for.
    fn same_registry(&self, url: &str, how: &'static str) -> Result<String, DistributionError> {
        if url.starts_with('/') && !url.starts_with("//") {
            return Ok(url.to_owned());
        }
        let uri: Uri =
            url.parse().map_err(|source| DistributionError::NotAUrl { registry: self.registry.clone(), how, url: clip(url), source })?;
        let authority = uri.authority().map(|a| a.as_str().to_ascii_lowercase()).unwrap_or_default();
        let scheme = uri.scheme_str().unwrap_or_default();
        if scheme != "http" || !same_authority(&authority, &self.registry) {
            return Err(DistributionError::OtherHost { registry: self.registry.clone(), how, authority: clip(&authority), url: clip(url) });
        }
        Ok(uri.path_and_query().map_or_else(|| String::from("/"), |p| p.as_str().to_owned()))
    }

    /// A token from the registry's own realm, for a `Bearer` challenge.
    async fn bearer_token(&mut self, challenge: &str) -> Result<String, DistributionError> {
        let Some(params) = challenge.strip_prefix("Bearer ").or_else(|| challenge.strip_prefix("bearer ")) else {
            return Err(DistributionError::Credentials { registry: self.registry.clone(), challenge: clip(challenge) });
        };
        let params = challenge_params(params);
        let realm = params.iter().find(|(k, _)| k == "realm").map(|(_, v)| v.as_str()).unwrap_or_default();
        let mut path = self.same_registry(realm, "named its token realm")?;
        let query: Vec<String> =
            params.iter().filter(|(k, _)| k == "service" || k == "scope").map(|(k, v)| format!("{k}={}", percent_encode(v))).collect();
        if !query.is_empty() {
            path.push(if path.contains('?') { '&' } else { '?' });
            path.push_str(&query.join("&"));
        }
        let response = self.send(&path, None, None).await?;
        if response.status() != StatusCode::OK {
            return Err(DistributionError::RealmAnswered { registry: self.registry.clone(), status: response.status() });
        }
        let body = read_capped(response, MAX_TOKEN_BYTES, "the token answer").await?;
        let value: serde_json::Value = serde_json::from_slice(&body).map_err(DistributionError::TokenNotJson)?;
        value
            .get("token")
            .or_else(|| value.get("access_token"))
            .and_then(|t| t.as_str())
            .map(str::to_owned)
            .ok_or(DistributionError::NoToken)
    }
}

/// The manifest of an index for this machine's platform, as the layout reader selects it.
fn platform_manifest<'a>(index: &'a ImageIndex, digest: &Digest) -> Result<&'a Descriptor, DistributionError> {
    let (os, architecture) = host_platform();
    let manifests = index.manifests();
    let found = manifests.iter().find(|m| m.platform().as_ref().is_some_and(|p| *p.os() == os && *p.architecture() == architecture));
    found.ok_or_else(|| {
        let named: Vec<String> = manifests
            .iter()
            .filter_map(|m| m.platform().as_ref())
            .take(PLATFORMS_NAMED)
            .map(|p| format!("{}/{}", clip(&p.os().to_string()), clip(&p.architecture().to_string())))
            .collect();
        DistributionError::NoPlatform {
            digest: digest.clone(),
            platform: format!("{os}/{architecture}"),
            listed: manifests.len(),
            named: named.join(", "),
        }
    })
}

/// Whether `authority` (from a URL) is the registry `HOST[:PORT]`, port 80 when absent.
fn same_authority(authority: &str, registry: &str) -> bool {
    let with_port = |text: &str| {
        let text = text.to_ascii_lowercase();
        let has_port = match text.rfind(']') {
            Some(close) => text[close..].contains(':'),
            None => text.contains(':'),
        };
        if has_port {
            text
        } else {
            format!("{text}:80")
        }
    };
    !authority.is_empty() && !authority.contains('@') && with_port(authority) == with_port(registry)
}

/// `key="value", key=value` pairs of a challenge, quoted values unescaped.
fn challenge_params(text: &str) -> Vec<(String, String)> {
    let mut params = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect::<String>().trim().to_ascii_lowercase();
        if key.is_empty() {
            return params;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| *c != ',') {
                value.push(c);
            }
            value = value.trim().to_owned();
        }
        params.push((key, value));
    }
}

/// `text` percent-encoded as a query value (unreserved characters kept).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `text` cut to a length an error can quote.
fn clip(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(MAX_QUOTED).collect()
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok())
}

/// A body read whole, at most `cap` bytes: a `Content-Length` over it is refused before a
/// byte is read, and a longer body is cut off as it streams.
async fn read_capped(response: Response<Incoming>, cap: u64, what: &str) -> Result<Vec<u8>, DistributionError> {
    if let Some(length) = content_length(response.headers()).filter(|&l| l > cap) {
        return Err(DistributionError::Announced { what: what.to_owned(), length, cap });
    }
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|source| DistributionError::Reading { what: what.to_owned(), source })?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() as u64 + data.len() as u64 > cap {
                return Err(DistributionError::PastCap { what: what.to_owned(), cap });
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes)
}

/// Streams `body` into `file`, at most `size` bytes (one more is a cut-off), hashing it.
/// Returns the bytes read and their sha256.
async fn stream_into(mut body: Incoming, file: &mut File, size: u64) -> Result<(u64, [u8; 32]), StreamError> {
    let mut hasher = sha2::Sha256::new();
    let mut read: u64 = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|source| StreamError::Reading { read, source })?;
        let Ok(data) = frame.into_data() else { continue };
        read = read.saturating_add(data.len() as u64);
        if read > size {
            return Err(StreamError::PastSize { size });
        }
        hasher.update(&data);
        file.write_all(&data).map_err(StreamError::Writing)?;
    }
    Ok((read, hasher.finalize().into()))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), DistributionError> {
    std::fs::write(path, bytes).map_err(|source| DistributionError::Write { path: path.to_owned(), source })
}

/// The bytes an unprivileged writer may still use on `dir`'s file system.
fn free_bytes(dir: &Path) -> Result<u64, DistributionError> {
    checkfu_wire_sandbox::file::free_bytes(dir).map_err(|source| DistributionError::FreeSpace { dir: dir.to_owned(), source })
}

#[cfg(test)]
mod tests;
