//! Hostile registries served on loopback by the test process itself: a std listener thread
//! speaking just enough HTTP/1.1, and a small valid image built in code.

use super::*;
use crate::layout::{Limits, OciLayout, Selector};
use crate::reference::loopback_address;
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const INDEX: &str = "application/vnd.oci.image.index.v1+json";

/// What the test registry answers to one request.
enum Reply {
    /// A status, extra headers and a body (sent with its Content-Length).
    Full(u16, Vec<(&'static str, String)>, Vec<u8>),
    /// 200 and zeros until the client hangs up (no length: the body ends at EOF).
    Endless,
    /// 200 with a Content-Length of this many bytes, then zeros until the client hangs up.
    Lying(u64),
    /// 200 with this body's Content-Length, the body one byte a second.
    Trickle(Vec<u8>),
}

/// A listening test registry: its address, how many connections reached it, and the
/// paths it was asked for.
struct Server {
    address: SocketAddr,
    connections: Arc<AtomicUsize>,
    paths: Arc<Mutex<Vec<String>>>,
}

impl Server {
    fn start(ip: &str, answer: impl Fn(&str, &str) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind((ip, 0)).expect("bind the test registry");
        let address = listener.local_addr().expect("address");
        let connections = Arc::new(AtomicUsize::new(0));
        let paths = Arc::new(Mutex::new(Vec::new()));
        let answer = Arc::new(answer);
        let (counted, seen) = (connections.clone(), paths.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counted.fetch_add(1, Ordering::SeqCst);
                let (answer, seen) = (answer.clone(), seen.clone());
                std::thread::spawn(move || handle(stream, &*answer, &seen));
            }
        });
        Server { address, connections, paths }
    }

    fn registry(&self) -> String {
        self.address.to_string()
    }

    fn asked(&self, fragment: &str) -> bool {
        self.paths.lock().expect("paths").iter().any(|p| p.contains(fragment))
    }
}

fn handle(mut stream: TcpStream, answer: &dyn Fn(&str, &str) -> Reply, seen: &Mutex<Vec<String>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or_default().to_owned();
    seen.lock().expect("paths").push(path.clone());
    let zeros = [0u8; 64 * 1024];
    let _ = match answer(&path, &head) {
        Reply::Full(status, headers, body) => {
            let mut text = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for (name, value) in headers {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
            text.push_str("\r\n");
            stream.write_all(text.as_bytes()).and_then(|()| stream.write_all(&body))
        }
        Reply::Endless => stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n").and_then(|()| loop {
            stream.write_all(&zeros)?;
        }),
        Reply::Lying(length) => stream
            .write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n").as_bytes())
            .and_then(|()| loop {
                stream.write_all(&zeros)?;
            }),
        Reply::Trickle(body) => {
            let text = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            stream.write_all(text.as_bytes()).and_then(|()| {
                for byte in body {
                    stream.write_all(&[byte])?;
                    std::thread::sleep(Duration::from_secs(1));
                }
                Ok(())
            })
        }
    };
}

/// A small valid image: one gzip layer holding `hello.txt`, its config and manifest,
/// and an index listing it for this platform (and a foreign one).
struct TestImage {
    blobs: Vec<(Digest, Vec<u8>)>,
    manifest: Digest,
    index: Digest,
    layer: Digest,
}

impl TestImage {
    fn new() -> TestImage {
        let mut tar = tar::Builder::new(Vec::new());
        let content = b"hello from the registry\n";
        let mut header = tar::Header::new_gnu();
        header.set_path("hello.txt").expect("path");
        header.set_size(content.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append(&header, &content[..]).expect("append");
        let tar = tar.into_inner().expect("tar");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        encoder.write_all(&tar).expect("gzip");
        let layer = encoder.finish().expect("gzip");
        let config = serde_json::json!({
            "architecture": host_platform().1.to_string(), "os": "linux",
            "config": {"Cmd": ["/bin/true"]},
            "rootfs": {"type": "layers", "diff_ids": [digest_of(&tar).to_string()]},
        })
        .to_string()
        .into_bytes();
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest_of(&config).to_string(), "size": config.len()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest_of(&layer).to_string(), "size": layer.len()}],
        })
        .to_string()
        .into_bytes();
        let index = serde_json::json!({
            "schemaVersion": 2, "mediaType": INDEX,
            "manifests": [
                {"mediaType": MANIFEST, "digest": digest_of(b"elsewhere").to_string(), "size": 9, "platform": {"os": "plan9", "architecture": "mips"}},
                {"mediaType": MANIFEST, "digest": digest_of(&manifest).to_string(), "size": manifest.len(), "platform": {"os": "linux", "architecture": host_platform().1.to_string()}},
            ],
        })
        .to_string()
        .into_bytes();
        let (manifest_digest, index_digest, layer_digest) = (digest_of(&manifest), digest_of(&index), digest_of(&layer));
        let blobs = [config, layer, manifest, index].into_iter().map(|b| (digest_of(&b), b)).collect();
        TestImage { blobs, manifest: manifest_digest, index: index_digest, layer: layer_digest }
    }

    fn bytes(&self, digest: &str) -> Option<Vec<u8>> {
        self.blobs.iter().find(|(d, _)| d.to_string() == digest).map(|(_, b)| b.clone())
    }

    /// The registry's answer to `path`: manifests and blobs by digest, 404 otherwise.
    fn answer(&self, path: &str) -> Reply {
        let digest = path.rsplit('/').next().unwrap_or_default();
        match self.bytes(digest) {
            Some(bytes) if path.contains("/manifests/") => {
                let media_type = if digest == self.index.to_string() { INDEX } else { MANIFEST };
                Reply::Full(200, vec![("Content-Type", media_type.to_owned())], bytes)
            }
            Some(bytes) if path.contains("/blobs/") => Reply::Full(200, Vec::new(), bytes),
            _ => Reply::Full(404, Vec::new(), b"{\"errors\":[{\"code\":\"BLOB_UNKNOWN\"}]}".to_vec()),
        }
    }
}

fn reference(server: &Server, digest: &Digest) -> ImageReference {
    ImageReference::parse(&format!("{}/test@{digest}", server.registry())).expect("reference")
}

/// The pull, on a thread, with a watchdog well past its deadline so a hang fails the
/// test instead of holding it.
fn pull_within(reference: ImageReference, dir: &Path, deadline: Duration) -> Result<(), PullFailure> {
    let (sender, receiver) = std::sync::mpsc::channel();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let _ = sender.send(pull(&reference, &dir, &checkfu_wire_sandbox::budget::Budget::after(deadline)));
    });
    receiver.recv_timeout(deadline + Duration::from_secs(10)).expect("the pull returned")
}

fn unpacked_hello(dir: &Path) -> String {
    let layout = OciLayout::open(dir).expect("open the pulled layout");
    let image = layout.image(Selector::Only).expect("the pulled image");
    let root = tempfile::tempdir().expect("root");
    layout.unpack(&image, root.path(), Limits::default()).expect("unpack");
    std::fs::read_to_string(root.path().join("hello.txt")).expect("hello.txt")
}

#[test]
fn a_good_pull_through_an_index_unpacks() {
    let image = Arc::new(TestImage::new());
    let served = image.clone();
    let server = Server::start("127.0.0.1", move |path, _| served.answer(path));
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path().join("layout");
    pull_within(reference(&server, &image.index), &dir, Duration::from_secs(30)).expect("pull");
    assert_eq!(unpacked_hello(&dir), "hello from the registry\n");
    assert!(!server.asked(digest_of(b"elsewhere").as_ref()), "the foreign platform's manifest is not fetched");
}

#[test]
fn a_redirect_and_a_token_on_the_registry_itself_are_followed() {
    let image = Arc::new(TestImage::new());
    let served = image.clone();
    let address = Arc::new(Mutex::new(String::new()));
    let realm = address.clone();
    let server = Server::start("127.0.0.1", move |path, head| {
        let authorized = head.to_ascii_lowercase().contains("authorization: bearer t0ken");
        if let Some(rest) = path.strip_prefix("/token?") {
            assert!(rest.contains("scope=repository%3Atest%3Apull"), "{rest}");
            return Reply::Full(200, Vec::new(), br#"{"token":"t0ken"}"#.to_vec());
        }
        if !authorized {
            let challenge = format!(r#"Bearer realm="http://{}/token",service="test",scope="repository:test:pull""#, realm.lock().unwrap());
            return Reply::Full(401, vec![("WWW-Authenticate", challenge)], Vec::new());
        }
        match path.strip_prefix("/v2/test/blobs/") {
            Some(digest) => Reply::Full(307, vec![("Location", format!("/storage/{digest}"))], Vec::new()),
            None => served.answer(&path.replace("/storage/", "/v2/test/blobs/")),
        }
    });
    *address.lock().unwrap() = server.registry();
    let work = tempfile::tempdir().expect("tempdir");
    let dir = work.path().join("layout");
    pull_within(reference(&server, &image.manifest), &dir, Duration::from_secs(30)).expect("pull");
    assert_eq!(unpacked_hello(&dir), "hello from the registry\n");
    assert!(server.asked("/storage/"), "the blobs were redirected");
}

#[test]
fn an_endless_layer_is_cut_off_at_its_declared_size() {
    let image = Arc::new(TestImage::new());
    let (served, layer) = (image.clone(), image.layer.to_string());
    let server = Server::start("127.0.0.1", move |path, _| if path.ends_with(&layer) { Reply::Endless } else { served.answer(path) });
    let work = tempfile::tempdir().expect("tempdir");
    let error = pull_within(reference(&server, &image.manifest), &work.path().join("layout"), Duration::from_secs(30)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&image.layer.to_string()) && message.contains("more than the") && message.contains("cut off"), "{message}");
    assert!(message.len() <= MAX_ERROR);
    let partial = work.path().join("layout/blobs/sha256").join(format!("{}.partial", image.layer.digest()));
    assert!(!partial.exists() && !work.path().join("layout/blobs/sha256").join(image.layer.digest()).exists());
}

#[test]
fn a_lying_content_length_is_refused_at_once() {
    let image = Arc::new(TestImage::new());
    let (served, layer) = (image.clone(), image.layer.to_string());
    let server =
        Server::start("127.0.0.1", move |path, _| if path.ends_with(&layer) { Reply::Lying(64 << 30) } else { served.answer(path) });
    let work = tempfile::tempdir().expect("tempdir");
    // A generous deadline: the refusal must come from the length, not from the clock.
    let error = pull_within(reference(&server, &image.manifest), &work.path().join("layout"), Duration::from_secs(60)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&image.layer.to_string()) && message.contains("announced 68719476736"), "{message}");
}

#[test]
fn a_trickled_manifest_ends_at_the_deadline() {
    let image = Arc::new(TestImage::new());
    let served = image.clone();
    let server = Server::start("127.0.0.1", move |path, _| match served.answer(path) {
        Reply::Full(200, _, body) if path.contains("/manifests/") => Reply::Trickle(body),
        other => other,
    });
    let work = tempfile::tempdir().expect("tempdir");
    let error = pull_within(reference(&server, &image.manifest), &work.path().join("layout"), Duration::from_secs(2)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("deadline") && message.contains(&format!("the manifest {}", image.manifest)), "{message}");
}

#[test]
fn a_redirect_to_another_host_is_refused_naming_it() {
    let other = Server::start("127.0.0.2", |_, _| Reply::Full(200, Vec::new(), Vec::new()));
    let elsewhere = format!("http://{}/stolen", other.registry());
    let image = Arc::new(TestImage::new());
    let served = image.clone();
    let server = Server::start("127.0.0.1", move |path, _| {
        if path.contains("/blobs/") {
            Reply::Full(302, vec![("Location", elsewhere.clone())], Vec::new())
        } else {
            served.answer(path)
        }
    });
    let work = tempfile::tempdir().expect("tempdir");
    let error = pull_within(reference(&server, &image.manifest), &work.path().join("layout"), Duration::from_secs(30)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&format!("redirected to {}", other.registry())) && message.contains("refused"), "{message}");
    assert_eq!(other.connections.load(Ordering::SeqCst), 0, "nothing reached the other host");
}

#[test]
fn a_token_realm_on_another_host_is_refused_naming_it() {
    let other = Server::start("127.0.0.2", |_, _| Reply::Full(200, Vec::new(), br#"{"token":"x"}"#.to_vec()));
    let challenge = format!(r#"Bearer realm="http://{}/token",service="test""#, other.registry());
    let server = Server::start("127.0.0.1", move |_, _| Reply::Full(401, vec![("WWW-Authenticate", challenge.clone())], Vec::new()));
    let image = TestImage::new();
    let work = tempfile::tempdir().expect("tempdir");
    let error = pull_within(reference(&server, &image.manifest), &work.path().join("layout"), Duration::from_secs(30)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&format!("named its token realm to {}", other.registry())) && message.contains("refused"), "{message}");
    assert_eq!(other.connections.load(Ordering::SeqCst), 0, "nothing reached the other host");
}

#[test]
fn layers_larger_than_the_free_space_are_not_fetched() {
    let config = br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#.to_vec();
    let huge = digest_of(b"huge");
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": MANIFEST,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest_of(&config).to_string(), "size": config.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": huge.to_string(), "size": 1u64 << 62}],
    })
    .to_string()
    .into_bytes();
    let manifest_digest = digest_of(&manifest);
    let served = manifest.clone();
    let server = Server::start("127.0.0.1", move |path, _| {
        if path.contains("/manifests/") {
            Reply::Full(200, Vec::new(), served.clone())
        } else {
            Reply::Endless
        }
    });
    let work = tempfile::tempdir().expect("tempdir");
    let error = pull_within(reference(&server, &manifest_digest), &work.path().join("layout"), Duration::from_secs(30)).unwrap_err();
    let message = error.to_string();
    assert!(message.contains(&format!("declared at {}", (1u64 << 62) + config.len() as u64)) && message.contains("free"), "{message}");
    assert!(!server.asked("/blobs/"), "no blob was fetched");
}

#[test]
fn only_loopback_registries_are_pulled_and_challenges_parse() {
    assert_eq!(loopback_address("127.0.0.1:5000"), Some("127.0.0.1:5000".parse().unwrap()));
    assert_eq!(loopback_address("localhost"), Some("127.0.0.1:80".parse().unwrap()));
    assert_eq!(loopback_address("[::1]:5000"), Some("[::1]:5000".parse().unwrap()));
    assert_eq!(loopback_address("10.0.0.1:5000"), None);
    assert_eq!(loopback_address("example.com"), None);
    assert_eq!(loopback_address("127.0.0.1:x"), None);
    let params = challenge_params(r#"realm="http://h/token",service=reg,scope="repository:a:pull,push""#);
    assert_eq!(params[0], (String::from("realm"), String::from("http://h/token")));
    assert_eq!(params[1], (String::from("service"), String::from("reg")));
    assert_eq!(params[2], (String::from("scope"), String::from("repository:a:pull,push")));
    assert!(same_authority("127.0.0.1", "127.0.0.1:80") && !same_authority("127.0.0.1:81", "127.0.0.1:80"));
    assert!(!same_authority("user@127.0.0.1:80", "127.0.0.1:80"));
    assert!(PullFailure::new(DistributionError::NotLoopback { registry: "x".repeat(5000) }).to_string().len() <= MAX_ERROR);
}

#[test]
fn manifest_requests_accept_oci_and_docker_manifests_and_indexes() {
    assert_eq!(
        manifest_types(),
        "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, \
         application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json"
    );
}
