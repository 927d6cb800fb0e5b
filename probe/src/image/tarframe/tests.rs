//! The framing held to the `tar` crate: archives generated with its builder (long names
//! and link targets, pax records whose `size` overrides the header's, pax global headers,
//! contents of every padding), fed in arbitrary pieces, must give the same headers, at the
//! same positions and with the same sizes, as the `tar` crate's reader finds in them.

use proptest::prelude::*;

use super::{FoundHeader, Framing, FramingError, MAX_METADATA_BYTES};

/// One generated entry.
#[derive(Clone, Debug)]
enum Generated {
    /// A file whose name has this many bytes (over 100 needs a GNU long name).
    File {
        name_len: usize,
        size: usize,
    },
    /// A file whose size is given only by a pax record: its header says 0.
    PaxSized {
        size: usize,
    },
    Directory {
        name_len: usize,
    },
    /// A symlink whose target has this many bytes (over 100 needs a GNU long link).
    Symlink {
        target_len: usize,
    },
    /// A pax global header with this many bytes of records.
    Global {
        records: usize,
    },
}

fn generated() -> impl Strategy<Value = Generated> {
    prop_oneof![
        (1usize..300, 0usize..1600).prop_map(|(name_len, size)| Generated::File { name_len, size }),
        (0usize..1600).prop_map(|size| Generated::PaxSized { size }),
        (1usize..200).prop_map(|name_len| Generated::Directory { name_len }),
        (1usize..300).prop_map(|target_len| Generated::Symlink { target_len }),
        (0usize..40).prop_map(|records| Generated::Global { records }),
    ]
}

/// A name of `len` bytes, made of path components so that the builder accepts it.
fn name(n: usize, len: usize) -> String {
    let mut name = format!("e{n}");
    while name.len() < len {
        name.push(if name.len() % 50 == 49 { '/' } else { 'x' });
    }
    name.truncate(len.max(1));
    name.trim_end_matches('/').to_owned()
}

fn header(kind: tar::EntryType, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(0o644);
    header.set_size(size);
    header
}

fn archive(entries: &[Generated]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (n, entry) in entries.iter().enumerate() {
        let appended = match *entry {
            Generated::File { name_len, size } => {
                builder.append_data(&mut header(tar::EntryType::Regular, size as u64), name(n, name_len), &vec![b'f'; size][..])
            }
            Generated::PaxSized { size } => builder.append_pax_extensions([("size", size.to_string().as_bytes())]).and_then(|()| {
                let mut lie = header(tar::EntryType::Regular, 0);
                lie.set_path(name(n, 10)).expect("path");
                lie.set_cksum();
                builder.append(&lie, &vec![b'p'; size][..])
            }),
            Generated::Directory { name_len } => {
                builder.append_data(&mut header(tar::EntryType::Directory, 0), format!("{}/", name(n, name_len)), &[][..])
            }
            Generated::Symlink { target_len } => {
                builder.append_link(&mut header(tar::EntryType::Symlink, 0), name(n, 10), name(n, target_len))
            }
            Generated::Global { records } => {
                let body = if records == 0 { String::new() } else { format!("{:02} comment={}\n", records + 12, "c".repeat(records)) };
                let mut global = header(tar::EntryType::XGlobalHeader, body.len() as u64);
                global.set_path(format!("global{n}")).expect("path");
                global.set_cksum();
                builder.append(&global, body.as_bytes())
            }
        };
        appended.expect("append");
    }
    builder.into_inner().expect("finish")
}

/// The entries the `tar` crate reads: where each header is, its kind and content size.
fn tar_reading(bytes: &[u8]) -> Vec<FoundHeader> {
    let mut archive = tar::Archive::new(bytes);
    let entries = archive.entries().expect("entries");
    entries
        .map(|entry| {
            let entry = entry.expect("an entry the tar crate reads");
            FoundHeader { position: entry.raw_header_position(), kind: entry.header().entry_type().as_byte(), size: entry.size() }
        })
        .collect()
}

/// The entries the framing finds, fed in pieces of the given lengths (cycled); metadata
/// records, which the `tar` crate folds into the entry after them, left out.
fn framing_reading(bytes: &[u8], pieces: &[usize]) -> Result<Vec<FoundHeader>, FramingError> {
    let mut framing = Framing::default();
    let mut found = Vec::new();
    let mut rest = bytes;
    for piece in pieces.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (now, later) = rest.split_at((*piece).min(rest.len()));
        framing.feed(now, &mut |header| found.push(header))?;
        rest = later;
    }
    Ok(found.into_iter().filter(|h| !matches!(h.kind, b'x' | b'L' | b'K')).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn the_framing_reads_what_the_tar_crate_reads(
        entries in proptest::collection::vec(generated(), 0..12),
        pieces in proptest::collection::vec(1usize..1500, 1..8),
    ) {
        let bytes = archive(&entries);
        prop_assert_eq!(framing_reading(&bytes, &pieces).expect("no record is over the cap"), tar_reading(&bytes));
    }

    /// A layer is untrusted: whatever its bytes, the framing ends (it never panics, and each
    /// header it reports lies within what it was fed).
    #[test]
    fn any_bytes_are_followed_without_a_panic(
        entries in proptest::collection::vec(generated(), 0..6),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16),
        pieces in proptest::collection::vec(1usize..1500, 1..8),
    ) {
        let mut bytes = archive(&entries);
        for (at, byte) in damage {
            if !bytes.is_empty() {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
        }
        if let Ok(found) = framing_reading(&bytes, &pieces) {
            prop_assert!(found.iter().all(|h| h.position + 512 <= bytes.len() as u64));
        }
    }
}

#[test]
fn a_metadata_record_over_the_cap_is_refused_at_its_header() {
    for (kind, what) in [(tar::EntryType::GNULongName, "GNU long name"), (tar::EntryType::XHeader, "pax header")] {
        let mut long = header(kind, MAX_METADATA_BYTES + 1);
        long.set_cksum();
        // Only the header is given: the refusal comes before the record is read.
        let error = framing_reading(long.as_bytes(), &[512]).expect_err("refused");
        assert_eq!(error, FramingError::MetadataTooLarge { what, size: MAX_METADATA_BYTES + 1 });
        assert_eq!(error.to_string(), format!("a {what} record of 1048577 bytes, over the 1048576-byte cap"));
    }
}
