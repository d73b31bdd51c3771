//! The accept loop, with limits on connections: at most `--max-connections` HTTP connections
//! at once (more wait in the kernel's backlog), request headers read within
//! `--header-timeout-s` (a connection idle between requests is closed after the same time),
//! and request bodies read within `--body-timeout-s`. Without them a client that opens
//! connections and sends nothing holds them for ever, and a few hundred exhaust the server's
//! file descriptors so that even `/health` hangs. A WebSocket leaves this count when it is
//! upgraded; its own bound is in `openenv.rs` (as many sockets as `--max-connections`, each
//! closed after `--idle-timeout-s` without a message).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tower::ServiceExt;

/// The connection limits of a server.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
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
        let service = TowerToHyperService::new(
            app.clone()
                .map_request(|request: Request<Incoming>| request.map(Body::new)),
        );
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(TokioIo::new(stream), service)
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
