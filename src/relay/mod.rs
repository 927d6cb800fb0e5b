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
//! | a path not on the provider's allow-list (the query string is ignored) | 404 |
//! | a method other than POST | 405 |
//! | a `fal_queue` path | 501: a queue protocol, not served here |
//! | no session key (`x-api-key`, or `Authorization: Bearer`) | 401 |
//! | a body over [`MAX_BODY`] | 413 |
//! | a client that stalls (headers or body slower than the configured time) | 408 |
//! | malformed JSON, or a body the dialect cannot read | 400 |
//! | a model script that has no reply left | 500 |
//! | a connection past [`MAX_CONNECTIONS`] open at once | closed unread, recorded as 503 |
//!
//! Why hyper rather than `tiny_http` (the lighter of the two by 6 crates against 29 here):
//! tiny_http 0.12 sets no socket timeouts and gives no hook to set them, so a client that
//! stalls inside its headers holds a connection thread and never becomes a request the relay
//! could refuse or record. hyper's `header_read_timeout` and a timed body read bound both.
//! The runtime is a current-thread tokio runtime on one thread of the relay's own; dropping
//! it at [`Relay::stop`] closes every connection, so nothing outlives the session.

pub mod dialect;
pub mod record;
pub mod routes;
pub mod script;
pub mod structured;

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use dialect::{ErrorShape, Ids, Served};
pub use record::{Call, Egress, Record, Refusal};
use crate::catalog::Route;
pub use script::{Model, Script};

/// The largest request body the relay reads.
pub const MAX_BODY: usize = 32 * 1024 * 1024;

/// The most connections served at once: each may hold a body of up to [`MAX_BODY`], so a
/// harness opening connections without end must not grow the probe's memory without end.
/// One past it is closed at once and recorded.
pub const MAX_CONNECTIONS: usize = 64;

/// What one relay serves.
#[derive(Debug)]
pub struct Config {
    /// The provider whose allow-list is served; `None` for the unlisted-provider route.
    pub provider: Option<String>,
    pub script: Script,
    /// The session's nonce, looked for in every request (`nonce_in_request`).
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
}

/// A running relay.
pub struct Relay {
    addr: SocketAddr,
    key: String,
    provider: Option<String>,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct State {
    routes: &'static [Route],
    model: Model,
    nonce: String,
    /// The nonce of the turn before this one (`Relay::begin_turn`), looked for too: a
    /// one-shot CLI's second run resumes only if its request carries it.
    earlier_nonce: Option<String>,
    key: String,
    sequence: usize,
    record: Record,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic elsewhere while holding the lock leaves the record as it was; keep serving.
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Relay {
    /// Starts serving. Errors: an unknown provider, a listener not on a loopback address, or
    /// a socket or thread that cannot be made.
    pub fn start(config: Config) -> Result<Relay, String> {
        let routes = routes::for_provider(config.provider.as_deref())?;
        let listener = match config.listener {
            Some(listener) => listener,
            None => TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("the relay cannot listen on 127.0.0.1: {e}"))?,
        };
        let addr = listener.local_addr().map_err(|e| format!("the relay's socket has no address: {e}"))?;
        if !addr.ip().is_loopback() {
            return Err(format!("the relay listens on loopback only, not on {addr}"));
        }
        listener.set_nonblocking(true).map_err(|e| format!("the relay's socket: {e}"))?;
        let model = Model::new(config.script, config.token, config.token_file);
        let state = Arc::new(Mutex::new(State { routes, model, nonce: config.nonce, earlier_nonce: None, key: config.key.clone(), sequence: 0, record: Record::new() }));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build().map_err(|e| format!("the relay's runtime: {e}"))?;
        let shared = Arc::clone(&state);
        let stall = config.stall;
        let thread = std::thread::Builder::new()
            .name("model-relay".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = tokio::net::TcpListener::from_std(listener) else { return };
                    tokio::spawn(accept(listener, shared, stall));
                    let _ = stopped.await;
                });
                // Dropping the runtime here cancels every connection still open.
                drop(runtime);
            })
            .map_err(|e| format!("the relay's thread: {e}"))?;
        Ok(Relay { addr, key: config.key, provider: config.provider, state, stop: Some(stop), thread: Some(thread) })
    }

    /// Starts the next turn: calls from now on belong to it, `nonce` is the one looked for,
    /// and the nonce it replaces is looked for as the earlier one (`earlier_nonce_in_request`).
    pub fn begin_turn(&self, nonce: String) {
        let mut guard = lock(&self.state);
        let earlier = std::mem::replace(&mut guard.nonce, nonce);
        guard.earlier_nonce = Some(earlier);
        guard.record.turn += 1;
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
        self.provider.as_deref().unwrap_or(crate::catalog::UNLISTED_PROVIDER)
    }

    /// What the relay has recorded so far.
    pub fn record(&self) -> Record {
        lock(&self.state).record.clone()
    }

    /// Stops serving (closing every connection) and returns the record.
    pub fn stop(mut self) -> Record {
        self.shutdown();
        std::mem::take(&mut lock(&self.state).record)
    }

    fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn accept(listener: tokio::net::TcpListener, state: Arc<Mutex<State>>, stall: Duration) {
    let open = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of descriptors or a reset before accept: wait a little and go on.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if open.load(std::sync::atomic::Ordering::Relaxed) >= MAX_CONNECTIONS {
            drop(stream);
            lock(&state).record.refuse("", 503, format!("more than {MAX_CONNECTIONS} connections at once: closed unread"));
            continue;
        }
        open.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let state = Arc::clone(&state);
        let open = Arc::clone(&open);
        let activity = Arc::new(Activity::default());
        let stream = Watched { inner: stream, activity: Arc::clone(&activity) };
        tokio::spawn(async move {
            let service_state = Arc::clone(&state);
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&service_state);
                async move { Ok::<_, Infallible>(handle(&state, request, stall).await) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(stall)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            if let Err(error) = served {
                // A connection hyper gave up on before it became a request: a stall inside
                // the headers, or bytes that are not HTTP/1.1.
                let (status, reason) = if error.is_timeout() && !activity.mid_request() {
                    // An idle keep-alive connection closed after the header timeout: a
                    // client's pool, not a stall.
                    (0, String::new())
                } else if error.is_timeout() {
                    (408, format!("the client stalled: no complete request headers within {:.1} s", stall.as_secs_f64()))
                } else if error.is_parse() || error.is_parse_status() {
                    (400, format!("not a well-formed HTTP/1.1 request: {error}"))
                } else {
                    (0, String::new())
                };
                if status != 0 {
                    lock(&state).record.refuse("", status, reason);
                }
            }
            open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        });
    }
}

/// What a connection last did: the header timeout alone cannot tell a client that stalls
/// inside its headers from an idle keep-alive connection, so the relay watches for bytes
/// that arrived after its last answer.
#[derive(Default)]
struct Activity {
    read_after_write: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn mid_request(&self) -> bool {
        self.read_after_write.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// A connection's stream, telling its [`Activity`] when bytes come in and go out.
struct Watched {
    inner: tokio::net::TcpStream,
    activity: Arc<Activity>,
}

impl tokio::io::AsyncRead for Watched {
    fn poll_read(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &mut tokio::io::ReadBuf<'_>) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.read_after_write.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>, buf: &[u8]) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.read_after_write.store(false, std::sync::atomic::Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A refusal's answer, recorded.
fn refuse(state: &Mutex<State>, path: &str, shape: ErrorShape, status: u16, kind: &str, reason: String) -> Response<Full<Bytes>> {
    let body = shape.body(kind, &reason).to_string();
    lock(state).record.refuse(path, status, reason);
    answer(status, "application/json", body)
}

fn answer(status: u16, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
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

async fn handle(state: &Mutex<State>, request: Request<Incoming>, stall: Duration) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let uri = request.uri().clone();
    let shape = guessed_shape(&request);
    if request.method() == Method::CONNECT || uri.authority().is_some() {
        let host = uri.host().unwrap_or_default().to_owned();
        let port = uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 });
        let target = format!("{host}:{port}");
        lock(state).record.egress(host, port);
        let reason = format!("the relay forwards to no other host ({} {target} refused)", request.method());
        return refuse(state, &target, shape, 403, "permission_error", reason);
    }
    let path = uri.path().to_owned();
    let route = routes::matching(lock(state).routes, &path).copied();
    let Some(route) = route else {
        let reason = format!("`{path}` is not on the gateway allow-list of this provider");
        return refuse(state, &path, shape, 404, "not_found_error", reason);
    };
    let Some(dialect) = Served::of(route.dialect) else {
        let reason = format!("the `{}` dialect is a queue protocol this relay does not serve", route.dialect.name());
        return refuse(state, &path, shape, 501, "not_supported_error", reason);
    };
    let shape = ErrorShape::from(dialect);
    if request.method() != Method::POST {
        let reason = format!("{} is not allowed on `{path}`: the gateway takes POST", request.method());
        return refuse(state, &path, shape, 405, "invalid_request_error", reason);
    }
    let key = lock(state).key.clone();
    if !carries_key(&request, &key) {
        return refuse(state, &path, shape, 401, "authentication_error", String::from("the call does not carry this session's key"));
    }
    let declared = request.headers().get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        let reason = format!("the body is {} bytes, more than the relay's {MAX_BODY}", declared.unwrap_or_default());
        return refuse(state, &path, shape, 413, "request_too_large", reason);
    }
    let body = match tokio::time::timeout(stall, Limited::new(request.into_body(), MAX_BODY).collect()).await {
        Err(_) => return refuse(state, &path, shape, 408, "timeout_error", format!("the client stalled: no complete body within {:.1} s", stall.as_secs_f64())),
        Ok(Err(error)) if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return refuse(state, &path, shape, 413, "request_too_large", format!("the body is more than the relay's {MAX_BODY} bytes"));
        }
        Ok(Err(error)) => return refuse(state, &path, shape, 400, "invalid_request_error", format!("the body could not be read: {error}")),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let json: Value = match serde_json::from_slice(&body) {
        Ok(json) => json,
        Err(error) => return refuse(state, &path, shape, 400, "invalid_request_error", format!("the body is not JSON: {error}")),
    };
    let turn = match dialect.read(&json) {
        Ok(turn) => turn,
        Err(reason) => return refuse(state, &path, shape, 400, "invalid_request_error", format!("not a {} request: {reason}", dialect.name())),
    };
    let mut guard = lock(state);
    let nonce_in_request = !guard.nonce.is_empty() && memchr::memmem::find(&body, guard.nonce.as_bytes()).is_some();
    let earlier_nonce_in_request = guard.earlier_nonce.as_ref().is_some_and(|n| !n.is_empty() && memchr::memmem::find(&body, n.as_bytes()).is_some());
    let turn_number = guard.record.turn;
    let (reply, decision) = match guard.model.reply(&turn) {
        Ok(answer) => answer,
        Err(reason) => {
            drop(guard);
            return refuse(state, &path, shape, 500, "api_error", reason);
        }
    };
    guard.sequence += 1;
    let ids = Ids::new(guard.sequence);
    let (content_type, text) = if turn.stream {
        ("text/event-stream", dialect.render_sse(&reply, &turn, &ids))
    } else {
        ("application/json", dialect.render_json(&reply, &turn, &ids).to_string())
    };
    let call = Call {
        dialect: dialect.dialect(),
        path,
        model: turn.model.clone(),
        stream: turn.stream,
        status: 200,
        ms: started.elapsed().as_millis() as u64,
        nonce_in_request,
        turn: turn_number,
        earlier_nonce_in_request,
        structured_output: decision.structured_output,
        tool_called: decision.tool_called,
        token_returned: decision.token_returned,
        bodies: Some((json, text.clone())),
    };
    guard.record.call(call);
    drop(guard);
    answer(200, content_type, text)
}
