//! The accept loop, with limits on connections: at most `--max-connections` HTTP connections
//! at once (more wait in the kernel's backlog), request headers read within
//! `--header-timeout-s` (a connection idle between requests is closed after the same time),
//! request bodies read within `--body-timeout-s`, every write taken by the peer within
//! `--write-timeout-s` (`peer.rs`: a peer that asks and never reads is closed), and at most
//! `--max-requests-per-connection` requests on one connection. Without them a client that opens
//! connections and sends nothing, or pipelines requests and reads no answer, holds them for
//! ever, and a few hundred exhaust the server's file descriptors so that even `/health` hangs.
//! A WebSocket leaves this count when it is upgraded; as many sockets may be open
//! (`openenv.rs`), each closed after `--idle-timeout-s` without a message (pings do not count)
//! or `--write-timeout-s` without reading. The two together are kept within the process's
//! limit on open files.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONNECTION;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

use super::peer::Peer;

/// The connection limits of a server.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    /// A write the peer takes no byte of for this long closes the connection (HTTP or
    /// WebSocket): `--write-timeout-s`.
    pub write_timeout: Duration,
    /// Requests one connection may make (pipelined or one after another); the last is
    /// answered with `connection: close`: `--max-requests-per-connection`.
    pub max_requests: usize,
}

/// Request headers at most, and bytes of a request's head (hyper's own limits, set here so
/// that its refusal, 431, can name them: `peer.rs`).
pub(super) const MAX_HEADERS: usize = 100;
pub(super) const MAX_HEAD_BYTES: usize = 400 << 10;

impl ConnectionLimits {
    /// These limits with HTTP connections and WebSockets (as many of each) inside the
    /// process's limit on open files (`ulimit -n`), less what the log, the scenario files and
    /// the calls out need: past it an accept fails for want of a descriptor and `/health` waits
    /// behind idle connections.
    pub(crate) fn within_open_file_limit(self) -> ConnectionLimits {
        let Some(open_files) = open_file_limit() else {
            return self;
        };
        let budget = ((open_files - (open_files / 2).min(64)) / 2).max(1) as usize;
        if budget >= self.max_connections {
            return self;
        }
        eprintln!(
            "dealgym serve: --max-connections {} (and as many WebSockets) is past what this process may open ({open_files} files, `ulimit -n`): serving {budget} of each at once",
            self.max_connections
        );
        ConnectionLimits {
            max_connections: budget,
            ..self
        }
    }
}

/// The soft limit on open files of this process (Linux: `/proc/self/limits`); `None` where it
/// cannot be read or is unlimited.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Serve `app` on `listener` until `shutdown` turns true; then stop accepting, ask every
/// connection to finish its request in flight, and wait up to 10 s for them.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    mut shutdown: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let permit = tokio::select! {
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            _ = stopped(&mut shutdown) => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of file descriptors, or a connection reset before it was accepted: wait a
                // little (connections in flight free descriptors) and go on.
                Err(e) => {
                    if !is_transient(&e) {
                        eprintln!("dealgym serve: accepting a connection: {e}");
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut shutdown) => break,
        };
        let _ = stream.set_nodelay(true);
        let answered = Arc::new(AtomicUsize::new(0));
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: Request<Incoming>| request.map(Body::new))
                .map_response(move |response| {
                    closing_after(response, &answered, limits.max_requests)
                }),
        );
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_headers(MAX_HEADERS)
                .max_buf_size(MAX_HEAD_BYTES)
                .serve_connection(
                    TokioIo::new(Peer::new(stream, limits.write_timeout)),
                    service,
                )
                .with_upgrades();
            tokio::pin!(connection);
            let finished = tokio::select! {
                _ = connection.as_mut() => true,
                _ = stopped(&mut stop) => false,
            };
            if !finished {
                connection.as_mut().graceful_shutdown();
                let _ = connection.await;
            }
            drop(permit);
        });
    }
    drop(listener);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(10), permits.acquire_many(all)).await;
}

/// The answer to a connection's `most`-th request closes it (`connection: close`, which hyper
/// keeps), so one connection makes at most `most` requests, pipelined or not. A WebSocket's
/// handshake is left as it is.
fn closing_after(mut response: Response, answered: &AtomicUsize, most: usize) -> Response {
    let count = answered.fetch_add(1, Ordering::Relaxed) + 1;
    if count >= most && response.status() != StatusCode::SWITCHING_PROTOCOLS {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Resolves once the server is stopping (holding no borrow of the flag across an await).
async fn stopped(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|stop| *stop).await;
}

fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused | Interrupted | WouldBlock
    ) || e.raw_os_error() == Some(24) // EMFILE: too many open files
        || e.raw_os_error() == Some(23) // ENFILE
}
