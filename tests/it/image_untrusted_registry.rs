//! `probe --image` against hostile loopback registries, end to end through the
//! `checkfu-wire-dup` binary. The registries are served by this test process on loopback:
//! one trickles its manifest a byte a second, and the run ends at `--deadline` with an error
//! naming what was cut off (exit 1); one redirects its blobs to another host (127.0.0.2),
//! and the pull is refused naming that host, with no connection reaching it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use checkfu_wire_probe::image::{digest_of, Digest};

use crate::probe_support::{probe, Run};
use crate::support::image::BUSYBOX_CLI_FLAGS;

/// How the test registry answers a request for a path.
enum Answer {
    /// A status line's code, extra headers and a body with its length.
    Full(u16, Vec<String>, Vec<u8>),
    /// 200 with the body's length, then the body a byte a second.
    Trickle(Vec<u8>),
}

/// A registry on `ip`, answering each request with `answer(path)`; counts connections.
fn serve(ip: &str, answer: impl Fn(&str) -> Answer + Send + Sync + 'static) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).expect("bind the test registry");
    let address = listener.local_addr().expect("address");
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            std::thread::spawn(move || respond(stream, &*answer));
        }
    });
    (address, connections)
}

fn respond(mut stream: TcpStream, answer: &dyn Fn(&str) -> Answer) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let path = String::from_utf8_lossy(&head).split_whitespace().nth(1).unwrap_or_default().to_owned();
    let _ = match answer(&path) {
        Answer::Full(status, headers, body) => {
            let mut text = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
            for header in headers {
                text.push_str(&header);
                text.push_str("\r\n");
            }
            text.push_str("\r\n");
            stream.write_all(text.as_bytes()).and_then(|()| stream.write_all(&body))
        }
        Answer::Trickle(body) => {
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

/// A manifest (its blobs are never served whole here) and its digest.
fn manifest() -> (Vec<u8>, Digest) {
    let manifest = serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest_of(b"config").to_string(), "size": 6},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest_of(b"layer").to_string(), "size": 5}],
    })
    .to_string()
    .into_bytes();
    let digest = digest_of(&manifest);
    (manifest, digest)
}

/// A registry on loopback that trickles [`manifest`] a byte a second and has nothing else;
/// the reference to pull from it.
pub(crate) fn trickling_registry() -> String {
    let (body, digest) = manifest();
    let (address, _) = serve("127.0.0.1", move |path| {
        if path.contains("/manifests/") {
            Answer::Trickle(body.clone())
        } else {
            Answer::Full(404, Vec::new(), Vec::new())
        }
    });
    format!("{address}/trickle@{digest}")
}

fn run_image(reference: &str, more: &[&str]) -> Run {
    probe(&[BUSYBOX_CLI_FLAGS, &["--image", reference], more].concat(), &[])
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_trickling_registry_ends_at_the_runs_deadline() {
    let reference = trickling_registry();
    let digest = reference.rsplit_once('@').map(|(_, d)| d.to_owned()).unwrap_or_default();
    let run = run_image(&reference, &["--deadline", "2"]);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains("deadline") && run.stderr.contains(&format!("the manifest {digest}")), "{}", run.stderr);
    assert!(run.stderr.lines().all(|line| line.len() <= 1100), "{}", run.stderr);
    assert!(run.json.is_null(), "nothing ran");
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_redirect_off_the_registry_is_refused_naming_the_host() {
    let (other, reached) = serve("127.0.0.2", |_| Answer::Full(200, Vec::new(), b"config".to_vec()));
    let (body, digest) = manifest();
    let (address, _) = serve("127.0.0.1", move |path| {
        if path.contains("/manifests/") {
            Answer::Full(200, Vec::new(), body.clone())
        } else {
            Answer::Full(302, vec![format!("Location: http://{other}/blob")], Vec::new())
        }
    });
    let run = run_image(&format!("{address}/redirect@{digest}"), &["--deadline", "30"]);
    assert_eq!(run.status, 1, "{}", run.stderr);
    assert!(run.stderr.contains(&format!("redirected to {other}")) && run.stderr.contains("refused"), "{}", run.stderr);
    assert_eq!(reached.load(Ordering::SeqCst), 0, "nothing reached the other host");
    assert!(run.json.is_null(), "nothing ran");
}
