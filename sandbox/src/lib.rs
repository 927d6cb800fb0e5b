//! `checkfu-wire-sandbox`: what confines and supervises the parties the probe does not
//! trust (a harness, an image's contents, the tools that handle an image).
//!
//! - [`dir`]: directories held by descriptor, lookups that never follow a symlink, and the
//!   walks and removals over trees an untrusted party shaped;
//! - [`root`]: the one path resolver, a directory held as a root and every path inside it
//!   resolved by the kernel under one `..` rule (as in a chroot);
//! - [`fence`]: the egress fence, a network namespace in which the relay's socket and the
//!   probe's own tool server's are the only things listening, and how a child joins it;
//! - [`interrupt`]: SIGINT, SIGTERM and SIGHUP, and the process groups they stop;
//! - [`process`]: the one supervisor of a child and its process group (spawn, signal,
//!   observe, reap), and what a child is given across its exec;
//! - [`identity`]: the user and group ids the probe runs as;
//! - [`file`]: anonymous files, locks, socket shutdown and free space, by descriptor;
//! - [`tempdir`]: private temporary directories, removed whole.
//!
//! It imports nothing of the workspace: the probe, the image foundation and the relay sit
//! above it. It is the one crate of the workspace that holds `unsafe` (`tests/it/layers.rs`
//! holds this); each block says why it is sound, and calls through `rustix` where it has
//! a safe wrapper.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod budget;
pub mod dir;
pub mod fence;
pub mod file;
pub mod identity;
pub mod interrupt;
pub mod process;
pub mod root;
pub mod tempdir;
