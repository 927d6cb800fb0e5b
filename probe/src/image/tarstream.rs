//! A layer's decompressed tar stream as the unpacker reads it: hashed for the config's
//! diff_id, capped so that a decompression bomb ends in an error, and watched at tar's own
//! framing ([`super::tarframe`]) so that a metadata record the `tar` reader would hold whole
//! in memory (a pax header, a GNU long name) is refused before the reader allocates for it.

use std::io::{self, Read};

use sha2::Digest as _;

use super::tarframe::{Framing, FramingError};

/// A decompressed layer stream: hashed (for the diff_id), capped, so that a decompression
/// bomb ends in an error, and watched at tar's framing, so that a metadata record the tar
/// reader would hold in memory whole (a pax header, a GNU long name or link) is refused
/// over [`super::tarframe::MAX_METADATA_BYTES`] before the reader allocates for it.
pub(super) struct Capped<R> {
    inner: R,
    pub(super) hasher: sha2::Sha256,
    /// Bytes read so far.
    pub(super) read: u64,
    cap: u64,
    /// Whether the stream went over its cap.
    pub(super) exceeded: bool,
    framing: Framing,
    /// Why the framing watch stopped the stream.
    pub(super) refused: Option<FramingError>,
}

impl<R: Read> Capped<R> {
    pub(super) fn new(inner: R, cap: u64) -> Capped<R> {
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
        if let Err(problem) = self.framing.feed(&buf[..n], &mut |_| {}) {
            self.refused = Some(problem.clone());
            return Err(io::Error::other(problem));
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::Limits;
    use std::fs;

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
}
