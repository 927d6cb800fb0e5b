//! A layer's decompressed tar stream as the unpacker reads it: hashed for the config's
//! diff_id, and capped so that a decompression bomb ends in an error. Where its headers are
//! is the `tar` crate's reading alone ([`super::tarentry`]).

use std::io::{self, Read};

use sha2::Digest as _;

/// A decompressed layer stream: hashed (for the diff_id) and capped, so that a
/// decompression bomb ends in an error.
pub(super) struct Capped<R> {
    inner: R,
    pub(super) hasher: sha2::Sha256,
    /// Bytes read so far.
    pub(super) read: u64,
    cap: u64,
    /// Whether the stream went over its cap.
    pub(super) exceeded: bool,
}

impl<R: Read> Capped<R> {
    pub(super) fn new(inner: R, cap: u64) -> Capped<R> {
        Capped { inner, hasher: sha2::Sha256::new(), read: 0, cap, exceeded: false }
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
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}
