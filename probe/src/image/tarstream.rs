//! A layer's decompressed tar stream as the unpacker reads it: hashed for the config's
//! diff_id, capped so that a decompression bomb ends in an error, and watched at tar's own
//! framing so that a metadata record the `tar` reader would hold whole in memory (a pax
//! header, a GNU long name) is refused before the reader allocates for it.

use std::io::{self, Read};

use sha2::Digest as _;

/// A decompressed layer stream: hashed (for the diff_id), capped, so that a decompression
/// bomb ends in an error, and watched at tar's framing, so that a metadata record the tar
/// reader would hold in memory whole (a pax header, a GNU long name or link) is refused
/// over [`MAX_METADATA_BYTES`] before the reader allocates for it.
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
    pub(super) refused: Option<String>,
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
        if let Err(problem) = self.framing.feed(&buf[..n]) {
            self.refused = Some(problem.clone());
            return Err(io::Error::other(problem));
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The largest pax header or GNU long-name record: a path of at most [`super::layout::MAX_PATH_BYTES`] and
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
