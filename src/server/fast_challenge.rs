//! The unpaid 402 without hyper. An agent's first request to a paid route is an unpaid GET, and
//! its answer is ready-made (the gate's `unpaid_answer`); going through hyper for it (request and
//! response header maps, a dispatcher, a body type) cost twice the CPU of the answer itself
//! (bench-402: 24.6 µs of CPU per 402 against 11.4 µs for a bare hyper server writing the same
//! bytes). So a new connection starts here: while its requests are plain unpaid GETs of a paid
//! route, each is answered here with the bytes hyper would write. The first request that is
//! anything else — another method, a body, an upgrade, `Connection` other than keep-alive,
//! HTTP/1.0, a payment, a browser, a head this module cannot read — and everything after it on
//! that connection go to hyper, with the bytes already read handed over (`Rewind`).
//!
//! What the answer is stays decided in one place, `Served::unpaid_answer_for` (the same call as
//! hyper's path, with the request's whole header map); this module decides only whether a
//! request is simple enough to be read here (`read_head`, pure) and writes the reply
//! (`write_reply`, pure). Counting, the log line and live reload are as on hyper's path.

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use hyper_util::server::graceful::Watcher;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::ops::reload::Live;

/// A request head longer than this is left to hyper (which has its own, larger limit).
const MAX_HEAD: usize = 8 * 1024;
/// Headers read here; a request with more is left to hyper.
const MAX_HEADERS: usize = 48;

/// What the buffered bytes of a connection start with.
#[derive(Debug)]
pub enum Head {
    /// Not a whole request head yet.
    Incomplete,
    /// A plain GET: `len` bytes of head (there is no body), its path without the query, and
    /// every header.
    PlainGet {
        len: usize,
        path: String,
        headers: HeaderMap,
    },
    /// Anything else: for hyper.
    Other,
}

/// Reads the request head at the start of `buf`, if it is one this module may answer: a plain
/// GET of a path `answers` (a paid route's; any other path goes to hyper before its headers
/// are copied).
pub fn read_head(buf: &[u8], answers: impl Fn(&str) -> bool) -> Head {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if buf.len() < MAX_HEAD => return Head::Incomplete,
        _ => return Head::Other,
    };
    if len > MAX_HEAD || req.version != Some(1) || req.method != Some("GET") {
        return Head::Other;
    }
    let Some(target) = req.path else {
        return Head::Other;
    };
    // Origin form only, and only what `http::Uri` accepts (hyper answers anything else 400).
    if !target.starts_with('/') || http::uri::PathAndQuery::try_from(target).is_err() {
        return Head::Other;
    }
    let path = target.split('?').next().unwrap_or(target);
    if !answers(path) {
        return Head::Other;
    }
    let mut headers = HeaderMap::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        if !plain_header(h.name, h.value) {
            return Head::Other;
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_bytes(h.value),
        ) else {
            return Head::Other;
        };
        headers.append(name, value);
    }
    let path = path.to_string();
    Head::PlainGet { len, path, headers }
}

/// Whether a header leaves the request plain: no body, no upgrade, no expectation, and the
/// connection kept alive (a `Connection: close` is hyper's to honour).
fn plain_header(name: &str, value: &[u8]) -> bool {
    const NOT_PLAIN: [&str; 5] = [
        "content-length",
        "transfer-encoding",
        "expect",
        "upgrade",
        "http2-settings",
    ];
    if NOT_PLAIN.iter().any(|n| name.eq_ignore_ascii_case(n)) {
        return false;
    }
    !name.eq_ignore_ascii_case("connection") || value.eq_ignore_ascii_case(b"keep-alive")
}

/// Appends the HTTP/1.1 response hyper writes for this reply: the status line, the reply's
/// headers in order, `x-request-id`, `content-length`, `date`, then the body. (A ready-made
/// reply carries none of those three; were one there, it is written once, in the last place.)
pub fn write_reply(
    out: &mut Vec<u8>,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    request_id: &str,
    date: &str,
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("<none>").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in headers {
        if matches!(name.as_str(), "x-request-id" | "content-length" | "date") {
            continue;
        }
        for part in [name.as_str().as_bytes(), b": ", value.as_bytes(), b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
    let length = body.len().to_string();
    for (name, value) in [
        ("x-request-id", request_id),
        ("content-length", length.as_str()),
        ("date", date),
    ] {
        for part in [name.as_bytes(), b": ", value.as_bytes(), b"\r\n"] {
            out.extend_from_slice(part);
        }
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// Serves one accepted connection: plain unpaid GETs here, the rest with hyper. Returns when the
/// connection is closed. At shutdown (`stop`) a connection waiting here for a request is closed,
/// also with part of a request head read, as hyper's graceful shutdown closes a connection whose
/// request head is not complete. `watcher` is held so that the server's graceful shutdown waits
/// for the connection.
pub async fn serve(
    mut stream: TcpStream,
    peer: SocketAddr,
    live: Arc<Live>,
    watcher: Watcher,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(1024);
    // The reply being written; allocated at the first answer (a connection whose first request
    // goes to hyper never needs it), dropped at the handover.
    let mut out = Vec::new();
    // A request head must be whole within the configured time from when we start waiting for
    // it (connection start, or the previous answer): a silent or slow client is closed, as
    // hyper closes one on its path (`header_read_timeout`).
    let head_deadline = tokio::time::sleep(live.served().header_read_timeout());
    tokio::pin!(head_deadline);
    loop {
        let served = live.served();
        match read_head(&buf, |path| served.answers_unpaid(path)) {
            Head::Incomplete => {
                // Not held while waiting: the next request sees a reload made meanwhile.
                drop(served);
                tokio::select! {
                    read = stream.read_buf(&mut buf) => match read {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    },
                    // Stopping: the value turned true, or the server's side is gone altogether.
                    _ = stop.wait_for(|s| *s) => return,
                    () = &mut head_deadline => return,
                }
            }
            Head::PlainGet { len, path, headers } => {
                let Some(reply) = served.unpaid_answer_for(&Method::GET, &path, &headers) else {
                    break;
                };
                let route = served.label(&path);
                let mut log =
                    super::listen::RequestLog::start(&Method::GET, route.as_deref(), &path);
                let id = crate::pipeline::exchange::new_request_id();
                out.clear();
                write_reply(
                    &mut out,
                    reply.status,
                    &reply.headers,
                    &reply.body,
                    &id,
                    &date_now(),
                );
                // Counted and logged when the answer is ready, as on hyper's path.
                super::listen::count_ready(&served, route.as_deref(), reply.status);
                log.finish_ready(&id, reply.status);
                buf.advance(len);
                if stream.write_all(&out).await.is_err() {
                    return;
                }
                let next = tokio::time::Instant::now() + served.header_read_timeout();
                head_deadline.as_mut().reset(next);
            }
            Head::Other => break,
        }
    }
    drop(out);
    // Only the unread bytes are kept for hyper (the read buffer is let go).
    let io = Rewind {
        pre: Bytes::copy_from_slice(&buf),
        inner: stream,
    };
    drop(buf);
    super::listen::serve_with_hyper(io, peer, live, watcher).await;
}

/// `date` as hyper writes it (IMF-fixdate), formatted once a second per thread.
fn date_now() -> String {
    use std::cell::RefCell;
    thread_local! {
        static CACHED: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let now = std::time::SystemTime::now();
    let secs = now
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        if c.0 != secs {
            *c = (secs, httpdate::fmt_http_date(now));
        }
        c.1.clone()
    })
}

/// A connection whose first bytes were already read: they are read again first.
struct Rewind {
    pre: Bytes,
    inner: TcpStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.pre.is_empty() {
            let n = self.pre.len().min(buf.remaining());
            buf.put_slice(&self.pre[..n]);
            self.pre.advance(n);
            if self.pre.is_empty() {
                self.pre = Bytes::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(raw: &str) -> (usize, String, HeaderMap) {
        match read_head(raw.as_bytes(), |_| true) {
            Head::PlainGet { len, path, headers } => (len, path, headers),
            other => panic!("{raw:?} → {other:?}"),
        }
    }

    fn is_other(raw: &str) -> bool {
        matches!(read_head(raw.as_bytes(), |_| true), Head::Other)
    }

    #[test]
    fn a_plain_get_is_read_with_its_path_and_headers() {
        let raw = "GET /api/http?url=https%3A%2F%2Fexample.com%2F HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nX-Payment: a\r\n\r\nGET / HTTP/1.1\r\n";
        let (len, path, headers) = plain(raw);
        assert_eq!(
            &raw[len..],
            "GET / HTTP/1.1\r\n",
            "the head ends where the next begins"
        );
        assert_eq!(path, "/api/http");
        assert_eq!(headers.get("accept").unwrap(), "*/*");
        assert!(
            headers.contains_key("x-payment"),
            "every header is kept for the decision"
        );
        assert_eq!(
            plain("GET /a HTTP/1.1\r\nConnection: Keep-Alive\r\n\r\n").1,
            "/a"
        );
    }

    #[test]
    fn a_partial_head_waits_and_a_too_long_one_goes_to_hyper() {
        assert!(matches!(read_head(b"", |_| true), Head::Incomplete));
        assert!(matches!(
            read_head(b"GET /api/http HTTP/1.1\r\nHo", |_| true),
            Head::Incomplete
        ));
        let long = format!("GET /a HTTP/1.1\r\nX-A: {}", "a".repeat(MAX_HEAD));
        assert!(is_other(&long));
        let long = format!("GET /a HTTP/1.1\r\nX-A: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert!(is_other(&long));
    }

    #[test]
    fn anything_but_a_plain_get_goes_to_hyper() {
        for raw in [
            "POST /a HTTP/1.1\r\n\r\n",
            "HEAD /a HTTP/1.1\r\n\r\n",
            "OPTIONS /a HTTP/1.1\r\n\r\n",
            "GET /a HTTP/1.0\r\n\r\n",
            "GET http://h/a HTTP/1.1\r\n\r\n",
            "GET * HTTP/1.1\r\n\r\n",
            "GET /a HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
            "GET /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET /a HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            "GET /a HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "GET /a HTTP/1.1\r\nConnection: close\r\n\r\n",
            "GET /a HTTP/1.1\r\nHTTP2-Settings: AAA\r\n\r\n",
            "GET /a HTTP/1.1\r\nBad Header: x\r\n\r\n",
            "BREW /a HTCPCP/1.0\r\n\r\n",
        ] {
            assert!(is_other(raw), "{raw:?}");
        }
        let many: String = (0..MAX_HEADERS + 1)
            .map(|i| format!("X-{i}: v\r\n"))
            .collect();
        assert!(is_other(&format!("GET /a HTTP/1.1\r\n{many}\r\n")));
    }

    #[test]
    fn the_reply_is_written_as_hyper_writes_it() {
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        headers.insert("payment-required", HeaderValue::from_static("eyJ4"));
        headers.append("vary", HeaderValue::from_static("Accept"));
        headers.append("vary", HeaderValue::from_static("Origin"));
        let mut out = Vec::new();
        write_reply(
            &mut out,
            StatusCode::PAYMENT_REQUIRED,
            &headers,
            b"{}",
            "id1",
            "Fri, 27 Nov 2026 01:19:59 GMT",
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "HTTP/1.1 402 Payment Required\r\ncontent-type: application/json\r\n\
             payment-required: eyJ4\r\nvary: Accept\r\nvary: Origin\r\nx-request-id: id1\r\n\
             content-length: 2\r\ndate: Fri, 27 Nov 2026 01:19:59 GMT\r\n\r\n{}"
        );
    }

    #[test]
    fn the_date_is_an_imf_fixdate() {
        let d = date_now();
        assert_eq!(d.len(), 29, "{d}");
        assert!(d.ends_with(" GMT"), "{d}");
        assert!(httpdate::parse_http_date(&d).is_ok(), "{d}");
    }
}
