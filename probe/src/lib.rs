//! checkfu-wire-probe: the harness author's local diagnostic. It runs an ACP agent or a
//! one-shot CLI offline, in a fenced sandbox, against a governed model relay, and judges the
//! turn by the relay's served-call record.
//!
//! The runtime (`checkfu-wire`: decode, admission, conformance) is what it judges with; this
//! crate adds what only a live run needs, and the `checkfu-wire` binary (`checkfu-wire-cli`)
//! is its command line.
//!
//! The layers, each importing only from those below it:
//! - the run, on top: [`plan`] (a run resolved once) and [`spine`] (one run, whichever lane);
//! - the lanes: [`acp`] (an ACP agent) and [`oneshot`] (a one-shot CLI), each supplying its
//!   steps;
//! - what both lanes share: the options ([`options`]), the errors and exit statuses
//!   ([`error`]), the plane a run stands on (`plane`, [`launch`], [`model_plane`]) and the
//!   stage a lane runs on (`stage`), the recipe, the verdict on the relay's record
//!   ([`verdict`]), what a run says as it goes ([`progress`]), the report ([`report`]), the
//!   next steps an image run hands back ([`next`]), the warning for a home file that
//!   does not parse as its format ([`config_file`]), and the MCP server the probe grants a
//!   harness ([`mcp_tool`]);
//! - the foundations: [`budget`] (the run's one budget: its deadline and its cancellation), [`session`] (the sandbox a harness runs in: process group, egress
//!   fence, fresh home, workspace, and the ACP client that drives it over stdio), [`relay`]
//!   (the governed model relay on 127.0.0.1 and its served-call record), and [`image`]
//!   (references pinned by digest, OCI layouts read and unpacked in the crate, and
//!   buildah, skopeo, the registry, podman and docker driven as external tools).

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

pub mod acp;
pub mod config_file;
pub use checkfu_wire_sandbox::budget;
pub mod error;
pub mod image;
pub use checkfu_wire_sandbox::interrupt;
mod lane;
pub mod launch;
pub mod mcp_http;
pub mod mcp_tool;
pub mod model_plane;
pub mod next;
pub mod oneshot;
pub mod options;
pub mod outcome;
pub mod plan;
mod plane;
pub mod progress;
pub mod recipe;
pub use checkfu_wire_relay as relay;
pub mod report;
pub mod session;
pub mod spine;
mod stage;
pub mod verdict;

pub use error::{exit_code, ProbeError};
pub use options::{fresh_nonce, Budget, Cancel, Deadline, RunOptions, TOKEN_FILE};
pub use plan::Plan;
pub use progress::Progress;
pub use report::Report;
pub use spine::run;
