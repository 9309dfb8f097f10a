//! Test support for /api/screenshot: a page server on 127.0.0.1:0 with the pages the browser
//! tests render (sub-requests, WebSocket and redirect to a refused canary, tall, noisy, slow,
//! cookie-setting pages), and helpers to read the returned images.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use warp::http::{HeaderValue, StatusCode};
use warp::reply::Response;
use warp::Filter;

/// /api/screenshot's input (the shipped route's caps), indented for a test route's YAML.
pub const SHOT_INPUT: &str = r#"    input:
      - { name: url, type: string, required: true, format: uri, max_length: 2048 }
      - { name: width, type: integer, default: 1280, minimum: 320, maximum: 1920 }
      - { name: height, type: integer, default: 800, minimum: 240, maximum: 2000 }
      - { name: fullPage, type: boolean, default: false }
      - { name: format, type: string, default: png, enum: [png, jpeg], case_insensitive: true }
      - { name: delayMs, type: integer, default: 0, minimum: 0, maximum: 3000 }
"#;

pub struct Pages {
    pub addr: SocketAddr,
    pub hits: Arc<AtomicUsize>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Pages {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

fn html(status: u16, body: String) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = StatusCode::from_u16(status).unwrap();
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{margin:0;font:16px sans-serif;background:#e8f0ff}}</style></head><body>{body}</body></html>"
    )
}

/// Starts the page server. `canary` is an `ip:port` that must never be reached.
pub async fn start(canary: SocketAddr) -> Pages {
    let hits = Arc::new(AtomicUsize::new(0));
    let h = hits.clone();
    let routes = warp::any()
        .map(move || {
            h.fetch_add(1, Ordering::SeqCst);
        })
        .untuple_one()
        .and(warp::path::full())
        .and(warp::query::<HashMap<String, String>>())
        .and(warp::header::optional::<String>("cookie"))
        .then(
            move |path: warp::path::FullPath,
                  q: HashMap<String, String>,
                  cookie: Option<String>| async move {
                route(path.as_str(), &q, cookie, canary).await
            },
        );
    let (addr, tx) = super::net::serve(routes).await;
    Pages {
        addr,
        hits,
        _stop: tx,
    }
}

async fn route(
    path: &str,
    q: &HashMap<String, String>,
    cookie: Option<String>,
    canary: SocketAddr,
) -> Response {
    match path {
        "/plain" => html(
            200,
            page(
                "Plain page",
                "<div style=\"width:200px;height:100px;background:#c00\"></div><p>Hello from the page server.</p>",
            ),
        ),
        "/missing" => html(404, page("Not here", "<h1>404</h1>")),
        "/pixel.svg" => {
            let mut r = Response::new(
                "<svg xmlns='http://www.w3.org/2000/svg' width='10' height='10'><rect width='10' height='10' fill='green'/></svg>".into(),
            );
            r.headers_mut()
                .insert("content-type", HeaderValue::from_static("image/svg+xml"));
            r
        }
        // Every kind of sub-request to the refused canary, plus one allowed image; the title
        // says which of them failed (all of the canary ones must).
        "/subrequests" => {
            let c = format!("http://{canary}");
            html(
                200,
                page(
                    "Sub-requests",
                    &format!(
                        r#"<img id="ok" src="/pixel.svg" width="10" height="10">
<img id="bad" src="{c}/img.png">
<iframe src="{c}/frame" width="100" height="50"></iframe>
<link rel="stylesheet" href="{c}/style.css">
<script src="{c}/script.js"></script>
<script>
  const results = [];
  fetch("{c}/fetch").then(() => results.push("fetch:ok"), () => results.push("fetch:error"));
  const x = new XMLHttpRequest();
  x.open("GET", "{c}/xhr"); x.onload = () => results.push("xhr:ok"); x.onerror = () => results.push("xhr:error"); x.send();
  navigator.sendBeacon && navigator.sendBeacon("{c}/beacon", "x");
  setTimeout(() => {{ document.title = "Sub-requests " + results.sort().join(","); }}, 300);
</script>"#
                    ),
                ),
            )
        }
        "/websocket" => {
            let target = q
                .get("to")
                .cloned()
                .unwrap_or_else(|| format!("ws://{canary}/socket"));
            html(
                200,
                page(
                    "WebSocket pending",
                    &format!(
                        r#"<script>
  const ws = new WebSocket("{target}");
  ws.onopen = () => {{ document.title = "WebSocket open"; }};
  ws.onerror = () => {{ document.title = "WebSocket error"; }};
</script>"#
                    ),
                ),
            )
        }
        "/redirect" => {
            let to = q
                .get("to")
                .cloned()
                .unwrap_or_else(|| format!("http://{canary}/landing"));
            let mut r = html(302, String::new());
            r.headers_mut()
                .insert("location", HeaderValue::from_str(&to).unwrap());
            r
        }
        "/tall" => html(
            200,
            page(
                "Tall page",
                "<div style=\"height:10000px;background:linear-gradient(#f00,#00f)\">tall</div>",
            ),
        ),
        // Random pixels: a PNG of them barely compresses, a JPEG does.
        "/noise" => html(
            200,
            page(
                "Noise",
                r#"<canvas id="c" style="display:block"></canvas><script>
  const c = document.getElementById("c");
  c.width = innerWidth; c.height = innerHeight;
  const g = c.getContext("2d"); const img = g.createImageData(c.width, c.height);
  let s = 12345;
  for (let i = 0; i < img.data.length; i++) { s = (s * 1103515245 + 12345) >>> 0; img.data[i] = (i & 3) === 3 ? 255 : (s >>> 16) & 255; }
  g.putImageData(img, 0, 0);
</script>"#,
            ),
        ),
        // Registers a service worker that fetches the refused canary; the worker reports the
        // outcome to the page, which puts it in its title ("SW fetch:error" when refused).
        "/sw" => html(
            200,
            page(
                "SW pending",
                r#"<script>
  navigator.serviceWorker.onmessage = (e) => { document.title = "SW " + e.data; };
  navigator.serviceWorker.register("/sw.js").then(
    () => { document.title = "SW registered"; },
    (err) => { document.title = "SW register failed " + err; });
</script>"#,
            ),
        ),
        "/sw.js" => {
            let body = format!(
                r#"self.addEventListener("install", (e) => self.skipWaiting());
self.addEventListener("activate", (e) => {{
  e.waitUntil(
    fetch("http://{canary}/from-service-worker", {{ mode: "no-cors" }})
      .then(() => "fetch:ok", () => "fetch:error")
      .then((r) => self.clients.matchAll({{ includeUncontrolled: true }})
        .then((cs) => cs.forEach((c) => c.postMessage(r)))));
}});
"#
            );
            let mut r = Response::new(body.into());
            r.headers_mut().insert(
                "content-type",
                HeaderValue::from_static("text/javascript"),
            );
            r
        }
        // Loads after `ms` milliseconds (bounded at 10 s).
        "/delay" => {
            let ms = q.get("ms").and_then(|v| v.parse::<u64>().ok()).unwrap_or(500).min(10_000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            html(200, page("Delayed", "on time"))
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(30)).await;
            html(200, page("Slow", "late"))
        }
        // Issue 21: allocates until it dies, mostly outside V8's heap (touched ArrayBuffers),
        // and never lets the load settle.
        "/eat" => html(
            200,
            "<!doctype html><title>Eater</title><body>eating<script>\
             const keep = []; function eat() { for (let i = 0; i < 4; i++) { \
             keep.push(new Uint8Array(64 << 20).fill(7)); } setTimeout(eat, 0); } eat();\
             </script></body>"
                .to_string(),
        ),
        // Sets a cookie and localStorage, and shows in its title what it found already set:
        // a fresh context per call must find nothing.
        "/state" => {
            let seen = cookie.unwrap_or_default();
            let mut r = html(
                200,
                page(
                    "state",
                    &format!(
                        r#"<script>
  const ls = localStorage.getItem("k") || "";
  localStorage.setItem("k", "set");
  document.cookie = "js=1; path=/";
  document.title = "cookie=[{}] storage=[" + ls + "]";
</script>"#,
                        seen.replace('"', "")
                    ),
                ),
            );
            r.headers_mut().insert(
                "set-cookie",
                HeaderValue::from_static("srv=1; Path=/; Max-Age=3600"),
            );
            r
        }
        _ => html(404, page("Unknown", "unknown test page")),
    }
}

/// Width and height from a PNG's IHDR chunk.
pub fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
    let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
    (w, h)
}

/// Width and height from a baseline or progressive JPEG's SOF marker.
pub fn jpeg_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(&[0xFF, 0xD8]), "not a JPEG");
    let mut i = 2;
    while i + 9 < bytes.len() {
        if bytes[i] != 0xFF {
            i += 1;
            continue;
        }
        let marker = bytes[i + 1];
        let len = u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]) as usize;
        if (0xC0..=0xC3).contains(&marker) {
            let h = u16::from_be_bytes([bytes[i + 5], bytes[i + 6]]) as u32;
            let w = u16::from_be_bytes([bytes[i + 7], bytes[i + 8]]) as u32;
            return (w, h);
        }
        i += 2 + len;
    }
    panic!("no SOF marker in the JPEG");
}

pub fn decode_image(b64: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .expect("imageBase64 is base64")
}
