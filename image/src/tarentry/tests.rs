//! The entry reader held to other readers: every layer here, hostile or not, is either
//! refused or unpacked to the tree GNU tar unpacks from the same bytes.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use proptest::prelude::*;

use super::super::fixture::*;
use super::super::layout::LayoutError;
use super::super::Limits;
use super::{canonical_number, parse_pax, TarError, MAX_METADATA_BYTES};

/// A raw GNU header of `kind` with `size`, for records the `tar` crate's builder would not
/// write as given.
fn raw_header(kind: u8, name: &[u8], size: u64) -> Vec<u8> {
    header_of(tar::Header::new_gnu(), kind, name, size)
}

/// A raw ustar header (pax records ride on these).
fn ustar_header(kind: u8, name: &[u8], size: u64) -> Vec<u8> {
    header_of(tar::Header::new_ustar(), kind, name, size)
}

fn header_of(mut header: tar::Header, kind: u8, name: &[u8], size: u64) -> Vec<u8> {
    header.as_old_mut().name[..name.len()].copy_from_slice(name);
    header.set_entry_type(tar::EntryType::new(kind));
    header.set_mode(0o644);
    header.set_size(size);
    header.set_cksum();
    header.as_bytes().to_vec()
}

/// `header` with its size field replaced by `field` and its checksum set again.
fn with_size_field(header: Vec<u8>, field: &[u8; 12]) -> Vec<u8> {
    let mut header = header;
    header[124..136].copy_from_slice(field);
    reseal(header)
}

fn reseal(mut header: Vec<u8>) -> Vec<u8> {
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|b| u32::from(*b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    header
}

fn padded(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.resize(bytes.len().div_ceil(512) * 512, 0);
    bytes
}

fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let body = format!(" {key}={value}\n");
    let mut length = body.len() + 1;
    while format!("{length}{body}").len() != length {
        length += 1;
    }
    format!("{length}{body}").into_bytes()
}

fn pax_header(records: &[u8]) -> Vec<u8> {
    let mut out = ustar_header(b'x', b"PaxHeaders/f", records.len() as u64);
    out.extend(padded(records.to_vec()));
    out
}

fn file_entry(name: &[u8], content: &[u8]) -> Vec<u8> {
    let mut out = raw_header(b'0', name, content.len() as u64);
    out.extend(padded(content.to_vec()));
    out
}

fn end(mut layer: Vec<u8>) -> Vec<u8> {
    layer.extend([0u8; 1024]);
    layer
}

/// What a tree holds: each path's type, permission bits and content or target.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let meta = fs::symlink_metadata(&path).expect("metadata");
            let relative = path.strip_prefix(root).expect("below").display().to_string();
            let mode = meta.permissions().mode() & 0o777;
            let what = if meta.file_type().is_symlink() {
                format!("symlink -> {}", fs::read_link(&path).expect("link").display())
            } else if meta.is_dir() {
                pending.push(path.clone());
                format!("dir {mode:o}")
            } else {
                format!("file {mode:o} nlink {} {:?}", meta.nlink(), String::from_utf8_lossy(&fs::read(&path).expect("read")))
            };
            out.insert(relative, what);
        }
    }
    out
}

/// GNU tar's tree from `layer`, or `None` where GNU tar reports an error.
fn gnu_tar_tree(layer: &[u8]) -> Option<BTreeMap<String, String>> {
    let dir = tempfile::tempdir().expect("tempdir");
    let archive = dir.path().join("layer.tar");
    fs::write(&archive, layer).expect("write");
    let out = dir.path().join("out");
    fs::create_dir(&out).expect("out");
    let status = Command::new("tar")
        .args(["--no-same-owner", "--same-permissions", "--delay-directory-restore", "-xf"])
        .arg(&archive)
        .arg("-C")
        .arg(&out)
        .env("LC_ALL", "C")
        .output()
        .expect("GNU tar runs");
    // Exit 1 is "some files differ", 2 a fatal error.
    if !status.status.success() {
        return None;
    }
    Some(tree(&out))
}

/// Our tree from `layer` (an uncompressed layer), or the refusal.
fn our_tree(layer: &[u8]) -> Result<BTreeMap<String, String>, LayoutError> {
    let fixture = Fixture::new();
    fixture.image(&[(layer.to_vec(), TAR)]);
    fixture.unpack(Limits::default())?;
    Ok(tree(fixture.rootfs.path()))
}

/// Refused by us, or the same tree GNU tar makes; returns our refusal.
fn refused_or_as_gnu_tar(layer: &[u8]) -> Option<String> {
    match our_tree(layer) {
        Err(refusal) => Some(refusal.to_string()),
        Ok(ours) => {
            let theirs = gnu_tar_tree(layer);
            assert_eq!(Some(&ours), theirs.as_ref(), "unpacked to a tree GNU tar does not make");
            None
        }
    }
}

fn refusal(layer: &[u8]) -> String {
    refused_or_as_gnu_tar(layer).expect("refused")
}

#[test]
fn ordinary_layers_unpack_as_gnu_tar_unpacks_them() {
    let mut builder = tar::Builder::new(Vec::new());
    let long = format!("{}/{}", "d".repeat(120), "f".repeat(130));
    for (path, content) in [("a/b", &b"x"[..]), (long.as_str(), b"long"), ("c", b"")] {
        let mut header = tar::Header::new_gnu();
        header.set_mode(0o640);
        header.set_size(content.len() as u64);
        builder.append_data(&mut header, path, content).expect("append");
    }
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Symlink);
    header.set_size(0);
    header.set_mode(0o777);
    builder.append_link(&mut header, "l", "t".repeat(150)).expect("long link");
    // A path given by pax, on a ustar header.
    builder.append_pax_extensions([("path", &b"p/from-pax"[..]), ("mtime", b"1.5")]).expect("pax");
    let mut header = tar::Header::new_ustar();
    header.set_mode(0o600);
    header.set_size(3);
    header.set_path("short").expect("path");
    header.set_cksum();
    builder.append(&header, &b"pax"[..]).expect("append");
    let layer = builder.into_inner().expect("tar");
    assert_eq!(refused_or_as_gnu_tar(&layer), None, "an ordinary layer is unpacked");
    let ours = our_tree(&layer).expect("unpacked");
    assert!(ours.contains_key("p/from-pax") && ours.contains_key(&long) && !ours.contains_key("short"), "{ours:?}");
}

#[test]
fn metadata_records_over_the_cap_are_refused_at_their_header() {
    // 3 GiB claimed, 4 MiB given: refused before a byte of it is read.
    let mut layer = raw_header(b'L', b"././@LongLink", 3 << 30);
    layer.extend(padded(vec![b'a'; 4 << 20]));
    let error = refusal(&layer);
    assert!(error.ends_with("a GNU long name record of 3221225472 bytes, over the 1048576-byte cap"), "{error}");
    let mut layer = ustar_header(b'x', b"PaxHeaders/f", MAX_METADATA_BYTES + 1);
    layer.extend(padded(vec![b'a'; 4096]));
    let error = refusal(&layer);
    assert!(error.ends_with("a pax header record of 1048577 bytes, over the 1048576-byte cap"), "{error}");
}

#[test]
fn size_fields_other_readers_could_read_differently_are_refused() {
    // GNU tar reads up to the NUL (0); the `tar` crate read up to it too, and Go refuses:
    // a layer whose next header moves with the reader.
    let nul_inside = with_size_field(raw_header(b'0', b"f", 0), b"0000\x000001000");
    let layer = end([nul_inside, padded(vec![b'a'; 512]), file_entry(b"g", b"g")].concat());
    assert!(refusal(&layer).ends_with("its header's size field is not a canonical octal or base-256 number"));
    // Base-256 with a high byte set: the `tar` crate reads the last eight bytes only.
    let high = with_size_field(raw_header(b'0', b"f", 0), b"\x80\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00");
    let layer = end([high, padded(vec![b'a'; 512]), file_entry(b"g", b"g")].concat());
    assert!(refusal(&layer).ends_with("its header's size field is not a canonical octal or base-256 number"));
    // Canonical base-256 is read as every reader reads it.
    let base256 = with_size_field(raw_header(b'0', b"f", 0), b"\x80\0\0\0\0\0\0\0\0\0\0\x05");
    let layer = end([base256, padded(b"12345".to_vec()), file_entry(b"g", b"g")].concat());
    assert_eq!(refused_or_as_gnu_tar(&layer), None);
}

#[test]
fn pax_records_readers_disagree_on_are_refused() {
    // Two `size` records: the `tar` crate takes the first, GNU tar, Go and Python the last.
    let records = [pax_record("size", "0"), pax_record("size", "512")].concat();
    let layer = end([pax_header(&records), raw_header(b'0', b"f", 0), file_entry(b"h.sh", b"inner")].concat());
    assert!(refusal(&layer).ends_with("pax header: the keyword `size` is repeated"));
    // A `size` that is not the header's: the raw framing and pax-aware readers part.
    let layer = end([pax_header(&pax_record("size", "512")), raw_header(b'0', b"f", 0), file_entry(b"h.sh", b"x")].concat());
    assert!(refusal(&layer).ends_with("pax header: its `size` is not the header's size"));
    // A record without its space, and one split by newlines.
    for records in [&b"12size=512\n"[..], b"6 a=b\n\n13 size=512\n", b"9 a=b\nc\n"] {
        let layer = end([pax_header(records), file_entry(b"f", b"x")].concat());
        assert!(refusal(&layer).contains("pax header: a record"), "{}", String::from_utf8_lossy(records));
    }
    // A sparse map given by pax (GNU's 0.x and 1.0 sparse formats).
    let layer = end([pax_header(&pax_record("GNU.sparse.major", "1")), file_entry(b"f", b"x")].concat());
    assert!(refusal(&layer).ends_with("a GNU sparse file, which the runtimes unpack differently"));
    // A long name and a pax path both naming the entry.
    let mut long = raw_header(b'L', b"././@LongLink", 5);
    long.extend(padded(b"long\0".to_vec()));
    let layer = end([long, pax_header(&pax_record("path", "pax")), file_entry(b"f", b"x")].concat());
    assert!(refusal(&layer).ends_with("both a GNU long name and a pax `path` name the entry"));
}

#[test]
fn sparse_entries_are_refused_before_any_map_is_built() {
    // 600,000 extension headers behind one sparse header: refused at the first.
    let mut sparse = raw_header(b'S', b"s", 0);
    sparse[482] = 1; // isextended
    let sparse = reseal(sparse);
    let mut layer = sparse;
    let mut extension = vec![0u8; 512];
    extension[504] = 1;
    for _ in 0..600_000 {
        layer.extend_from_slice(&extension);
    }
    let error = refusal(&end(layer));
    assert!(error.ends_with("a GNU sparse file, which the runtimes unpack differently"), "{error}");
}

#[test]
fn content_after_a_header_that_carries_none_is_refused() {
    // Go's reader reads the next header right after a symlink's; the `tar` crate skips
    // the size the header gives.
    let mut symlink = raw_header(b'2', b"l", 512);
    symlink[157..160].copy_from_slice(b"abc");
    let layer = end([reseal(symlink), file_entry(b"hidden", b"x")].concat());
    assert!(refusal(&layer).ends_with("content of 512 bytes after a header that carries none"));
}

#[test]
fn the_archive_ends_at_its_first_zero_block_and_nothing_follows() {
    // GNU tar reads on past a lone zero block; the `tar` crate stops.
    let layer = [file_entry(b"a", b"a"), vec![0u8; 512], file_entry(b"b", b"b"), vec![0u8; 1024]].concat();
    let error = refusal(&layer);
    assert!(error.ends_with("bytes other than zeros follow the end of the archive"), "{error}");
    // Zero padding to a record's size is read out.
    let mut layer = end(file_entry(b"a", b"a"));
    layer.resize(10240, 0);
    assert_eq!(refused_or_as_gnu_tar(&layer), None);
}

#[test]
fn magic_that_readers_take_for_different_layouts_is_refused() {
    // `ustar\0` with another version: GNU tar joins the prefix, Go and the `tar` crate do not.
    let mut header = ustar_header(b'0', b"f", 1);
    header[345..349].copy_from_slice(b"pre\0");
    header[263..265].copy_from_slice(b"xx");
    let layer = end([reseal(header), padded(b"x".to_vec())].concat());
    assert!(refusal(&layer).ends_with("its header's magic and version are neither ustar's nor GNU's"));
}

#[test]
fn every_gzip_member_is_read() {
    // Two members: the second's `/h.sh` replaces the first's, as containerd and podman
    // apply it; the diff_id covers both members' content.
    let first = tar_of(|t| file(t, "h.sh", 0o755, b"first"));
    let second = tar_of(|t| file(t, "h.sh", 0o755, b"second"));
    // The first member's tar without its end blocks, so the stream is one archive.
    let first_body = first[..1024].to_vec();
    let whole = [first_body.clone(), second.clone()].concat();
    let blob = [gzip(&first_body), gzip(&second)].concat();
    let fixture = Fixture::new();
    fixture.image_blobs(&[(blob, whole, GZIP)]);
    fixture.unpack(Limits::default()).expect("both members unpacked");
    assert_eq!(fs::read(fixture.root("h.sh")).unwrap(), b"second");
}

#[test]
fn pax_parsing_is_strict() {
    assert_eq!(parse_pax(b"").unwrap(), vec![]);
    assert_eq!(parse_pax(&pax_record("path", "a b=c")).unwrap(), vec![(b"path".to_vec(), b"a b=c".to_vec())]);
    for bad in [&b"05 a=\n"[..], b"+6 a=b\n", b"6 a=b", b"5 =b\n", b"7 a=b\n\0", b"99999999999999999999999 a=b\n"] {
        assert!(matches!(parse_pax(bad), Err(TarError::Pax(_))), "{}", String::from_utf8_lossy(bad));
    }
    assert!(parse_pax(&pax_record("uid", "12x")).is_err());
    assert!(parse_pax(&pax_record("mtime", "1.")).is_err());
    assert!(parse_pax(&pax_record("mtime", "-1.25")).is_ok());
}

#[test]
fn numbers_are_canonical() {
    assert_eq!(canonical_number(b"0000644\0"), Some(0o644));
    assert_eq!(canonical_number(b"  644 \0\0"), Some(0o644));
    assert_eq!(canonical_number(b"\0\0\0\0\0\0\0\0"), Some(0));
    assert_eq!(canonical_number(b"0644\x00123"), None);
    assert_eq!(canonical_number(b"06 44\0\0\0\0"), None);
    assert_eq!(canonical_number(b"0648\0\0\0\0"), None);
    assert_eq!(canonical_number(b"\x80\0\0\0\0\0\0\0\0\0\x01\x00"), Some(256));
    assert_eq!(canonical_number(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), None);
    assert_eq!(canonical_number(b"\x80\x80\0\0\0\0\0\0\0\0\0\0"), None);
}

/// One generated record for the differential property.
#[derive(Clone, Debug)]
enum Generated {
    File { name_len: usize, size: usize, mode: u32 },
    Directory { name_len: usize },
    Symlink { name_len: usize, target_len: usize },
    PaxPath { size: usize },
}

fn generated() -> impl Strategy<Value = Generated> {
    prop_oneof![
        (1usize..220, 0usize..1100, 0o400u32..0o777).prop_map(|(name_len, size, mode)| Generated::File { name_len, size, mode }),
        (1usize..150).prop_map(|name_len| Generated::Directory { name_len }),
        (1usize..150, 1usize..200).prop_map(|(name_len, target_len)| Generated::Symlink { name_len, target_len }),
        (0usize..700).prop_map(|size| Generated::PaxPath { size }),
    ]
}

fn name(n: usize, len: usize) -> String {
    let mut name = format!("e{n}");
    while name.len() < len {
        name.push(if name.len() % 60 == 59 { '/' } else { 'x' });
    }
    name.truncate(len.max(1));
    name.trim_end_matches('/').to_owned()
}

fn archive(entries: &[Generated]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (n, generated) in entries.iter().enumerate() {
        match generated {
            Generated::File { name_len, size, mode } => {
                let mut header = tar::Header::new_gnu();
                header.set_mode(*mode);
                header.set_size(*size as u64);
                builder.append_data(&mut header, name(n, *name_len), &vec![b'c'; *size][..]).expect("file");
            }
            Generated::Directory { name_len } => {
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{}/", name(n, *name_len)), &[][..]).expect("dir");
            }
            Generated::Symlink { name_len, target_len } => {
                let mut header = tar::Header::new_gnu();
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, name(n, *name_len), "t".repeat(*target_len)).expect("symlink");
            }
            Generated::PaxPath { size } => {
                let path = format!("pax-{n}");
                builder.append_pax_extensions([("path", path.as_bytes())]).expect("pax");
                let mut header = tar::Header::new_ustar();
                header.set_mode(0o644);
                header.set_size(*size as u64);
                header.set_path("ignored").expect("path");
                header.set_cksum();
                builder.append(&header, &vec![b'p'; *size][..]).expect("append");
            }
        }
    }
    builder.into_inner().expect("tar")
}

/// Where the `tar` crate finds each header of a well-formed archive.
fn header_positions(layer: &[u8]) -> Vec<usize> {
    let mut archive = tar::Archive::new(layer);
    let entries = archive.entries().expect("entries").raw(true);
    entries.map(|e| e.expect("entry").raw_header_position() as usize).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Archives the `tar` crate's builder writes, and each with one byte changed in its
    /// first 2 KiB (headers and records): refused, or the tree GNU tar makes.
    #[test]
    fn every_layer_is_refused_or_unpacked_as_gnu_tar_unpacks_it(
        entries in prop::collection::vec(generated(), 1..8),
        flip in (0usize..2048, any::<u8>()),
    ) {
        let layer = archive(&entries);
        prop_assert_eq!(refused_or_as_gnu_tar(&layer), None);
        let mut mutated = layer.clone();
        let at = flip.0 % mutated.len();
        mutated[at] = flip.1;
        // A changed header keeps a valid checksum, so that the change itself is read.
        let block = at / 512 * 512;
        if header_positions(&layer).contains(&block) && !(148..156).contains(&(at - block)) {
            let resealed = reseal(mutated[block..block + 512].to_vec());
            mutated[block..block + 512].copy_from_slice(&resealed);
        }
        refused_or_as_gnu_tar(&mutated);
    }
}

/// A tree with what real archives carry: long names (over 100 and over 255 bytes), a
/// name only ustar's prefix can hold, symlinks, a hard link, UTF-8 names, odd modes.
fn real_tree(root: &Path, long: bool) {
    use std::os::unix::fs::symlink;
    let deep = if long { format!("{}/{}", "p".repeat(90), "q".repeat(90)) } else { "p/q".to_owned() };
    fs::create_dir_all(root.join(&deep)).unwrap();
    fs::write(root.join(&deep).join("file"), b"deep").unwrap();
    fs::write(root.join("plain"), vec![7u8; 5000]).unwrap();
    fs::set_permissions(root.join("plain"), fs::Permissions::from_mode(0o751)).unwrap();
    fs::write(root.join("ünïcode"), b"u").unwrap();
    fs::hard_link(root.join("plain"), root.join("hard")).unwrap();
    symlink("plain", root.join("rel")).unwrap();
    symlink("/etc/passwd", root.join("abs")).unwrap();
    if long {
        fs::write(root.join("n".repeat(200)), b"long name").unwrap();
        symlink("t".repeat(300), root.join("long-target")).unwrap();
    }
    fs::create_dir(root.join("ro")).unwrap();
    fs::write(root.join("ro/inside"), b"r").unwrap();
    fs::set_permissions(root.join("ro"), fs::Permissions::from_mode(0o555)).unwrap();
}

/// Archives written by real writers, GNU tar in each of its formats and Python's
/// `tarfile` in each of its own, unpack to the tree GNU tar unpacks from them.
#[test]
fn archives_from_gnu_tar_and_python_unpack_as_gnu_tar_unpacks_them() {
    let formats: [(&str, bool); 5] = [("gnu", true), ("oldgnu", true), ("posix", true), ("ustar", false), ("v7", false)];
    for (format, long) in formats {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        fs::create_dir(&source).unwrap();
        real_tree(&source, long);
        let archive = dir.path().join("a.tar");
        let written = Command::new("tar")
            .args([&format!("--format={format}"), "--sort=name", "-cf"])
            .arg(&archive)
            .arg("-C")
            .arg(&source)
            .arg(".")
            .output()
            .expect("GNU tar runs");
        assert!(written.status.success(), "{format}: {}", String::from_utf8_lossy(&written.stderr));
        let layer = fs::read(&archive).unwrap();
        assert_eq!(refused_or_as_gnu_tar(&layer), None, "GNU tar's {format} format is unpacked");
        fs::set_permissions(source.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let python = r#"
import sys, tarfile
with tarfile.open(sys.argv[2], "w", format=getattr(tarfile, sys.argv[3])) as t:
    t.add(sys.argv[1], arcname=".")
"#;
    for format in ["GNU_FORMAT", "PAX_FORMAT", "USTAR_FORMAT"] {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        fs::create_dir(&source).unwrap();
        real_tree(&source, format != "USTAR_FORMAT");
        let archive = dir.path().join("a.tar");
        let written = Command::new("python3").args(["-c", python]).arg(&source).arg(&archive).arg(format).output().expect("python3 runs");
        assert!(written.status.success(), "{format}: {}", String::from_utf8_lossy(&written.stderr));
        let layer = fs::read(&archive).unwrap();
        assert_eq!(refused_or_as_gnu_tar(&layer), None, "Python's {format} is unpacked");
        fs::set_permissions(source.join("ro"), fs::Permissions::from_mode(0o755)).unwrap();
    }
}
