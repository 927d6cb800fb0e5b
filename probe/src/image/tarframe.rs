//! Tar's framing, read as a stream passes: where each 512-byte header is, what kind of
//! entry it starts, and how many content bytes follow it (the header's own size field, or
//! the `size` a pax record gave the entry after it).
//!
//! The `tar` crate reads a layer's entries; this module exists because that reader holds a
//! metadata record (a pax header, a GNU long name or link) whole in memory before it hands
//! the entry over. Following the framing ourselves lets [`super::tarstream`] refuse such a
//! record over [`MAX_METADATA_BYTES`] at its header, before the reader allocates for it.
//! The property test below holds this reading to the `tar` crate's reading of the same
//! bytes, so the two cannot drift apart.

/// The largest pax header or GNU long-name record: a path of at most
/// [`super::layout::MAX_PATH_BYTES`] and a few attributes (file capabilities, an ACL) are
/// far below it.
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// The size of a tar block: every header is one, and content is padded to a multiple.
const BLOCK: usize = 512;

/// Why the framing stopped a stream.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// A pax header or GNU long-name record larger than [`MAX_METADATA_BYTES`].
    #[error("a {what} record of {size} bytes, over the {MAX_METADATA_BYTES}-byte cap")]
    MetadataTooLarge { what: &'static str, size: u64 },
}

/// A header as the framing found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FoundHeader {
    /// Where the header starts in the stream.
    pub position: u64,
    /// The type flag (byte 156): `0` for a file, `x` for a pax record, and so on.
    pub kind: u8,
    /// The content bytes that follow the header, before padding.
    pub size: u64,
}

/// Where tar's headers are in a stream, followed as it passes: each header's size (or the
/// size a pax record gave it) says how far the next one is.
#[derive(Default)]
pub struct Framing {
    /// Bytes of the stream seen so far.
    position: u64,
    /// A header being collected, up to [`BLOCK`] bytes.
    header: Vec<u8>,
    /// Content and padding bytes before the next header.
    skip: u64,
    /// A pax record being collected (its `size` applies to the next entry).
    pax: Option<Vec<u8>>,
    pax_remaining: u64,
    pax_size: Option<u64>,
    /// Whether the end of the archive (a zero block) was reached: what follows is padding.
    ended: bool,
}

impl Framing {
    /// Follows `data`, the next bytes of the stream, telling `found` of every header that
    /// completes in it.
    pub fn feed(&mut self, mut data: &[u8], found: &mut dyn FnMut(FoundHeader)) -> Result<(), FramingError> {
        while !data.is_empty() {
            if self.ended {
                self.position += data.len() as u64;
                return Ok(());
            }
            if self.skip > 0 {
                let take = usize::try_from(self.skip).unwrap_or(usize::MAX).min(data.len());
                self.content(&data[..take]);
                self.skip -= take as u64;
                self.position += take as u64;
                data = &data[take..];
                continue;
            }
            let take = (BLOCK - self.header.len()).min(data.len());
            self.header.extend_from_slice(&data[..take]);
            self.position += take as u64;
            data = &data[take..];
            if self.header.len() == BLOCK {
                let header = std::mem::take(&mut self.header);
                self.header_done(&header, found)?;
            }
        }
        Ok(())
    }

    /// Content bytes: kept while they are a pax record, whose `size` the next entry takes.
    fn content(&mut self, data: &[u8]) {
        if let Some(pax) = &mut self.pax {
            let keep = usize::try_from(self.pax_remaining).unwrap_or(usize::MAX).min(data.len());
            pax.extend_from_slice(&data[..keep]);
            self.pax_remaining -= keep as u64;
            if self.pax_remaining == 0 {
                self.pax_size = pax_size(pax);
                self.pax = None;
            }
        }
    }

    fn header_done(&mut self, header: &[u8], found: &mut dyn FnMut(FoundHeader)) -> Result<(), FramingError> {
        // The `tar` reader ends the archive at the first zero block, and so does this: what
        // follows is padding, never read as entries.
        if header.iter().all(|b| *b == 0) {
            self.ended = true;
            return Ok(());
        }
        let position = self.position - BLOCK as u64;
        let kind = header[156];
        // A malformed size is the tar reader's to report; here it only ends the watch.
        let Some(mut size) = header_size(&header[124..136]) else {
            self.skip = u64::MAX;
            return Ok(());
        };
        match kind {
            b'x' | b'L' | b'K' => {
                if size > MAX_METADATA_BYTES {
                    let what = if kind == b'x' { "pax header" } else { "GNU long name" };
                    return Err(FramingError::MetadataTooLarge { what, size });
                }
                if kind == b'x' && size > 0 {
                    self.pax = Some(Vec::with_capacity(size as usize));
                    self.pax_remaining = size;
                }
            }
            // A pax global header is an entry of its own size: the `tar` reader applies no
            // pending pax record to it, and forgets that record after it.
            b'g' => self.pax_size = None,
            _ => {
                if let Some(pax_size) = self.pax_size.take() {
                    size = pax_size;
                }
            }
        }
        found(FoundHeader { position, kind, size });
        self.skip = size.div_ceil(BLOCK as u64).saturating_mul(BLOCK as u64);
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
mod tests;
