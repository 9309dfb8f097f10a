//! Bind 127.0.0.1:0 and serve: every local upstream, stub and stand-in of the tests and benches
//! listens this way, on loopback only.

use std::net::SocketAddr;

use tokio::sync::oneshot;
use warp::Filter;

/// A port free on 127.0.0.1 right now, for a child process to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("local addr")
        .port()
}

/// A listener on 127.0.0.1 on a free port, and its address.
pub async fn listen() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local addr");
    (listener, addr)
}

/// `routes` served on 127.0.0.1 on a free port until the returned sender is used or dropped.
pub async fn serve<F>(routes: F) -> (SocketAddr, oneshot::Sender<()>)
where
    F: Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    let (listener, addr) = listen().await;
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(
        warp::serve(routes)
            .incoming(listener)
            .graceful(async move {
                let _ = stopped.await;
            })
            .run(),
    );
    (addr, stop)
}

/// `routes` served on 127.0.0.1 on a free port for as long as the runtime runs.
pub async fn serve_forever<F>(routes: F) -> SocketAddr
where
    F: Filter + Clone + Send + Sync + 'static,
    F::Extract: warp::Reply,
{
    let (listener, addr) = listen().await;
    tokio::spawn(warp::serve(routes).incoming(listener).run());
    addr
}

/// The Content-Length of a raw HTTP request head (0 when it has none), for the tests' stub
/// servers that read requests off a socket themselves.
pub fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Any request, whatever its method and path: its method, path, raw query ("" when it has none),
/// headers and body, for the stand-ins that answer or forward everything.
pub fn any_request() -> impl Filter<
    Extract = (
        warp::http::Method,
        warp::path::FullPath,
        String,
        warp::http::HeaderMap,
        bytes::Bytes,
    ),
    Error = warp::Rejection,
> + Clone {
    warp::method()
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
}
