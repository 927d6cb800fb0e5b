//! checkfu-wire-probe: the harness author's local diagnostic. It runs an ACP agent or a
//! one-shot CLI offline, in a fenced sandbox, against a governed model relay, and judges the
//! turn by the relay's served-call record.
//!
//! The runtime (`checkfu-wire`: decode, admission, conformance) is what it judges with; this
//! crate adds what only a live run needs, and the `checkfu-wire` binary (`checkfu-wire-cli`)
//! is its command line.
//!
//! - [`session`]: the sandbox a harness runs in (process group, egress fence, fresh home,
//!   workspace) and the ACP client that drives it over stdio;
//! - [`relay`]: the governed model relay on 127.0.0.1 and its served-call record;
//! - the lanes: [`acp`] (an ACP agent) and [`oneshot`] (a one-shot CLI), and what they share:
//!   the plane a run stands on ([`launch`], [`model_plane`]), the recipe, the verdict on the
//!   relay's record ([`verdict`]), the end of a run ([`ending`]), what a run says as it goes
//!   ([`progress`]), each lane's result ([`result`], [`oneshot`]) and the report of either
//!   ([`report`]);
//! - [`next`]: the next steps an image run hands back (publish, retest, `add`, `verify`),
//!   and [`config_file`], the warning for a home file that does not parse as its format;
//! - [`image`]: the image lane's foundation: references pinned by digest, OCI layouts read
//!   and unpacked in the crate, and buildah, skopeo, the registry, podman and docker driven
//!   as external tools.

pub mod acp;
pub mod config_file;
mod dirfd;
pub mod ending;
pub mod image;
pub mod interrupt;
pub mod launch;
pub mod model_plane;
pub mod next;
pub mod oneshot;
mod plane;
pub mod progress;
pub mod recipe;
pub mod relay;
pub mod report;
pub mod result;
pub mod session;
pub mod verdict;

pub use acp::{fresh_nonce, run, run_with, ProbeOptions, UsageError, NO_TURN, TOKEN_FILE};
pub(crate) use plane::{catalog_entry, prepare, safe_output_schema, Plane};
pub use progress::Progress;
pub use report::Report;
pub use result::{ProbeResult, Step, StepStatus};
