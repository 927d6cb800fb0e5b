//! A layer's tar entries as one reader sees them: the `tar` crate's raw records, composed
//! here into the entries the unpacker places.
//!
//! The `tar` crate alone decides where each header is: it reads the stream in raw mode,
//! where it never holds a record whole and never builds a sparse map, and where every
//! entry's content is as long as its own header says. The records that describe the next
//! entry (a GNU long name or long link, a pax header) come to this module as raw entries
//! and are read here through a reader capped at [`MAX_METADATA_BYTES`], after their header
//! said how long they are; a longer one is refused before a byte of it is read.
//!
//! Container runtimes read layers with other tar readers (Go's `archive/tar` in containerd,
//! podman and docker; GNU tar and Python's `tarfile` elsewhere), and a byte sequence that
//! two readers frame differently is two trees under one digest: the probe would run one, the
//! platform the other. So whatever those readers could read differently is refused rather
//! than given a reading: a numeric field that is not canonical octal or base-256, a pax
//! record that is malformed or repeats a keyword, a pax `size` that disagrees with the
//! header's, a path given both by a long-name record and by pax, content after a link,
//! directory or device header, a sparse file, and any type the runtimes do not unpack.

use std::io::{self, Read};

/// The largest pax header or GNU long-name record: a path of at most
/// [`super::layout::MAX_PATH_BYTES`] and a few attributes (file capabilities, an ACL) are
/// far below it.
pub const MAX_METADATA_BYTES: u64 = 1 << 20;

/// Why a record or an entry was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TarError {
    /// A pax header or GNU long-name record larger than [`MAX_METADATA_BYTES`].
    #[error("a {what} record of {size} bytes, over the {MAX_METADATA_BYTES}-byte cap")]
    MetadataTooLarge { what: &'static str, size: u64 },
    /// A numeric header field that tar readers could read as different numbers.
    #[error("its header's {field} field is not a canonical octal or base-256 number")]
    Number { field: &'static str },
    /// A header whose magic and version are not one of the pairs every reader agrees on.
    #[error("its header's magic and version are neither ustar's nor GNU's")]
    Magic,
    /// A record describing the next entry found where it cannot apply.
    #[error("{0}")]
    Misplaced(&'static str),
    /// A pax record that is malformed, repeated or unsupported.
    #[error("pax header: {0}")]
    Pax(String),
    /// A long name or link with a NUL inside, or an empty one.
    #[error("a {what} record holding a NUL byte or nothing")]
    LongName { what: &'static str },
    /// A type the container runtimes do not unpack, or one no reader agrees on.
    #[error("{0}")]
    Unsupported(String),
    /// The stream itself could not be read.
    #[error("reading a record: {0}")]
    Read(String),
}

/// What an entry wants at its path, as every reader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryType {
    File,
    Directory,
    Symlink,
    HardLink,
    /// A device node or FIFO: placed by none of the probe's sandboxes.
    Special,
}

/// An entry composed from its header and the records before it.
#[derive(Debug)]
pub struct Composed {
    pub entry_type: EntryType,
    /// The path: a GNU long name's, else a pax `path`, else the header's (ustar's prefix
    /// joined on).
    pub path: Vec<u8>,
    /// A link's target, the same way; empty for other entries.
    pub link: Vec<u8>,
    /// The permission bits of the header's mode field.
    pub mode: u32,
    /// The content bytes that follow the header.
    pub size: u64,
}

/// The records read so far that describe the next entry.
#[derive(Default)]
pub struct Composer {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax: Option<PaxRecords>,
}

/// A pax header's records, keyword and value, in order.
type PaxRecords = Vec<(Vec<u8>, Vec<u8>)>;

/// A header's numeric fields that every reader parses: name, offset and width.
const NUMERIC_FIELDS: [(&str, usize, usize); 6] =
    [("mode", 100, 8), ("uid", 108, 8), ("gid", 116, 8), ("size", 124, 12), ("mtime", 136, 12), ("checksum", 148, 8)];
/// The device numbers, in ustar's and GNU's headers only.
const DEVICE_FIELDS: [(&str, usize, usize); 2] = [("devmajor", 329, 8), ("devminor", 337, 8)];

impl Composer {
    /// Reads one raw record: `None` when it describes the next entry (kept here), or the
    /// entry it completes. Only a record's header, and a describing record's content up to
    /// [`MAX_METADATA_BYTES`], is read.
    pub fn next<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<Option<Composed>, TarError> {
        let header = entry.header();
        let bytes = header.as_bytes();
        let format = format_of(bytes)?;
        for (field, offset, width) in NUMERIC_FIELDS {
            canonical_number(&bytes[offset..offset + width]).ok_or(TarError::Number { field })?;
        }
        if format != Format::V7 {
            for (field, offset, width) in DEVICE_FIELDS {
                canonical_number(&bytes[offset..offset + width]).ok_or(TarError::Number { field })?;
            }
        }
        let size = canonical_number(&bytes[124..136]).ok_or(TarError::Number { field: "size" })?;
        // The `tar` crate framed the stream by its own reading of the size: it must be the
        // canonical one, or the next header is not where other readers find it.
        if header.entry_size().ok() != Some(size) {
            return Err(TarError::Number { field: "size" });
        }
        let type_flag = bytes[156];
        match type_flag {
            b'L' | b'K' => {
                let what = if type_flag == b'L' { "GNU long name" } else { "GNU long link" };
                if format != Format::Gnu {
                    return Err(TarError::Unsupported(format!("a {what} record in a header that is not GNU's")));
                }
                let record = read_record(entry, what, size)?;
                let name = long_name(record).ok_or(TarError::LongName { what })?;
                let slot = if type_flag == b'L' { &mut self.long_name } else { &mut self.long_link };
                if slot.replace(name).is_some() {
                    return Err(TarError::Misplaced("two long-name records describe one entry"));
                }
                Ok(None)
            }
            b'x' => {
                if format != Format::Ustar {
                    return Err(TarError::Unsupported("a pax header in a header that is not ustar's".to_owned()));
                }
                let records = parse_pax(&read_record(entry, "pax header", size)?)?;
                if self.pax.replace(records).is_some() {
                    return Err(TarError::Misplaced("two pax headers describe one entry"));
                }
                Ok(None)
            }
            b'g' => {
                if format != Format::Ustar {
                    return Err(TarError::Unsupported("a pax global header in a header that is not ustar's".to_owned()));
                }
                if self.long_name.is_some() || self.long_link.is_some() || self.pax.is_some() {
                    return Err(TarError::Misplaced("a pax global header follows records that describe the next entry"));
                }
                // Readers differ on whether a global record changes the entries after it
                // (GNU tar applies it, Go's reader and containerd do not): one that could
                // change an entry is refused, and the rest carry nothing the probe uses.
                let records = parse_pax(&read_record(entry, "pax global header", size)?)?;
                if let Some((key, _)) = records.iter().find(|(key, _)| key != b"comment" && !is_informational(key)) {
                    return Err(TarError::Pax(format!(
                        "a global `{}` record, which readers apply differently",
                        String::from_utf8_lossy(key)
                    )));
                }
                Ok(None)
            }
            _ => self.compose(entry, type_flag, size).map(Some),
        }
    }

    /// The entry `type_flag` starts, with the records before it applied.
    fn compose<R: Read>(&mut self, entry: &tar::Entry<'_, R>, type_flag: u8, size: u64) -> Result<Composed, TarError> {
        let entry_type = match type_flag {
            b'0' | 0 => EntryType::File,
            b'5' => EntryType::Directory,
            b'2' => EntryType::Symlink,
            b'1' => EntryType::HardLink,
            b'3' | b'4' | b'6' => EntryType::Special,
            b'S' => return Err(TarError::Unsupported("a GNU sparse file, which the runtimes unpack differently".to_owned())),
            other => return Err(TarError::Unsupported(format!("unsupported entry type {}", shown_type(other)))),
        };
        // Go's reader, and so containerd, reads no content after these headers whatever
        // their size says; the `tar` crate skips what the size says.
        if entry_type != EntryType::File && size != 0 {
            return Err(TarError::Unsupported(format!("content of {size} bytes after a header that carries none")));
        }
        let header = entry.header();
        let mode = u32::try_from(canonical_number(&header.as_bytes()[100..108]).unwrap_or(0) & 0o7777).unwrap_or(0);
        let pax = self.pax.take().unwrap_or_default();
        let long_name = self.long_name.take();
        let long_link = self.long_link.take();
        let mut pax_path = None;
        let mut pax_link = None;
        for (key, value) in &pax {
            match key.as_slice() {
                b"path" => pax_path = Some(value.clone()),
                b"linkpath" => pax_link = Some(value.clone()),
                // Every size the probe accepts fits the header's own field: a pax size is
                // only the same number again, or the readers frame the stream apart.
                b"size" if decimal(value) != Some(size) => {
                    return Err(TarError::Pax("its `size` is not the header's size".to_owned()));
                }
                _ => {}
            }
        }
        let path = match (long_name, pax_path) {
            (Some(_), Some(_)) => return Err(TarError::Misplaced("both a GNU long name and a pax `path` name the entry")),
            (Some(name), None) | (None, Some(name)) => name,
            // The header's own path, ustar's prefix joined on: [`format_of`] has refused
            // the layouts whose prefix readers take differently.
            (None, None) => header.path_bytes().into_owned(),
        };
        let link = match (long_link, pax_link) {
            (Some(_), Some(_)) => return Err(TarError::Misplaced("both a GNU long link and a pax `linkpath` name the target")),
            (Some(link), None) | (None, Some(link)) => link,
            (None, None) => header.link_name_bytes().map(|l| l.into_owned()).unwrap_or_default(),
        };
        // Go's reader, GNU tar and Python turn an old-style file whose name ends in `/`
        // into a directory, the `tar` crate does not.
        if entry_type != EntryType::Directory && path.last() == Some(&b'/') {
            return Err(TarError::Unsupported("a non-directory entry whose path ends in `/`".to_owned()));
        }
        let link = if matches!(entry_type, EntryType::Symlink | EntryType::HardLink) { link } else { Vec::new() };
        Ok(Composed { entry_type, path, link, mode, size })
    }

    /// Refuses records left describing an entry that never came.
    pub fn finish(&self) -> Result<(), TarError> {
        if self.long_name.is_some() || self.long_link.is_some() || self.pax.is_some() {
            return Err(TarError::Misplaced("records describing an entry end the archive"));
        }
        Ok(())
    }
}

/// How a header's magic and version say its fields are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// `ustar\0` `00`: POSIX ustar, with a path prefix.
    Ustar,
    /// `ustar ` ` \0`: GNU.
    Gnu,
    /// No magic: the seventh edition's header.
    V7,
}

fn format_of(header: &[u8]) -> Result<Format, TarError> {
    match (&header[257..263], &header[263..265]) {
        (b"ustar\0", b"00") => {
            // star's layout shares ustar's magic and cuts the prefix at 131 bytes, where
            // ustar's readers read 155: refused when the two could differ.
            if &header[508..512] == b"tar\0" && header[345 + 131..345 + 155].iter().any(|b| *b != 0) {
                return Err(TarError::Magic);
            }
            Ok(Format::Ustar)
        }
        (b"ustar ", b" \0") => Ok(Format::Gnu),
        // GNU tar takes any `ustar` magic for ustar's layout, whatever its version; Go's
        // reader and the `tar` crate take only the two pairs above.
        (magic, _) if magic.starts_with(b"ustar") => Err(TarError::Magic),
        (magic, version) if magic.iter().chain(version).all(|b| *b == 0) => Ok(Format::V7),
        _ => Err(TarError::Magic),
    }
}

/// The number in a header's numeric field, when every reader reads that number from it:
/// octal digits after optional spaces, followed only by NULs and spaces (a NUL inside the
/// digits ends GNU tar's reading and Go's is an error); or base-256 (`0x80` and big-endian
/// bytes) whose value fits 63 bits, where the `tar` crate reads only the last eight bytes.
pub fn canonical_number(field: &[u8]) -> Option<u64> {
    let first = *field.first()?;
    if first & 0x80 != 0 {
        if first != 0x80 || field.len() < 9 {
            return None;
        }
        let (high, low) = field[1..].split_at(field.len() - 9);
        if high.iter().any(|b| *b != 0) {
            return None;
        }
        let value = u64::from_be_bytes(low.try_into().ok()?);
        return (value <= i64::MAX as u64).then_some(value);
    }
    let start = field.iter().position(|b| *b != b' ').unwrap_or(field.len());
    let rest = &field[start..];
    let digits = rest.iter().position(|b| !(b'0'..=b'7').contains(b)).unwrap_or(rest.len());
    if rest[digits..].iter().any(|b| *b != 0 && *b != b' ') {
        return None;
    }
    if digits == 0 {
        return Some(0);
    }
    let value = std::str::from_utf8(&rest[..digits]).ok()?;
    u64::from_str_radix(value, 8).ok().filter(|v| *v <= i64::MAX as u64)
}

/// A describing record's content, read through a reader capped at
/// [`MAX_METADATA_BYTES`] once its header said it is no longer.
fn read_record<R: Read>(entry: &mut tar::Entry<'_, R>, what: &'static str, size: u64) -> Result<Vec<u8>, TarError> {
    if size > MAX_METADATA_BYTES {
        return Err(TarError::MetadataTooLarge { what, size });
    }
    let mut record = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    entry.take(MAX_METADATA_BYTES).read_to_end(&mut record).map_err(|e| TarError::Read(e.to_string()))?;
    if record.len() as u64 != size {
        return Err(TarError::Read(format!("the {what} record ends after {} of its {size} bytes", record.len())));
    }
    Ok(record)
}

/// A long name or link: one trailing NUL dropped (GNU tar writes it); none may be left, as
/// readers cut a name at its first NUL or keep it whole.
fn long_name(mut record: Vec<u8>) -> Option<Vec<u8>> {
    if record.last() == Some(&0) {
        record.pop();
    }
    (!record.is_empty() && !record.contains(&0)).then_some(record)
}

/// Pax records (`LEN key=value\n`), each whole and well formed, no keyword twice, and none
/// that changes how the entry is unpacked in a way the `tar` crate's raw reading would not.
fn parse_pax(bytes: &[u8]) -> Result<PaxRecords, TarError> {
    let problem = |text: &str| Err(TarError::Pax(text.to_owned()));
    let mut records: PaxRecords = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let Some(space) = rest.iter().position(|b| *b == b' ') else {
            return problem("a record without its length");
        };
        let digits = &rest[..space];
        if digits.is_empty() || digits[0] == b'0' || !digits.iter().all(u8::is_ascii_digit) {
            return problem("a record's length is not a decimal number");
        }
        let Some(length) = std::str::from_utf8(digits).ok().and_then(|d| d.parse::<usize>().ok()) else {
            return problem("a record's length is not a decimal number");
        };
        if length <= space + 1 || length > rest.len() || rest[length - 1] != b'\n' {
            return problem("a record's length does not end it at a newline");
        }
        let record = &rest[space + 1..length - 1];
        let Some(equals) = record.iter().position(|b| *b == b'=') else {
            return problem("a record without `=`");
        };
        let (key, value) = (&record[..equals], &record[equals + 1..]);
        if key.is_empty() || key.contains(&0) || key.contains(&b'\n') {
            return problem("a record with an empty or malformed keyword");
        }
        let shown = String::from_utf8_lossy(key).into_owned();
        if records.iter().any(|(seen, _)| seen == key) {
            // The `tar` crate takes the first, GNU tar, Go and Python the last.
            return Err(TarError::Pax(format!("the keyword `{shown}` is repeated")));
        }
        check_pax_value(key, value, &shown)?;
        records.push((key.to_vec(), value.to_vec()));
        rest = &rest[length..];
    }
    Ok(records)
}

/// The keywords whose values readers parse, and refuse when malformed; what the probe
/// cannot honour the same way (a sparse map) is refused outright.
fn check_pax_value(key: &[u8], value: &[u8], shown: &str) -> Result<(), TarError> {
    let malformed = || Err(TarError::Pax(format!("the `{shown}` record's value is malformed")));
    match key {
        b"path" | b"linkpath" if value.is_empty() || value.contains(&0) => malformed(),
        b"size" | b"uid" | b"gid" if decimal(value).is_none() => malformed(),
        b"mtime" | b"atime" | b"ctime" if !is_time(value) => malformed(),
        _ if key.starts_with(b"GNU.sparse.") => {
            Err(TarError::Unsupported("a GNU sparse file, which the runtimes unpack differently".to_owned()))
        }
        _ => Ok(()),
    }
}

/// Keywords that change nothing the probe unpacks: times, owners, names of owners,
/// extended attributes (the sandbox restores none), character sets.
fn is_informational(key: &[u8]) -> bool {
    matches!(key, b"mtime" | b"atime" | b"ctime" | b"uid" | b"gid" | b"uname" | b"gname" | b"charset" | b"hdrcharset")
        || key.starts_with(b"SCHILY.xattr.")
        || key.starts_with(b"LIBARCHIVE.xattr.")
}

/// A plain decimal number that fits 63 bits.
fn decimal(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse::<u64>().ok().filter(|v| *v <= i64::MAX as u64)
}

/// A pax time: an optional `-`, digits, and an optional fraction.
fn is_time(value: &[u8]) -> bool {
    let value = value.strip_prefix(b"-").unwrap_or(value);
    let (whole, fraction) = match value.iter().position(|b| *b == b'.') {
        Some(dot) => (&value[..dot], Some(&value[dot + 1..])),
        None => (value, None),
    };
    !whole.is_empty() && whole.iter().all(u8::is_ascii_digit) && fraction.is_none_or(|f| !f.is_empty() && f.iter().all(u8::is_ascii_digit))
}

fn shown_type(flag: u8) -> String {
    if flag.is_ascii_graphic() {
        format!("`{}`", flag as char)
    } else {
        format!("0x{flag:02x}")
    }
}

/// Reads the rest of a layer's stream after the archive's first zero block: it must be
/// zeros. GNU tar reads on past a lone zero block and Go's reader refuses what follows
/// one, where the `tar` crate ends the archive: an archive whose padding is not empty is
/// refused rather than read three ways.
pub fn drain_padding(stream: &mut dyn Read) -> io::Result<()> {
    let mut buffer = [0u8; 8192];
    loop {
        let n = match stream.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buffer[..n].iter().any(|b| *b != 0) {
            return Err(io::Error::other("bytes other than zeros follow the end of the archive"));
        }
    }
}

#[cfg(test)]
mod tests;
