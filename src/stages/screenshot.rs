//! `screenshot`: renders the vetted target (needs `target`) in a headless chromium whose every
//! request goes through the guarded forward proxy, and answers the screenshot record (docs/shot.md).
//!
//! A fresh browser context per call in a warm pooled browser (see `crate::browser`). Billing
//! follows the default rule: an image returned is 200 (charged, whatever the page's own
//! status); 400 refused target (a redirect or the page's DNS answer), 413 image over the cap,
//! 502 navigation or render failure, 503 renderer missing or busy, 504 navigation timeout are
//! all errors and never settle.
//!
//! Parameters (the route's caps override them):
//! - `chromium`, `chromedriver`: binaries (default: env PAYCALL_CHROMIUM / PAYCALL_CHROMEDRIVER,
//!   else /usr/bin/chromium, /usr/bin/chromedriver). Missing → the route reports itself not
//!   ready on /status and answers 503, not charged, saying what to install.
//! - `pool_size` (2), `max_uses` (50), `queue` (8), `queue_wait_ms` (20000), `warm` (0: start
//!   browsers on first use; N: start N when the server starts).
//! - `nav_timeout_ms` (15000), `idle_ms` (100), `idle_max_ms` (1500).
//! - `max_image_bytes` (3000000), `full_page_max_px` (4000), `jpeg_quality` (80).
//! - `max_memory_mb` (512): memory the session's chromium may use during one render (the
//!   summed PSS of its processes, polled every 100 ms); past it the processes are killed and
//!   the call is 502 render_failed, not charged. `js_heap_mb` (256): V8's heap per renderer
//!   (`--js-flags=--max-old-space-size`), so a script that allocates crashes its own tab early.

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::browser::{
    self, Browsers, Format, Pool, PoolConfig, PoolError, RenderError, RenderLimits, ShotRequest,
};
use crate::net::Fetched;
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "screenshot",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<url::Url>("target")],
    gives: &[],
    doc:
        "render the target in a pooled headless chromium behind the guarded proxy; base64 PNG/JPEG",
    errors: &[
        (
            400,
            "Bad parameters, or the page or a redirect led to a refused target",
        ),
        (413, "The image is over the size cap even as JPEG"),
        (502, "Navigation or render failed"),
        (503, "The renderer is not installed, or busy"),
        (504, "The page did not load in time"),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default)]
    chromium: Option<String>,
    #[serde(default)]
    chromedriver: Option<String>,
    #[serde(default = "d_pool_size")]
    pool_size: usize,
    #[serde(default = "d_max_uses")]
    max_uses: u32,
    #[serde(default = "d_queue")]
    queue: usize,
    #[serde(default = "d_queue_wait")]
    queue_wait_ms: u64,
    #[serde(default)]
    warm: usize,
    #[serde(default = "d_nav")]
    nav_timeout_ms: u64,
    #[serde(default = "d_idle")]
    idle_ms: u64,
    #[serde(default = "d_idle_max")]
    idle_max_ms: u64,
    #[serde(default = "d_max_image")]
    max_image_bytes: usize,
    #[serde(default = "d_full_page")]
    full_page_max_px: u32,
    #[serde(default = "d_quality")]
    jpeg_quality: u8,
    #[serde(default = "d_max_memory")]
    max_memory_mb: u64,
    #[serde(default = "d_js_heap")]
    js_heap_mb: u32,
}

fn d_max_memory() -> u64 {
    browser::render::DEFAULT_MAX_MEMORY_BYTES >> 20
}
fn d_js_heap() -> u32 {
    browser::pool::DEFAULT_JS_HEAP_MB
}

fn d_pool_size() -> usize {
    2
}
fn d_max_uses() -> u32 {
    50
}
fn d_queue() -> usize {
    8
}
fn d_queue_wait() -> u64 {
    20_000
}
fn d_nav() -> u64 {
    15_000
}
fn d_idle() -> u64 {
    100
}
fn d_idle_max() -> u64 {
    1_500
}
fn d_max_image() -> usize {
    3_000_000
}
fn d_full_page() -> u32 {
    4_000
}
fn d_quality() -> u8 {
    80
}

struct Screenshot {
    pool: Arc<Pool>,
    limits: RenderLimits,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if p.pool_size == 0 || p.pool_size > 16 {
        return Err("pool_size must be 1 to 16".into());
    }
    if p.max_uses == 0 {
        return Err("max_uses must be at least 1".into());
    }
    if p.nav_timeout_ms == 0 || p.nav_timeout_ms > 120_000 {
        return Err("nav_timeout_ms must be 1 to 120000".into());
    }
    if !(1..=100).contains(&p.jpeg_quality) {
        return Err("jpeg_quality must be 1 to 100".into());
    }
    for name in ["url", "width", "height", "fullPage", "format", "delayMs"] {
        if ctx.route.param(name).is_none() {
            return Err(format!("the route has no input parameter `{name}`"));
        }
    }
    if p.max_memory_mb < 128 || p.js_heap_mb < 16 {
        return Err("max_memory_mb must be at least 128 and js_heap_mb at least 16".into());
    }
    let browsers = ctx.services.need::<Browsers>()?;
    let config = PoolConfig {
        chromium: browser::binary_path(
            p.chromium.as_deref(),
            "PAYCALL_CHROMIUM",
            browser::DEFAULT_CHROMIUM,
        ),
        chromedriver: browser::binary_path(
            p.chromedriver.as_deref(),
            "PAYCALL_CHROMEDRIVER",
            browser::DEFAULT_CHROMEDRIVER,
        ),
        size: p.pool_size,
        max_uses: p.max_uses,
        queue: p.queue,
        queue_wait: Duration::from_millis(p.queue_wait_ms),
        warm: p.warm.min(p.pool_size),
        js_heap_mb: p.js_heap_mb,
    };
    Ok(Arc::new(Screenshot {
        pool: browsers.pool(config),
        limits: RenderLimits {
            nav_timeout: Duration::from_millis(p.nav_timeout_ms),
            idle: Duration::from_millis(p.idle_ms),
            idle_max: Duration::from_millis(p.idle_max_ms),
            max_image_bytes: p.max_image_bytes,
            full_page_max_px: p.full_page_max_px,
            jpeg_quality: p.jpeg_quality,
            max_memory_bytes: p.max_memory_mb << 20,
        },
    }))
}

fn unavailable(reason: String) -> Reply {
    Reply::error(
        StatusCode::SERVICE_UNAVAILABLE,
        "screenshot_unavailable",
        format!("screenshots are unavailable on this server: {reason}; you were not charged"),
    )
}

#[async_trait]
impl Stage for Screenshot {
    fn readiness(&self) -> Result<(), String> {
        self.pool.availability()
    }

    /// Missing binaries are known without I/O: answer 503 before the payment is verified.
    fn check_input(&self, _input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        self.pool.availability().map_err(unavailable)
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(url) = ex.target.clone() else {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "missing_parameter",
                "`url` is required",
            );
        };
        let format = ex
            .input_str("format")
            .and_then(Format::parse)
            .unwrap_or(Format::Png);
        // A demo run's target served by this service itself (`own_file` put it here; it never
        // does on a paid call): the browser renders that file instead of fetching the URL.
        let document = ex.slots.take::<Fetched>().map(|f| {
            let ct = f.response.content_type().unwrap_or("text/html").to_string();
            (ct, f.response.body)
        });
        let req = ShotRequest {
            url,
            document,
            width: ex.input_i64("width").unwrap_or(1280).clamp(320, 1920) as u32,
            height: ex.input_i64("height").unwrap_or(800).clamp(240, 2000) as u32,
            full_page: ex.input_bool("fullPage").unwrap_or(false),
            format,
            delay: Duration::from_millis(ex.input_i64("delayMs").unwrap_or(0).clamp(0, 3000) as u64),
        };
        let mut lease = match self.pool.acquire().await {
            Ok(l) => l,
            Err(PoolError::Unavailable(r)) => {
                ex.reply = Some(unavailable(r));
                return Flow::Reply;
            }
            Err(PoolError::Busy(m)) => {
                ex.reply = Some(
                    Reply::error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "renderer_busy",
                        format!("{m}; you were not charged"),
                    )
                    .with_header("retry-after", "5"),
                );
                return Flow::Reply;
            }
            Err(PoolError::Start(m)) => {
                return ex.fail(
                    StatusCode::BAD_GATEWAY,
                    "render_failed",
                    format!("the browser could not be started: {m}; you were not charged"),
                );
            }
        };
        let result = browser::render::render(lease.session(), &req, &self.limits).await;
        let healthy = match &result {
            Ok(_) => true,
            Err(e) => e.session_still_good(),
        };
        // Disposing the used context and preparing the next one happen after the reply; the
        // lease (and its place in the pool) is held until then.
        tokio::spawn(async move {
            let healthy = healthy && browser::render::tidy(lease.session()).await.is_ok();
            lease.release(healthy).await;
        });
        match result {
            Ok(shot) => {
                let mut body = json!({
                    "imageBase64": shot.image_base64,
                    "mimeType": shot.format.mime(),
                    "bytes": shot.bytes,
                    "width": shot.width,
                    "height": shot.height,
                    "finalUrl": shot.final_url,
                    "pageStatus": shot.page_status,
                    "title": shot.title,
                    "format": match shot.format { Format::Png => "png", Format::Jpeg => "jpeg" },
                    "fullPage": req.full_page,
                    "elapsedMs": ex.elapsed_ms(),
                });
                if let Some(note) = shot.fallback {
                    body["fallback"] = json!(note);
                }
                ex.respond_ok(body)
            }
            Err(e) => {
                let (status, code) = match &e {
                    RenderError::Blocked(_) => (StatusCode::BAD_REQUEST, "blocked_target"),
                    RenderError::Navigation(_) => (StatusCode::BAD_GATEWAY, "navigation_failed"),
                    RenderError::Timeout(_) => (StatusCode::GATEWAY_TIMEOUT, "navigation_timeout"),
                    RenderError::TooLarge { .. } => {
                        (StatusCode::PAYLOAD_TOO_LARGE, "image_too_large")
                    }
                    RenderError::Browser(_) => (StatusCode::BAD_GATEWAY, "render_failed"),
                };
                tracing::info!(request_id = %ex.id, code, error = %e, "screenshot failed");
                ex.fail(status, code, format!("{e}; you were not charged"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn pool_settings_are_bounded() {
        with_shipped_route("/api/screenshot", |ctx| {
            let e = build(ctx, json!({"pool_size": 0})).err().unwrap();
            assert!(e.contains("pool_size"), "{e}");
            let e = build(ctx, json!({"max_uses": 0})).err().unwrap();
            assert!(e.contains("max_uses"), "{e}");
        });
    }

    #[test]
    fn an_unavailable_renderer_is_a_503_not_charged() {
        let r = unavailable("chromium missing".into());
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        let body = r.body_json().unwrap();
        assert_eq!(body["error"], "screenshot_unavailable");
        assert!(body["message"].as_str().unwrap().ends_with("not charged"));
    }
}
