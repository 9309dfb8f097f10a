//! The guarded client against real HTTP servers on loopback.
//!
//! The guard allows exactly 127.0.0.1/32, as the project's tests do. Canaries listen on other
//! loopback addresses (127.0.0.2, ::1) that the guard must refuse; each test that could leak
//! checks that its canary saw no connection at all.

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use paycall::net::{
    BlockedTarget, Class, FetchError, FetchRequest, Guard, GuardedClient, OverCap, StaticResolver,
};
use url::Url;

use support::guard::{Canary, Reply, Upstream};

const UA: &str = "paycall-test/1.0";

fn client_with(resolver: StaticResolver) -> GuardedClient {
    let guard = Guard::new(vec!["127.0.0.1/32".parse().unwrap()]);
    GuardedClient::new(Arc::new(guard), Arc::new(resolver), UA).expect("client builds")
}

fn client() -> GuardedClient {
    client_with(StaticResolver::new())
}

fn get(url: &str) -> FetchRequest {
    let mut req = FetchRequest::get(Url::parse(url).expect("test URL parses"));
    req.timeout = Duration::from_secs(10);
    req
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn blocked(err: FetchError) -> (BlockedTarget, u32) {
    match err {
        FetchError::Blocked { reason, hop } => (reason, hop),
        other => panic!("expected Blocked, got {other:?}"),
    }
}

#[tokio::test]
async fn direct_fetch_returns_the_body_and_sends_nothing_extra() {
    let up = Upstream::start("127.0.0.1", |_| Reply::ok("hello")).await;
    let mut req = get(&up.url("/page?x=1"));
    req.headers
        .insert("accept", HeaderValue::from_static("text/html"));
    req.headers
        .insert("cookie", HeaderValue::from_static("session=secret"));
    req.headers
        .insert("host", HeaderValue::from_static("evil.test"));
    let resp = client().fetch(req).await.expect("fetch ok");

    assert_eq!(resp.status, 200);
    assert_eq!(&resp.body[..], b"hello");
    assert_eq!(resp.bytes_read, 5);
    assert!(!resp.truncated);
    assert!(resp.redirects.is_empty());
    assert_eq!(resp.final_url.as_str(), up.url("/page?x=1"));
    assert_eq!(resp.remote_addr, Some(up.addr));
    assert_eq!(resp.headers.get("content-type").unwrap(), "text/plain");

    let seen = up.requests();
    assert_eq!(seen.len(), 1);
    let r = &seen[0];
    assert_eq!(r.method, "GET");
    assert_eq!(r.target, "/page?x=1");
    assert_eq!(r.header("user-agent"), Some(UA));
    assert_eq!(r.header("accept"), Some("text/html"));
    assert_eq!(r.header("host"), Some(up.addr.to_string().as_str()));
    assert_eq!(r.header("cookie"), None);
    assert_eq!(r.header("referer"), None);
    assert_eq!(r.header("accept-encoding"), None);
}

#[tokio::test]
async fn works_with_a_real_hyper_server_and_reuses_the_pool() {
    use warp::Filter;
    let (listener, addr) = support::net::listen().await;
    let route = warp::path!("hi" / String).map(|name: String| format!("hi {name}"));
    tokio::spawn(warp::serve(route).incoming(listener).run());

    let c = client();
    for name in ["a", "b", "c"] {
        let resp = c
            .fetch(get(&format!("http://{addr}/hi/{name}")))
            .await
            .expect("fetch from warp");
        assert_eq!(resp.status, 200);
        assert_eq!(resp.body, Bytes::from(format!("hi {name}")));
        assert_eq!(resp.remote_addr, Some(addr));
    }
}

#[tokio::test]
async fn a_name_resolving_to_an_allowed_address_is_fetched() {
    let up = Upstream::start("127.0.0.1", |_| Reply::ok("named")).await;
    let c = client_with(StaticResolver::new().with("good.test", [ip("127.0.0.1")]));
    let url = format!("http://good.test:{}/x", up.addr.port());
    let resp = c.fetch(get(&url)).await.expect("fetch ok");
    assert_eq!(&resp.body[..], b"named");
    assert_eq!(resp.remote_addr, Some(up.addr));
    let host = format!("good.test:{}", up.addr.port());
    assert_eq!(up.requests()[0].header("host"), Some(host.as_str()));
}

#[tokio::test]
async fn literal_targets_outside_the_allowlist_are_never_dialled() {
    let canary = Canary::start("127.0.0.2").await;
    let v6_canary = Canary::start("::1").await;
    let port = canary.addr.port();
    let c = client_with(StaticResolver::new());
    let urls = [
        canary.url("/"),
        format!("http://2130706434:{port}/"),
        format!("http://0x7f.0.0.2:{port}/"),
        format!("http://127.2:{port}/"),
        format!("http://[::ffff:127.0.0.2]:{port}/"),
        format!("http://[::1]:{}/", v6_canary.addr.port()),
    ];
    for u in &urls {
        let err = c.fetch(get(u)).await.expect_err(u);
        assert_eq!(err.status(), 400, "{u}");
        assert_eq!(err.code(), "blocked_target", "{u}");
        let (reason, hop) = blocked(err);
        assert_eq!(hop, 0);
        assert_eq!(reason.reason().unwrap().class, Class::Loopback, "{u}");
    }
    let err = c
        .fetch(get(&format!("http://localhost:{port}/")))
        .await
        .unwrap_err();
    assert!(matches!(blocked(err).0, BlockedTarget::LocalName(_)));
    assert_eq!(canary.hits(), 0);
    assert_eq!(v6_canary.hits(), 0);
}

#[tokio::test]
async fn redirects_to_refused_targets_are_refused_and_never_dialled() {
    let canary = Canary::start("127.0.0.2").await;
    let v6_canary = Canary::start("::1").await;
    let port = canary.addr.port();
    let targets = vec![
        canary.url("/"),
        format!("http://2130706434:{port}/"),
        format!("http://[::ffff:7f00:2]:{port}/"),
        format!("http://[::1]:{}/", v6_canary.addr.port()),
        format!("http://localhost:{port}/"),
        format!("http://localhost.:{port}/"),
        format!("http://internal.test:{port}/"),
        format!("http://INTERNAL.test.:{port}/"),
    ];
    let locations = targets.clone();
    let up = Upstream::start("127.0.0.1", move |r| {
        let i: usize = r.target.trim_start_matches('/').parse().unwrap_or(0);
        Reply::redirect(302, &locations[i])
    })
    .await;
    let c = client_with(StaticResolver::new().with("internal.test", [ip("127.0.0.2")]));
    for (i, t) in targets.iter().enumerate() {
        let err = c.fetch(get(&up.url(&format!("/{i}")))).await.expect_err(t);
        assert_eq!(err.code(), "blocked_target", "{t}: {err}");
        let (reason, hop) = blocked(err);
        assert_eq!(hop, 1, "{t}");
        match reason {
            BlockedTarget::Resolved { host, refusal } => {
                assert_eq!(host, "internal.test");
                assert_eq!(refusal.addr, ip("127.0.0.2"));
            }
            BlockedTarget::Address(r) => assert_eq!(r.reason.class, Class::Loopback),
            BlockedTarget::LocalName(_) => assert!(t.contains("localhost")),
        }
    }
    assert_eq!(up.requests().len(), targets.len());
    assert_eq!(canary.hits(), 0);
    assert_eq!(v6_canary.hits(), 0);
}

#[tokio::test]
async fn a_name_resolving_to_a_refused_address_is_refused() {
    let canary = Canary::start("127.0.0.2").await;
    let c = client_with(StaticResolver::new().with("internal.test", [ip("127.0.0.2")]));
    let err = c
        .fetch(get(&format!(
            "http://internal.test:{}/",
            canary.addr.port()
        )))
        .await
        .unwrap_err();
    assert_eq!(err.status(), 400);
    let msg = err.to_string();
    assert!(
        msg.contains("internal.test") && msg.contains("loopback"),
        "{msg}"
    );
    assert!(
        !msg.contains("127.0.0.2"),
        "the resolved address is not echoed: {msg}"
    );
    match blocked(err) {
        (BlockedTarget::Resolved { host, refusal }, 0) => {
            assert_eq!(host, "internal.test");
            assert_eq!(refusal.reason.class, Class::Loopback);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(canary.hits(), 0);
}

/// Any refused answer refuses the host, whatever the order: nothing is dialled, not even the
/// allowed address.
#[tokio::test]
async fn one_refused_answer_refuses_the_whole_name() {
    let up = Upstream::start("127.0.0.1", |_| Reply::ok("should not be fetched")).await;
    let port = up.addr.port();
    let canary = Canary::start_on(SocketAddr::new(ip("127.0.0.2"), port)).await;
    let v6_canary = Canary::start_on(SocketAddr::new(ip("::1"), port)).await;
    let c = client_with(
        StaticResolver::new()
            .with("mixed.test", [ip("127.0.0.1"), ip("127.0.0.2")])
            .with("mixed2.test", [ip("127.0.0.2"), ip("127.0.0.1")])
            .with("mixed6.test", [ip("127.0.0.1"), ip("::1")]),
    );
    for name in ["mixed.test", "mixed2.test", "mixed6.test"] {
        let err = c
            .fetch(get(&format!("http://{name}:{port}/")))
            .await
            .unwrap_err();
        match blocked(err) {
            (BlockedTarget::Resolved { host, .. }, 0) => assert_eq!(host, name),
            other => panic!("{name}: {other:?}"),
        }
    }
    assert_eq!(up.requests().len(), 0);
    assert_eq!(canary.hits(), 0);
    assert_eq!(v6_canary.hits(), 0);
}

#[tokio::test]
async fn unknown_names_fail_as_dns_errors() {
    let err = client()
        .fetch(get("http://nowhere.test/"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "dns_failed");
    assert_eq!(err.status(), 502);
    assert!(err.to_string().contains("nowhere.test"), "{err}");
}

#[tokio::test]
async fn an_empty_answer_is_a_dns_failure() {
    let c = client_with(StaticResolver::new().with("empty.test", []));
    let err = c.fetch(get("http://empty.test/")).await.unwrap_err();
    assert_eq!(err.code(), "dns_failed");
}

fn hops_upstream() -> impl Fn(&support::guard::Recorded) -> Reply + Send + Sync + 'static {
    // /hops/N redirects to /hops/N-1; /hops/0 answers.
    |r| {
        let n: u32 = r
            .target
            .strip_prefix("/hops/")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if n == 0 {
            Reply::ok("done")
        } else {
            Reply::redirect(302, &format!("/hops/{}", n - 1))
        }
    }
}

#[tokio::test]
async fn redirects_up_to_the_cap_are_followed() {
    let up = Upstream::start("127.0.0.1", hops_upstream()).await;
    let mut req = get(&up.url("/hops/3"));
    req.max_redirects = 3;
    let resp = client()
        .fetch(req)
        .await
        .expect("3 redirects within a cap of 3");
    assert_eq!(&resp.body[..], b"done");
    let chain: Vec<String> = resp.redirects.iter().map(|u| u.path().to_owned()).collect();
    assert_eq!(chain, ["/hops/2", "/hops/1", "/hops/0"]);
    assert_eq!(resp.final_url.path(), "/hops/0");
    assert_eq!(up.requests().len(), 4);
}

#[tokio::test]
async fn a_chain_longer_than_the_cap_fails() {
    let up = Upstream::start("127.0.0.1", hops_upstream()).await;
    let mut req = get(&up.url("/hops/4"));
    req.max_redirects = 3;
    let err = client().fetch(req).await.unwrap_err();
    assert_eq!(err.code(), "too_many_redirects");
    assert_eq!(err.status(), 502);
    match err {
        FetchError::TooManyRedirects { chain, max } => {
            assert_eq!(max, 3);
            let paths: Vec<&str> = chain.iter().map(|u| u.path()).collect();
            assert_eq!(paths, ["/hops/4", "/hops/3", "/hops/2", "/hops/1"]);
        }
        other => panic!("{other:?}"),
    }
    // The fourth Location was never requested.
    assert_eq!(up.requests().len(), 4);

    let mut req = get(&up.url("/hops/1"));
    req.max_redirects = 0;
    let err = client().fetch(req).await.unwrap_err();
    assert_eq!(err.code(), "too_many_redirects");
}

/// An echo upstream: /echo answers "METHOD body"; /NNN/… redirects with status NNN to /echo.
fn echo_upstream() -> impl Fn(&support::guard::Recorded) -> Reply + Send + Sync + 'static {
    |r| {
        if r.target == "/echo" {
            let mut body = r.method.clone().into_bytes();
            body.push(b' ');
            body.extend_from_slice(&r.body);
            Reply::ok(body)
        } else {
            let status: u16 = r
                .target
                .get(1..4)
                .and_then(|s| s.parse().ok())
                .unwrap_or(302);
            Reply::redirect(status, "/echo")
        }
    }
}

fn with_body(url: &str, method: Method) -> FetchRequest {
    let mut req = get(url);
    req.method = method;
    req.body = Some(Bytes::from_static(b"payload"));
    req.headers
        .insert("content-type", HeaderValue::from_static("application/json"));
    req
}

#[tokio::test]
async fn see_other_turns_post_into_a_bodiless_get() {
    let up = Upstream::start("127.0.0.1", echo_upstream()).await;
    for status in [301, 302, 303] {
        let resp = client()
            .fetch(with_body(&up.url(&format!("/{status}")), Method::POST))
            .await
            .expect("redirected POST");
        assert_eq!(&resp.body[..], b"GET ", "{status}");
    }
    // 303 turns any method (but HEAD) into GET.
    let resp = client()
        .fetch(with_body(&up.url("/303"), Method::PUT))
        .await
        .unwrap();
    assert_eq!(&resp.body[..], b"GET ");

    let seen = up.requests();
    for r in seen.iter().filter(|r| r.target == "/echo") {
        assert_eq!(r.method, "GET");
        assert!(r.body.is_empty());
        assert_eq!(r.header("content-type"), None);
        assert_eq!(r.header("content-length").unwrap_or("0"), "0");
    }
    let firsts: Vec<&str> = seen
        .iter()
        .filter(|r| r.target != "/echo")
        .map(|r| r.method.as_str())
        .collect();
    assert_eq!(firsts, ["POST", "POST", "POST", "PUT"]);
}

#[tokio::test]
async fn temporary_and_permanent_redirects_keep_method_and_body() {
    let up = Upstream::start("127.0.0.1", echo_upstream()).await;
    let resp = client()
        .fetch(with_body(&up.url("/307"), Method::POST))
        .await
        .unwrap();
    assert_eq!(&resp.body[..], b"POST payload");
    let resp = client()
        .fetch(with_body(&up.url("/308"), Method::PUT))
        .await
        .unwrap();
    assert_eq!(&resp.body[..], b"PUT payload");
    for r in up.requests().iter().filter(|r| r.target == "/echo") {
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.body, b"payload");
    }
}

#[tokio::test]
async fn credentials_are_dropped_when_a_redirect_changes_origin() {
    let other = Upstream::start("127.0.0.1", |_| Reply::ok("other")).await;
    let other_url = other.url("/landing");
    let up = Upstream::start("127.0.0.1", move |r| match r.target.as_str() {
        "/same" => Reply::redirect(302, "/final"),
        "/cross" => Reply::redirect(302, &other_url),
        _ => Reply::ok("final"),
    })
    .await;
    let mut headers = HeaderMap::new();
    headers.insert("authorization", HeaderValue::from_static("Bearer t"));
    headers.insert("x-api-key", HeaderValue::from_static("k"));
    headers.insert("x-goog-api-key", HeaderValue::from_static("g"));
    headers.insert("x-amz-security-token", HeaderValue::from_static("s"));
    headers.insert("x-trace", HeaderValue::from_static("t"));
    headers.insert("accept", HeaderValue::from_static("text/plain"));

    let mut req = get(&up.url("/same"));
    req.headers = headers.clone();
    client().fetch(req).await.unwrap();
    let last = up.requests().pop().unwrap();
    assert_eq!(last.target, "/final");
    assert_eq!(last.header("authorization"), Some("Bearer t"));
    assert_eq!(last.header("x-api-key"), Some("k"));
    assert_eq!(last.header("x-goog-api-key"), Some("g"));

    let mut req = get(&up.url("/cross"));
    req.headers = headers;
    let resp = client().fetch(req).await.unwrap();
    assert_eq!(&resp.body[..], b"other");
    let landed = &other.requests()[0];
    assert_eq!(landed.header("authorization"), None);
    assert_eq!(landed.header("x-api-key"), None);
    // Any header that may carry a credential stays behind, not only the well-known names.
    assert_eq!(landed.header("x-goog-api-key"), None);
    assert_eq!(landed.header("x-amz-security-token"), None);
    assert_eq!(landed.header("x-trace"), None);
    assert_eq!(
        landed.header("accept"),
        Some("text/plain"),
        "descriptive headers follow"
    );
}

#[tokio::test]
async fn unusable_redirects_are_upstream_errors() {
    let up = Upstream::start("127.0.0.1", |r| match r.target.as_str() {
        "/ftp" => Reply::redirect(302, "ftp://example.com/file"),
        "/userinfo" => Reply::redirect(302, "http://user@example.com/"),
        _ => Reply::redirect(302, "http://[::1"),
    })
    .await;
    for path in ["/ftp", "/userinfo", "/broken"] {
        let err = client().fetch(get(&up.url(path))).await.unwrap_err();
        assert_eq!(err.code(), "bad_redirect", "{path}: {err}");
        assert_eq!(err.status(), 502);
    }
}

fn capped(url: &str, max: usize, over_cap: OverCap) -> FetchRequest {
    let mut req = get(url);
    req.max_bytes = max;
    req.over_cap = over_cap;
    req
}

#[tokio::test]
async fn a_declared_length_over_the_cap_is_refused_without_reading() {
    // The server declares 10 MB, sends 100 bytes and stalls: a client that tried to read the
    // body would sit until the deadline. Refusing on the header alone returns at once.
    let up = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 10_000_000,
        prefix: vec![b'x'; 100],
        then_close: false,
    })
    .await;
    let started = Instant::now();
    let mut req = capped(&up.url("/big"), 1000, OverCap::Reject);
    req.timeout = Duration::from_secs(15);
    let err = client().fetch(req).await.unwrap_err();
    assert_eq!(
        err,
        FetchError::TooLarge {
            declared: Some(10_000_000),
            cap: 1000
        }
    );
    assert_eq!(err.status(), 413);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_declared_length_over_the_cap_is_cut_when_truncating() {
    let body: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    let expected = body[..1000].to_vec();
    let up = Upstream::start("127.0.0.1", move |_| Reply::Full {
        status: 200,
        headers: vec![],
        body: body.clone(),
    })
    .await;
    let resp = client()
        .fetch(capped(&up.url("/"), 1000, OverCap::Truncate))
        .await
        .unwrap();
    assert_eq!(resp.body.to_vec(), expected);
    assert!(resp.truncated);
    assert_eq!(resp.bytes_read, 1000);

    // Declared too large, 2000 bytes sent, then a stall: truncation returns without waiting.
    let stall = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 10_000_000,
        prefix: vec![b'y'; 2000],
        then_close: false,
    })
    .await;
    let mut req = capped(&stall.url("/"), 1000, OverCap::Truncate);
    req.timeout = Duration::from_secs(15);
    let resp = client().fetch(req).await.unwrap();
    assert_eq!(resp.body.len(), 1000);
    assert!(resp.truncated);
}

fn chunked_3000() -> Reply {
    Reply::Chunked {
        status: 200,
        chunks: (0..10u8).map(|i| vec![b'a' + i; 300]).collect(),
    }
}

#[tokio::test]
async fn a_chunked_body_over_the_cap_is_truncated_exactly() {
    let up = Upstream::start("127.0.0.1", |_| chunked_3000()).await;
    let resp = client()
        .fetch(capped(&up.url("/"), 1000, OverCap::Truncate))
        .await
        .unwrap();
    let mut expected = Vec::new();
    for i in 0..10u8 {
        expected.extend(std::iter::repeat_n(b'a' + i, 300));
    }
    expected.truncate(1000);
    assert_eq!(resp.body.to_vec(), expected);
    assert!(resp.truncated);
    assert_eq!(resp.bytes_read, 1000);
    assert!(resp.headers.get("content-length").is_none());
}

#[tokio::test]
async fn a_chunked_body_over_the_cap_is_refused_when_rejecting() {
    let up = Upstream::start("127.0.0.1", |_| chunked_3000()).await;
    let err = client()
        .fetch(capped(&up.url("/"), 1000, OverCap::Reject))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        FetchError::TooLarge {
            declared: None,
            cap: 1000
        }
    );
}

#[tokio::test]
async fn a_body_of_exactly_the_cap_is_whole() {
    let chunked = Upstream::start("127.0.0.1", |_| chunked_3000()).await;
    let full = Upstream::start("127.0.0.1", |_| Reply::ok(vec![b'z'; 3000])).await;
    for over_cap in [OverCap::Reject, OverCap::Truncate] {
        for up in [&chunked, &full] {
            let resp = client()
                .fetch(capped(&up.url("/"), 3000, over_cap))
                .await
                .unwrap();
            assert_eq!(resp.body.len(), 3000);
            assert!(!resp.truncated);
        }
        // One byte less is over the cap.
        let r = client().fetch(capped(&full.url("/"), 2999, over_cap)).await;
        match over_cap {
            OverCap::Reject => assert_eq!(r.unwrap_err().code(), "upstream_too_large"),
            OverCap::Truncate => assert!(r.unwrap().truncated),
        }
    }
}

#[tokio::test]
async fn head_is_not_refused_for_its_declared_length() {
    let up = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 10_000_000,
        prefix: vec![],
        then_close: true,
    })
    .await;
    let mut req = capped(&up.url("/"), 1000, OverCap::Reject);
    req.method = Method::HEAD;
    let resp = client().fetch(req).await.expect("HEAD has no body");
    assert!(resp.body.is_empty());
    assert_eq!(resp.headers.get("content-length").unwrap(), "10000000");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let up = Upstream::start("127.0.0.1", |_| Reply::Silent).await;
    let started = Instant::now();
    let mut req = get(&up.url("/"));
    req.timeout = Duration::from_millis(300);
    let err = client().fetch(req).await.unwrap_err();
    assert_eq!(
        err,
        FetchError::Timeout {
            after: Duration::from_millis(300)
        }
    );
    assert_eq!(err.status(), 504);
    assert_eq!(err.code(), "upstream_timeout");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(up.requests().len(), 1, "the request did reach the server");
}

#[tokio::test]
async fn a_body_that_stalls_times_out() {
    let up = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 500,
        prefix: vec![b'x'; 100],
        then_close: false,
    })
    .await;
    let mut req = get(&up.url("/"));
    req.timeout = Duration::from_millis(300);
    let err = client().fetch(req).await.unwrap_err();
    assert_eq!(err.code(), "upstream_timeout");
}

#[tokio::test]
async fn a_body_cut_short_is_an_upstream_error() {
    let up = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 500,
        prefix: vec![b'x'; 100],
        then_close: true,
    })
    .await;
    let err = client().fetch(get(&up.url("/"))).await.unwrap_err();
    assert_eq!(err.code(), "upstream_error", "{err}");
    assert_eq!(err.status(), 502);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let (listener, addr) = support::net::listen().await;
    drop(listener);
    let err = client()
        .fetch(get(&format!("http://{addr}/")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "connect_failed", "{err:?}");
    assert_eq!(err.status(), 502);
    assert_eq!(err.to_string(), "the upstream refused the connection");
}

#[tokio::test]
async fn a_url_built_without_parse_target_is_still_judged() {
    let canary = Canary::start("127.0.0.2").await;
    for raw in [
        format!("http://[::ffff:127.0.0.2]:{}/", canary.addr.port()),
        format!("http://user@127.0.0.1:{}/", canary.addr.port()),
        "file:///etc/passwd".to_owned(),
    ] {
        let req = FetchRequest::get(Url::parse(&raw).unwrap());
        let err = client().fetch(req).await.unwrap_err();
        assert_eq!(err.status(), 400, "{raw}: {err}");
    }
    assert_eq!(canary.hits(), 0);
}

#[tokio::test]
async fn without_an_allowlist_even_the_test_upstream_is_refused() {
    let up = Upstream::start("127.0.0.1", |_| Reply::ok("x")).await;
    let strict = GuardedClient::new(
        Arc::new(Guard::strict()),
        Arc::new(StaticResolver::new().with("up.test", [ip("127.0.0.1")])),
        UA,
    )
    .unwrap();
    let err = strict.fetch(get(&up.url("/"))).await.unwrap_err();
    assert_eq!(err.code(), "blocked_target");
    let err = strict
        .fetch(get(&format!("http://up.test:{}/", up.addr.port())))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "blocked_target");
    assert_eq!(up.requests().len(), 0);
}

#[test]
fn a_bad_user_agent_is_a_build_error_not_a_panic() {
    let r = GuardedClient::new(
        Arc::new(Guard::strict()),
        Arc::new(StaticResolver::new()),
        "bad\nagent",
    );
    assert!(r.is_err());
}

/// https to something that does not speak TLS: the ring provider and the platform verifier are in
/// place (the client built), and a failed handshake is reported as a connection failure.
#[tokio::test]
async fn a_failed_tls_handshake_is_a_connect_error() {
    use tokio::io::AsyncWriteExt;
    let (listener, addr) = support::net::listen().await;
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let _ = sock
                .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                .await;
            let _ = sock.shutdown().await;
        }
    });
    let err = client()
        .fetch(get(&format!("https://{addr}/")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "connect_failed", "{err:?}");
    assert!(
        err.to_string()
            .starts_with("the TLS handshake with the upstream failed"),
        "{err}"
    );
}

/// A declared length is the upstream's claim: with no practical cap, a petabyte declaration must
/// not become a petabyte allocation (that would abort the process).
#[tokio::test]
async fn a_huge_declared_length_is_not_preallocated() {
    let up = Upstream::start("127.0.0.1", |_| Reply::Declare {
        content_length: 1 << 50,
        prefix: vec![b'x'; 10],
        then_close: true,
    })
    .await;
    let err = client()
        .fetch(capped(&up.url("/"), usize::MAX, OverCap::Truncate))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "upstream_error", "{err}");
}
