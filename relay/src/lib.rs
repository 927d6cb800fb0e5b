//! The governed model relay: a model gateway in miniature, which the probe starts for each
//! session and stops with it.
//!
//! It listens on 127.0.0.1 only, on a port the OS picks (or on a listener the caller bound
//! on a loopback address, such as one inside the harness's network namespace), and serves
//! HTTP/1.1 with `hyper`. It forwards exactly the request paths of the gateway allow-list
//! of one provider ([`routes`]) to the replay model ([`script`]), in the dialect each path
//! speaks ([`dialect`]), and refuses everything else with a status and an error body in the
//! dialect's own shape, recording each refusal ([`record`]):
//!
//! | request | status |
//! |---|---|
//! | `CONNECT`, or an absolute-form target (a client using the relay as its proxy) | 403, host and port recorded as an egress attempt |
//! | any call once the run's budget ([`Config::budget`]) is cancelled or past its deadline | 503 |
//! | a path not on the provider's allow-list (the query string is ignored) | 404 |
//! | a method other than POST | 405 |
//! | a `fal_queue` path | 501: a queue protocol, not served here |
//! | no session key (`x-api-key`, or `Authorization: Bearer`) | 401 |
//! | a body over [`MAX_BODY`], or of more than [`bounds::MAX_VALUES`] JSON values | 413 |
//! | a client that stalls in its body (slower than the configured time) | 408 |
//! | a client that stalls in its headers | closed without an answer |
//! | malformed JSON, or a body the dialect cannot read | 400 |
//! | an output schema past the replay model's budgets, or with no finite instance | 400 |
//! | a model script that has no reply left | 500 |
//! | a call the model script fails ([`fault`]) | its fault's status, or a stream cut short |
//! | a call past the enforced context window (its size by [`estimate`]) | 400, the dialect's context-length error, recorded as a `context_overflow` fault |
//! | more than [`MAX_BODIES_READ`] bodies being read at once for the configured time | 503 |
//! | a connection past [`MAX_CONNECTIONS`] open at once | closed unread |
//! | a request head hyper cannot read | what hyper answers: 400, 414 or 431 |
//!
//! The record says what reached the client: each entry's status is the one written on the
//! socket, or `null` with the reason when the connection closed first ([`record`]).
//!
//! What a harness can make the relay hold is bounded by these limits, not by what it sends:
//! at most [`MAX_BODIES_READ`] bodies of at most [`MAX_BODY`] bytes are read at once, one
//! body at a time is parsed (the runtime has one thread, and nothing awaits between the
//! parse and the answer) and only after its values were counted ([`bounds`]), the replay
//! model's work is budgeted ([`structured`]), a parsed body is dropped before the call is
//! recorded, and the record is capped ([`record`]). No lock is held while a request is
//! handled: the record's lock is taken only to write an entry, so the probe can always read
//! the record and stop the relay.
//!
//! Why hyper rather than `tiny_http` (the lighter of the two by 6 crates against 29 here):
//! tiny_http 0.12 sets no socket timeouts and gives no hook to set them, so a client that
//! stalls inside its headers holds a connection thread and never becomes a request the relay
//! could refuse or record. hyper's `header_read_timeout` and a timed body read bound both.
//! The runtime is a current-thread tokio runtime on one thread of the relay's own; dropping
//! it at [`Relay::stop`] closes every connection, so nothing outlives the session.

// `unsafe` lives in `checkfu-wire-sandbox` alone (tests/it/layers.rs holds this).
#![forbid(unsafe_code)]

pub mod bounds;
pub mod dialect;
pub mod estimate;
pub mod exercise;
pub mod fault;
pub mod pace;
pub mod record;
pub mod routes;
pub mod script;
pub mod serve;
pub mod structured;
pub mod token;

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use checkfu_wire::catalog::Route;
pub use checkfu_wire_sandbox::budget::Budget;
use dialect::{ErrorShape, Ids, Reply, Served, Turn};
pub use fault::FaultKind;
use fault::{AnswerBody, Fault};
pub use pace::{Pace, PaceEnd, Paced};
pub use record::{Call, Egress, Entry, Record, Refusal};
pub use script::{Model, Played, Script, ScriptKind};
pub use structured::digest;

/// The largest request body the relay reads.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// The most connections served at once; one past it is closed unread and recorded.
pub const MAX_CONNECTIONS: usize = 64;

/// The most request bodies read at once: each may be up to [`MAX_BODY`], so the relay holds
/// at most this many bodies whatever number of connections a harness opens. A request waits
/// for its turn up to the configured stall time, and is then answered 503. One is enough:
/// a body crosses loopback in milliseconds, and the answer is made on one thread anyway.
pub const MAX_BODIES_READ: usize = 1;

/// How long [`Relay::stop`] waits for the relay's thread before leaving it behind (it holds
/// no lock and no process; it ends with the probe), at most: the budget it is given may
/// leave less.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Why a connection's pending answers never reached the client.
const CLOSED: &str = "closed without an answer";

/// What one relay serves.
#[derive(Debug)]
pub struct Config {
    /// The provider whose allow-list is served; `None` for the unlisted-provider route.
    pub provider: Option<String>,
    pub script: Script,
    /// The session's nonce, looked for in every request's latest user turn.
    pub nonce: String,
    /// The second token of the `tool` script, and the file that holds it.
    pub token: String,
    pub token_file: PathBuf,
    /// The session's key: the lease a call must carry.
    pub key: String,
    /// How long a client may take to send its headers, and then its body.
    pub stall: Duration,
    /// A listener bound on a loopback address by the caller; `None` binds 127.0.0.1:0.
    pub listener: Option<TcpListener>,
    /// Keep bounded copies of each call's bodies (`--record-model`).
    pub record_bodies: bool,
    /// The context window the relay enforces, in tokens of its own estimate
    /// ([`estimate`]): a request past it is answered with the dialect's context-length
    /// error, recorded as a `context_overflow` fault, and the script is not asked.
    pub context_window: Option<u64>,
    /// The run's budget: once its token is cancelled (a signal) or its deadline has passed,
    /// every call is refused (503, recorded) before its body is read, so a harness that
    /// goes on calling after Ctrl-C or the deadline is served nothing.
    pub budget: Budget,
}

/// A running relay.
pub struct Relay {
    addr: SocketAddr,
    key: String,
    provider: Option<String>,
    shared: Arc<Shared>,
    server: serve::Background,
}

/// What every connection reads. Only `turn` and `record` change, each under its own lock,
/// and neither is held while a request is handled.
struct Shared {
    routes: &'static [Route],
    key: String,
    model: Model,
    record_bodies: bool,
    stall: Duration,
    context_window: Option<u64>,
    budget: Budget,
    /// When the relay started: each call's `started_ms` counts from here.
    epoch: Instant,
    sequence: AtomicUsize,
    bodies: tokio::sync::Semaphore,
    turn: Mutex<TurnState>,
    record: Mutex<Record>,
    /// The token of a steer the probe sent, looked for in every request from then on
    /// (`steer_in_request`), whichever turn it comes in.
    steer: Mutex<Option<String>>,
    /// The output schema the session carries (`checkfu.output_schema`), set against every
    /// structured request from then on ([`Relay::expect_schema`]).
    expected: Mutex<Option<Value>>,
}

/// The probe's current turn, as the relay judges requests by it.
#[derive(Clone, Debug, Default)]
struct TurnState {
    nonce: String,
    /// The reply tokens of the turn before that reached its output (`Relay::begin_turn`):
    /// a resumed session's request carries one of them if the model's answer came back.
    earlier_replies: Vec<String>,
    /// How the turn's text answers are paced, when they are ([`pace`]).
    pace: Option<Pace>,
    /// Answer the turn as the `nonce` script does, whatever the script ([`Relay::answer_plainly`]).
    plain: bool,
    /// The value that answers the turn's first request for the expected schema in place of
    /// an instance of it ([`Relay::break_first`]), and whether it was served.
    broken: Option<Value>,
    broken_served: bool,
    /// The tool calls a scoping turn asks for ([`Relay::script_scoping`]).
    scoping: Option<exercise::Scoping>,
    /// The marks looked for, in order, in every request of the turn ([`Relay::watch_marks`]).
    marks: Vec<String>,
    /// The platform tool the turn's model calls ([`Relay::script_platform_tool`]).
    platform: Option<exercise::PlatformTool>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves the data as it was; keep serving.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn record(&self) -> MutexGuard<'_, Record> {
        lock(&self.record)
    }
}

/// Where the record stood ([`Relay::mark`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    calls: usize,
    refused: usize,
    egress: usize,
}

/// What [`Relay::set_aside`] took out of the record, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Aside {
    pub calls: usize,
    pub refused: usize,
    pub egress_attempts: usize,
}

/// Why the relay could not start.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    #[error(transparent)]
    Route(#[from] routes::RouteError),
    #[error("the relay listens on loopback only, not on {0}")]
    NotLoopback(SocketAddr),
    #[error("the relay {what}: {source}")]
    Io { what: &'static str, source: std::io::Error },
}

impl Relay {
    /// Starts serving. Errors: an unknown provider, a listener not on a loopback address, or
    /// a socket or thread that cannot be made.
    pub fn start(config: Config) -> Result<Relay, RelayError> {
        let routes = routes::for_provider(config.provider.as_deref())?;
        let shared = Arc::new(Shared {
            routes,
            key: config.key.clone(),
            model: Model::new(config.script, config.token, config.token_file),
            record_bodies: config.record_bodies,
            stall: config.stall,
            context_window: config.context_window,
            budget: config.budget,
            epoch: Instant::now(),
            sequence: AtomicUsize::new(0),
            bodies: tokio::sync::Semaphore::new(MAX_BODIES_READ),
            turn: Mutex::new(TurnState { nonce: config.nonce, ..TurnState::default() }),
            record: Mutex::new(Record::new()),
            steer: Mutex::new(None),
            expected: Mutex::new(None),
        });
        let serving = Arc::clone(&shared);
        let server =
            serve::Background::start("model-relay", config.listener, move |listener| accept(listener, serving)).map_err(|e| match e {
                serve::ServeError::NotLoopback(addr) => RelayError::NotLoopback(addr),
                serve::ServeError::Io { what, source } => RelayError::Io { what, source },
            })?;
        Ok(Relay { addr: server.addr(), key: config.key, provider: config.provider, shared, server })
    }

    /// Starts the next turn: calls from now on belong to it and `nonce` is the one looked
    /// for; `earlier_replies` are the reply tokens of the turn before that reached its
    /// output, looked for as the model's earlier answer (`earlier_reply_in_request`).
    pub fn begin_turn(&self, nonce: String, earlier_replies: Vec<String>) {
        *lock(&self.shared.turn) = TurnState { nonce, earlier_replies, ..TurnState::default() };
        self.shared.record().turn += 1;
    }

    /// Paces the current turn's text answers from now on ([`pace`]); `None` stops pacing.
    pub fn pace(&self, pace: Option<Pace>) {
        lock(&self.shared.turn).pace = pace.map(Pace::bounded);
    }

    /// The relay's clock: milliseconds since it started, as the record's `started_ms` and a
    /// paced answer's `ended_ms` count them.
    pub fn now_ms(&self) -> u64 {
        self.shared.epoch.elapsed().as_millis() as u64
    }

    /// Answers the current turn's calls as the `nonce` script does: a turn the probe adds for
    /// a check of its own (the cancellation's) leaves the script's faults, tool calls and
    /// replies to the turns they were written for.
    pub fn answer_plainly(&self) {
        lock(&self.shared.turn).plain = true;
    }

    /// Holds every structured request from now on against `schema`, the output schema the
    /// session carries: the record says whether a request asked for exactly it
    /// (`schema_exact`), and a tool whose input schema is exactly it counts as the request's
    /// submit tool whatever its name ([`structured::exact_tool`]).
    pub fn expect_schema(&self, schema: Value) {
        *lock(&self.shared.expected) = Some(schema);
    }

    /// Answers the current turn's first request for the expected schema with `broken` (a
    /// value that breaks it) in place of an instance of it, as a model may: the JSON text, or
    /// the submit tool's input. Later requests get instances; for the tool way, a request
    /// counts the broken submission as not made (`structured_broken` in the record).
    pub fn break_first(&self, broken: Value) {
        let mut turn = lock(&self.shared.turn);
        turn.broken = Some(broken);
        turn.broken_served = false;
    }

    /// In the current turn, a call whose latest user turn carries the nonce is answered with
    /// the scoping turn's tool calls, in order, then as the script answers
    /// ([`exercise::Scoping`]).
    pub fn script_scoping(&self, scoping: exercise::Scoping) {
        lock(&self.shared.turn).scoping = Some(scoping);
    }

    /// In the current turn, a call whose latest user turn carries the nonce is answered with
    /// the call of the probe's MCP tool while the request offers it and holds neither the
    /// call nor its result, then as the script answers ([`exercise::PlatformTool`]).
    pub fn script_platform_tool(&self, tool: exercise::PlatformTool) {
        lock(&self.shared.turn).platform = Some(tool);
    }

    /// Looks for `marks` in every request of the current turn, recording which it carried in
    /// the order it carried them (`marks_in_request`).
    pub fn watch_marks(&self, marks: Vec<String>) {
        lock(&self.shared.turn).marks = marks;
    }

    /// Looks for `token` (a steer's) in every request from now on.
    pub fn watch_steer(&self, token: String) {
        *lock(&self.shared.steer) = Some(token);
    }

    /// The current turn, from 1.
    pub fn turn(&self) -> usize {
        self.shared.record().turn
    }

    /// `http://127.0.0.1:PORT`, with no path and no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn key(&self) -> &str {
        &self.key
    }

    /// The provider served, as the report names it.
    pub fn provider(&self) -> &str {
        self.provider.as_deref().unwrap_or(checkfu_wire::catalog::UNLISTED_PROVIDER)
    }

    /// The calls served in `turn`.
    /// How far the record has come, for [`Relay::set_aside`].
    pub fn mark(&self) -> Mark {
        let record = self.shared.record();
        Mark { calls: record.calls.len(), refused: record.refused.len(), egress: record.egress_attempts.len() }
    }

    /// Takes out of the record what came after `mark`: the traffic of a check the probe makes
    /// beside the run (its requirement probes), which the model plane does not report as
    /// the run's. What was taken is counted.
    pub fn set_aside(&self, mark: Mark) -> Aside {
        let mut record = self.shared.record();
        let record = &mut *record;
        let after = |len: usize, at: usize| len.saturating_sub(at);
        let aside = Aside {
            calls: after(record.calls.len(), mark.calls),
            refused: after(record.refused.len(), mark.refused),
            egress_attempts: after(record.egress_attempts.len(), mark.egress),
        };
        record.calls.truncate(mark.calls);
        record.refused.truncate(mark.refused);
        record.egress_attempts.truncate(mark.egress);
        aside
    }

    pub fn calls(&self, turn: usize) -> Vec<Call> {
        self.shared.record().calls.iter().filter(|c| c.turn == turn).cloned().collect()
    }

    /// The refusals recorded in `turn`: how many, and the first.
    pub fn refusals(&self, turn: usize) -> (usize, Option<Refusal>) {
        let record = self.shared.record();
        let mut of_turn = record.refused.iter().filter(|r| r.turn == turn);
        let first = of_turn.next().cloned();
        (first.as_ref().map_or(0, |_| 1 + of_turn.count()), first)
    }

    /// Stops serving (closing every connection) and returns the record, waiting for the
    /// relay's thread no longer than `within` leaves (a teardown's grace budget).
    pub fn stop(mut self, within: &Budget) -> Record {
        self.server.shutdown(STOP_WAIT.min(within.remaining()));
        std::mem::take(&mut *self.shared.record())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.server.shutdown(STOP_WAIT);
    }
}

async fn accept(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors or a reset before accept: wait a little and go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.load(Ordering::Relaxed) >= MAX_CONNECTIONS {
            drop(stream);
            shared.record().refuse("", None, &format!("more than {MAX_CONNECTIONS} connections at once: closed unread, without an answer"));
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let open = Arc::clone(&open);
        let activity = Arc::new(Activity::new(Arc::clone(&shared)));
        let stream = Watched { inner: stream, activity: Arc::clone(&activity), cut_deadline: None };
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            let service_activity = Arc::clone(&activity);
            let service = hyper::service::service_fn(move |request| {
                let activity = Arc::clone(&service_activity);
                async move { Ok::<_, Infallible>(handle(&activity, request).await) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(shared.stall)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                activity.connection_error(&error);
            }
            activity.close();
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// One connection as the relay watches it: whether bytes came in after its last answer
/// (the header timeout alone cannot tell a client that stalls inside its headers from an
/// idle keep-alive connection), and which recorded answers are still to be written, so each
/// entry's status becomes the one that reached the socket.
struct Activity {
    shared: Arc<Shared>,
    read_after_write: AtomicBool,
    /// Entries answered by the handler and not yet written, in order (HTTP/1.1 answers go
    /// out in the order of the requests).
    pending: Mutex<VecDeque<Entry>>,
    /// A status hyper wrote on its own (an unreadable request head), with no entry pending.
    automatic: Mutex<Option<u16>>,
    /// An answer cut by the model script was handed to hyper: the connection is then closed
    /// within the stall time, whether or not the client reads ([`Watched`]).
    cut: AtomicBool,
}

impl Activity {
    fn new(shared: Arc<Shared>) -> Activity {
        Activity {
            shared,
            read_after_write: AtomicBool::new(false),
            pending: Mutex::new(VecDeque::new()),
            automatic: Mutex::new(None),
            cut: AtomicBool::new(false),
        }
    }

    fn mid_request(&self) -> bool {
        self.read_after_write.load(Ordering::Relaxed)
    }

    /// The handler's answer for `entry` is about to be written.
    fn expect(&self, entry: Option<Entry>) {
        if let Some(entry) = entry {
            lock(&self.pending).push_back(entry);
        }
    }

    /// A response head with `status` went onto the socket.
    fn wrote_status(&self, status: u16) {
        match lock(&self.pending).pop_front() {
            Some(entry) => self.shared.record().delivered(entry, Some(status), CLOSED),
            None => *lock(&self.automatic) = Some(status),
        }
    }

    /// A connection hyper gave up on before it became a request: a stall inside the
    /// headers, bytes that are not HTTP/1.1, or a client that closed mid-request. hyper
    /// answers some of these itself (400, 414, 431), the others not at all; the record says
    /// which.
    fn connection_error(&self, error: &hyper::Error) {
        let written = lock(&self.automatic).take();
        let reason = if error.is_timeout() && !self.mid_request() {
            // An idle keep-alive connection closed after the header timeout: a client's
            // pool, not a stall.
            return;
        } else if error.is_timeout() {
            format!("the client stalled: no complete request headers within {:.1} s", self.shared.stall.as_secs_f64())
        } else if error.is_parse() || error.is_parse_too_large() {
            format!("not a well-formed HTTP/1.1 request: {error}")
        } else if error.is_incomplete_message() && self.mid_request() {
            String::from("the client closed the connection in the middle of a request")
        } else {
            return;
        };
        let reason = match written {
            Some(_) => reason,
            None => format!("{reason}; {CLOSED}"),
        };
        self.shared.record().refuse("", written, &reason);
    }

    /// The connection is over: whatever answer was not written never will be.
    fn close(&self) {
        let left: Vec<Entry> = lock(&self.pending).drain(..).collect();
        if !left.is_empty() {
            let mut record = self.shared.record();
            for entry in left {
                record.delivered(entry, None, CLOSED);
            }
        }
    }
}

impl Drop for Activity {
    fn drop(&mut self) {
        // A connection dropped with the runtime at stop ends here without `close`.
        self.close();
    }
}

/// A connection's stream, telling its [`Activity`] when bytes come in and which status each
/// answer written carries.
struct Watched {
    inner: tokio::net::TcpStream,
    activity: Arc<Activity>,
    /// When a cut answer's connection is closed at the latest: a client that stops reading
    /// would otherwise keep hyper writing the part before the cut, and the connection open.
    cut_deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl Watched {
    /// Whether a cut answer has held this connection for the stall time; polling registers
    /// the waker, so a write that waits on a client that never reads is woken to fail.
    fn past_cut_deadline(&mut self, cx: &mut std::task::Context<'_>) -> bool {
        if self.cut_deadline.is_none() && self.activity.cut.load(Ordering::Relaxed) {
            self.cut_deadline = Some(Box::pin(tokio::time::sleep(self.activity.shared.stall)));
        }
        match &mut self.cut_deadline {
            Some(deadline) => std::future::Future::poll(deadline.as_mut(), cx).is_ready(),
            None => false,
        }
    }
}

fn cut_closed() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, "a cut answer held the connection for the stall time")
}

/// The status of an HTTP/1.x response head at the start of `bytes`.
fn head_status(bytes: &[u8]) -> Option<u16> {
    let rest = bytes.strip_prefix(b"HTTP/1.1 ").or_else(|| bytes.strip_prefix(b"HTTP/1.0 "))?;
    let digits = rest.get(..3)?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_after_write.store(true, Ordering::Relaxed);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        if self.past_cut_deadline(cx) {
            return std::task::Poll::Ready(Err(cut_closed()));
        }
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.read_after_write.store(false, Ordering::Relaxed);
            // hyper writes each answer's head at the start of a write of its own (this
            // stream offers no vectored writes); an answer body of ours never starts so.
            if let Some(status) = head_status(buf) {
                self.activity.wrote_status(status);
            }
        }
        polled
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        if self.past_cut_deadline(cx) {
            return std::task::Poll::Ready(Err(cut_closed()));
        }
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A refusal's answer, recorded.
fn refuse(activity: &Activity, path: &str, shape: ErrorShape, status: u16, kind: &str, reason: String) -> Response<AnswerBody> {
    let body = shape.body(kind, &record::capped(&reason, record::MAX_REASON)).to_string();
    let entry = activity.shared.record().refuse(path, Some(status), &reason);
    activity.expect(entry);
    answer(status, "application/json", body)
}

fn answer(status: u16, content_type: &str, body: String) -> Response<AnswerBody> {
    with_content_type(Response::new(AnswerBody::whole(body)), status, content_type)
}

fn with_content_type(mut response: Response<AnswerBody>, status: u16, content_type: &str) -> Response<AnswerBody> {
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(value) = hyper::header::HeaderValue::from_str(content_type) {
        response.headers_mut().insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

/// The error shape of a request that matched no route: Anthropic's when the client sent
/// Anthropic's key header, OpenAI's otherwise.
fn guessed_shape(request: &Request<Incoming>) -> ErrorShape {
    if request.headers().contains_key("x-api-key") || request.headers().contains_key("anthropic-version") {
        ErrorShape::Anthropic
    } else {
        ErrorShape::Openai
    }
}

/// Whether the request carries the session's key, in either family's header.
fn carries_key(request: &Request<Incoming>, key: &str) -> bool {
    let header = |name: &str| request.headers().get(name).and_then(|v| v.to_str().ok());
    header("x-api-key") == Some(key) || header("authorization").and_then(|v| v.strip_prefix("Bearer ")) == Some(key)
}

/// A reply token that the request does not already hold (a harness cannot know the next
/// one, but the relay makes sure: a token found in the request proves nothing).
fn fresh_reply_token(body: &[u8]) -> String {
    loop {
        let candidate = token::mint(token::REPLY_PREFIX);
        if memchr::memmem::find(body, candidate.as_bytes()).is_none() {
            return candidate;
        }
    }
}

async fn handle(activity: &Activity, request: Request<Incoming>) -> Response<AnswerBody> {
    let started = Instant::now();
    match admit(activity, request).await {
        Ok(admitted) => serve(activity, admitted, started),
        Err(refused) => refused,
    }
}

/// A call the gateway admitted, with its body read: what [`serve`] answers.
struct Admitted<'a> {
    path: String,
    dialect: Served,
    shape: ErrorShape,
    body: Bytes,
    /// The call's share of the bodies held at once, kept until it is answered.
    _permit: tokio::sync::SemaphorePermit<'a>,
}

/// The gateway's checks, in order (another host, a path off the allow-list, a dialect not
/// served, a method, the key, the body's size and time), and the body read; a refusal is
/// the answer, recorded.
async fn admit<'a>(activity: &'a Activity, request: Request<Incoming>) -> Result<Admitted<'a>, Response<AnswerBody>> {
    let shared = &activity.shared;
    let uri = request.uri().clone();
    let shape = guessed_shape(&request);
    if request.method() == Method::CONNECT || uri.authority().is_some() {
        let host = uri.host().unwrap_or_default().to_owned();
        let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        let target = format!("{host}:{port}");
        shared.record().egress(&host, port);
        let reason =
            format!("the relay forwards to no other host ({} {} refused)", request.method(), record::capped(&target, record::MAX_NAME));
        return Err(refuse(activity, &target, shape, 403, "permission_error", reason));
    }
    let path = uri.path().to_owned();
    if let Err(stopped) = shared.budget.check("serve a model call") {
        let reason = format!("the run's budget is spent: {stopped}");
        return Err(refuse(activity, &path, shape, 503, "overloaded_error", reason));
    }
    let Some(route) = routes::matching(shared.routes, &path).copied() else {
        let reason = format!("`{}` is not on the gateway allow-list of this provider", record::capped(&path, record::MAX_NAME));
        return Err(refuse(activity, &path, shape, 404, "not_found_error", reason));
    };
    let Some(dialect) = Served::of(route.dialect) else {
        let reason = format!("the `{}` dialect is a queue protocol this relay does not serve", route.dialect.name());
        return Err(refuse(activity, &path, shape, 501, "not_supported_error", reason));
    };
    let shape = ErrorShape::from(dialect);
    if request.method() != Method::POST {
        let reason = format!("{} is not allowed on `{path}`: the gateway takes POST", request.method());
        return Err(refuse(activity, &path, shape, 405, "invalid_request_error", reason));
    }
    if !carries_key(&request, &shared.key) {
        return Err(refuse(
            activity,
            &path,
            shape,
            401,
            "authentication_error",
            String::from("the call does not carry this session's key"),
        ));
    }
    let declared = request.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        let reason = format!("the body is {} bytes, more than the relay's {MAX_BODY}", declared.unwrap_or_default());
        return Err(refuse(activity, &path, shape, 413, "request_too_large", reason));
    }
    let stall = shared.stall;
    // At most MAX_BODIES_READ bodies are held at once; the permit is kept until the answer
    // is made, so a parse never runs beside more bodies than that.
    let Ok(Ok(permit)) = tokio::time::timeout(stall, shared.bodies.acquire()).await else {
        let reason = format!("{MAX_BODIES_READ} other request bodies were being read for {:.1} s", stall.as_secs_f64());
        return Err(refuse(activity, &path, shape, 503, "overloaded_error", reason));
    };
    let body = match tokio::time::timeout(stall, Limited::new(request.into_body(), MAX_BODY).collect()).await {
        Err(_) => {
            return Err(refuse(
                activity,
                &path,
                shape,
                408,
                "timeout_error",
                format!("the client stalled: no complete body within {:.1} s", stall.as_secs_f64()),
            ))
        }
        Ok(Err(error)) if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return Err(refuse(
                activity,
                &path,
                shape,
                413,
                "request_too_large",
                format!("the body is more than the relay's {MAX_BODY} bytes"),
            ));
        }
        Ok(Err(error)) => {
            return Err(refuse(activity, &path, shape, 400, "invalid_request_error", format!("the body could not be read: {error}")))
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    Ok(Admitted { path, dialect, shape, body, _permit: permit })
}

/// Answers an admitted call with the model's reply, or fails it as the script says, in its
/// dialect, and records it.
fn serve(activity: &Activity, admitted: Admitted<'_>, started: Instant) -> Response<AnswerBody> {
    let shared = &activity.shared;
    let Admitted { path, dialect, shape, body, _permit } = admitted;
    let values = bounds::values_at_most(&body, bounds::MAX_VALUES);
    if values > bounds::MAX_VALUES {
        let reason = format!("the body holds more than {} JSON values", bounds::MAX_VALUES);
        return refuse(activity, &path, shape, 413, "request_too_large", reason);
    }
    let json: Value = match serde_json::from_slice(&body) {
        Ok(json) => json,
        Err(error) => return refuse(activity, &path, shape, 400, "invalid_request_error", format!("the body is not JSON: {error}")),
    };
    let mut turn = match dialect.read(&json) {
        Ok(turn) => turn,
        Err(reason) => {
            return refuse(activity, &path, shape, 400, "invalid_request_error", format!("not a {} request: {reason}", dialect.name()))
        }
    };
    let (state, turn_number) = (lock(&shared.turn).clone(), shared.record().turn);
    let expected = lock(&shared.expected).clone();
    let schema_exact = expected.as_ref().and_then(|schema| exact_structured(&json, &mut turn, schema, state.broken_served));
    let nonce_in_request = !state.nonce.is_empty() && turn.latest_user_text().is_some_and(|t| t.contains(&state.nonce));
    let earlier_reply_in_request = state.earlier_replies.iter().any(|t| bounds::strings_contain(&json, t));
    let nonce_anywhere = !state.nonce.is_empty() && bounds::strings_contain(&json, &state.nonce);
    let steer_in_request = lock(&shared.steer).as_ref().is_some_and(|t| bounds::strings_contain(&json, t));
    let size = json.as_object().map(|body| estimate::of(dialect, body)).unwrap_or_default();
    turn.input_tokens = size.tokens;
    drop(json);
    let reply_token = fresh_reply_token(&body);
    let marks_in_request = exercise::marks_in_order(&body, &state.marks);
    let scoping = state.scoping.as_ref().filter(|_| nonce_in_request).map(|s| (s, s.phase(&body)));
    let scripted = scoping.and_then(|(s, phase)| s.reply(phase, &turn));
    let scoping = scoping.map(|(_, phase)| exercise::ScopingSeen { phase, tool_results: turn.tool_results.len() });
    let (platform, platform_call) = match state.platform.as_ref().filter(|_| nonce_in_request) {
        Some(tool) => {
            let (seen, reply) = tool.see(&body, &turn);
            (Some(seen), reply)
        }
        None => (None, None),
    };
    let scripted = scripted.or(platform_call);
    // A scoping turn's scripted call comes first; the structured turn's broken answer next.
    let broken = scripted.is_none().then(|| broken_answer(shared, &state, &turn, schema_exact)).flatten();
    let structured_broken = broken.is_some();
    let (played, decision) = match (scripted, broken) {
        (Some(reply), _) => scoped(reply),
        (None, Some(answer)) => answer,
        (None, None) => match play(shared, size, &turn, &reply_token, state.plain) {
            Ok(answer) => answer,
            Err(unanswered) => return refuse(activity, &path, shape, unanswered.status, unanswered.kind, unanswered.reason),
        },
    };
    let structured_text = structured_broken || decision.structured_digest.is_some();
    let (played, pace) = pace::apply(played, state.pace, structured_text);
    let sequence = shared.sequence.fetch_add(1, Ordering::Relaxed) + 1;
    let mut call = Call {
        dialect: dialect.dialect(),
        path: record::capped(&path, record::MAX_NAME),
        model: record::capped(&turn.model, record::MAX_NAME),
        stream: turn.stream,
        status: None,
        closed: None,
        started_ms: started.saturating_duration_since(shared.epoch).as_millis() as u64,
        ms: 0,
        nonce_in_request,
        turn: turn_number,
        earlier_reply_in_request,
        steer_in_request,
        reply_token: None,
        fault: None,
        retry_after: None,
        events_sent: None,
        paced: None,
        structured_output: decision.structured_output,
        structured_digest: decision.structured_digest,
        schema_exact,
        structured_broken,
        nonce_anywhere,
        tool_called: decision.tool_called.map(|t| record::capped(&t, record::MAX_NAME)),
        token_returned: decision.token_returned,
        bodies: None,
        estimated_tokens: size.tokens,
        messages: size.messages,
        scoping,
        marks_in_request,
        platform,
    };
    let pieces = pace.map_or(1, |p| p.pieces);
    let rendered = render(dialect, &played, &turn, &Ids::new(sequence), reply_token, pieces, &mut call);
    call.status = Some(rendered.status);
    call.ms = started.elapsed().as_millis() as u64;
    call.bodies = shared.record_bodies.then(|| record::Bodies::new(&body, &rendered.text));
    let paced = pace.map(|pace| pace::PacedBody::for_call(&rendered.text, &played, turn.stream, pace, Arc::clone(shared), &mut call));
    drop(turn);
    drop(body);
    let entry = shared.record().call(call);
    activity.expect(entry);
    if rendered.cut {
        activity.cut.store(true, Ordering::Relaxed);
    }
    match paced {
        Some(mut body) => {
            body.log_to(entry);
            with_content_type(Response::new(AnswerBody::Paced(Box::new(body))), rendered.status, rendered.content_type)
        }
        None => rendered.into_response(),
    }
}

/// Against the session's `expected` schema: the request's structured ask, a tool whose input
/// schema is exactly it counting as one when the request names no other way; whether the
/// ask is for exactly that schema (`None`: the request asks for none). Once the turn's broken
/// submission was served, one more call of the tool is needed before it counts as answered.
fn exact_structured(json: &Value, turn: &mut Turn, expected: &Value, broken_served: bool) -> Option<bool> {
    // A tool found by its name or a forced `tool_choice` gives way to one whose schema is
    // exactly the session's; a response-format field stays what the request asked.
    let look = match &turn.structured {
        None => true,
        Some(found) => found.way == structured::TOOL && found.schema != *expected,
    };
    if let Some(found) = structured::exact_tool(json, expected).filter(|_| look) {
        turn.structured = Some(found);
    }
    let wanted = turn.structured.as_mut()?;
    if broken_served && wanted.way == structured::TOOL {
        wanted.answered = wanted.submissions > 1;
    }
    Some(wanted.schema == *expected)
}

/// The broken answer of the turn, when it is due: the turn has one, it was not served yet,
/// and this request asks for exactly the expected schema (a tool not yet called). Marks it
/// served.
fn broken_answer(shared: &Shared, state: &TurnState, turn: &Turn, schema_exact: Option<bool>) -> Option<(Played, script::Decision)> {
    let wanted = turn.structured.as_ref().filter(|w| !w.answered && schema_exact == Some(true))?;
    let broken = state.broken.clone().filter(|_| !state.broken_served)?;
    let mut current = lock(&shared.turn);
    if current.broken_served {
        return None;
    }
    current.broken_served = true;
    let reply = match &wanted.tool {
        Some(name) => Reply::ToolCall { name: name.clone(), input: broken },
        None => Reply::Text(broken.to_string()),
    };
    let tool_called = wanted.tool.clone();
    let decision = script::Decision { tool_called, structured_output: Some(wanted.way), ..script::Decision::default() };
    Some((Played::Reply(reply), decision))
}

/// A scoping turn's tool call, played as the model's answer and recorded as its call.
fn scoped(reply: Reply) -> (Played, script::Decision) {
    let tool_called = match &reply {
        Reply::ToolCall { name, .. } => Some(name.clone()),
        Reply::Text(_) => None,
    };
    (Played::Reply(reply), script::Decision { tool_called, ..script::Decision::default() })
}

/// What a call gets: the enforced window's overflow when it is past the window (no scripted
/// reply is used up), else the model's play (as `nonce` plays it in a plain turn). Both
/// overflows name their length here, by the request's own estimate ([`estimate`]), the rule
/// of the record's `estimated_tokens`, so an error never names a length by another rule.
fn play(
    shared: &Shared,
    size: estimate::Size,
    turn: &Turn,
    reply_token: &str,
    plain: bool,
) -> Result<(Played, script::Decision), script::Unanswered> {
    // Past the enforced window the provider refuses before its model sees the request: no
    // script is asked, and the request is as long as the estimate says.
    if let Some(maximum) = shared.context_window.filter(|window| size.tokens > *window) {
        return Ok((Played::Fault(Fault::ContextOverflow { tokens: Some(size.tokens), maximum }), script::Decision::default()));
    }
    let (played, decision) = shared.model.reply(turn, reply_token, plain)?;
    // A scripted overflow that names no length is the window plus the estimate.
    let played = match played {
        Played::Fault(Fault::ContextOverflow { tokens: None, maximum }) => {
            Played::Fault(Fault::ContextOverflow { tokens: Some(maximum.saturating_add(size.tokens.max(1))), maximum })
        }
        other => other,
    };
    Ok((played, decision))
}

/// An answer made and not yet sent: what the record keeps of it, and what goes out.
struct Rendered {
    status: u16,
    content_type: &'static str,
    headers: Vec<(&'static str, String)>,
    /// The body, or for a cut answer the part of it that is sent.
    text: String,
    cut: bool,
}

impl Rendered {
    fn into_response(self) -> Response<AnswerBody> {
        let body = if self.cut { AnswerBody::cut(self.text) } else { AnswerBody::whole(self.text) };
        let mut response = with_content_type(Response::new(body), self.status, self.content_type);
        for (name, value) in self.headers {
            if let Ok(value) = hyper::header::HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, value);
            }
        }
        response
    }
}

/// What the model played, rendered in the call's dialect, with what the record says of it.
fn render(dialect: Served, played: &Played, turn: &Turn, ids: &Ids, reply_token: String, pieces: usize, call: &mut Call) -> Rendered {
    let content_type = if turn.stream { "text/event-stream" } else { "application/json" };
    let whole = |reply: &Reply| {
        if turn.stream {
            dialect.render_sse(reply, turn, ids, pieces)
        } else {
            dialect.render_json(reply, turn, ids).to_string()
        }
    };
    let reply = match played {
        Played::Reply(reply) => reply,
        Played::Fault(fault) => {
            call.fault = Some(fault.kind());
            call.retry_after = fault.retry_after();
            return failed(dialect, *fault, turn, ids, call, whole);
        }
    };
    let carries_token = match reply {
        Reply::Text(text) => text.contains(&reply_token),
        Reply::ToolCall { input, .. } => bounds::strings_contain(input, &reply_token),
    };
    call.reply_token = carries_token.then_some(reply_token);
    Rendered { status: 200, content_type, headers: Vec::new(), text: whole(reply), cut: false }
}

/// A fault's answer: the dialect's error, or for a stream cut the part of an ordinary answer
/// that is sent before the connection closes. The cut answer carries no reply token, so a
/// harness that passes on what it got of it has nothing to show.
fn failed(dialect: Served, fault: Fault, turn: &Turn, ids: &Ids, call: &mut Call, whole: impl Fn(&Reply) -> String) -> Rendered {
    if let Fault::StreamCut { after_events } = fault {
        let unfinished = Reply::Text(String::from("This answer is cut off before its reply token."));
        let (part, sent) = fault::cut(&whole(&unfinished), turn.stream, after_events);
        call.events_sent = sent;
        let content_type = if turn.stream { "text/event-stream" } else { "application/json" };
        return Rendered { status: 200, content_type, headers: Vec::new(), text: part, cut: true };
    }
    match dialect.render_failure(fault, turn, ids) {
        Some(failure) => Rendered {
            status: failure.status,
            content_type: "application/json",
            headers: failure.headers,
            text: failure.body.to_string(),
            cut: false,
        },
        // Only a stream cut renders no failure, and it was answered above.
        None => {
            let text = ErrorShape::from(dialect).body("api_error", "the model script failed this call").to_string();
            Rendered { status: 500, content_type: "application/json", headers: Vec::new(), text, cut: false }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// Sends `body` to the Messages path with the session key `k`; the open connection.
    pub(crate) fn send(relay: &Relay, body: &str) -> std::net::TcpStream {
        let mut stream = std::net::TcpStream::connect(relay.addr()).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        let head = format!(
            "POST /v1/messages HTTP/1.1\r\nHost: x\r\nConnection: close\r\nx-api-key: k\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("write");
        stream
    }

    /// Posts a Messages request; the answer's status line and body.
    fn post(relay: &Relay) -> String {
        let body = r#"{"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "Say cf-0123456789abcdef"}]}"#;
        let mut answer = String::new();
        let _ = send(relay, body).read_to_string(&mut answer);
        answer
    }

    #[test]
    fn no_call_is_served_once_the_run_s_budget_is_cancelled() {
        let budget = Budget::after(Duration::from_secs(60));
        let relay = Relay::start(Config {
            provider: Some(String::from("anthropic")),
            script: Script::Nonce,
            nonce: String::from("cf-0123456789abcdef"),
            token: String::from("T"),
            token_file: PathBuf::from("/nonexistent"),
            key: String::from("k"),
            stall: Duration::from_secs(5),
            listener: None,
            record_bodies: false,
            context_window: None,
            budget: budget.clone(),
        })
        .expect("relay");
        assert!(post(&relay).starts_with("HTTP/1.1 200"));
        budget.cancel.cancel();
        let refused = post(&relay);
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.contains("the run's budget is spent"), "{refused}");
        let record = relay.stop(&Budget::after(Duration::from_secs(5)));
        assert_eq!(record.calls.len(), 1, "the cancelled call was not served");
        assert!(record.refused.iter().any(|r| r.reason.contains("budget is spent")), "{:?}", record.refused);
    }
}
