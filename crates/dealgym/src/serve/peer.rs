//! What the listener wraps every accepted connection in, below hyper, so that it holds for
//! HTTP and for the WebSocket the connection may become:
//!
//! - **Writes make progress.** A write or flush that the peer leaves without room (it does not
//!   read what it asked for) fails after `--write-timeout-s`, and the connection closes. hyper's
//!   own header timer runs only while it waits for a request's head; once it is blocked writing
//!   answers to a peer that pipelines requests and never reads, or a WebSocket client stops
//!   reading, nothing else would ever end the connection, and a few such peers hold every place.
//! - **hyper's refusals are JSON.** A request hyper cannot read (a malformed request line or
//!   header: 400; too many or too long headers: 431; a URI too long: 414) is answered by hyper
//!   itself, before any route, with an empty body. Its answer is recognised here (the whole
//!   head in one write, exactly as hyper writes it) and the server's JSON error written in its
//!   place, so every refusal has one shape. Once the connection is a WebSocket nothing is
//!   looked at.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::error::ServeError;
use super::listen::{MAX_HEADERS, MAX_HEAD_BYTES};
use super::wire::to_json;

/// A connection whose writes must make progress and whose hyper refusals are JSON.
pub(super) struct Peer<S> {
    stream: S,
    write_timeout: Duration,
    /// Armed when a write or flush first finds no room; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
    /// The JSON refusal written in place of hyper's empty one, and how much of it is out.
    shaped: Option<(Vec<u8>, usize)>,
    /// The connection became a WebSocket (hyper wrote a 101): what follows is frames.
    upgraded: bool,
}

impl<S> Peer<S> {
    pub(super) fn new(stream: S, write_timeout: Duration) -> Peer<S> {
        Peer {
            stream,
            write_timeout,
            stalled: None,
            shaped: None,
            upgraded: false,
        }
    }
}

impl<S: AsyncWrite + Unpin> Peer<S> {
    /// `polled` (a write, a flush or a shutdown of the stream) with the progress rule: ready is
    /// progress and disarms the timer; pending arms it, and once it runs out the peer has
    /// taken no byte for `--write-timeout-s` and the call fails.
    fn timed<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        if let Poll::Ready(result) = polled {
            self.stalled = None;
            return Poll::Ready(result);
        }
        let limit = self.write_timeout;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        ready!(timer.as_mut().poll(cx));
        Poll::Ready(Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the peer took no byte for {} s (--write-timeout-s)",
                limit.as_secs_f64()
            ),
        )))
    }

    /// Write out the JSON refusal that replaced hyper's, if one is pending.
    fn poll_shaped(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, sent)) = self.shaped.take() {
            if sent == bytes.len() {
                break;
            }
            let polled = Pin::new(&mut self.stream).poll_write(cx, &bytes[sent..]);
            let written = self.timed(cx, polled);
            match written {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.shaped = Some((bytes, sent + n)),
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {
                    self.shaped = Some((bytes, sent));
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Look at what hyper writes while the connection is HTTP: a 101 makes it a WebSocket;
    /// hyper's own refusal (`head` alone, all of `total` bytes) is taken as written and the
    /// JSON one queued in its place. True when it was replaced.
    fn replaced(&mut self, head: &[u8], total: usize) -> bool {
        if self.upgraded {
            return false;
        }
        if head.starts_with(b"HTTP/1.1 101 ") {
            self.upgraded = true;
            return false;
        }
        if head.len() != total {
            return false;
        }
        match shaped_refusal(head) {
            Some(bytes) => {
                self.shaped = Some((bytes, 0));
                true
            }
            None => false,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Peer<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Peer<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_shaped(cx))?;
        if this.replaced(buf, buf.len()) {
            return Poll::Ready(Ok(buf.len()));
        }
        let polled = Pin::new(&mut this.stream).poll_write(cx, buf);
        this.timed(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_shaped(cx))?;
        let total = bufs.iter().map(|b| b.len()).sum();
        if let Some(first) = bufs.iter().find(|b| !b.is_empty()) {
            if this.replaced(first, total) {
                return Poll::Ready(Ok(total));
            }
        }
        let polled = Pin::new(&mut this.stream).poll_write_vectored(cx, bufs);
        this.timed(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_shaped(cx))?;
        let polled = Pin::new(&mut this.stream).poll_flush(cx);
        this.timed(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_shaped(cx))?;
        let polled = Pin::new(&mut this.stream).poll_shutdown(cx);
        this.timed(cx, polled)
    }
}

/// hyper's automatic answer to a request it could not parse, exactly as it writes it
/// (`HTTP/1.1 400 Bad Request`, `connection: close`, `content-length: 0`, `date`), as the same
/// head with the server's JSON error for a body; `None` for anything else.
fn shaped_refusal(head: &[u8]) -> Option<Vec<u8>> {
    // Every write passes here: a body chunk is let go at its first bytes, unread.
    if !head.starts_with(b"HTTP/1.1 4") || head.len() > 512 {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let (status_line, rest) = text.strip_prefix("HTTP/1.1 ")?.split_once("\r\n")?;
    let date = rest
        .strip_prefix("connection: close\r\ncontent-length: 0\r\n")?
        .strip_suffix("\r\n\r\n")?;
    if !date.starts_with("date: ") || date.contains('\n') {
        return None;
    }
    let message = match status_line.get(..3)? {
        "400" => "the request is not HTTP/1.1 the server can read (a malformed request line or header)".to_string(),
        "414" => "the request's URI is over the server's limit of 64 KiB".to_string(),
        "431" => format!(
            "the request's headers are over the server's limit (at most {MAX_HEADERS} headers, {} KiB in all)",
            MAX_HEAD_BYTES >> 10
        ),
        _ => return None,
    };
    let status = StatusCode::from_bytes(status_line.get(..3)?.as_bytes()).ok()?;
    let error = ServeError::Protocol { status, message };
    let body = to_json(&error.rest_body()).to_string();
    Some(
        format!(
            "HTTP/1.1 {status_line}\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{date}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_own_refusals_are_replaced() {
        let hyper = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Sun, 29 Nov 2026 09:47:09 GMT\r\n\r\n";
        let shaped = String::from_utf8(shaped_refusal(hyper).unwrap()).unwrap();
        let (head, body) = shaped.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(head.contains("date: Sun, 29 Nov 2026"), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], "HEADERS_TOO_LARGE");
        // A route's answer, a success, or more than the head is left as it is.
        for other in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"[..],
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\nx-more: 1\r\n\r\n",
        ] {
            assert!(shaped_refusal(other).is_none(), "{}", String::from_utf8_lossy(other));
        }
    }

    #[tokio::test]
    async fn a_write_the_peer_takes_no_byte_of_fails_after_the_timeout() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        // A pipe of 16 bytes, read once and then no more.
        let (client, mut server) = tokio::io::duplex(16);
        let mut peer = Peer::new(client, Duration::from_millis(300));
        peer.write_all(&[0u8; 16]).await.unwrap();
        let mut taken = [0u8; 8];
        server.read_exact(&mut taken).await.unwrap();
        let started = tokio::time::Instant::now();
        let written = tokio::time::timeout(Duration::from_secs(20), peer.write_all(&[0u8; 64]))
            .await
            .expect("a write to a peer that reads nothing never failed");
        assert_eq!(written.unwrap_err().kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(300));
    }
}
