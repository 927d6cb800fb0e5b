//! checkfu-wire-image: the image lane's foundation, images without a daemon.
//!
//! - [`reference`](mod@reference): an image reference pinned by digest (`NAME@sha256:<64 hex>`);
//! - [`layout`]: an OCI image layout read and unpacked in the crate (every blob a regular
//!   file checked against its digest and size, layers applied in order with whiteouts,
//!   bounded), its layers' tar streams hashed and capped by `tarstream`, read by the `tar` crate
//!   alone and composed into entries by `tarentry` (whatever tar readers could read
//!   differently refused), and their entries placed by `unpack`, confined to the root by
//!   the kernel;
//! - [`distribution`]: a loopback registry pulled by the crate itself over plain HTTP
//!   (bounded, to the registry named only, by the run's deadline);
//! - [`host_env`]: the environment of every program the lane starts on the host, which no
//!   image sets; [`in_root`]: the working directory and mount points, made inside the root;
//! - [`tools`]: buildah, skopeo, the distribution registry, podman and docker, driven as the
//!   external tools they are (bounded capture, every child reaped, nothing left on disk);
//! - [`source`]: where `--image` is read from (its registry, podman's or docker's storage,
//!   an OCI layout directory), tied to its digest;
//! - [`store`]: the images pulled by digest, kept unpacked and sealed between runs.
//!
//! Running an image is the probe's (`checkfu_wire_probe::image`: the prepared image, the
//! runtime that runs it, the relay's port inside docker's pause container); this crate
//! imports the sandbox (`checkfu-wire-sandbox`) and nothing of the probe.
//!
//! An image is untrusted input: nothing here panics on it, every read of it is bounded, and
//! an error names the blob or the entry at fault.

#![forbid(unsafe_code)]

pub mod distribution;
#[cfg(test)]
mod fixture;
pub mod host_env;
pub mod in_root;
pub mod layout;
pub mod reference;
pub mod source;
pub mod store;
mod tarentry;
mod tarstream;
pub mod tools;
mod unpack;

pub use layout::{Limits, OciLayout, Selector, UnpackReport};
pub use reference::{digest_from_sha256, digest_of, sha256_digest, Digest, ImageReference, ReferenceError};

pub use checkfu_wire_sandbox::dir::remove_tree;
pub use checkfu_wire_sandbox::tempdir::TempDir;

// A run's budget (its deadline and its cancellation) stops a pull, an unpack or a store
// walk; the sandbox's signal watcher cancels it (`checkfu_wire_sandbox::interrupt`).
