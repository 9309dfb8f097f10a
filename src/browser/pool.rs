//! A bounded pool of warm browser sessions (one chromedriver + one chromium each).
//!
//! - At most `size` renders run at once; at most `queue` more wait (up to `queue_wait`), beyond
//!   that a caller is told the renderer is busy.
//! - Sessions start on first use (or `warm` of them in the background at server start), are
//!   reused `max_uses` times, and are closed after any error, so a wedged browser never serves
//!   a second caller.
//! - chromedriver runs in its own process group and each session's chromium has its own
//!   `--user-data-dir` under the pool's profile root; closing a session ends the WebDriver
//!   session, kills the process group and sweeps any process still naming that profile, so no
//!   chromium outlives its session or the server; a server killed outright takes them along
//!   (see [`super::lifetime`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::session::{sweep_profile_processes, Procs, Session};
use super::Browsers;
use crate::net::proxy::GuardedProxy;

/// How a pool is set up (from the screenshot stage's parameters and the route's caps).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolConfig {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
    /// Renders at once (browser sessions kept).
    pub size: usize,
    /// Renders per session before it is replaced.
    pub max_uses: u32,
    /// Callers allowed to wait for a session.
    pub queue: usize,
    pub queue_wait: Duration,
    /// Sessions started when the server starts (0: on first use).
    pub warm: usize,
    /// V8's old-generation heap per renderer, in MB (`--js-flags=--max-old-space-size`): a
    /// script that allocates past it crashes its tab, which ends the render as render_failed.
    /// Memory outside V8's heap (ArrayBuffers, DOM, images) is bounded by the render's
    /// watchdog instead (`RenderLimits::max_memory_bytes`).
    pub js_heap_mb: u32,
}

/// Default of [`PoolConfig::js_heap_mb`].
pub const DEFAULT_JS_HEAP_MB: u32 = 256;

/// chromedriver's own page-load timeout: only a backstop, the render's deadline is shorter and
/// a session whose navigation was abandoned is closed, never reused.
const DRIVER_PAGE_LOAD_MS: u64 = 120_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// chromium or chromedriver is missing.
    #[error("{0}")]
    Unavailable(String),
    /// Too many callers waiting, or none got a session in time.
    #[error("{0}")]
    Busy(String),
    /// A browser session could not be started.
    #[error("{0}")]
    Start(String),
}

pub struct Pool {
    config: PoolConfig,
    browsers: Weak<Browsers>,
    permits: Arc<Semaphore>,
    waiting: AtomicUsize,
    idle: Mutex<Vec<Session>>,
    closed: AtomicBool,
    profile_root: PathBuf,
    next_id: AtomicU64,
    started: AtomicU64,
    closed_sessions: AtomicU64,
}

impl Pool {
    pub(super) fn new(config: PoolConfig, browsers: Weak<Browsers>) -> Pool {
        let profile_root = std::env::temp_dir().join(format!(
            "{}{}-{:08x}",
            super::lifetime::PROFILE_PREFIX,
            std::process::id(),
            rand::random::<u32>()
        ));
        Pool {
            permits: Arc::new(Semaphore::new(config.size.max(1))),
            config,
            browsers,
            waiting: AtomicUsize::new(0),
            idle: Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
            profile_root,
            next_id: AtomicU64::new(0),
            started: AtomicU64::new(0),
            closed_sessions: AtomicU64::new(0),
        }
    }

    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// The folder holding this pool's browser profiles; every chromium it starts names a
    /// folder under it on its command line (tests look for leftovers by it).
    pub fn profile_root(&self) -> &Path {
        &self.profile_root
    }

    /// Sessions started so far (cold starts).
    pub fn sessions_started(&self) -> u64 {
        self.started.load(Ordering::SeqCst)
    }

    /// Sessions closed so far (recycled, failed or shut down).
    pub fn sessions_closed(&self) -> u64 {
        self.closed_sessions.load(Ordering::SeqCst)
    }

    pub fn idle_sessions(&self) -> usize {
        self.idle.lock().map(|v| v.len()).unwrap_or(0)
    }

    /// Why renders cannot work at all, if so.
    pub fn availability(&self) -> Result<(), String> {
        super::check_binary("chromium", &self.config.chromium)
            .and_then(|_| super::check_binary("chromedriver", &self.config.chromedriver))
            .map_err(|e| format!("{e}; {}", super::INSTALL_HINT))
    }

    /// Starts `warm` sessions in the background (needs a tokio runtime).
    pub fn warm_up(self: &Arc<Self>) {
        if self.config.warm == 0 || self.availability().is_err() {
            return;
        }
        let pool = self.clone();
        tokio::spawn(async move {
            for _ in 0..pool.config.warm.min(pool.config.size.max(1)) {
                match pool.start_session().await {
                    Ok(mut s) => {
                        // Its first caller's context, opened ahead like after every render.
                        let _ = super::render::tidy(&mut s).await;
                        pool.put_back(s).await
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "browser warm-up failed; sessions start on demand");
                        return;
                    }
                }
            }
            tracing::info!(sessions = pool.idle_sessions(), "browser pool warm");
        });
    }

    /// A session for one render: waits in the bounded queue, then reuses an idle session or
    /// starts one.
    pub async fn acquire(self: &Arc<Self>) -> Result<Lease, PoolError> {
        self.availability().map_err(PoolError::Unavailable)?;
        if self.closed.load(Ordering::SeqCst) {
            return Err(PoolError::Busy("the renderer is shutting down".into()));
        }
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                let waiting = self.waiting.fetch_add(1, Ordering::SeqCst);
                let got = if waiting >= self.config.queue {
                    None
                } else {
                    tokio::time::timeout(
                        self.config.queue_wait,
                        self.permits.clone().acquire_owned(),
                    )
                    .await
                    .ok()
                    .and_then(Result::ok)
                };
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                got.ok_or_else(|| {
                    PoolError::Busy(format!(
                        "all {} browser sessions are busy and the queue is full; retry in a few seconds",
                        self.config.size
                    ))
                })?
            }
        };
        let idle = self.idle.lock().ok().and_then(|mut v| v.pop());
        let session = match idle {
            Some(s) => s,
            None => self.start_session().await?,
        };
        Ok(Lease {
            pool: self.clone(),
            session: Some(session),
            _permit: permit,
        })
    }

    async fn start_session(&self) -> Result<Session, PoolError> {
        let browsers = self
            .browsers
            .upgrade()
            .ok_or_else(|| PoolError::Start("the browser service is gone".into()))?;
        let proxy = browsers
            .proxy()
            .await
            .map_err(|e| PoolError::Start(format!("could not start the browser proxy: {e}")))?;
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let profile = self.profile_root.join(format!("session-{id}"));
        let session = Session::start(&self.config, &proxy, profile).await?;
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(session)
    }

    async fn put_back(&self, session: Session) {
        if self.closed.load(Ordering::SeqCst) || session.uses >= self.config.max_uses {
            self.close_session(session).await;
            return;
        }
        match self.idle.lock() {
            Ok(mut v) => v.push(session),
            Err(_) => drop(session),
        }
    }

    async fn close_session(&self, session: Session) {
        session.close().await;
        self.closed_sessions.fetch_add(1, Ordering::SeqCst);
    }

    /// Closes idle sessions now and every leased one when it comes back.
    pub async fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let idle: Vec<Session> = self
            .idle
            .lock()
            .map(|mut v| v.drain(..).collect())
            .unwrap_or_default();
        for s in idle {
            self.close_session(s).await;
        }
        // Wait (bounded) for leased sessions to come back and be closed.
        let _ = tokio::time::timeout(
            Duration::from_secs(10),
            self.permits.acquire_many(self.config.size.max(1) as u32),
        )
        .await;
        // Whatever is still running under this pool's profiles (a lease dropped mid-render)
        // goes too.
        sweep_profile_processes(&self.profile_root);
        let _ = std::fs::remove_dir_all(&self.profile_root);
    }
}

/// One render's hold on a session. Give it back with [`Lease::release`]; dropped without
/// that (a cancelled request), the session is killed.
pub struct Lease {
    pool: Arc<Pool>,
    session: Option<Session>,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    pub fn session(&mut self) -> &mut Session {
        self.session
            .as_mut()
            .expect("a lease holds its session until released")
    }

    /// Returns the session to the pool when `healthy`, else closes it.
    pub async fn release(mut self, healthy: bool) {
        if let Some(mut s) = self.session.take() {
            s.uses += 1;
            if healthy {
                self.pool.put_back(s).await;
            } else {
                // A session after an error may be stuck mid-command (a navigation that never
                // ends): chromedriver would not answer a polite close, so kill it at once.
                drop(s);
                self.pool.closed_sessions.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

impl Session {
    async fn start(
        config: &PoolConfig,
        proxy: &GuardedProxy,
        profile: PathBuf,
    ) -> Result<Session, PoolError> {
        std::fs::create_dir_all(&profile)
            .map_err(|e| PoolError::Start(format!("cannot create {}: {e}", profile.display())))?;
        let port = free_port().map_err(|e| PoolError::Start(format!("no free port: {e}")))?;
        let mut cmd = tokio::process::Command::new(&config.chromedriver);
        cmd.arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .arg("--log-level=OFF")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .process_group(0);
        super::lifetime::die_with_parent(&mut cmd);
        let driver = cmd.spawn().map_err(|e| {
            PoolError::Start(format!(
                "could not start {}: {e}",
                config.chromedriver.display()
            ))
        })?;
        // From here on, a failure drops `procs`, which kills what was started.
        let procs = Procs {
            pgid: driver.id().map(|p| p as i32),
            driver: Some(driver),
            profile: profile.clone(),
        };
        let url = format!("http://127.0.0.1:{port}");
        let chromium = super::lifetime::chromium_launcher(&profile, &config.chromium);
        let caps = capabilities(&chromium, config.js_heap_mb, proxy, &profile);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let client = loop {
            let mut builder = fantoccini::ClientBuilder::new(
                hyper_util::client::legacy::connect::HttpConnector::new(),
            );
            builder.capabilities(caps.clone());
            match builder.connect(&url).await {
                Ok(c) => break c,
                Err(e) => {
                    if tokio::time::Instant::now() > deadline {
                        return Err(PoolError::Start(format!(
                            "chromedriver did not start a browser: {e}"
                        )));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        let home = client
            .window()
            .await
            .map_err(|e| PoolError::Start(format!("the new browser has no window: {e}")))?;
        let debugger = client
            .capabilities()
            .and_then(|c| c.get("goog:chromeOptions"))
            .and_then(|o| o["debuggerAddress"].as_str())
            .map(str::to_string)
            .ok_or_else(|| {
                PoolError::Start("chromedriver did not report the browser's debuggerAddress".into())
            })?;
        let browser = super::cdp::BrowserCdp::connect(&debugger)
            .await
            .map_err(|e| PoolError::Start(format!("no DevTools connection to the browser: {e}")))?;
        Ok(Session {
            client,
            home,
            proxy_token: proxy.token().to_string(),
            proxy_server: format!("http://{}", proxy.addr()),
            browser,
            fresh: None,
            used: None,
            uses: 0,
            procs,
        })
    }

    /// Ends the WebDriver session (chromedriver quits chromium), then makes sure.
    pub async fn close(mut self) {
        let client = self.client.clone();
        let _ = tokio::time::timeout(Duration::from_secs(3), client.close()).await;
        self.procs.kill();
        if let Some(mut d) = self.procs.driver.take() {
            let _ = tokio::time::timeout(Duration::from_secs(3), d.wait()).await;
        }
    }
}

fn capabilities(
    chromium: &Path,
    js_heap_mb: u32,
    proxy: &GuardedProxy,
    profile: &Path,
) -> serde_json::Map<String, Value> {
    let mut args = chromium_args(proxy.addr().port(), profile);
    args.push(format!(
        "--js-flags=--max-old-space-size={}",
        js_heap_mb.max(16)
    ));
    let caps = json!({
        "browserName": "chrome",
        "pageLoadStrategy": "normal",
        "timeouts": {
            "pageLoad": DRIVER_PAGE_LOAD_MS,
            "script": 30_000,
            "implicit": 0
        },
        "goog:chromeOptions": {
            "binary": chromium.to_string_lossy(),
            "args": args,
            "excludeSwitches": ["enable-automation"],
        }
    });
    match caps {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// The flags that make every request go through the proxy (no loopback bypass, no QUIC, no
/// non-proxied WebRTC UDP, no DNS prefetch) and keep chromium quiet and headless as root.
pub fn chromium_args(proxy_port: u16, profile: &Path) -> Vec<String> {
    vec![
        "--headless=new".into(),
        "--no-sandbox".into(),
        "--disable-setuid-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        format!("--proxy-server=http://127.0.0.1:{proxy_port}"),
        "--proxy-bypass-list=<-loopback>".into(),
        "--disable-quic".into(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".into(),
        "--dns-prefetch-disable".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-extensions".into(),
        "--disable-default-apps".into(),
        "--no-pings".into(),
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--mute-audio".into(),
        "--hide-scrollbars".into(),
        "--window-size=1280,800".into(),
        format!("--user-data-dir={}", profile.display()),
    ]
}

fn free_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}
