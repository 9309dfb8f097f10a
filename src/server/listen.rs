//! The public listener's accept loop. Each connection starts on `fast_challenge` (plain unpaid
//! GETs answered without hyper) and is served by hyper from its first other request, each
//! request handed to the App served at that moment (`ops::reload::Live`): a live reload swaps
//! routes between two requests, even on a kept-alive connection. Every response is counted here
//! by route label, method and status, and 402s by kind, and logged here once (`RequestLog`):
//! paid routes, demo twins (cached or not, 429s included), discovery, /status and 404s alike.

use futures_util::future::Either;
use http::{Method, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use warp::Filter;

use crate::ops::metrics::{method_label, OTHER};
use crate::ops::reload::Live;

/// The peer address of a connection, put in each request's extensions by `serve_with_hyper`.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

/// The client's socket address: ours (`Peer`), or warp's when served by `warp::serve`.
pub fn remote(
) -> impl Filter<Extract = (Option<SocketAddr>,), Error = std::convert::Infallible> + Clone {
    warp::ext::optional::<Peer>()
        .and(warp::addr::remote())
        .map(|p: Option<Peer>, r: Option<SocketAddr>| p.map(|p| p.0).or(r))
}

/// Accepts until `shutdown` resolves, then closes the listener and lets open connections finish
/// their current request (returns when all are closed; the caller bounds the wait).
pub async fn run(
    live: Arc<Live>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) {
    let graceful = GracefulShutdown::new();
    // Tells connections still on the unpaid-402 path to close when idle (hyper's are told by
    // `graceful`, which also waits for both kinds).
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    if !is_connection_error(&e) {
                        // Out of file descriptors and the like: wait a little, as hyper does.
                        tracing::error!(error = %e, "accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                    }
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // A connection starts on the unpaid-402 path and is handed to hyper at its first other
        // request (`fast_challenge`).
        tokio::spawn(super::fast_challenge::serve(
            stream,
            peer,
            live.clone(),
            graceful.watcher(),
            stop_rx.clone(),
        ));
    }
    drop(listener);
    let _ = stop_tx.send(true);
    graceful.shutdown().await;
}

/// Serves the rest of a connection with hyper: every request `fast_challenge` does not answer
/// (the bytes it already read are in `io`).
pub(super) async fn serve_with_hyper<I>(io: I, peer: SocketAddr, live: Arc<Live>, watcher: Watcher)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let header_read_timeout = live.served().header_read_timeout();
    let svc = hyper::service::service_fn(move |mut req: http::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(Peer(peer));
        let served = live.served();
        let route = served.label(req.uri().path());
        let method = req.method().clone();
        let paid = req.headers().contains_key("payment-signature");
        let mut log = RequestLog::start(&method, route.as_deref(), req.uri().path());
        if let Some(reply) = served.unpaid_answer(&req) {
            let resp = ready_402(&served, route, &method, paid, reply);
            log.finish(&resp);
            return Either::Left(std::future::ready(Ok(resp)));
        }
        let svc =
            hyper_util::service::TowerToHyperService::new(warp::service(served.filter.clone()));
        let fut = hyper::service::Service::call(&svc, req);
        Either::Right(async move {
            let resp = fut.await;
            if let Ok(r) = &resp {
                count(
                    &served.app.metrics,
                    route.as_deref(),
                    &method,
                    r.status(),
                    paid,
                );
                log.finish(r);
            }
            resp
        })
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    // With a timer, hyper bounds the wait for each request head (a silent or slow client is
    // closed), as `fast_challenge` does before the handover.
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
    let _ = watcher.watch(conn.into_owned()).await;
}

/// The one log line of a request (README: request id, route, status, charged, time taken).
/// Written when the response is ready, or, for a client that hung up first, when the request is
/// dropped (status 499, as nginx logs it; a paid call's work still finishes detached).
pub struct RequestLog {
    started: std::time::Instant,
    method: Method,
    route: String,
    done: bool,
}

impl RequestLog {
    pub fn start(method: &Method, label: Option<&str>, path: &str) -> RequestLog {
        let route = match label {
            Some(l) => l.to_string(),
            // Not a route: the path as asked (cut, it is the client's text).
            None => path.chars().take(200).collect(),
        };
        RequestLog {
            started: std::time::Instant::now(),
            method: method.clone(),
            route,
            done: false,
        }
    }

    pub fn finish<B>(&mut self, resp: &http::Response<B>) {
        let id = resp
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("-");
        let outcome = resp.extensions().get::<super::PaymentOutcome>().copied();
        let facilitator = resp
            .extensions()
            .get::<crate::payment::paid::FacilitatorUsed>()
            .map(|f| f.0.clone());
        self.write(id, resp.status().as_u16(), outcome, facilitator.as_deref());
    }

    /// The log line of a reply written without hyper (`fast_challenge`): no payment.
    pub fn finish_ready(&mut self, id: &str, status: StatusCode) {
        self.write(id, status.as_u16(), None, None);
    }

    fn write(
        &mut self,
        id: &str,
        status: u16,
        outcome: Option<super::PaymentOutcome>,
        facilitator: Option<&str>,
    ) {
        self.done = true;
        let demo = self.route.starts_with("/api/demo/");
        tracing::info!(
            request_id = %id,
            method = %self.method,
            route = %self.route,
            status,
            demo,
            charged = outcome.is_some_and(|o| o.0 == crate::payment::Outcome::Charged),
            payment = outcome.map(|o| o.0.label()).unwrap_or("none"),
            facilitator = facilitator.unwrap_or("none"),
            elapsed_ms = self.started.elapsed().as_millis() as u64,
            "request"
        );
    }
}

impl Drop for RequestLog {
    fn drop(&mut self) {
        if !self.done {
            self.write("-", 499, None, None);
        }
    }
}

/// The response of a ready-made unpaid 402, counted as every request is.
fn ready_402(
    served: &crate::ops::reload::Served,
    route: Option<Arc<str>>,
    method: &Method,
    paid: bool,
    reply: crate::pipeline::Reply,
) -> warp::reply::Response {
    let id = crate::pipeline::exchange::new_request_id();
    let status = reply.status;
    let body = if *method == Method::HEAD {
        bytes::Bytes::new()
    } else {
        reply.body
    };
    // Logged by the caller's RequestLog, as every request is.
    count(&served.app.metrics, route.as_deref(), method, status, paid);
    crate::server::respond::ready_response(status, reply.headers, body, &id)
}

/// Counts a ready-made unpaid answer written without hyper (`fast_challenge`).
pub fn count_ready(served: &crate::ops::reload::Served, route: Option<&str>, status: StatusCode) {
    count(&served.app.metrics, route, &Method::GET, status, false);
}

fn count(
    m: &crate::ops::metrics::Metrics,
    route: Option<&str>,
    method: &Method,
    status: StatusCode,
    paid: bool,
) {
    let route = route.unwrap_or(OTHER);
    m.requests
        .with_label_values(&[route, method_label(method), status.as_str()])
        .inc();
    if status == StatusCode::PAYMENT_REQUIRED {
        let kind = if paid { "refused" } else { "challenge" };
        m.payment_required.with_label_values(&[route, kind]).inc();
    }
}

fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}
