//! One render on a leased session: WebDriver commands through chromedriver, its CDP pass-through
//! (`POST /session/{id}/goog/cdp/execute`) for page-level commands WebDriver lacks, and the
//! browser-level DevTools connection (`super::cdp`) for what chromedriver refuses:
//!
//! 1. `Target.createBrowserContext` (with the guarded proxy again, no loopback bypass) +
//!    `Target.createTarget`: a fresh context (no cookies, storage or cache of an earlier
//!    caller) with one tab, which becomes the WebDriver window;
//! 2. `Emulation.setDeviceMetricsOverride`: the viewport asked for;
//! 3. WebDriver navigation (waits for `load`, bounded by the page-load timeout and our own
//!    deadline), then a short bounded network idle and the caller's delay, in the page;
//! 4. `Page.captureScreenshot` (clipped to the page height, at most `full_page_max_px`, for
//!    fullPage); a PNG over the byte cap is captured again as JPEG, and still over → 413;
//! 5. after the reply ([`tidy`]): back to the session's home window, the context disposed with
//!    everything in it, and the next caller's fresh context opened ahead of time.

use std::time::Duration;

use fantoccini::wd::{WebDriverCompatibleCommand, WindowHandle};
use serde_json::{json, Value};
use url::Url;

use super::session::{profile_memory_bytes, sweep_profile_processes, FreshContext, Session};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s.to_ascii_lowercase().as_str() {
            "png" => Some(Format::Png),
            "jpeg" | "jpg" => Some(Format::Jpeg),
            _ => None,
        }
    }
    pub fn mime(self) -> &'static str {
        match self {
            Format::Png => "image/png",
            Format::Jpeg => "image/jpeg",
        }
    }
    fn cdp(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Jpeg => "jpeg",
        }
    }
}

/// What the caller asked for (already validated against the route's bounds).
#[derive(Debug, Clone)]
pub struct ShotRequest {
    pub url: Url,
    /// A document of this service's own (content type, bytes) rendered in place of fetching
    /// `url`, which is then only reported: the demo twin's sample page, read from disk. It is
    /// handed to the browser by our own code as a `data:` URL, so the guarded proxy, which
    /// refuses the service's own loopback address, is never asked for it; everything the page
    /// itself requests still goes through the proxy.
    pub document: Option<(String, bytes::Bytes)>,
    pub width: u32,
    pub height: u32,
    pub full_page: bool,
    pub format: Format,
    pub delay: Duration,
}

/// The operator's bounds.
#[derive(Debug, Clone)]
pub struct RenderLimits {
    pub nav_timeout: Duration,
    /// The page counts as idle after this long without a new finished resource…
    pub idle: Duration,
    /// …or after this long in any case.
    pub idle_max: Duration,
    pub max_image_bytes: usize,
    pub full_page_max_px: u32,
    pub jpeg_quality: u8,
    /// Memory the session's chromium processes may use during a render (their summed PSS,
    /// polled every 100 ms). Past it the processes are killed and the render ends as
    /// render_failed, not charged: a page that allocates until it dies took ~4.7 GB before
    /// (issue 21).
    pub max_memory_bytes: u64,
}

/// Default of [`RenderLimits::max_memory_bytes`]: headless chromium itself takes ~150–250 MB.
pub const DEFAULT_MAX_MEMORY_BYTES: u64 = 512 << 20;

/// How often the memory watchdog looks.
const MEMORY_POLL: Duration = Duration::from_millis(100);

/// A finished render.
#[derive(Debug, Clone)]
pub struct Shot {
    pub image_base64: String,
    pub format: Format,
    pub bytes: usize,
    pub width: u32,
    pub height: u32,
    pub final_url: String,
    pub page_status: Option<u16>,
    pub title: String,
    /// Set when the PNG asked for was over the cap and a JPEG is returned instead.
    pub fallback: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    /// The page (or a redirect of it) led to a target the guard refuses.
    #[error("{0}")]
    Blocked(String),
    /// Navigation failed (unreachable, refused by the upstream, browser error page).
    #[error("{0}")]
    Navigation(String),
    #[error("the page did not finish loading within {} ms", .0.as_millis())]
    Timeout(Duration),
    #[error("the image is {bytes} bytes, over the limit of {cap} bytes{}", if *.jpeg_tried { " even as JPEG" } else { "" })]
    TooLarge {
        bytes: usize,
        cap: usize,
        jpeg_tried: bool,
    },
    /// The browser failed in a way that says nothing about the page.
    #[error("{0}")]
    Browser(String),
}

impl RenderError {
    /// Whether the session may serve another render after this error.
    pub fn session_still_good(&self) -> bool {
        matches!(
            self,
            RenderError::Blocked(_) | RenderError::Navigation(_) | RenderError::TooLarge { .. }
        )
    }
}

/// `goog/cdp/execute`: one CDP command on the session's current window.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({ "cmd": self.cmd, "params": self.params }).to_string()),
        )
    }
}

/// WebDriver's Navigate To, sent as is (fantoccini's `goto` first asks for the current URL to
/// resolve relative ones: a hop we do not need for an absolute, vetted URL).
#[derive(Debug)]
struct Navigate(String);

impl WebDriverCompatibleCommand for Navigate {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/url", session_id.unwrap_or_default()))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (
            http::Method::POST,
            Some(json!({ "url": self.0 }).to_string()),
        )
    }
}

async fn cdp(s: &Session, cmd: &'static str, params: Value) -> Result<Value, RenderError> {
    s.client
        .issue_cmd(Cdp { cmd, params })
        .await
        .map_err(|e| RenderError::Browser(format!("{cmd} failed: {e}")))
}

/// Waits for a quiet network (no new finished resource for `idle` ms, at most `max` ms), then
/// the caller's delay, then reports what the stage needs to know about the page.
const SETTLE_AND_REPORT: &str = r#"
const [idle, max, delay] = [arguments[0], arguments[1], arguments[2]];
const done = arguments[arguments.length - 1];
const t0 = performance.now();
let seen = -1, since = t0;
function report() {
  const nav = performance.getEntriesByType('navigation')[0];
  const m = document.querySelector('meta[name="paycall-proxy"]');
  const de = document.documentElement, b = document.body;
  done({
    title: document.title || '',
    url: location.href,
    status: nav && nav.responseStatus ? nav.responseStatus : null,
    marker: m ? m.getAttribute('content') : null,
    height: Math.max(de ? de.scrollHeight : 0, b ? b.scrollHeight : 0),
  });
}
function tick() {
  const n = performance.getEntriesByType('resource').length;
  const now = performance.now();
  if (n !== seen) { seen = n; since = now; }
  if (now - since >= idle || now - t0 >= max) { setTimeout(report, delay); return; }
  setTimeout(tick, 25);
}
tick();
"#;

/// The viewport prepared ahead: the route's defaults (docs/routes/screenshot.md).
const DEFAULT_VIEWPORT: (u32, u32) = (1280, 800);

/// Opens a fresh context (with the guarded proxy again, no loopback bypass) and a tab in it.
pub async fn open_context(s: &Session) -> Result<FreshContext, RenderError> {
    let ctx = s
        .browser
        .call(
            "Target.createBrowserContext",
            json!({ "proxyServer": s.proxy_server, "proxyBypassList": "<-loopback>" }),
        )
        .await
        .map_err(RenderError::Browser)?;
    let context_id = ctx["browserContextId"]
        .as_str()
        .ok_or_else(|| RenderError::Browser("no browserContextId".into()))?
        .to_string();
    let target = s
        .browser
        .call(
            "Target.createTarget",
            json!({ "url": "about:blank", "browserContextId": context_id }),
        )
        .await
        .map_err(RenderError::Browser)?;
    let target_id = target["targetId"]
        .as_str()
        .ok_or_else(|| RenderError::Browser("no targetId".into()))?
        .to_string();
    Ok(FreshContext {
        context_id,
        target_id,
        prepared: None,
    })
}

/// Renders `req` on `s` in a context no one used before (prepared by [`tidy`] after the
/// previous render, or opened now). Call [`tidy`] afterwards unless the error says the session
/// is done for.
pub async fn render(
    s: &mut Session,
    req: &ShotRequest,
    limits: &RenderLimits,
) -> Result<Shot, RenderError> {
    let ctx = match s.fresh.take() {
        Some(c) => c,
        None => open_context(s).await?,
    };
    s.used = Some(ctx.context_id.clone());
    let profile = s.profile().to_path_buf();
    let cap = limits.max_memory_bytes;
    tokio::select! {
        r = render_in_context(s, &ctx, req, limits) => r,
        used = memory_over(&profile, cap) => {
            // Kill now: the render future is dropped and the session, unhealthy, is closed.
            sweep_profile_processes(&profile);
            Err(RenderError::Browser(format!(
                "the page made the browser use {} MB, over the limit of {} MB per render",
                used >> 20,
                cap >> 20
            )))
        }
    }
}

/// Resolves (with the bytes used) once the processes naming `profile` use more than `cap`.
async fn memory_over(profile: &std::path::Path, cap: u64) -> u64 {
    loop {
        tokio::time::sleep(MEMORY_POLL).await;
        let p = profile.to_path_buf();
        let used = tokio::task::spawn_blocking(move || profile_memory_bytes(&p))
            .await
            .unwrap_or(0);
        if used > cap {
            return used;
        }
    }
}

/// After a render, off the caller's path: back to the home window, dispose the used context
/// (its tab, cookies, storage and cache go with it) and prepare a fresh one for the next
/// caller. An error means the session should be closed.
pub async fn tidy(s: &mut Session) -> Result<(), RenderError> {
    if let Some(used) = s.used.take() {
        s.client
            .switch_to_window(s.home.clone())
            .await
            .map_err(|e| {
                RenderError::Browser(format!("could not return to the home window: {e}"))
            })?;
        s.browser
            .call(
                "Target.disposeBrowserContext",
                json!({ "browserContextId": used }),
            )
            .await
            .map_err(RenderError::Browser)?;
    }
    if s.fresh.is_none() {
        let mut fresh = open_context(s).await?;
        switch_to(s, &fresh.target_id).await?;
        set_viewport(s, DEFAULT_VIEWPORT).await?;
        fresh.prepared = Some(DEFAULT_VIEWPORT);
        s.fresh = Some(fresh);
    }
    Ok(())
}

async fn switch_to(s: &Session, target_id: &str) -> Result<(), RenderError> {
    s.client
        .switch_to_window(
            WindowHandle::try_from(target_id.to_string())
                .map_err(|e| RenderError::Browser(format!("bad window handle: {e}")))?,
        )
        .await
        .map_err(|e| RenderError::Browser(format!("could not switch to the new tab: {e}")))
}

async fn set_viewport(s: &Session, (width, height): (u32, u32)) -> Result<(), RenderError> {
    cdp(
        s,
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
    )
    .await
    .map(|_| ())
}

async fn render_in_context(
    s: &Session,
    ctx: &FreshContext,
    req: &ShotRequest,
    limits: &RenderLimits,
) -> Result<Shot, RenderError> {
    if ctx.prepared.is_none() {
        switch_to(s, &ctx.target_id).await?;
    }
    if ctx.prepared != Some((req.width, req.height)) {
        set_viewport(s, (req.width, req.height)).await?;
    }

    // Navigation under our deadline; an abandoned navigation leaves the session to be closed.
    let target = match &req.document {
        Some((content_type, body)) => data_url(content_type, body),
        None => req.url.to_string(),
    };
    let nav = tokio::time::timeout(limits.nav_timeout, s.client.issue_cmd(Navigate(target))).await;
    match nav {
        Err(_) => return Err(RenderError::Timeout(limits.nav_timeout)),
        Ok(Err(e)) => return Err(navigation_error(&e.to_string(), limits)),
        Ok(Ok(_)) => {}
    }

    let settle_budget = limits.idle_max + req.delay + Duration::from_secs(5);
    let info = tokio::time::timeout(
        settle_budget,
        s.client.execute_async(
            SETTLE_AND_REPORT,
            vec![
                json!(limits.idle.as_millis() as u64),
                json!(limits.idle_max.as_millis() as u64),
                json!(req.delay.as_millis() as u64),
            ],
        ),
    )
    .await
    .map_err(|_| RenderError::Browser("the page did not report back after loading".into()))?
    .map_err(|e| RenderError::Browser(format!("reading the page failed: {e}")))?;

    if let Some(marker) = info["marker"].as_str() {
        let mut parts = marker.splitn(2, ' ');
        if parts.next() == Some(s.proxy_token.as_str()) {
            let code = parts.next().unwrap_or("");
            let url = info["url"].as_str().unwrap_or_default();
            return Err(if code == "blocked_target" {
                RenderError::Blocked(format!(
                    "the page led to a refused target ({url}): private, loopback, link-local and metadata addresses cannot be reached"
                ))
            } else {
                RenderError::Navigation(format!("the page could not be loaded ({code}) at {url}"))
            });
        }
    }
    let final_url = match req.document {
        Some(_) => req.url.to_string(),
        None => info["url"].as_str().unwrap_or_default().to_string(),
    };
    if final_url.starts_with("chrome-error:") {
        return Err(RenderError::Navigation(
            "the browser could not load the page".into(),
        ));
    }

    let height = if req.full_page {
        let h = info["height"].as_u64().unwrap_or(req.height as u64) as u32;
        h.clamp(
            req.height.min(limits.full_page_max_px),
            limits.full_page_max_px,
        )
    } else {
        req.height
    };
    let (mut b64, mut format) = (
        capture(s, req, req.format, height, limits).await?,
        req.format,
    );
    let mut bytes = b64_len(&b64);
    let mut fallback = None;
    if bytes > limits.max_image_bytes {
        if req.format == Format::Png {
            let png_bytes = bytes;
            b64 = capture(s, req, Format::Jpeg, height, limits).await?;
            bytes = b64_len(&b64);
            format = Format::Jpeg;
            if bytes > limits.max_image_bytes {
                return Err(RenderError::TooLarge {
                    bytes,
                    cap: limits.max_image_bytes,
                    jpeg_tried: true,
                });
            }
            fallback = Some(format!(
                "the PNG was {png_bytes} bytes, over the limit of {} bytes; returned as JPEG (quality {})",
                limits.max_image_bytes, limits.jpeg_quality
            ));
        } else {
            return Err(RenderError::TooLarge {
                bytes,
                cap: limits.max_image_bytes,
                jpeg_tried: true,
            });
        }
    }
    Ok(Shot {
        image_base64: b64,
        format,
        bytes,
        width: req.width,
        height,
        final_url,
        // Our own document was served whole: a 200 (a data: URL has no HTTP status).
        page_status: match req.document {
            Some(_) => Some(200),
            None => info["status"].as_u64().map(|s| s as u16),
        },
        title: info["title"].as_str().unwrap_or_default().to_string(),
        fallback,
    })
}

async fn capture(
    s: &Session,
    req: &ShotRequest,
    format: Format,
    height: u32,
    limits: &RenderLimits,
) -> Result<String, RenderError> {
    let mut params = json!({ "format": format.cdp(), "fromSurface": true });
    if format == Format::Jpeg {
        params["quality"] = json!(limits.jpeg_quality);
    }
    if req.full_page {
        params["captureBeyondViewport"] = json!(true);
        params["clip"] =
            json!({ "x": 0, "y": 0, "width": req.width, "height": height, "scale": 1 });
    }
    let v = cdp(s, "Page.captureScreenshot", params).await?;
    v["data"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| RenderError::Browser("the screenshot came back without data".into()))
}

/// Decoded length of standard base64 text.
/// `document` as a `data:` URL of its own content type.
pub fn data_url(content_type: &str, document: &[u8]) -> String {
    use base64::Engine;
    // A header value may carry anything; the URL's media type must stay one token list.
    let media: String = content_type
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| !matches!(c, ',' | '#' | '%'))
        .collect::<String>()
        .replace(' ', "");
    format!(
        "data:{media};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(document)
    )
}

pub fn b64_len(b64: &str) -> usize {
    let pad = b64.bytes().rev().take_while(|b| *b == b'=').count();
    (b64.len() / 4) * 3 - pad.min(2)
}

fn navigation_error(msg: &str, limits: &RenderLimits) -> RenderError {
    let lower = msg.to_ascii_lowercase();
    if lower.contains("timeout") || lower.contains("timed out") {
        RenderError::Timeout(limits.nav_timeout)
    } else if let Some(i) = msg.find("net::ERR_") {
        let code: String = msg[i..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ')')
            .collect();
        RenderError::Navigation(format!("the browser could not load the page ({code})"))
    } else {
        RenderError::Browser(format!("navigation failed: {msg}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_become_data_urls() {
        assert_eq!(
            data_url("text/html; charset=utf-8", b"<p>hi</p>"),
            "data:text/html;charset=utf-8;base64,PHA+aGk8L3A+"
        );
        assert_eq!(
            data_url("text/html,#%\r\n", b""),
            "data:text/html;base64,",
            "nothing that would end the media type"
        );
    }

    #[test]
    fn base64_lengths() {
        use base64::Engine;
        for n in 0..20 {
            let data = vec![7u8; n];
            let b = base64::engine::general_purpose::STANDARD.encode(&data);
            assert_eq!(b64_len(&b), n);
        }
    }

    #[test]
    fn navigation_errors_are_sorted() {
        let l = RenderLimits {
            nav_timeout: Duration::from_secs(1),
            idle: Duration::ZERO,
            idle_max: Duration::ZERO,
            max_image_bytes: 1,
            full_page_max_px: 4000,
            jpeg_quality: 80,
            max_memory_bytes: DEFAULT_MAX_MEMORY_BYTES,
        };
        assert!(matches!(
            navigation_error("timeout: Timed out receiving message from renderer", &l),
            RenderError::Timeout(_)
        ));
        assert_eq!(
            navigation_error(
                "unknown error: net::ERR_CONNECTION_REFUSED\n  (Session info: chrome=1)",
                &l
            ),
            RenderError::Navigation(
                "the browser could not load the page (net::ERR_CONNECTION_REFUSED)".into()
            )
        );
        assert!(matches!(
            navigation_error("invalid session id", &l),
            RenderError::Browser(_)
        ));
    }
}
