//! Test support: a local upstream web server on 127.0.0.1:0 with the pages and misbehaviours
//! the guard and fetch tests need, and canaries on other loopback addresses that must never
//! be reached (they count every connection).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use warp::http::HeaderValue;
use warp::reply::Response;
use warp::Filter;

pub const ARTICLE: &str = r#"<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>Upstream article</title><meta name="description" content="A test article."></head>
<body><nav><a href="/">Home</a> <a href="/a">Menu one</a> <a href="/b">Menu two</a></nav>
<main><article><h1>The Quiet Harbour</h1>
<p>The harbour was quiet that morning, and the fishing boats rocked gently against the old stone quay while gulls circled overhead.</p>
<p>Mara walked along the pier counting the moorings, as her grandfather had taught her, and noted which boats had not yet returned.</p>
<h2>The Return</h2>
<p>By noon the last boat rounded the lighthouse, its nets heavy, and the whole village came down to the water to help unload the catch.</p>
<p>See <a href="/more">the longer story</a> for what happened next.</p>
</article></main>
<footer>Copyright footer text that is boilerplate.</footer></body></html>"#;

/// Counts requests per path family and in total.
#[derive(Default)]
pub struct Hits {
    pub total: AtomicUsize,
    pub slow: AtomicUsize,
}

pub struct Upstream {
    pub addr: SocketAddr,
    pub base: String,
    pub hits: Arc<Hits>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Upstream {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
    pub fn total(&self) -> usize {
        self.hits.total.load(Ordering::SeqCst)
    }
}

fn resp(status: u16, ct: &str, body: impl Into<Bytes>) -> Response {
    let mut r = Response::new(body.into().into());
    *r.status_mut() = warp::http::StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", HeaderValue::from_str(ct).unwrap());
    r
}

fn with_header(mut r: Response, name: &'static str, value: &str) -> Response {
    r.headers_mut()
        .append(name, HeaderValue::from_str(value).unwrap());
    r
}

/// Starts the upstream. `canary` is put into redirect targets that must be refused.
pub async fn start(canary: &str) -> Upstream {
    let hits = Arc::new(Hits::default());
    let h = hits.clone();
    let count = warp::any()
        .map(move || {
            h.total.fetch_add(1, Ordering::SeqCst);
        })
        .untuple_one();
    let canary = canary.to_string();
    let h2 = hits.clone();
    let routes = count
        .and(warp::method())
        .and(warp::path::full())
        .and(warp::query::raw().or(warp::any().map(String::new)).unify())
        .and(warp::header::headers_cloned())
        .and(warp::body::bytes())
        .and_then(
            move |method: warp::http::Method,
                  path: warp::path::FullPath,
                  query: String,
                  headers: warp::http::HeaderMap,
                  body: Bytes| {
                let canary = canary.clone();
                let hits = h2.clone();
                async move {
                    let p = path.as_str().to_string();
                    let r: Response = match p.as_str() {
                        "/hello" => resp(200, "text/plain; charset=utf-8", "hello"),
                        "/json" => resp(200, "application/json", r#"{"a":1,"b":[true,null]}"#),
                        "/article" => resp(200, "text/html; charset=utf-8", ARTICLE),
                        "/notes.md" => resp(200, "text/markdown", "# Notes\n\n- one\n- two\n"),
                        "/png" => resp(200, "image/png", &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..]),
                        "/missing" => resp(404, "text/plain", "no such page"),
                        "/server-error" => resp(503, "text/plain", "down for maintenance"),
                        "/cookie" => with_header(
                            with_header(
                                resp(200, "text/plain", "with cookie"),
                                "set-cookie",
                                "session=secret",
                            ),
                            "x-upstream",
                            "yes",
                        ),
                        "/echo" => {
                            let seen: serde_json::Map<String, serde_json::Value> = headers
                                .iter()
                                .map(|(k, v)| {
                                    (
                                        k.as_str().to_string(),
                                        serde_json::Value::String(
                                            String::from_utf8_lossy(v.as_bytes()).into(),
                                        ),
                                    )
                                })
                                .collect();
                            let j = serde_json::json!({
                                "method": method.as_str(),
                                "query": query,
                                "body": String::from_utf8_lossy(&body),
                                "headers": seen,
                            });
                            resp(200, "application/json", j.to_string())
                        }
                        "/sized" => {
                            // ?n=<bytes>: a body of exactly n bytes with Content-Length.
                            let n: usize = query.trim_start_matches("n=").parse().unwrap_or(0);
                            resp(200, "text/plain", vec![b'a'; n])
                        }
                        "/slow" => {
                            hits.slow.fetch_add(1, Ordering::SeqCst);
                            let ms: u64 = query.trim_start_matches("ms=").parse().unwrap_or(30_000);
                            tokio::time::sleep(Duration::from_millis(ms)).await;
                            resp(200, "text/plain", "finally")
                        }
                        "/to-canary" => {
                            with_header(resp(302, "text/plain", ""), "location", &canary)
                        }
                        _ if p.starts_with("/redirect/") => {
                            // /redirect/<n>: n more hops, then /hello.
                            let n: u32 = p["/redirect/".len()..].parse().unwrap_or(0);
                            let next = if n <= 1 {
                                "/hello".to_string()
                            } else {
                                format!("/redirect/{}", n - 1)
                            };
                            with_header(resp(302, "text/plain", ""), "location", &next)
                        }
                        _ => resp(404, "text/plain", "unknown test path"),
                    };
                    Ok::<_, Infallible>(r)
                }
            },
        );
    let (addr, tx) = super::net::serve(routes).await;
    Upstream {
        addr,
        base: format!("http://{addr}"),
        hits,
        _stop: tx,
    }
}

/// A listener on another loopback address that records every connection and answers nothing
/// useful. Anything reaching it is a guard failure.
pub struct Canary {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
}

impl Canary {
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

pub async fn canary(ip: &str) -> Canary {
    let listener = tokio::net::TcpListener::bind(format!("{ip}:0"))
        .await
        .expect("bind canary");
    let addr = listener.local_addr().unwrap();
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            drop(sock);
        }
    });
    Canary { addr, hits }
}

/// A raw HTTP/1.1 server answering every request with `n` bytes in chunked encoding (no
/// Content-Length), so a cap can only be enforced while streaming.
pub async fn chunked(n: usize) -> String {
    chunked_body("text/plain", vec![b'c'; n]).await
}

/// A raw HTTP/1.1 server answering every request with `body` in 8 KiB chunks (no
/// Content-Length) and the given content type.
pub async fn chunked_body(content_type: &'static str, body: Vec<u8>) -> String {
    let (listener, addr) = super::net::listen().await;
    let body = Arc::new(body);
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => seen.extend_from_slice(&buf[..k]),
                    }
                    if seen.len() > 65536 {
                        return;
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                );
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for chunk in body.chunks(8192) {
                    let size = format!("{:x}\r\n", chunk.len());
                    if sock.write_all(size.as_bytes()).await.is_err()
                        || sock.write_all(chunk).await.is_err()
                        || sock.write_all(b"\r\n").await.is_err()
                    {
                        return;
                    }
                }
                let _ = sock.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    format!("http://{addr}/")
}
