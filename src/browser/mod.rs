//! The headless browser behind /api/screenshot: pools of chromedriver + chromium sessions driven
//! by fantoccini, every request of every page sent through the service's guarded forward proxy
//! ([`crate::net::proxy`]).
//!
//! - [`Browsers`] is the shared service: it owns the proxy (started on first use) and one
//!   [`Pool`] per distinct pool configuration, and shuts all of it down with the server.
//! - A pool starts nothing until a render asks for a session (or `warm` sessions when the server
//!   starts), so a server that never renders never pays for a browser.
//! - Each render gets a fresh browser context (no cookies, storage or cache from earlier
//!   callers) in a warm browser process; a session is recycled after `max_uses` renders or any
//!   error. See [`render`] for one render, [`cdp`] for the browser-level DevTools socket used
//!   for contexts (chromedriver's page-level CDP pass-through refuses them).

pub mod cdp;
pub mod lifetime;
pub mod pool;
pub mod render;
pub mod session;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::OnceCell;

use crate::net::proxy::GuardedProxy;
use crate::net::{Guard, Resolver};

pub use pool::{Pool, PoolConfig, PoolError};
pub use render::{Format, RenderError, RenderLimits, Shot, ShotRequest};

/// Where Debian's packages put the binaries.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";
pub const DEFAULT_CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// What to tell an operator whose machine lacks the browser.
pub const INSTALL_HINT: &str = "install the Debian packages chromium and chromium-driver (apt-get install chromium chromium-driver, as scripts/setup.sh does), or point PAYCALL_CHROMIUM / PAYCALL_CHROMEDRIVER (or the route's caps screenshot.chromium / screenshot.chromedriver) at the binaries";

/// Ok when `path` is an executable file; otherwise why not.
pub fn check_binary(what: &str, path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() && m.permissions().mode() & 0o111 != 0 => Ok(()),
        Ok(_) => Err(format!(
            "{what} at {} is not an executable file",
            path.display()
        )),
        Err(_) => Err(format!("{what} not found at {}", path.display())),
    }
}

/// The shared browser service (one per server).
pub struct Browsers {
    guard: Arc<Guard>,
    resolver: Arc<dyn Resolver>,
    proxy: OnceCell<Arc<GuardedProxy>>,
    pools: Mutex<Vec<Arc<Pool>>>,
}

impl Browsers {
    pub fn new(guard: Arc<Guard>, resolver: Arc<dyn Resolver>) -> Browsers {
        Browsers {
            guard,
            resolver,
            proxy: OnceCell::new(),
            pools: Mutex::new(Vec::new()),
        }
    }

    /// The pool for this configuration, shared by every stage built with the same one (a route
    /// and its demo twin use one pool).
    pub fn pool(self: &Arc<Self>, config: PoolConfig) -> Arc<Pool> {
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pools.iter().find(|p| p.config() == &config) {
            return p.clone();
        }
        let p = Arc::new(Pool::new(config, Arc::downgrade(self)));
        pools.push(p.clone());
        p
    }

    pub fn pools(&self) -> Vec<Arc<Pool>> {
        self.pools.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The guarded proxy, started on first use.
    pub async fn proxy(&self) -> std::io::Result<Arc<GuardedProxy>> {
        self.proxy
            .get_or_try_init(|| async {
                GuardedProxy::start(self.guard.clone(), self.resolver.clone())
                    .await
                    .map(Arc::new)
            })
            .await
            .cloned()
    }

    /// The proxy if it was started.
    pub fn proxy_if_started(&self) -> Option<Arc<GuardedProxy>> {
        self.proxy.get().cloned()
    }

    /// Kills browsers an earlier, killed paycall left behind, then starts the `warm` sessions
    /// of every pool, in the background.
    pub fn start(&self) {
        if !self.pools().is_empty() {
            lifetime::reap_orphans(&std::env::temp_dir());
        }
        for p in self.pools() {
            p.warm_up();
        }
    }

    /// Closes every session (no chromium left behind) and stops the proxy.
    pub async fn shutdown(&self) {
        for p in self.pools() {
            p.shutdown().await;
        }
        if let Some(proxy) = self.proxy.get() {
            proxy.shutdown().await;
        }
    }
}

/// A binary path: the explicit setting, else the environment variable, else the default.
pub fn binary_path(explicit: Option<&str>, env: &str, default: &str) -> PathBuf {
    if let Some(p) = explicit.filter(|s| !s.is_empty()) {
        return PathBuf::from(p);
    }
    match std::env::var(env) {
        Ok(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(default),
    }
}
