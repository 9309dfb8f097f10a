//! The guarded forward proxy the headless browser is started with (docs/decisions.md#outbound).
//!
//! Chromium sends every request of a page here (`--proxy-server`, no loopback bypass): plain
//! HTTP as absolute-form requests, https and WebSockets as CONNECT tunnels. Each target is judged
//! exactly as /api/fetch judges one: the host is parsed by [`Guard::parse_target`] (odd IPv4
//! spellings, local names, IPv6 wrappings), a name is resolved by the service's [`Resolver`] and
//! refused if ANY answer is refused, and the proxy then dials only an address it vetted, so a
//! DNS answer cannot change between the verdict and the connection.
//!
//! Chromium keeps proxy connections alive and sends several requests down one, so each proxy
//! connection is served by hyper and every request on it is judged on its own; nothing is
//! spliced after the first request. Plain HTTP requests are forwarded on a fresh upstream
//! connection each (no pooling: an upstream connection never outlives the verdict it was made
//! under).
//!
//! The proxy's own failures (refused target, DNS or connect failure) answer an HTML page carrying
//! `<meta name="paycall-proxy" content="<token> <code>">`, where the token is random per proxy:
//! the screenshot stage reads it from the main document to tell a refused or failed navigation
//! from a page that merely answered an error.
//!
//! Bound to 127.0.0.1 on an ephemeral port; [`GuardedProxy::shutdown`] stops the listener and
//! every open connection and tunnel.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use url::Host;

use super::guard::Guard;
use super::resolve::Resolver;
use super::target::UrlRefusal;

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Connecting to a vetted address gives up after this long.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// No proxied connection or tunnel lives longer than this (a render is bounded far below it).
const MAX_CONNECTION_LIFE: Duration = Duration::from_secs(300);

/// Why the proxy did not forward a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyRefusal {
    /// The guard refused the target (by its spelling or by a DNS answer).
    Blocked(String),
    /// Not a target the proxy forwards (no host, a bad authority, https in absolute form…).
    BadTarget(String),
    DnsFailed(String),
    ConnectFailed(String),
}

impl ProxyRefusal {
    pub fn code(&self) -> &'static str {
        match self {
            ProxyRefusal::Blocked(_) => "blocked_target",
            ProxyRefusal::BadTarget(_) => "bad_target",
            ProxyRefusal::DnsFailed(_) => "dns_failed",
            ProxyRefusal::ConnectFailed(_) => "connect_failed",
        }
    }
    pub fn message(&self) -> &str {
        match self {
            ProxyRefusal::Blocked(m)
            | ProxyRefusal::BadTarget(m)
            | ProxyRefusal::DnsFailed(m)
            | ProxyRefusal::ConnectFailed(m) => m,
        }
    }
    fn status(&self) -> StatusCode {
        match self {
            ProxyRefusal::Blocked(_) => StatusCode::FORBIDDEN,
            ProxyRefusal::BadTarget(_) => StatusCode::BAD_REQUEST,
            ProxyRefusal::DnsFailed(_) | ProxyRefusal::ConnectFailed(_) => StatusCode::BAD_GATEWAY,
        }
    }
}

/// Counters, for logs and tests.
#[derive(Debug, Default)]
pub struct ProxyStats {
    pub forwarded: AtomicU64,
    pub tunnels: AtomicU64,
    pub refused: AtomicU64,
}

struct Inner {
    guard: Arc<Guard>,
    resolver: Arc<dyn Resolver>,
    token: String,
    stats: ProxyStats,
    stop: watch::Receiver<bool>,
}

/// A running proxy.
pub struct GuardedProxy {
    addr: SocketAddr,
    inner: Arc<Inner>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<JoinHandle<()>>>,
}

impl GuardedProxy {
    /// Binds 127.0.0.1:0 and starts serving. Needs a tokio runtime.
    pub async fn start(guard: Arc<Guard>, resolver: Arc<dyn Resolver>) -> io::Result<Self> {
        let listener = TcpListener::bind((IpAddr::from([127, 0, 0, 1]), 0)).await?;
        let addr = listener.local_addr()?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let token = format!("{:016x}", rand::random::<u64>());
        let inner = Arc::new(Inner {
            guard,
            resolver,
            token,
            stats: ProxyStats::default(),
            stop: stop_rx,
        });
        let task = tokio::spawn(accept_loop(listener, inner.clone()));
        tracing::info!(%addr, "guarded browser proxy listening");
        Ok(GuardedProxy {
            addr,
            inner,
            stop: stop_tx,
            task: Mutex::new(Some(task)),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The random token in this proxy's refusal pages (see the module doc).
    pub fn token(&self) -> &str {
        &self.inner.token
    }

    pub fn stats(&self) -> &ProxyStats {
        &self.inner.stats
    }

    /// Stops accepting and closes every open connection and tunnel.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        if let Some(task) = task {
            let _ = tokio::time::timeout(Duration::from_secs(5), task).await;
        }
    }
}

impl Drop for GuardedProxy {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

async fn accept_loop(listener: TcpListener, inner: Arc<Inner>) {
    let mut stop = inner.stop.clone();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let Ok((sock, _)) = accepted else { continue };
                // Only the browser on this machine talks to the proxy, but the listener is on
                // loopback where anything local could connect; it is no open relay either way:
                // every target is judged.
                let inner = inner.clone();
                tokio::spawn(serve_connection(sock, inner));
            }
        }
    }
}

async fn serve_connection(sock: TcpStream, inner: Arc<Inner>) {
    let _ = sock.set_nodelay(true);
    let mut stop = inner.stop.clone();
    if *stop.borrow() {
        return;
    }
    let svc_inner = inner.clone();
    let service = hyper::service::service_fn(move |req| {
        let inner = svc_inner.clone();
        async move { Ok::<_, Infallible>(handle(inner, req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(sock), service)
        .with_upgrades();
    tokio::select! {
        _ = conn => {}
        _ = stop.changed() => {}
        _ = tokio::time::sleep(MAX_CONNECTION_LIFE) => {}
    }
}

async fn handle(inner: Arc<Inner>, req: Request<Incoming>) -> Response<ProxyBody> {
    let result = if req.method() == Method::CONNECT {
        tunnel(&inner, req).await
    } else {
        forward(&inner, req).await
    };
    match result {
        Ok(resp) => resp,
        Err(refusal) => {
            inner.stats.refused.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                code = refusal.code(),
                reason = refusal.message(),
                "browser proxy refused a request"
            );
            refusal_page(&inner.token, &refusal)
        }
    }
}

/// The page the browser gets instead of the target.
fn refusal_page(token: &str, refusal: &ProxyRefusal) -> Response<ProxyBody> {
    let text = html_escape(refusal.message());
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"paycall-proxy\" content=\"{token} {code}\"><title>paycall: request refused</title></head><body><p>{text}</p></body></html>",
        code = refusal.code()
    );
    let mut resp = Response::new(full(body));
    *resp.status_mut() = refusal.status();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn full(s: impl Into<Bytes>) -> ProxyBody {
    Full::new(s.into()).map_err(|never| match never {}).boxed()
}

/// CONNECT host:port → judged, dialled, then bytes are relayed both ways.
async fn tunnel(
    inner: &Arc<Inner>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, ProxyRefusal> {
    let authority = req
        .uri()
        .authority()
        .ok_or_else(|| ProxyRefusal::BadTarget("CONNECT without host:port".into()))?
        .clone();
    let port = authority
        .port_u16()
        .ok_or_else(|| ProxyRefusal::BadTarget(format!("CONNECT {authority} has no port")))?;
    let addrs = vet(inner, "https", authority.host(), port).await?;
    let upstream = dial(&addrs).await?;
    inner.stats.tunnels.fetch_add(1, Ordering::Relaxed);
    let mut stop = inner.stop.clone();
    tokio::spawn(async move {
        let upgraded = match hyper::upgrade::on(req).await {
            Ok(u) => u,
            Err(_) => return,
        };
        let mut client = TokioIo::new(upgraded);
        let mut upstream = upstream;
        tokio::select! {
            _ = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {}
            _ = stop.changed() => {}
            _ = tokio::time::sleep(MAX_CONNECTION_LIFE) => {}
        }
    });
    Ok(Response::new(full(Bytes::new())))
}

/// An absolute-form plain HTTP request → judged, sent on a fresh connection to the vetted
/// address in origin form, the answer streamed back.
async fn forward(
    inner: &Arc<Inner>,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, ProxyRefusal> {
    let uri = req.uri().clone();
    match uri.scheme_str() {
        Some("http") => {}
        Some(other) => {
            return Err(ProxyRefusal::BadTarget(format!(
                "scheme {other} in an absolute-form request; https goes through CONNECT"
            )))
        }
        None => {
            return Err(ProxyRefusal::BadTarget(
                "this is a proxy: requests must name an absolute http:// URL".into(),
            ))
        }
    }
    let authority = uri
        .authority()
        .ok_or_else(|| ProxyRefusal::BadTarget("the request URL has no host".into()))?
        .clone();
    let port = authority.port_u16().unwrap_or(80);
    let addrs = vet(inner, "http", authority.host(), port).await?;
    let stream = dial(&addrs).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| ProxyRefusal::ConnectFailed(format!("upstream handshake failed: {e}")))?;
    let mut stop = inner.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = conn => {}
            _ = stop.changed() => {}
            _ = tokio::time::sleep(MAX_CONNECTION_LIFE) => {}
        }
    });

    let (mut parts, body) = req.into_parts();
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    parts.uri = path
        .parse::<Uri>()
        .map_err(|e| ProxyRefusal::BadTarget(format!("bad request path: {e}")))?;
    strip_hop_by_hop(&mut parts.headers);
    if let Ok(v) = HeaderValue::from_str(authority.as_str()) {
        parts.headers.insert(header::HOST, v);
    }
    parts
        .headers
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    let resp = sender
        .send_request(Request::from_parts(parts, body))
        .await
        .map_err(|e| ProxyRefusal::ConnectFailed(format!("the upstream failed to answer: {e}")))?;
    inner.stats.forwarded.fetch_add(1, Ordering::Relaxed);
    let (mut parts, body) = resp.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Ok(Response::from_parts(parts, body.boxed()))
}

/// Headers that belong to one connection (RFC 9110 §7.6.1), plus the proxy's own.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(',').map(|s| s.trim().to_ascii_lowercase()))
        .filter(|s| !s.is_empty())
        .collect();
    for name in listed {
        headers.remove(name.as_str());
    }
    for name in [
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

/// The guard's verdict on host:port, with the same rules as the fetch client: the spelling by
/// [`Guard::parse_target`], then every DNS answer by [`Guard::check_ip`]. Returns the vetted
/// socket addresses, the only ones the proxy will dial.
async fn vet(
    inner: &Inner,
    scheme: &str,
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, ProxyRefusal> {
    let raw = format!("{scheme}://{host}:{port}/");
    let url = inner.guard.parse_target(&raw).map_err(|r| match r {
        UrlRefusal::Address(_) | UrlRefusal::LocalName(_) => ProxyRefusal::Blocked(r.to_string()),
        other => ProxyRefusal::BadTarget(other.to_string()),
    })?;
    let ips: Vec<IpAddr> = match url.host() {
        Some(Host::Ipv4(a)) => vec![a.into()],
        Some(Host::Ipv6(a)) => vec![a.into()],
        Some(Host::Domain(name)) => {
            let ips =
                inner.resolver.lookup(name).await.map_err(|e| {
                    ProxyRefusal::DnsFailed(format!("could not resolve {name}: {e}"))
                })?;
            if ips.is_empty() {
                return Err(ProxyRefusal::DnsFailed(format!("{name} has no address")));
            }
            for ip in &ips {
                inner.guard.check_ip(*ip).map_err(|refusal| {
                    ProxyRefusal::Blocked(format!(
                        "{name} resolves to {refusal}; only public internet addresses can be reached"
                    ))
                })?;
            }
            ips
        }
        None => return Err(ProxyRefusal::BadTarget("no host".into())),
    };
    Ok(ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect())
}

async fn dial(addrs: &[SocketAddr]) -> Result<TcpStream, ProxyRefusal> {
    let mut last = String::from("no address");
    for addr in addrs {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer within {} s", CONNECT_TIMEOUT.as_secs()),
        }
    }
    Err(ProxyRefusal::ConnectFailed(format!(
        "could not connect ({last})"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::StaticResolver;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn raw(proxy: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    async fn canary(ip: &str) -> (SocketAddr, Arc<AtomicU64>) {
        let l = TcpListener::bind(format!("{ip}:0")).await.unwrap();
        let addr = l.local_addr().unwrap();
        let hits = Arc::new(AtomicU64::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                h.fetch_add(1, Ordering::SeqCst);
                let mut seen = Vec::new();
                let mut buf = [0u8; 1024];
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok",
                    )
                    .await;
                let _ = s.shutdown().await;
            }
        });
        (addr, hits)
    }

    fn proxy_guard() -> Arc<Guard> {
        Arc::new(Guard::new(vec!["127.0.0.1/32".parse().unwrap()]))
    }

    #[tokio::test]
    async fn forwards_allowed_and_refuses_loopback_canaries_by_literal_and_by_name() {
        let (allowed, allowed_hits) = canary("127.0.0.1").await;
        let (refused, refused_hits) = canary("127.0.0.2").await;
        let resolver = StaticResolver::new()
            .with("ok.test", ["127.0.0.1".parse().unwrap()])
            .with(
                "mixed.test",
                ["127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap()],
            );
        let p = GuardedProxy::start(proxy_guard(), Arc::new(resolver))
            .await
            .unwrap();

        let got = raw(
            p.addr(),
            &format!(
                "GET http://{allowed}/x HTTP/1.1\r\nHost: {allowed}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.ends_with("ok"), "{got}");
        let got = raw(
            p.addr(),
            &format!(
                "GET http://ok.test:{}/x HTTP/1.1\r\nHost: ok.test\r\nConnection: close\r\n\r\n",
                allowed.port()
            ),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert_eq!(allowed_hits.load(Ordering::SeqCst), 2);

        for target in [
            format!("http://{refused}/"),
            format!("http://mixed.test:{}/", refused.port()),
            format!("http://localhost:{}/", refused.port()),
            format!("http://2130706434:{}/", refused.port()),
            format!("http://[::ffff:127.0.0.2]:{}/", refused.port()),
        ] {
            let got = raw(
                p.addr(),
                &format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
            )
            .await;
            assert!(got.starts_with("HTTP/1.1 403"), "{target}: {got}");
            assert!(
                got.contains(&format!("content=\"{} blocked_target\"", p.token())),
                "{got}"
            );
        }
        let got = raw(
            p.addr(),
            &format!("CONNECT {refused} HTTP/1.1\r\nHost: {refused}\r\n\r\n"),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        assert_eq!(
            refused_hits.load(Ordering::SeqCst),
            0,
            "the refused canary saw nothing"
        );
        assert!(p.stats().refused.load(Ordering::SeqCst) >= 6);
        p.shutdown().await;
    }

    #[tokio::test]
    async fn keep_alive_requests_are_judged_one_by_one() {
        let (allowed, _) = canary("127.0.0.1").await;
        let (refused, refused_hits) = canary("127.0.0.2").await;
        let p = GuardedProxy::start(proxy_guard(), Arc::new(StaticResolver::new()))
            .await
            .unwrap();
        // Two requests on one connection: the second names a refused target.
        let got = raw(
            p.addr(),
            &format!(
                "GET http://{allowed}/a HTTP/1.1\r\nHost: {allowed}\r\n\r\nGET http://{refused}/b HTTP/1.1\r\nHost: {refused}\r\nConnection: close\r\n\r\n"
            ),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got}");
        assert!(got.contains("HTTP/1.1 403"), "{got}");
        assert_eq!(refused_hits.load(Ordering::SeqCst), 0);
        p.shutdown().await;
    }

    #[tokio::test]
    async fn connect_tunnels_to_an_allowed_address_and_shutdown_closes_it() {
        let (allowed, hits) = canary("127.0.0.1").await;
        let p = GuardedProxy::start(proxy_guard(), Arc::new(StaticResolver::new()))
            .await
            .unwrap();
        let mut s = TcpStream::connect(p.addr()).await.unwrap();
        s.write_all(format!("CONNECT {allowed} HTTP/1.1\r\nHost: {allowed}\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
        assert!(String::from_utf8_lossy(&out).ends_with("ok"));
        assert_eq!(hits.load(Ordering::SeqCst), 1);
        p.shutdown().await;
        assert!(
            TcpStream::connect(p.addr()).await.is_err(),
            "listener closed"
        );
    }
}
