//! `checkfu-wire-sandbox`: what confines and supervises the parties the probe does not
//! trust (a harness, an image's contents, the tools that handle an image).
//!
//! - [`dir`]: directories held by descriptor, lookups that never follow a symlink, and the
//!   walks and removals over trees an untrusted party shaped;
//! - [`fence`]: the egress fence, a network namespace in which the relay's socket is the
//!   one thing listening, and how a child joins it;
//! - [`interrupt`]: SIGINT, SIGTERM and SIGHUP, and the process groups they stop;
//! - [`tempdir`]: private temporary directories, removed whole.
//!
//! It imports nothing of the workspace: the probe, the image foundation and the relay sit
//! above it. It is the one crate of the workspace that holds `unsafe`.

pub mod dir;
pub mod fence;
pub mod interrupt;
pub mod tempdir;
