//! The probe's own MCP server, over streamable HTTP (MCP 2025-06-18): what `session/new`'s
//! `mcpServers` grants, as an `http` entry, a harness that advertises
//! `mcpCapabilities.http` at `initialize`; and what the stdio entry's process pipes to
//! ([`crate::mcp_tool`]), at a path of its own. Each [`Transport`] granted is an endpoint of
//! one server, with a tool of its own name and a result of its own.
//!
//! Every endpoint answers the same way ([`mcp_tool::answer`]) and keeps what reached it in
//! the probe's memory ([`McpHttp::log`]): nothing a harness can write holds this evidence, so
//! a harness cannot forge the call it never made, over either transport.
//!
//! It listens on the fence's loopback (a listener bound inside the network namespace, which
//! the probe accepts on from its own, as it does the relay's), or on the probe's 127.0.0.1
//! when there is no fence, and serves HTTP/1.1 with hyper on a current-thread tokio runtime
//! of its own, as the relay does (the relay's module says why hyper). The transport, as the
//! revision describes it, and what this server does of it:
//!
//! | request | answer |
//! |---|---|
//! | POST an endpoint's path, a JSON-RPC request | 200, its response as `application/json` (no SSE stream: the revision lets a server answer with one JSON object) |
//! | POST an endpoint's path, a notification or a response | 202, no body |
//! | POST an endpoint's path, a batch (an array) | 400: the 2025-06-18 revision has no batches |
//! | POST an endpoint's path, not JSON | 400, a JSON-RPC parse error |
//! | GET or DELETE an endpoint's path | 405: no server-initiated stream, no session to end |
//! | another path | 404 |
//! | an `Origin` not of the loopback | 403 (the revision asks a server to check it) |
//! | a body over [`MAX_BODY`] | 413 |
//! | a body not sent whole within [`STALL`] | 408; a stall inside the headers closes the connection |
//! | once the run's budget is cancelled or past its deadline | 503 |
//! | a connection past [`MAX_CONNECTIONS`] open at once | closed unread |
//!
//! No session id is assigned (the revision lets a server do without one), so a client needs
//! nothing but the URL. The server stops with the run ([`McpHttp::stop`], or dropping it):
//! its runtime is dropped, which closes every connection.

use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use crate::budget::Budget;
use crate::mcp_tool::{self, ServerLog};
use crate::relay::serve::{Background, ServeError};

/// The name the probe gives the server in `mcpServers`.
pub const SERVER_NAME: &str = "checkfu_http";
/// The HTTP endpoint's one tool ([`Transport::tool`]).
pub const TOOL: &str = "checkfu_platform_probe_http";
/// The HTTP grant's endpoint.
pub const PATH: &str = "/mcp";
/// The endpoint the stdio grant's process pipes to.
pub const STDIO_PATH: &str = "/stdio";
/// The largest body read: an MCP message of this server's is a few hundred bytes.
pub const MAX_BODY: usize = 1 << 20;
/// The most connections served at once; one past it is closed unread.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client may take to send its headers, and then its body.
pub const STALL: Duration = Duration::from_secs(10);
/// How long [`McpHttp::stop`] waits for the server's thread, at most.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// How a grant reaches the server: each is an endpoint of its own, with its own tool, result
/// and record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, the `http` entry's URL.
    Http,
    /// Stdio, through the process the harness starts ([`mcp_tool::pipe`]).
    Stdio,
}

impl Transport {
    /// The endpoint's path.
    pub fn path(self) -> &'static str {
        match self {
            Transport::Http => PATH,
            Transport::Stdio => STDIO_PATH,
        }
    }

    /// The endpoint's one tool: a name of each transport's own, so the relay tells a call of
    /// one from a call of the other (neither name ends with the other).
    pub fn tool(self) -> &'static str {
        match self {
            Transport::Http => TOOL,
            Transport::Stdio => mcp_tool::TOOL,
        }
    }

    /// The name `mcpServers` gives the grant.
    pub fn server_name(self) -> &'static str {
        match self {
            Transport::Http => SERVER_NAME,
            Transport::Stdio => mcp_tool::SERVER_NAME,
        }
    }
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum McpHttpError {
    #[error("the MCP server over HTTP listens on loopback only, not on {0}")]
    NotLoopback(SocketAddr),
    #[error("the MCP server over HTTP {what}: {source}")]
    Io { what: &'static str, source: std::io::Error },
}

/// A running server.
pub struct McpHttp {
    served: Arc<Served>,
    server: Background,
}

/// What every connection reads: the budget and the endpoints.
struct Served {
    budget: Budget,
    endpoints: Vec<Endpoint>,
}

/// One transport's endpoint; only its log changes, under its lock, taken only to write an
/// entry.
struct Endpoint {
    transport: Transport,
    result: String,
    log: Mutex<ServerLog>,
}

impl Endpoint {
    fn log(&self) -> MutexGuard<'_, ServerLog> {
        // A panic elsewhere while holding the lock leaves the log as it was; keep serving.
        self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Served {
    fn endpoint(&self, transport: Transport) -> Option<&Endpoint> {
        self.endpoints.iter().find(|e| e.transport == transport)
    }
}

impl McpHttp {
    /// Starts serving on `listener` (bound on a loopback address by the caller: inside the
    /// fence), or on 127.0.0.1 with a port the OS picks, an endpoint for each transport of
    /// `endpoints`, whose tool's calls are answered with its result; nothing is served once
    /// `budget` is spent.
    pub fn start(listener: Option<TcpListener>, endpoints: Vec<(Transport, String)>, budget: Budget) -> Result<McpHttp, McpHttpError> {
        let endpoints = endpoints
            .into_iter()
            .map(|(transport, result)| Endpoint { transport, result, log: Mutex::new(ServerLog::default()) })
            .collect();
        let served = Arc::new(Served { budget, endpoints });
        let serving = Arc::clone(&served);
        let server = Background::start("mcp-http", listener, move |listener| accept(listener, serving)).map_err(|e| match e {
            ServeError::NotLoopback(addr) => McpHttpError::NotLoopback(addr),
            ServeError::Io { what, source } => McpHttpError::Io { what, source },
        })?;
        Ok(McpHttp { served, server })
    }

    /// The URL of `transport`'s endpoint: `http://127.0.0.1:PORT/PATH` (the fence's loopback
    /// when there is a fence, where the harness runs).
    pub fn url(&self, transport: Transport) -> String {
        format!("http://{}{}", self.server.addr(), transport.path())
    }

    /// What reached `transport`'s endpoint so far (nothing, for one not served).
    pub fn log(&self, transport: Transport) -> ServerLog {
        self.served.endpoint(transport).map(|e| e.log().clone()).unwrap_or_default()
    }

    /// Stops serving, closing every connection.
    pub fn stop(mut self) {
        self.server.shutdown(STOP_WAIT);
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        self.server.shutdown(STOP_WAIT);
    }
}

async fn accept(listener: tokio::net::TcpListener, served: Arc<Served>) {
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
            continue;
        }
        open.fetch_add(1, Ordering::Relaxed);
        let (open, served) = (Arc::clone(&open), Arc::clone(&served));
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let served = Arc::clone(&served);
                async move { Ok::<_, Infallible>(handle(&served, request).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(STALL)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
            open.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// The answer to one HTTP request.
async fn handle(served: &Served, request: Request<Incoming>) -> Response<Full<Bytes>> {
    if let Err(stopped) = served.budget.check("serve an MCP request") {
        return plain(StatusCode::SERVICE_UNAVAILABLE, format!("the run's budget is spent: {stopped}"));
    }
    let Some(endpoint) = served.endpoints.iter().find(|e| e.transport.path() == request.uri().path()) else {
        let paths: Vec<&str> = served.endpoints.iter().map(|e| e.transport.path()).collect();
        return plain(StatusCode::NOT_FOUND, format!("the MCP endpoints are {}", paths.join(", ")));
    };
    if !origin_allowed(&request) {
        return plain(StatusCode::FORBIDDEN, String::from("an Origin other than the loopback's"));
    }
    if request.method() != Method::POST {
        let mut refused =
            plain(StatusCode::METHOD_NOT_ALLOWED, String::from("this server opens no stream and keeps no session: POST only"));
        refused.headers_mut().insert(hyper::header::ALLOW, hyper::header::HeaderValue::from_static("POST"));
        return refused;
    }
    let body = match tokio::time::timeout(STALL, Limited::new(request.into_body(), MAX_BODY).collect()).await {
        Err(_) => return plain(StatusCode::REQUEST_TIMEOUT, format!("no complete body within {} s", STALL.as_secs())),
        Ok(Err(error)) if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() => {
            return plain(StatusCode::PAYLOAD_TOO_LARGE, format!("a body of more than {MAX_BODY} bytes"));
        }
        Ok(Err(error)) => return plain(StatusCode::BAD_REQUEST, format!("the body could not be read: {error}")),
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let message = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Array(_)) => return rpc_error(StatusCode::BAD_REQUEST, -32600, "MCP 2025-06-18 has no batches: one message per POST"),
        Ok(message) => message,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, -32700, &e.to_string()),
    };
    let tool = endpoint.transport.tool();
    let (answer, entry) = mcp_tool::answer(&message, tool, &endpoint.result);
    if let Some(entry) = entry {
        endpoint.log().note(&entry, tool);
    }
    match answer {
        Some(answer) => with_type(StatusCode::OK, "application/json", answer.to_string()),
        // A notification or a response: accepted, nothing to say.
        None => with_type(StatusCode::ACCEPTED, "text/plain", String::new()),
    }
}

/// Whether the request's `Origin`, when it has one, is the loopback's (a page of another
/// origin in a browser on this machine must not reach the server).
fn origin_allowed(request: &Request<Incoming>) -> bool {
    let Some(origin) = request.headers().get(hyper::header::ORIGIN) else { return true };
    let Ok(origin) = origin.to_str() else { return false };
    let host = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://")).unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(name, _)| name);
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// A JSON-RPC error with no id, as an answer of `status`.
fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    with_type(status, "application/json", body.to_string())
}

fn plain(status: StatusCode, words: String) -> Response<Full<Bytes>> {
    with_type(status, "text/plain; charset=utf-8", words)
}

fn with_type(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// One request over a fresh connection (`Connection: close`): the status line and the body.
    fn send(server: &McpHttp, method: &str, path: &str, extra: &str, body: &str) -> (String, String) {
        let mut stream = std::net::TcpStream::connect(server.server.addr()).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
            server.server.addr(),
            body.len()
        );
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).expect("write");
        let mut answer = String::new();
        stream.read_to_string(&mut answer).expect("read");
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (head.lines().next().unwrap_or_default().to_owned(), body.to_owned())
    }

    fn started(budget: Budget) -> McpHttp {
        McpHttp::start(None, vec![(Transport::Http, String::from("cfm-result"))], budget).expect("starts")
    }

    #[test]
    fn a_session_over_http_lists_the_tool_answers_its_call_and_keeps_the_arguments_in_memory() {
        let server = started(Budget::after(Duration::from_secs(60)));
        let url = server.url(Transport::Http);
        assert!(url.starts_with("http://127.0.0.1:") && url.ends_with(PATH), "{url}");
        let init =
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}});
        let (status, body) = send(&server, "POST", PATH, "", &init.to_string());
        assert!(status.contains("200"), "{status}");
        assert_eq!(serde_json::from_str::<Value>(&body).expect("json")["result"]["protocolVersion"], "2025-06-18");
        let (status, body) = send(&server, "POST", PATH, "", r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        assert!(status.contains("202") && body.is_empty(), "{status} {body}");
        let (_, listed) = send(&server, "POST", PATH, "", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert_eq!(serde_json::from_str::<Value>(&listed).expect("json")["result"]["tools"][0]["name"], TOOL);
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": TOOL, "arguments": {"text": "cfn-arg"}}});
        let (_, called) = send(&server, "POST", PATH, "", &call.to_string());
        assert_eq!(serde_json::from_str::<Value>(&called).expect("json")["result"]["content"][0]["text"], "cfm-result");
        // The stdio server's tool is not this server's: a call of it is refused and not kept.
        let other = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": mcp_tool::TOOL, "arguments": {}}});
        let (_, refused) = send(&server, "POST", PATH, "", &other.to_string());
        assert_eq!(serde_json::from_str::<Value>(&refused).expect("json")["error"]["code"], -32602);
        assert_eq!(server.log(Transport::Http), ServerLog { initialized: true, listed: true, calls: vec![json!({"text": "cfn-arg"})] });
        server.stop();
    }

    #[test]
    fn what_the_transport_does_not_serve_is_refused_with_its_status() {
        let server = started(Budget::after(Duration::from_secs(60)));
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(send(&server, "GET", PATH, "", "").0.contains("405"));
        assert!(send(&server, "POST", "/other", "", ping).0.contains("404"));
        assert!(send(&server, "POST", PATH, "Origin: http://evil.example\r\n", ping).0.contains("403"));
        assert!(send(&server, "POST", PATH, "Origin: http://localhost:3000\r\n", ping).0.contains("200"));
        assert!(send(&server, "POST", PATH, "", &format!("[{ping}]")).0.contains("400"));
        let (status, body) = send(&server, "POST", PATH, "", "not json");
        assert!(status.contains("400") && body.contains("-32700"), "{status} {body}");
        let huge = format!("\"{}\"", "x".repeat(MAX_BODY + 1));
        assert!(send(&server, "POST", PATH, "", &huge).0.contains("413"));
        assert_eq!(server.log(Transport::Http), ServerLog::default());
    }

    /// Each transport's endpoint has its own tool, result and record; a transport not granted
    /// has no endpoint.
    #[test]
    fn each_endpoint_answers_its_own_tool_and_keeps_its_own_record() {
        let endpoints = vec![(Transport::Http, String::from("cfm-http")), (Transport::Stdio, String::from("cfm-stdio"))];
        let server = McpHttp::start(None, endpoints, Budget::after(Duration::from_secs(60))).expect("starts");
        let call = |tool: &str| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {"text": "cfn-s"}}});
        let (_, called) = send(&server, "POST", STDIO_PATH, "", &call(mcp_tool::TOOL).to_string());
        assert_eq!(serde_json::from_str::<Value>(&called).expect("json")["result"]["content"][0]["text"], "cfm-stdio");
        let (_, refused) = send(&server, "POST", STDIO_PATH, "", &call(TOOL).to_string());
        assert_eq!(serde_json::from_str::<Value>(&refused).expect("json")["error"]["code"], -32602);
        assert_eq!(server.log(Transport::Stdio).calls, vec![json!({"text": "cfn-s"})]);
        assert_eq!(server.log(Transport::Http), ServerLog::default());

        let http_only = started(Budget::after(Duration::from_secs(60)));
        let (status, body) = send(&http_only, "POST", STDIO_PATH, "", &call(mcp_tool::TOOL).to_string());
        assert!(status.contains("404") && body.contains(PATH), "{status} {body}");
        assert_eq!(http_only.log(Transport::Stdio), ServerLog::default());
    }

    #[test]
    fn nothing_is_served_once_the_run_s_budget_is_cancelled() {
        let budget = Budget::after(Duration::from_secs(60));
        let server = started(budget.clone());
        budget.cancel.cancel();
        let (status, body) = send(&server, "POST", PATH, "", r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
        assert!(status.contains("503") && body.contains("budget is spent"), "{status} {body}");
        assert_eq!(server.log(Transport::Http), ServerLog::default());
    }
}
