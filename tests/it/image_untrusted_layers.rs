//! Images whose shape is the attack, unpacked by the probe's library directly (no external
//! tool): 200,000 entries with 3.9 KB paths must unpack in bounded memory, and 5,000 layers
//! and a tree 1,900 directories deep must unpack and be removed at the common open-file
//! limit of 1024.
//!
//! Each case runs in a child process (this test binary again, running only that test):
//! its peak RSS (`VmHWM`) is its own, and its open-file limit stays out of the other tests.
//! The layouts are written by the parent, streamed to disk, so the child's memory is the
//! unpacker's.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use checkfu_wire_probe::image::{digest_of, sha256_digest, Digest, Limits, OciLayout, Selector, TempDir};
use sha2::Digest as _;

/// The environment variable that tells this binary it is the child, naming the layout.
const CHILD: &str = "CHECKFU_UNTRUSTED_LAYOUT";
const TAR: &str = "application/vnd.oci.image.layer.v1.tar";
const GZIP: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// A tar stream written entry by entry (GNU long names for paths over 100 bytes), hashed
/// as written for the config's diff_id.
struct TarWriter<W: Write> {
    out: W,
    hasher: sha2::Sha256,
}

impl<W: Write> TarWriter<W> {
    fn new(out: W) -> TarWriter<W> {
        TarWriter { out, hasher: sha2::Sha256::new() }
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.out.write_all(bytes)
    }

    fn header(&mut self, name: &[u8], kind: u8, mode: u32, size: u64) -> io::Result<()> {
        let mut size_field = [0u8; 12];
        size_field.copy_from_slice(format!("{size:011o}\0").as_bytes());
        self.raw_header(name, kind, mode, &size_field, b"ustar  \0")
    }

    /// A header with its size field and magic as given, byte for byte.
    fn raw_header(&mut self, name: &[u8], kind: u8, mode: u32, size_field: &[u8; 12], magic: &[u8; 8]) -> io::Result<()> {
        let mut header = [0u8; 512];
        header[..name.len()].copy_from_slice(name);
        header[100..108].copy_from_slice(format!("{mode:07o}\0").as_bytes());
        header[108..116].copy_from_slice(b"0000000\0");
        header[116..124].copy_from_slice(b"0000000\0");
        header[124..136].copy_from_slice(size_field);
        header[136..148].copy_from_slice(b"00000000000\0");
        header[156] = kind;
        header[257..265].copy_from_slice(magic);
        header[148..156].copy_from_slice(b"        ");
        let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
        header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        self.write(&header)
    }

    fn entry(&mut self, path: &[u8], kind: u8, mode: u32, content: &[u8]) -> io::Result<()> {
        if path.len() > 100 {
            let mut record = path.to_vec();
            record.push(0);
            self.header(b"././@LongLink", b'L', 0o644, record.len() as u64)?;
            self.padded(&record)?;
            self.header(&path[..100], kind, mode, content.len() as u64)?;
        } else {
            self.header(path, kind, mode, content.len() as u64)?;
        }
        self.padded(content)
    }

    fn padded(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write(bytes)?;
        let padding = bytes.len().div_ceil(512) * 512 - bytes.len();
        self.write(&vec![0u8; padding])
    }

    /// Ends the archive; returns the writer and the diff_id.
    fn finish(mut self) -> io::Result<(W, Digest)> {
        self.write(&[0u8; 1024])?;
        let diff_id = sha256_digest(&format!("sha256:{:x}", self.hasher.finalize())).map_err(|e| io::Error::other(e.to_string()))?;
        Ok((self.out, diff_id))
    }
}

/// An OCI layout being written: blobs, then the config, manifest and index.
struct Layout {
    dir: TempDir,
    layers: Vec<serde_json::Value>,
    diff_ids: Vec<String>,
}

impl Layout {
    fn new() -> Layout {
        let dir = TempDir::new("checkfu-untrusted-layout").expect("layout dir");
        fs::create_dir_all(dir.path().join("blobs/sha256")).expect("blobs");
        fs::write(dir.path().join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).expect("oci-layout");
        Layout { dir, layers: Vec::new(), diff_ids: Vec::new() }
    }

    fn blob(&self, bytes: &[u8]) -> Digest {
        let digest = digest_of(bytes);
        fs::write(self.dir.path().join("blobs/sha256").join(digest.digest()), bytes).expect("blob");
        digest
    }

    /// A layer written by `build` into a file, gzipped when `gzip`, then moved to its digest.
    fn layer(&mut self, gzip: bool, build: impl FnOnce(&mut TarWriter<&mut dyn Write>) -> io::Result<()>) {
        let staging = self.dir.path().join("staging");
        let mut hashing =
            HashingFile { file: BufWriter::new(File::create(&staging).expect("staging")), hasher: sha2::Sha256::new(), size: 0 };
        let diff_id = if gzip {
            let mut encoder = flate2::write::GzEncoder::new(&mut hashing, flate2::Compression::fast());
            let diff_id = write_tar(&mut encoder, build);
            encoder.finish().expect("gzip");
            diff_id
        } else {
            write_tar(&mut hashing, build)
        };
        hashing.file.flush().expect("flush");
        let digest = format!("sha256:{:x}", hashing.hasher.finalize());
        let hex = digest.trim_start_matches("sha256:");
        fs::rename(&staging, self.dir.path().join("blobs/sha256").join(hex)).expect("rename");
        self.layers.push(serde_json::json!({"mediaType": if gzip { GZIP } else { TAR }, "digest": digest, "size": hashing.size}));
        self.diff_ids.push(diff_id.to_string());
    }

    fn finish(self) -> TempDir {
        self.finish_with(serde_json::json!({}))
    }

    /// The layout with `config` as the image's runtime config (`Env`, `WorkingDir`, …).
    fn finish_with(self, config: serde_json::Value) -> TempDir {
        let config = serde_json::json!({
            "architecture": host_architecture(), "os": "linux", "config": config,
            "rootfs": {"type": "layers", "diff_ids": self.diff_ids},
        })
        .to_string();
        let config_digest = self.blob(config.as_bytes());
        let manifest = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest.to_string(), "size": config.len()},
            "layers": self.layers,
        })
        .to_string();
        let digest = self.blob(manifest.as_bytes());
        let index = serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest.to_string(), "size": manifest.len()}]});
        fs::write(self.dir.path().join("index.json"), index.to_string()).expect("index.json");
        self.dir
    }
}

fn write_tar(out: &mut dyn Write, build: impl FnOnce(&mut TarWriter<&mut dyn Write>) -> io::Result<()>) -> Digest {
    let mut tar = TarWriter::new(out);
    build(&mut tar).expect("layer");
    let (out, diff_id) = tar.finish().expect("tar end");
    out.flush().expect("flush");
    diff_id
}

/// A blob's file, hashed and counted as it is written.
struct HashingFile {
    file: BufWriter<File>,
    hasher: sha2::Sha256,
    size: u64,
}

impl Write for HashingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

fn host_architecture() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Runs `test` (this module's test of that name) in a child process on `layout`, under an
/// open-file limit of `nofile`; returns what the child printed.
fn in_child(test: &str, layout: &Path, nofile: u64) -> String {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command
        .args(["--exact", &format!("image_untrusted_layers::{test}"), "--nocapture", "--test-threads=1", "--include-ignored"])
        .env(CHILD, layout);
    checkfu_wire_sandbox::process::limit_open_files_on_exec(&mut command, nofile);
    let output = command.output().expect("child");
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && text.contains("1 passed"), "the child failed:\n{text}");
    text
}

/// In the child: the layout the parent wrote, or `None` in the parent.
fn child_layout() -> Option<PathBuf> {
    std::env::var_os(CHILD).map(PathBuf::from)
}

/// Unpacks the layout into a fresh root, removes it again, and prints the peak RSS.
fn unpack_and_remove(layout: &Path) -> checkfu_wire_probe::image::UnpackReport {
    let rootfs = TempDir::new("checkfu-untrusted-rootfs").expect("rootfs");
    let layout = OciLayout::open(layout).expect("layout");
    let image = layout.image(Selector::Only).expect("image");
    let report = layout.unpack(&image, rootfs.path(), Limits::default()).expect("unpack");
    let path = rootfs.path().to_owned();
    rootfs.remove().expect("the root filesystem is removed");
    assert!(!path.exists());
    let status = fs::read_to_string("/proc/self/status").expect("status");
    let peak = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    println!("PEAK {}", peak.trim_start_matches("VmHWM:").trim());
    report
}

fn peak_kib(child_output: &str) -> u64 {
    // libtest may print the test's name on the same line before it.
    let after = child_output.split_once("PEAK ").expect("the child's peak").1;
    after.split_whitespace().next().and_then(|n| n.parse().ok()).expect("kB")
}

/// Unpacks `entries` files with 3.9 KB paths (fifteen directories of 250-byte names, then
/// a 120-byte file name) in a child process, as `test`; returns its peak RSS in KiB.
fn long_paths(test: &str, entries: usize) -> u64 {
    if let Some(layout) = child_layout() {
        let report = unpack_and_remove(&layout);
        assert_eq!(report.files, entries as u64);
        return 0;
    }
    let layout = long_paths_layout(entries);
    let peak = peak_kib(&in_child(test, layout.path(), 1024));
    eprintln!("{entries} entries with 3.9 KB paths: peak RSS {peak} kB");
    peak
}

/// The digest of the one image in the OCI layout at `layout` (its `index.json`).
pub(crate) fn manifest_digest(layout: &Path) -> String {
    let index: serde_json::Value = serde_json::from_slice(&fs::read(layout.join("index.json")).expect("index.json")).expect("JSON");
    index["manifests"][0]["digest"].as_str().expect("the manifest's digest").to_owned()
}

/// An OCI layout of one layer given as its blob (`gzip`: a gzip media type) and the
/// decompressed stream its config's diff_id is computed over.
pub(crate) fn layout_with_blob(blob: &[u8], decompressed: &[u8], gzip: bool) -> TempDir {
    let mut layout = Layout::new();
    let digest = layout.blob(blob);
    layout.layers.push(serde_json::json!({"mediaType": if gzip { GZIP } else { TAR }, "digest": digest.to_string(), "size": blob.len()}));
    layout.diff_ids.push(digest_of(decompressed).to_string());
    layout.finish()
}

/// An OCI layout of one small layer (a file) whose image sets `env` (its `Env`).
pub(crate) fn layout_with_env(env: &[&str]) -> TempDir {
    let mut layout = Layout::new();
    layout.layer(false, |tar| tar.entry(b"file", b'0', 0o644, b"x"));
    layout.finish_with(serde_json::json!({ "Env": env }))
}

/// An OCI layout of one gzip layer: `entries` empty files 15 directories of 250 bytes deep
/// (3.9 KB paths), and the digest of its one image's manifest.
pub(crate) fn long_paths_layout(entries: usize) -> TempDir {
    let mut parent = Vec::new();
    for level in 0..15u8 {
        parent.extend(std::iter::repeat_n(b'a' + level, 250));
        parent.push(b'/');
    }
    let mut layout = Layout::new();
    layout.layer(true, |tar| {
        let mut prefix = Vec::new();
        for part in parent.split(|b| *b == b'/').filter(|p| !p.is_empty()) {
            prefix.extend_from_slice(part);
            prefix.push(b'/');
            tar.entry(&prefix, b'5', 0o755, b"")?;
        }
        for i in 0..entries {
            let mut path = parent.clone();
            path.extend(format!("{i:0>120}").as_bytes());
            tar.entry(&path, b'0', 0o644, b"")?;
        }
        Ok(())
    });
    layout.finish()
}

#[test]
fn two_hundred_thousand_long_paths_unpack_in_bounded_memory() {
    let peak = long_paths("two_hundred_thousand_long_paths_unpack_in_bounded_memory", 200_000);
    assert!(peak <= 256 * 1024, "peak RSS {peak} kB is over 256 MB");
}

/// The entry cap itself: about 5 minutes, most of it the file system's, so run on demand.
#[test]
#[ignore = "about 5 minutes: run with --ignored to measure the unpacker at its entry cap"]
fn a_million_long_paths_at_the_entry_cap_unpack_in_bounded_memory() {
    // The 15 directory entries count too: the image holds exactly the cap.
    let peak = long_paths("a_million_long_paths_at_the_entry_cap_unpack_in_bounded_memory", 1_000_000 - 15);
    assert!(peak <= 256 * 1024, "peak RSS {peak} kB is over 256 MB");
}

#[test]
fn five_thousand_layers_unpack_at_1024_open_files() {
    const LAYERS: usize = 5_000;
    if let Some(layout) = child_layout() {
        let report = unpack_and_remove(&layout);
        assert_eq!((report.layers, report.files, report.whiteouts), (LAYERS, LAYERS as u64, LAYERS as u64 - 1));
        return;
    }
    let mut layout = Layout::new();
    for i in 0..LAYERS {
        layout.layer(false, |tar| {
            // Each layer removes the previous layer's file and adds its own.
            if i > 0 {
                tar.entry(format!("d/.wh.f{}", i - 1).as_bytes(), b'0', 0o644, b"")?;
            }
            tar.entry(format!("d/f{i}").as_bytes(), b'0', 0o644, format!("{i}").as_bytes())
        });
    }
    let layout = layout.finish();
    let output = in_child("five_thousand_layers_unpack_at_1024_open_files", layout.path(), 1024);
    eprintln!("5,000 layers: peak RSS {} kB", peak_kib(&output));
}

#[test]
fn a_tree_1900_deep_unpacks_and_is_removed_at_1024_open_files() {
    if let Some(layout) = child_layout() {
        let report = unpack_and_remove(&layout);
        assert_eq!(report.directories, 1900);
        return;
    }
    let mut layout = Layout::new();
    layout.layer(true, |tar| {
        let mut path = Vec::new();
        for _ in 0..1900 {
            path.extend_from_slice(b"d/");
            // Read-only on the way, as an image may make them: removal restores them.
            tar.entry(&path, b'5', 0o555, b"")?;
        }
        Ok(())
    });
    let layout = layout.finish();
    in_child("a_tree_1900_deep_unpacks_and_is_removed_at_1024_open_files", layout.path(), 1024);
}

/// Writes `bytes` zeros as content, a MiB at a time.
fn zeros(tar: &mut TarWriter<&mut dyn Write>, bytes: u64) -> io::Result<()> {
    let chunk = vec![0u8; 1 << 20];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64);
        tar.write(&chunk[..n as usize])?;
        left -= n;
    }
    Ok(())
}

/// The encodings on which a second tar parser and the `tar` crate once disagreed, each
/// followed by a GiB the `tar` crate would have read into memory as a long name: each
/// is refused in its child process at its header, at a peak RSS far below 512 MB.
#[test]
fn tar_encodings_readers_disagree_on_are_refused_in_bounded_memory() {
    const GIB: u64 = 1 << 30;
    const USTAR: &[u8; 8] = b"ustar\x0000";
    const GNU: &[u8; 8] = b"ustar  \0";
    if let Some(layout) = child_layout() {
        let rootfs = TempDir::new("checkfu-untrusted-rootfs").expect("rootfs");
        let layout = OciLayout::open(&layout).expect("layout");
        let image = layout.image(Selector::Only).expect("image");
        let error = layout.unpack(&image, rootfs.path(), Limits::default()).expect_err("refused");
        let status = fs::read_to_string("/proc/self/status").expect("status");
        let peak = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
        println!("REFUSED {error}");
        println!("PEAK {}", peak.trim_start_matches("VmHWM:").trim());
        return;
    }
    type Build = Box<dyn Fn(&mut TarWriter<&mut dyn Write>) -> io::Result<()>>;
    let octal = |size: u64| -> [u8; 12] {
        let mut field = [0u8; 12];
        field.copy_from_slice(format!("{size:011o}\0").as_bytes());
        field
    };
    let pax = |records: &'static [u8]| -> Build {
        Box::new(move |tar| {
            let mut field = [0u8; 12];
            field.copy_from_slice(format!("{:011o}\0", records.len()).as_bytes());
            tar.raw_header(b"PaxHeaders/f", b'x', 0o644, &field, USTAR)?;
            tar.padded(records)?;
            tar.raw_header(b"././@LongLink", b'L', 0o644, &octal(GIB), GNU)?;
            zeros(tar, GIB)
        })
    };
    let cases: Vec<(&str, Build, &str)> = vec![
        (
            "a NUL inside an octal size",
            Box::new(move |tar| {
                tar.raw_header(b"././@LongLink", b'L', 0o644, b"000\x0010000000", GNU)?;
                zeros(tar, GIB)
            }),
            "its header's size field is not a canonical octal or base-256 number",
        ),
        (
            "a base-256 size with high bytes set",
            Box::new(move |tar| {
                tar.raw_header(b"././@LongLink", b'L', 0o644, b"\x80\x01\0\0\0\0\0\0\x40\0\0\0", GNU)?;
                zeros(tar, GIB)
            }),
            "its header's size field is not a canonical octal or base-256 number",
        ),
        ("two pax size records", pax(b"10 size=0\n12 size=512\n"), "pax header: the keyword `size` is repeated"),
        ("a pax record without a space", pax(b"11size=512\n"), "pax header: a record without its length"),
        ("a pax record split by newlines", pax(b"6 a=b\n\n12 size=512\n"), "pax header: a record's length is not a decimal number"),
        (
            "a GiB long name, canonically sized",
            Box::new(move |tar| {
                tar.raw_header(b"././@LongLink", b'L', 0o644, &octal(GIB), GNU)?;
                zeros(tar, GIB)
            }),
            "a GNU long name record of 1073741824 bytes, over the 1048576-byte cap",
        ),
        (
            "a GNU sparse file with 600,000 extension headers",
            Box::new(|tar| {
                let mut header = [0u8; 512];
                header[..1].copy_from_slice(b"s");
                header[100..108].copy_from_slice(b"0000644\0");
                header[108..124].copy_from_slice(b"0000000\x000000000\0");
                header[124..136].copy_from_slice(b"00000000000\0");
                header[136..148].copy_from_slice(b"00000000000\0");
                header[156] = b'S';
                header[257..265].copy_from_slice(GNU);
                header[482] = 1;
                header[148..156].copy_from_slice(b"        ");
                let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
                header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
                tar.write(&header)?;
                let mut extension = [0u8; 512];
                extension[504] = 1;
                for _ in 0..600_000 {
                    tar.write(&extension)?;
                }
                Ok(())
            }),
            "a GNU sparse file, which the runtimes unpack differently",
        ),
    ];
    for (what, build, refusal) in cases {
        let mut layout = Layout::new();
        layout.layer(true, |tar| build(tar));
        let layout = layout.finish();
        let output = in_child("tar_encodings_readers_disagree_on_are_refused_in_bounded_memory", layout.path(), 1024);
        let peak = peak_kib(&output);
        eprintln!("{what}: refused at a peak RSS of {peak} kB");
        assert!(output.contains(refusal), "{what}: {output}");
        assert!(peak <= 512 * 1024, "{what}: peak RSS {peak} kB is over 512 MB");
    }
}
