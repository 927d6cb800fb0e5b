//! The end of a fresh agent process: one the lane starts after the main one is gone (the
//! resumed process of `native_checkpoint`, the requirement probes' process). Each is
//! ended the same way: its stdin closed and the process torn down under the kill grace, what
//! the image's runtime kept of it removed under the teardown's budget, and its workspace
//! handed back to the plane, whose removal is part of the run's teardown.
//!
//! Whatever went wrong on the way (the process ignored EOF and SIGTERM, a child outlived
//! it, the runtime left a container behind) is one teardown fault, handed to the caller to
//! report: none of it is dropped here.

use std::time::Instant;

use crate::image::runtime::RunningContainer;
use crate::outcome::Reason;
use crate::report::process::teardown_fault;
use crate::session::{Session, Teardown};
use crate::stage::Stage;

/// How a fresh process ended.
pub(super) struct Ended {
    pub teardown: Teardown,
    /// From its stdin's closing to the end of its teardown (its own exit, or its killing).
    pub shutdown_ms: u64,
    /// Its teardown's fault, or the image runtime's when the process's own was clean.
    pub fault: Option<Reason>,
}

/// Ends `session` (the `who` of a fault's words) and the image's run of it, `container`;
/// `read` is given the session once it is over and before its workspace goes back to the
/// plane, for what the caller keeps of it.
pub(super) fn end<T>(
    stage: &mut Stage<'_, '_>,
    mut session: Session,
    container: Option<RunningContainer>,
    who: &str,
    read: impl FnOnce(&Session, &Teardown) -> T,
) -> (T, Ended) {
    let closing = Instant::now();
    let teardown = session.teardown(stage.options.kill_grace);
    let shutdown_ms = closing.elapsed().as_millis() as u64;
    let mut fault = teardown_fault(&teardown, who, "EOF on stdin and SIGTERM");
    let grace = stage.grace();
    if let Some((container, image)) = container.zip(stage.image.as_mut()) {
        // Removed whatever the process's own fault: the run must not leave it behind.
        let left = image.finish(container, &grace);
        fault = fault.or(left);
    }
    let kept = read(&session, &teardown);
    stage.plane.workspace = Some(session.into_workspace());
    (kept, Ended { teardown, shutdown_ms, fault })
}
