//! The connections a client's calls to a plain-`http` endpoint go over: HTTP/1.1 keep-alive
//! connections (hyper's own client connection), each driven by the task that makes the call.
//!
//! Why not only reqwest: with its pooled client every call is a hop to the connection's own
//! task and back (a channel, a wake-up, often of another worker thread) through layers a model
//! call does not use (redirects, URL parsing, per-request extensions). At hundreds of episodes
//! in flight that was a third of the engine's CPU per turn (BENCHMARKS.md, "What a turn
//! costs"). Here the episode's own task writes the request and reads the answer; between calls
//! the connection waits, unpolled, in a pool shared by the process. reqwest still carries
//! `https` endpoints (TLS), calls through a proxy (`HTTP_PROXY`/`ALL_PROXY` set) and the
//! health probes.
//!
//! An idle connection the server has closed (uvicorn closes them after 5 s) is found before
//! it is used: waiting for it to be ready reads the close, and the request then goes on a new
//! connection at once. A request is sent again only if hyper gives it back unsent; one that
//! was written and then lost its connection is a failed try like any other (the server may
//! have run it), left to the client's retries and backoff. Connections are pooled per tokio
//! runtime (a socket is driven by the runtime that opened it) and per server.

use std::collections::HashMap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::{LazyLock, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use super::LlmError;

/// A POST target of a plain-`http` URL, read once: where to connect, and the request's
/// path and `Host` header.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `host:port`, what the pool keys connections by.
    authority: String,
    /// The `Host` header: the host, and the port where the URL gives one (as reqwest sends it).
    host_header: String,
    host: String,
    port: u16,
    /// The path and query, as the request line carries it.
    path: hyper::Uri,
    /// The URL as errors name it.
    shown: String,
}

impl Target {
    /// The target of `url` when the transport can carry it: an `http` URL, with no proxy set
    /// in the environment (reqwest honours one; so must the calls). `None`: reqwest carries it.
    pub(crate) fn of(url: &reqwest::Url) -> Option<Target> {
        if proxy_set() {
            return None;
        }
        Target::plain(url)
    }

    /// The target of a plain-`http` URL without credentials (reqwest sends those as a basic
    /// authorization), whatever the environment says of proxies.
    fn plain(url: &reqwest::Url) -> Option<Target> {
        if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
            return None;
        }
        // `[::1]` for an IPv6 address: as the `Host` header and the pool's key write it.
        let shown_host = url.host_str()?;
        let port = url.port_or_known_default()?;
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        Some(Target {
            authority: format!("{shown_host}:{port}"),
            host_header: match url.port() {
                Some(p) => format!("{shown_host}:{p}"),
                None => shown_host.to_string(),
            },
            host: shown_host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            path: path.parse().ok()?,
            shown: crate::llm::without_userinfo(url.as_str()),
        })
    }
}

/// Whether the environment names a proxy for plain-`http` calls (as reqwest reads it).
fn proxy_set() -> bool {
    static SET: LazyLock<bool> = LazyLock::new(|| {
        ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
            .iter()
            .any(|v| std::env::var_os(v).is_some_and(|v| !v.is_empty()))
    });
    *SET
}

/// What came back: the status, the `Retry-After` header's text, and the body.
pub(crate) struct Answer {
    pub status: u16,
    pub retry_after: Option<String>,
    pub body: Vec<u8>,
}

/// One keep-alive connection: the handle requests are sent on, and the connection itself,
/// polled only while a call of ours is on it.
struct Connection {
    sender: http1::SendRequest<Full<Bytes>>,
    link: Link,
    idle_since: Instant,
}

/// The connection itself: the future that reads and writes its socket.
struct Link {
    conn: http1::Connection<TokioIo<tokio::net::TcpStream>, Full<Bytes>>,
    /// The connection future has completed (the server closed it, or it failed): never
    /// polled again, never reused.
    ended: bool,
}

impl Link {
    /// Poll `work` until it is done, polling the connection beside it (it does the reading
    /// and writing `work` waits on). The connection ending before `work` is done is an
    /// error naming why.
    async fn drive<F: Future>(&mut self, work: F) -> Result<F::Output, String> {
        let mut work = pin!(work);
        poll_fn(|cx| {
            let mut end = None;
            if !self.ended {
                if let Poll::Ready(result) = std::pin::Pin::new(&mut self.conn).poll(cx) {
                    self.ended = true;
                    end = Some(result);
                }
            }
            if let Poll::Ready(out) = work.as_mut().poll(cx) {
                return Poll::Ready(Ok(out));
            }
            if self.ended {
                return Poll::Ready(Err(match end {
                    Some(Err(e)) => e.to_string(),
                    _ => "the server closed the connection".to_string(),
                }));
            }
            Poll::Pending
        })
        .await
    }

    /// Whether the connection is still open once it has taken in what the server sent (the
    /// end of the last answer, or a close).
    fn settle(&mut self) -> bool {
        if !self.ended {
            let waker = futures_util::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            if std::pin::Pin::new(&mut self.conn).poll(&mut cx).is_ready() {
                self.ended = true;
            }
        }
        !self.ended
    }
}

/// Idle connections by tokio runtime and `host:port`, the most recently used last (reused
/// first: it is the one least likely to have been closed), so the oldest first.
struct Pool {
    idle: Mutex<HashMap<PoolKey, Vec<Connection>>>,
}

/// A socket is driven by the runtime that opened it: a connection is reused only by calls on
/// that runtime (another runtime's calls could wait on a driver nobody runs).
type PoolKey = (Option<tokio::runtime::Id>, String);

fn pool_key(authority: &str) -> PoolKey {
    let runtime = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
    (runtime, authority.to_string())
}

/// The process's pool: the connections outlive any one client, as reqwest's do.
static POOL: LazyLock<Pool> = LazyLock::new(|| Pool {
    idle: Mutex::new(HashMap::new()),
});

/// At most this many idle connections kept per server (more are closed as they come back).
const MAX_IDLE_PER_HOST: usize = crate::limits::MAX_CONCURRENCY as usize;

/// A connection idle longer than this is closed rather than reused.
const MAX_IDLE: Duration = Duration::from_secs(60);

impl Pool {
    /// The most recently used idle connection to `authority` on this runtime, if any; the
    /// expired ones are closed on the way (outside the lock).
    fn take(&self, authority: &str) -> Option<Connection> {
        let key = pool_key(authority);
        let (found, expired) = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let list = idle.get_mut(&key)?;
            let expired = expire(list);
            let found = list.pop();
            if list.is_empty() {
                idle.remove(&key);
            }
            (found, expired)
        };
        drop(expired);
        found
    }

    /// Keep `c` for the next call to `authority` (closed instead when the list is full); the
    /// expired ones are closed on the way.
    fn put(&self, authority: &str, mut c: Connection) {
        c.idle_since = Instant::now();
        let (refused, expired) = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            let list = idle.entry(pool_key(authority)).or_default();
            let expired = expire(list);
            let refused = if list.len() < MAX_IDLE_PER_HOST {
                list.push(c);
                None
            } else {
                Some(c)
            };
            (refused, expired)
        };
        drop((refused, expired));
    }
}

/// Take out of `list` (oldest first) the connections idle longer than [`MAX_IDLE`].
fn expire(list: &mut Vec<Connection>) -> Vec<Connection> {
    let stale = list
        .iter()
        .take_while(|c| c.idle_since.elapsed() >= MAX_IDLE)
        .count();
    list.drain(..stale).collect()
}

/// POST the JSON `body` writes to `target`, with `bearer` as the key if any; the whole call
/// within `timeout`; the answer at most `max_bytes` long. The body is written for each request
/// sent (a second one on a new connection), and dropped once sent.
pub(crate) async fn post(
    target: &Target,
    body: &(dyn Fn() -> Result<Bytes, LlmError> + Sync),
    bearer: Option<&str>,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Answer, LlmError> {
    let call = async {
        // A reused connection closed while idle (found before the request is written, or the
        // request handed back unsent): the request goes on a new connection, at once.
        if let Some(c) = POOL.take(&target.authority) {
            match exchange(target, c, body()?, bearer, max_bytes).await {
                Ok(answer) => return Ok(answer),
                Err(Failure::Unsent(_)) => {}
                Err(Failure::Sent(e)) => return Err(e),
            }
        }
        let c = dial(target).await?;
        exchange(target, c, body()?, bearer, max_bytes)
            .await
            .map_err(Failure::into_error)
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(answer) => answer,
        Err(_) => Err(LlmError::Timeout {
            url: target.shown.clone(),
            seconds: timeout.as_secs_f64(),
        }),
    }
}

/// An answer's `Retry-After` header, as text (hyper's and reqwest's answers share the type).
pub(crate) fn retry_after(headers: &hyper::HeaderMap) -> Option<String> {
    headers
        .get(hyper::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Add a chunk of an answer to `bytes`, or say the answer is longer than `max` bytes.
pub(crate) fn append_within(bytes: &mut Vec<u8>, chunk: &[u8], max: usize) -> Result<(), String> {
    if bytes.len() + chunk.len() > max {
        return Err(format!(
            "the answer is longer than {max} bytes, the most this build reads"
        ));
    }
    bytes.extend_from_slice(chunk);
    Ok(())
}

/// Why an exchange failed: before its request was written (it may go on a new connection), or
/// once it may have reached the server (a failed try, for the client's retries).
enum Failure {
    Unsent(LlmError),
    Sent(LlmError),
}

impl Failure {
    fn into_error(self) -> LlmError {
        match self {
            Failure::Unsent(e) | Failure::Sent(e) => e,
        }
    }
}

/// A new connection to `target`.
async fn dial(target: &Target) -> Result<Connection, LlmError> {
    let connect = |message: String| LlmError::Connect {
        url: target.shown.clone(),
        message,
    };
    let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .map_err(|e| connect(e.to_string()))?;
    // Requests are written whole: no reason to wait for more before sending.
    stream
        .set_nodelay(true)
        .map_err(|e| connect(e.to_string()))?;
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| connect(e.to_string()))?;
    Ok(Connection {
        sender,
        link: Link { conn, ended: false },
        idle_since: Instant::now(),
    })
}

/// One request and its whole answer on `c`, polling the connection meanwhile; `c` goes back to
/// the pool when it can carry another.
async fn exchange(
    target: &Target,
    mut c: Connection,
    body: Bytes,
    bearer: Option<&str>,
    max_bytes: usize,
) -> Result<Answer, Failure> {
    let bad = |message: String| LlmError::BadResponse {
        url: target.shown.clone(),
        message,
    };
    // Before an answer's status line, a failure is the connection's (as reqwest says of a
    // request that could not be made), after it the answer's.
    let connect = |message: String| LlmError::Connect {
        url: target.shown.clone(),
        message,
    };
    // Ready: a connection the server closed while it was idle says so here, before anything
    // is written.
    c.link
        .drive(c.sender.ready())
        .await
        .and_then(|r| r.map_err(|e| e.to_string()))
        .map_err(|e| Failure::Unsent(connect(e)))?;
    let mut request = hyper::Request::post(target.path.clone())
        .header(hyper::header::HOST, &target.host_header)
        .header(hyper::header::CONTENT_TYPE, "application/json");
    if let Some(key) = bearer {
        request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
    }
    let request = request
        .body(Full::new(body))
        .map_err(|e| Failure::Sent(bad(e.to_string())))?;
    // hyper hands the request back when it was never written: only then may it go again
    // on another connection; once written, the server may have run it.
    let sent = c.sender.try_send_request(request);
    let response = match c.link.drive(sent).await {
        Ok(Ok(response)) => response,
        Ok(Err(mut e)) => {
            let unsent = e.take_message().is_some();
            let error = connect(e.into_error().to_string());
            return Err(if unsent {
                Failure::Unsent(error)
            } else {
                Failure::Sent(error)
            });
        }
        Err(ended) => return Err(Failure::Sent(connect(ended))),
    };
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let mut incoming = response.into_body();
    let read = async {
        let mut bytes = Vec::new();
        while let Some(frame) = incoming.frame().await {
            let frame = frame.map_err(|e| e.to_string())?;
            if let Ok(data) = frame.into_data() {
                append_within(&mut bytes, &data, max_bytes)?;
            }
        }
        Ok(bytes)
    };
    let body = c
        .link
        .drive(read)
        .await
        .and_then(|r| r)
        .map_err(|e| Failure::Sent(bad(e)))?;
    if c.link.settle() && !c.sender.is_closed() {
        POOL.put(&target.authority, c);
    }
    Ok(Answer {
        status,
        retry_after,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server that answers each request it reads with `answer`, on each connection `per_conn`
    /// times, then closes the connection (without saying so: no `Connection: close`). Returns
    /// the target and how many connections it accepted.
    async fn server(
        answer: &'static str,
        per_conn: usize,
    ) -> (Target, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let (target, accepted, _) = server_reading(answer, per_conn, false).await;
        (target, accepted)
    }

    /// [`server`], counting the requests it read; with `then_drop`, it reads one request more
    /// on each connection and closes it without an answer.
    async fn server_reading(
        answer: &'static str,
        per_conn: usize,
        then_drop: bool,
    ) -> (
        Target,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
        std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) {
        let requests = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let read_count = requests.clone();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let read_count = read_count.clone();
                tokio::spawn(async move {
                    for i in 0..per_conn + usize::from(then_drop) {
                        let mut seen = Vec::new();
                        let mut buf = [0u8; 4096];
                        // Read one whole request: its head, then the body its length gives.
                        loop {
                            let n = socket.read(&mut buf).await.unwrap_or(0);
                            if n == 0 {
                                return;
                            }
                            seen.extend_from_slice(&buf[..n]);
                            let text = String::from_utf8_lossy(&seen);
                            if let Some(head_end) = text.find("\r\n\r\n") {
                                let length: usize = text[..head_end]
                                    .lines()
                                    .find_map(|l| {
                                        l.to_ascii_lowercase()
                                            .strip_prefix("content-length:")
                                            .map(|v| v.trim().parse().unwrap())
                                    })
                                    .unwrap_or(0);
                                if seen.len() >= head_end + 4 + length {
                                    break;
                                }
                            }
                        }
                        read_count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        if i == per_conn {
                            // Read, then gone without a word.
                            return;
                        }
                        socket.write_all(answer.as_bytes()).await.unwrap();
                    }
                    // Closed while the client keeps it as idle.
                });
            }
        });
        let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}/v1/x")).unwrap();
        (Target::plain(&url).unwrap(), accepted, requests)
    }

    const OK: &str =
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

    async fn call(target: &Target, max_bytes: usize) -> Result<Answer, LlmError> {
        post(
            target,
            &|| Ok(Bytes::from_static(b"{\"a\":1}")),
            None,
            Duration::from_secs(5),
            max_bytes,
        )
        .await
    }

    #[tokio::test]
    async fn a_connection_is_kept_and_reused() {
        let (target, accepted) = server(OK, 3).await;
        for _ in 0..3 {
            let answer = call(&target, 1000).await.unwrap();
            assert_eq!((answer.status, answer.body.as_slice()), (200, &b"{}"[..]));
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// The server closes each connection after one answer: every later call finds its idle
    /// connection closed and goes on a new one, with no error and no retry spent.
    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_replaced() {
        let (target, accepted) = server(OK, 1).await;
        for _ in 0..4 {
            call(&target, 1000).await.unwrap();
            // Let the close reach the client before the next call.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 4);
    }

    /// A request written on a reused connection that then goes without an answer is not sent
    /// again here (the server may have run it): it is a failed try, the client's to retry.
    #[tokio::test]
    async fn a_request_the_server_read_is_not_sent_again() {
        let (target, accepted, requests) = server_reading(OK, 1, true).await;
        call(&target, 1000).await.unwrap();
        let e = call(&target, 1000).await.err().unwrap();
        assert!(matches!(e, LlmError::Connect { .. }), "{e}");
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn statuses_headers_and_limits_are_read() {
        let (target, _) = server(
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: 2\r\ncontent-length: 4\r\n\r\nslow",
            8,
        )
        .await;
        let answer = call(&target, 1000).await.unwrap();
        assert_eq!(answer.status, 429);
        assert_eq!(answer.retry_after.as_deref(), Some("2"));
        assert_eq!(answer.body, b"slow");
        let e = call(&target, 3).await.err().unwrap();
        assert!(
            matches!(&e, LlmError::BadResponse { message, .. } if message.contains("longer than 3 bytes")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn no_server_is_a_connect_error_and_silence_a_timeout() {
        let free = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}/v1/x")).unwrap();
        let e = call(&Target::plain(&url).unwrap(), 10).await.err().unwrap();
        assert!(matches!(e, LlmError::Connect { .. }), "{e}");

        // Accepts, reads, never answers.
        let silent = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = silent.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (_socket, _) = silent.accept().await.unwrap();
            std::future::pending::<()>().await;
        });
        let url = reqwest::Url::parse(&format!("http://127.0.0.1:{port}/v1/x")).unwrap();
        let e = post(
            &Target::plain(&url).unwrap(),
            &|| Ok(Bytes::from_static(b"{}")),
            None,
            Duration::from_millis(200),
            10,
        )
        .await
        .err()
        .unwrap();
        assert!(matches!(e, LlmError::Timeout { .. }), "{e}");
    }

    #[test]
    fn https_and_credentials_stay_with_reqwest() {
        let of = |u: &str| Target::plain(&reqwest::Url::parse(u).unwrap());
        assert!(of("https://api.example.com/v1/chat/completions").is_none());
        assert!(of("http://user:pw@127.0.0.1:8000/v1").is_none());
        let t = of("http://[::1]:8000/v1/chat/completions?x=1").unwrap();
        assert_eq!(
            (t.authority.as_str(), t.host.as_str()),
            ("[::1]:8000", "::1")
        );
        assert_eq!(t.path.to_string(), "/v1/chat/completions?x=1");
    }
}
