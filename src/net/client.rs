//! The guarded HTTP client: every outbound request of the service goes through here.
//!
//! - Names are resolved by our [`Resolver`] inside reqwest's DNS hook, every answer is judged by
//!   the [`Guard`], and if any answer is refused the whole lookup fails. reqwest connects only to
//!   the addresses the hook returned, so there is no second resolution and DNS rebinding has no
//!   window. IP-literal hosts skip reqwest's hook entirely, so [`Guard::parse_target`] judges
//!   them before the first request and at every redirect hop.
//! - Redirects are followed by hand (reqwest's policy is `none`), each Location re-parsed and
//!   re-judged, up to the request's cap.
//! - No proxy from the environment, no cookie store, no Referer, a fixed User-Agent.
//! - The body is streamed against a byte cap and the whole exchange runs under one deadline.
//!
//! TLS: rustls with the ring provider and reqwest's `rustls-no-provider` default verifier, which
//! is rustls-platform-verifier. On Linux that verifies against the system's CA bundle (loaded
//! once when the client is built; `SSL_CERT_FILE`/`SSL_CERT_DIR` are honoured), so roots follow
//! the OS's updates and an operator's own CAs, and no extra crate is needed. A host without a CA
//! bundle makes [`GuardedClient::new`] fail loudly at startup rather than every fetch later.

use std::error::Error as StdError;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap, HeaderName};
use http::{Method, StatusCode};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::Url;

use super::error::{BlockedTarget, FetchError};
use super::guard::{Guard, Refusal};
use super::resolve::Resolver;

/// Install rustls's ring provider as the process default, once. Safe to call from anywhere, any
/// number of times; if another provider was installed first, that one stays.
pub fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What to do with a body larger than `max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverCap {
    /// Fail with [`FetchError::TooLarge`]: at once when Content-Length declares too much, or as
    /// soon as the streamed body passes the cap.
    Reject,
    /// Keep exactly `max_bytes` bytes and report `truncated: true`.
    Truncate,
}

/// One outbound request.
///
/// No `Accept-Encoding` is added and nothing is decompressed: servers answer identity unless the
/// caller's headers ask otherwise, in which case the bytes come back as sent, with their
/// Content-Encoding header, and the cap counts those bytes.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    pub url: Url,
    pub method: Method,
    /// Caller headers. Host, Cookie, Proxy-Authorization, Content-Length and hop-by-hop headers
    /// are dropped: the URL decides the host, the service never sends cookies.
    pub headers: HeaderMap,
    pub body: Option<Bytes>,
    /// Redirects followed at most; a redirect beyond this is [`FetchError::TooManyRedirects`]
    /// (so 0 makes any redirect an error).
    pub max_redirects: u32,
    pub max_bytes: usize,
    /// One deadline for everything: DNS, connections, redirects and the body.
    pub timeout: Duration,
    pub over_cap: OverCap,
}

impl FetchRequest {
    /// A GET with /api/fetch's defaults (docs/decisions.md#limits): 3 redirects, 200,000 bytes (truncated), 8 s.
    pub fn get(url: Url) -> Self {
        FetchRequest {
            url,
            method: Method::GET,
            headers: HeaderMap::new(),
            body: None,
            max_redirects: 3,
            max_bytes: 200_000,
            timeout: Duration::from_secs(8),
            over_cap: OverCap::Truncate,
        }
    }
}

/// The final answer after redirects.
#[derive(Debug, Clone)]
pub struct FetchResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    pub final_url: Url,
    /// The body was cut at `max_bytes` (only with [`OverCap::Truncate`]).
    pub truncated: bool,
    /// Body bytes read and kept (`body.len()`).
    pub bytes_read: usize,
    /// The URLs redirected to, in order; empty without redirects; the last one is `final_url`.
    pub redirects: Vec<Url>,
    /// The vetted address the final answer came from.
    pub remote_addr: Option<SocketAddr>,
    pub elapsed: Duration,
}

impl FetchResponse {
    /// The Content-Type header, when there is one and it is text.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }
}

/// Idle outbound connections kept per host for reuse; the rest are closed when their request
/// ends.
pub const MAX_IDLE_PER_HOST: usize = 16;

/// The HTTP client could not be built (bad User-Agent, no CA bundle on the host…).
#[derive(Debug, thiserror::Error)]
#[error("could not build the outbound HTTP client: {0}")]
pub struct ClientBuildError(String);

/// The one HTTP client the service uses for outbound requests. Cheap to share behind an `Arc`;
/// the underlying connection pool is shared by all requests.
#[derive(Clone)]
pub struct GuardedClient {
    http: reqwest::Client,
    guard: Arc<Guard>,
}

impl std::fmt::Debug for GuardedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedClient")
            .field("guard", &self.guard)
            .finish_non_exhaustive()
    }
}

impl GuardedClient {
    pub fn new(
        guard: Arc<Guard>,
        resolver: Arc<dyn Resolver>,
        user_agent: &str,
    ) -> Result<Self, ClientBuildError> {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .dns_resolver(GuardedResolve {
                guard: guard.clone(),
                resolver,
            })
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .user_agent(user_agent)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(30))
            // A burst to one host would otherwise keep every connection (and its buffers and
            // file descriptor) for 30 s: 1,000 idle sockets after 1,000 calls (issue 19).
            .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
            .build()
            .map_err(|e| ClientBuildError(error_chain_text(&e)))?;
        Ok(GuardedClient { http, guard })
    }

    pub fn guard(&self) -> &Guard {
        &self.guard
    }

    /// Fetch `req.url`, following redirects by hand, every hop judged by the guard.
    pub async fn fetch(&self, req: FetchRequest) -> Result<FetchResponse, FetchError> {
        let started = Instant::now();
        let deadline = req.timeout;
        match tokio::time::timeout(deadline, self.run(req, started)).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::Timeout { after: deadline }),
        }
    }

    async fn run(&self, req: FetchRequest, started: Instant) -> Result<FetchResponse, FetchError> {
        let FetchRequest {
            url,
            mut method,
            headers,
            mut body,
            max_redirects,
            max_bytes,
            timeout,
            over_cap,
        } = req;
        // The caller's Url may not have come from parse_target: judge it here regardless.
        let mut url = self
            .guard
            .parse_target(url.as_str())
            .map_err(FetchError::from_url_refusal)?;
        let mut headers = outbound_headers(headers);
        let mut chain = vec![url.clone()];
        let mut redirects: Vec<Url> = Vec::new();

        loop {
            let hop = redirects.len() as u32;
            let mut builder = self
                .http
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(b) = &body {
                builder = builder.body(b.clone());
            }
            let mut resp = builder
                .send()
                .await
                .map_err(|e| send_error(&e, hop, timeout))?;
            let status = resp.status();

            if let Some(location) = redirect_location(status, resp.headers(), hop + 1)? {
                if hop >= max_redirects {
                    return Err(FetchError::TooManyRedirects {
                        chain,
                        max: max_redirects,
                    });
                }
                let next = self.next_hop(&url, &location, hop + 1)?;
                // Not reading the redirect's body: the connection is closed, not reused.
                drop(resp);
                rewrite_for_redirect(status, &mut method, &mut body, &mut headers);
                if url.origin() != next.origin() {
                    strip_credentials(&mut headers);
                }
                chain.push(next.clone());
                redirects.push(next.clone());
                url = next;
                continue;
            }

            let remote_addr = resp.remote_addr();
            let resp_headers = resp.headers().clone();
            let (body, truncated) = read_capped(
                &mut resp,
                &method,
                status,
                &resp_headers,
                max_bytes,
                over_cap,
            )
            .await?;
            return Ok(FetchResponse {
                status,
                headers: resp_headers,
                bytes_read: body.len(),
                body,
                final_url: url,
                truncated,
                redirects,
                remote_addr,
                elapsed: started.elapsed(),
            });
        }
    }

    fn next_hop(&self, current: &Url, location: &str, hop: u32) -> Result<Url, FetchError> {
        let joined = current.join(location).map_err(|e| {
            FetchError::BadRedirect(format!(
                "redirect {hop}: Location '{}' is not a URL ({e})",
                shorten(location)
            ))
        })?;
        self.guard
            .parse_target(joined.as_str())
            .map_err(|r| FetchError::from_redirect_refusal(r, hop))
    }
}

/// The Location of a redirect this client follows, or None for a final answer (including 3xx
/// statuses that are not redirects, and redirects without a Location).
fn redirect_location(
    status: StatusCode,
    headers: &HeaderMap,
    hop: u32,
) -> Result<Option<String>, FetchError> {
    if !matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(value) = headers.get(header::LOCATION) else {
        return Ok(None);
    };
    // Some servers send raw UTF-8; Url::join percent-encodes it as browsers do.
    match std::str::from_utf8(value.as_bytes()) {
        Ok(s) => Ok(Some(s.to_owned())),
        Err(_) => Err(FetchError::BadRedirect(format!(
            "redirect {hop}: the Location header is not valid UTF-8"
        ))),
    }
}

/// 301/302 turn POST into GET, 303 turns everything but HEAD into GET; 307/308 keep method and
/// body. A request that becomes a GET loses its body and the headers that described it.
fn rewrite_for_redirect(
    status: StatusCode,
    method: &mut Method,
    body: &mut Option<Bytes>,
    headers: &mut HeaderMap,
) {
    let to_get = match status.as_u16() {
        301 | 302 => *method == Method::POST,
        303 => *method != Method::HEAD,
        _ => false,
    };
    if to_get {
        *method = Method::GET;
        *body = None;
        for h in [
            header::CONTENT_TYPE,
            header::CONTENT_ENCODING,
            header::CONTENT_LANGUAGE,
            header::CONTENT_LOCATION,
        ] {
            headers.remove(h);
        }
    }
}

/// The only caller headers that follow a redirect to another origin: they describe the
/// request, never who sends it. Any other header may carry a credential meant for the first
/// origin (`Authorization`, `X-Api-Key`, `X-Goog-Api-Key`, `X-Amz-Security-Token`, a signed
/// `Referer`…), and a list of known credential names is never complete: so everything else is
/// dropped, for good, at the first change of origin.
pub const CROSS_ORIGIN_HEADERS: &[&str] = &[
    "accept",
    "accept-language",
    "cache-control",
    "content-language",
    "content-type",
    "pragma",
    "range",
    "user-agent",
];

fn strip_credentials(headers: &mut HeaderMap) {
    let drop: Vec<HeaderName> = headers
        .keys()
        .filter(|k| !CROSS_ORIGIN_HEADERS.contains(&k.as_str()))
        .cloned()
        .collect();
    for name in drop {
        headers.remove(name);
    }
}

/// Headers a caller may never set: the URL decides the host, reqwest frames the body, hop-by-hop
/// headers belong to one connection, and the service never sends cookies.
const DROPPED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "cookie",
    "cookie2",
];

fn outbound_headers(mut headers: HeaderMap) -> HeaderMap {
    // Headers named by Connection are hop-by-hop too.
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|t| HeaderName::from_bytes(t.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in DROPPED_HEADERS {
        headers.remove(*name);
    }
    headers
}

async fn read_capped(
    resp: &mut reqwest::Response,
    method: &Method,
    status: StatusCode,
    headers: &HeaderMap,
    max: usize,
    over_cap: OverCap,
) -> Result<(Bytes, bool), FetchError> {
    let bodiless = *method == Method::HEAD
        || status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED;
    if bodiless {
        return Ok((Bytes::new(), false));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse::<u64>().ok());
    if over_cap == OverCap::Reject {
        if let Some(d) = declared.filter(|d| *d > max as u64) {
            return Err(FetchError::TooLarge {
                declared: Some(d),
                cap: max,
            });
        }
    }
    // A declared length only sizes the first allocation, and never beyond 1 MiB: the header is
    // the upstream's claim, not a promise.
    let initial = declared
        .map_or(16 * 1024, |d| d.min(1 << 20) as usize)
        .min(max);
    let mut buf = BytesMut::with_capacity(initial);
    loop {
        // Full, and the server already said there is more: no need to wait for it.
        if buf.len() == max && declared.is_some_and(|d| d > max as u64) {
            return Ok((buf.freeze(), true));
        }
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => return Ok((buf.freeze(), false)),
            Err(e) => return Err(body_error(&e)),
        };
        let room = max - buf.len();
        if chunk.len() > room {
            return match over_cap {
                OverCap::Reject => Err(FetchError::TooLarge { declared, cap: max }),
                OverCap::Truncate => {
                    buf.extend_from_slice(&chunk[..room]);
                    Ok((buf.freeze(), true))
                }
            };
        }
        buf.extend_from_slice(&chunk);
    }
}

/// reqwest's DNS hook: resolve, judge every answer, hand back only vetted addresses.
struct GuardedResolve {
    guard: Arc<Guard>,
    resolver: Arc<dyn Resolver>,
}

impl Resolve for GuardedResolve {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let guard = self.guard.clone();
        let resolver = self.resolver.clone();
        Box::pin(async move {
            // Literals never come here (hyper short-circuits them); if one ever does, it is
            // judged like any answer rather than handed to a resolver.
            let ips = match host.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => resolver
                    .lookup(&host)
                    .await
                    .map_err(|e| ResolveFailure::Lookup {
                        host: host.clone(),
                        kind: e.kind(),
                    })?,
            };
            if ips.is_empty() {
                return Err(ResolveFailure::Empty { host }.into());
            }
            for ip in &ips {
                guard
                    .check_ip(*ip)
                    .map_err(|refusal| ResolveFailure::Refused {
                        host: host.clone(),
                        refusal,
                    })?;
            }
            // Port 0: reqwest puts the URL's port (or the scheme's) in its place.
            let addrs: Addrs = Box::new(ips.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}

/// Travels inside reqwest's error chain from the DNS hook back to [`send_error`].
#[derive(Debug)]
enum ResolveFailure {
    Refused { host: String, refusal: Refusal },
    Lookup { host: String, kind: io::ErrorKind },
    Empty { host: String },
}

impl std::fmt::Display for ResolveFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveFailure::Refused { host, refusal } => {
                write!(
                    f,
                    "{host}: answer refused by the outbound guard ({refusal})"
                )
            }
            ResolveFailure::Lookup { host, kind } => write!(f, "{host}: lookup failed ({kind})"),
            ResolveFailure::Empty { host } => write!(f, "{host}: no addresses"),
        }
    }
}

impl StdError for ResolveFailure {}

impl ResolveFailure {
    fn to_fetch_error(&self, hop: u32) -> FetchError {
        match self {
            ResolveFailure::Refused { host, refusal } => FetchError::Blocked {
                reason: BlockedTarget::Resolved {
                    host: host.clone(),
                    refusal: *refusal,
                },
                hop,
            },
            ResolveFailure::Lookup { host, .. } | ResolveFailure::Empty { host } => {
                FetchError::DnsFailed(format!(
                    "the host '{host}' could not be resolved; check the name"
                ))
            }
        }
    }
}

/// The error chain, looking inside `io::Error`s too: their `source()` skips the error they wrap,
/// which is exactly where rustls and our resolver put theirs.
fn sources<'a>(
    err: &'a (dyn StdError + 'static),
) -> impl Iterator<Item = &'a (dyn StdError + 'static)> {
    std::iter::successors(Some(err), |e: &&'a (dyn StdError + 'static)| {
        if let Some(inner) = e.downcast_ref::<io::Error>().and_then(|io| io.get_ref()) {
            return Some(inner as &(dyn StdError + 'static));
        }
        (*e).source()
    })
}

/// Map a failed `send()` to what the caller is told. The guard's refusal is found in the error
/// chain, so a refused DNS answer is reported as blocked, not as a connection failure.
fn send_error(err: &reqwest::Error, hop: u32, timeout: Duration) -> FetchError {
    for e in sources(err) {
        if let Some(failure) = e.downcast_ref::<ResolveFailure>() {
            return failure.to_fetch_error(hop);
        }
    }
    if err.is_timeout() {
        return FetchError::Timeout { after: timeout };
    }
    if err.is_builder() {
        return FetchError::BadUrl("the URL cannot be requested".into());
    }
    if err.is_connect() {
        return FetchError::Connect(connect_message(err));
    }
    FetchError::Upstream(format!(
        "the upstream's answer could not be read: {}",
        innermost(err)
    ))
}

fn body_error(err: &reqwest::Error) -> FetchError {
    FetchError::Upstream(format!(
        "the upstream connection failed while sending the body: {}",
        innermost(err)
    ))
}

/// Words for a failed connection, from the error kind rather than the raw text (which can carry
/// socket addresses).
fn connect_message(err: &reqwest::Error) -> String {
    for e in sources(err) {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return format!("the TLS handshake with the upstream failed: {tls}");
        }
        if let Some(io_err) = e.downcast_ref::<io::Error>() {
            let what = match io_err.kind() {
                io::ErrorKind::ConnectionRefused => "the upstream refused the connection",
                io::ErrorKind::ConnectionReset => "the upstream reset the connection",
                io::ErrorKind::TimedOut => "connecting to the upstream timed out",
                io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => {
                    "the upstream host is unreachable"
                }
                _ => continue,
            };
            return what.to_owned();
        }
    }
    "could not connect to the upstream".to_owned()
}

fn innermost(err: &(dyn StdError + 'static)) -> String {
    sources(err)
        .last()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

fn error_chain_text(err: &(dyn StdError + 'static)) -> String {
    sources(err)
        .map(|e| e.to_string())
        .collect::<Vec<_>>()
        .join(": ")
}

fn shorten(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn outbound_headers_drop_what_callers_may_not_set() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("host", "evil.test"),
            ("cookie", "a=b"),
            ("connection", "x-secret, keep-alive"),
            ("x-secret", "1"),
            ("transfer-encoding", "chunked"),
            ("content-length", "99"),
            ("proxy-authorization", "Basic x"),
            ("accept", "text/html"),
            ("authorization", "Bearer t"),
        ] {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        let out = outbound_headers(h);
        let names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, vec!["accept", "authorization"]);
    }

    #[test]
    fn only_descriptive_headers_follow_a_change_of_origin() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("accept", "application/json"),
            ("user-agent", "agent/1"),
            ("content-type", "text/plain"),
            ("authorization", "Bearer t"),
            ("x-api-key", "k"),
            ("x-goog-api-key", "g"),
            ("x-amz-security-token", "s"),
            ("x-amz-date", "20260101T000000Z"),
            ("referer", "https://a.test/?token=1"),
            ("origin", "https://a.test"),
            ("x-csrf-token", "c"),
            ("idempotency-key", "i"),
        ] {
            h.append(HeaderName::from_static(k), HeaderValue::from_static(v));
        }
        strip_credentials(&mut h);
        let mut names: Vec<&str> = h.keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(names, vec!["accept", "content-type", "user-agent"]);
    }

    #[test]
    fn redirect_method_rules() {
        let cases = [
            (301, Method::POST, Method::GET, false),
            (302, Method::POST, Method::GET, false),
            (301, Method::PUT, Method::PUT, true),
            (302, Method::DELETE, Method::DELETE, true),
            (303, Method::POST, Method::GET, false),
            (303, Method::PUT, Method::GET, false),
            (303, Method::HEAD, Method::HEAD, true),
            (307, Method::POST, Method::POST, true),
            (308, Method::PUT, Method::PUT, true),
        ];
        for (status, before, after, keeps_body) in cases {
            let mut m = before.clone();
            let mut body = Some(Bytes::from_static(b"x"));
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            rewrite_for_redirect(
                StatusCode::from_u16(status).unwrap(),
                &mut m,
                &mut body,
                &mut h,
            );
            assert_eq!(m, after, "{status} {before}");
            assert_eq!(body.is_some(), keeps_body, "{status} {before}");
            assert_eq!(
                h.contains_key(header::CONTENT_TYPE),
                keeps_body,
                "{status} {before}"
            );
        }
    }

    #[test]
    fn only_real_redirects_with_location_are_followed() {
        let mut h = HeaderMap::new();
        h.insert(header::LOCATION, HeaderValue::from_static("/next"));
        for s in [300u16, 304, 305, 200, 404] {
            assert_eq!(
                redirect_location(StatusCode::from_u16(s).unwrap(), &h, 1),
                Ok(None)
            );
        }
        assert_eq!(
            redirect_location(StatusCode::FOUND, &h, 1),
            Ok(Some("/next".to_owned()))
        );
        assert_eq!(
            redirect_location(StatusCode::FOUND, &HeaderMap::new(), 1),
            Ok(None)
        );
        let mut bad = HeaderMap::new();
        bad.insert(header::LOCATION, HeaderValue::from_bytes(b"/\xff").unwrap());
        assert_eq!(
            redirect_location(StatusCode::FOUND, &bad, 1)
                .unwrap_err()
                .code(),
            "bad_redirect"
        );
    }

    #[test]
    fn shorten_respects_char_boundaries() {
        let s = "é".repeat(300);
        let out = shorten(&s);
        assert!(out.len() <= 200 + "…".len());
        assert_eq!(shorten("abc"), "abc");
    }
}
