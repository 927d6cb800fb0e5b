//! The image lane's stage: an image prepared by its digest and run inside the probe's fence.
//!
//! - [`run`]: an image pulled by its digest, unpacked (or found in the store), and run
//!   inside the probe's fence;
//! - [`runtime`]: the runtime that runs it (bubblewrap, podman or docker), and
//!   [`forward`]: the relay's port inside docker's pause container.
//!
//! The foundation they stand on (references, the loopback registry client, layouts, the
//! confined unpacker, the tools, the store) is the `checkfu-wire-image` crate, re-exported
//! here so that `checkfu_wire_probe::image::…` names the whole lane.

pub mod forward;
pub mod run;
pub mod runtime;

pub use checkfu_wire_image::{
    digest_from_sha256, digest_of, remove_tree, sha256_digest, Digest, ImageReference, Limits, OciLayout, ReferenceError, Selector,
    TempDir, UnpackReport,
};
pub use checkfu_wire_image::{distribution, host_env, in_root, layout, reference, source, store, tools};
