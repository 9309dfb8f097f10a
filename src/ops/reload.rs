//! Live reload: the served App (routes, chains, prices, discovery documents) behind an
//! `ArcSwap`. A reload re-reads routes.yaml and pipelines/, validates them as `paycall check`
//! does, builds a new App on the same services and swaps it in one store: a request already
//! routed keeps the `Arc` of the App it started on (its chain finishes there), the next request
//! sees the new one. A broken file changes nothing; its located errors are logged and returned.
//!
//! Settings the running services were built from (listen addresses, ledger, facilitator, guard,
//! upstreams) cannot change live: a reload that changes them applies the rest and lists them as
//! needing a restart.

use arc_swap::ArcSwap;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use warp::filters::BoxedFilter;

use crate::config::{Config, ConfigErrors};
use crate::pipeline::StageFactory;
use crate::server::{self, App};

/// Which configuration an App was built from.
#[derive(Debug, Clone)]
pub struct ConfigStamp {
    /// SHA-256 (hex, first 16 bytes) of routes.yaml and every pipelines/*.yaml, by name.
    pub hash: String,
    pub loaded_at: chrono::DateTime<chrono::Utc>,
}

impl ConfigStamp {
    pub fn of(config: &Config) -> ConfigStamp {
        ConfigStamp {
            hash: config_hash(&config.root),
            loaded_at: chrono::Utc::now(),
        }
    }

    pub fn loaded_at_text(&self) -> String {
        self.loaded_at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }

    pub fn to_json(&self) -> Value {
        json!({ "hash": self.hash, "loadedAt": self.loaded_at_text() })
    }
}

/// The hash of the files a configuration is read from (routes.yaml, pipelines/*.yaml).
pub fn config_hash(root: &Path) -> String {
    let mut files: Vec<PathBuf> = vec![root.join("routes.yaml")];
    if let Ok(dir) = std::fs::read_dir(root.join("pipelines")) {
        let mut p: Vec<PathBuf> = dir
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        p.sort();
        files.extend(p);
    }
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for f in files {
        let name = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        ctx.update(name.as_bytes());
        ctx.update(&[0]);
        let bytes = std::fs::read(&f).unwrap_or_default();
        ctx.update(&(bytes.len() as u64).to_le_bytes());
        ctx.update(&bytes);
    }
    ctx.finish().as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// An App with its filter tree and the route labels its requests are counted under.
pub struct Served {
    pub app: Arc<App>,
    pub filter: BoxedFilter<(warp::reply::Response,)>,
    /// Paths counted under their own label: routes, discovery, demo twins.
    pub labels: HashSet<Arc<str>>,
    /// Paid routes by path (index in `app.routes`): their unpaid 402 is answered before the
    /// filter tree (`server::unpaid_answer`).
    paid: std::collections::HashMap<Box<str>, usize>,
}

impl Served {
    pub fn new(app: Arc<App>) -> Served {
        let mut labels: HashSet<Arc<str>> = app
            .routes
            .iter()
            .map(|r| Arc::from(r.spec.path.as_str()))
            .collect();
        for p in [
            "/.well-known/x402",
            "/openapi.json",
            "/llms.txt",
            "/status",
            "/favicon.ico",
        ] {
            labels.insert(Arc::from(p));
        }
        for r in crate::server::demo::demo_routes(&app) {
            labels.insert(Arc::from(format!("/api/demo/{}", r.spec.name).as_str()));
        }
        let paid = app
            .routes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.spec.is_paid())
            .map(|(i, r)| (Box::from(r.spec.path.as_str()), i))
            .collect();
        Served {
            filter: server::filter(app.clone()),
            app,
            labels,
            paid,
        }
    }

    /// The ready-made answer to an unpaid request on a paid route (see `server::unpaid_answer`).
    pub fn unpaid_answer(
        &self,
        req: &http::Request<hyper::body::Incoming>,
    ) -> Option<crate::pipeline::Reply> {
        self.unpaid_answer_for(req.method(), req.uri().path(), req.headers())
    }

    /// Whether `path` is a paid route's, whose unpaid requests may have a ready-made answer.
    pub fn answers_unpaid(&self, path: &str) -> bool {
        self.paid.contains_key(path)
    }

    /// As `unpaid_answer`, from the parts of a request (`server::fast_challenge` reads them
    /// without hyper).
    pub fn unpaid_answer_for(
        &self,
        method: &http::Method,
        path: &str,
        headers: &http::HeaderMap,
    ) -> Option<crate::pipeline::Reply> {
        let index = *self.paid.get(path)?;
        server::unpaid_answer(&self.app, index, method, headers)
    }

    /// How long a connection may take to send a request head (`service.header_read_timeout_s`;
    /// a reload changes it for the next wait).
    pub fn header_read_timeout(&self) -> std::time::Duration {
        self.app.config.service.header_read_timeout
    }

    /// The bounded route label of a request path.
    pub fn label(&self, path: &str) -> Option<Arc<str>> {
        self.labels.get(path).cloned()
    }
}

/// Reads the configuration again (routes.yaml + pipelines/, with the process environment).
pub type Loader = Arc<dyn Fn() -> Result<Config, ConfigErrors> + Send + Sync>;

/// The outcome of one reload.
#[derive(Debug, Clone)]
pub struct ReloadReport {
    pub ok: bool,
    pub stamp: ConfigStamp,
    /// Located problems (file:line:column), when the new files were refused.
    pub errors: Vec<String>,
    /// Settings that changed in the files but apply only after a restart.
    pub restart_needed: Vec<String>,
    pub routes: usize,
}

impl ReloadReport {
    pub fn to_json(&self) -> Value {
        json!({
            "ok": self.ok,
            "config": self.stamp.to_json(),
            "errors": self.errors,
            "restartNeeded": self.restart_needed,
            "routes": self.routes,
        })
    }
}

/// The App being served, swappable.
pub struct Live {
    current: ArcSwap<Served>,
    loader: Option<Loader>,
    registry: Vec<StageFactory>,
    /// One reload at a time (SIGHUP and POST /reload may race).
    reloading: tokio::sync::Mutex<()>,
    last: Mutex<Option<ReloadReport>>,
}

impl Live {
    /// Serves `app`; without a loader, reloads are refused (nothing to read).
    pub fn new(app: Arc<App>, loader: Option<Loader>) -> Arc<Live> {
        Self::with_registry(app, loader, crate::stages::REGISTRY.to_vec())
    }

    /// As `new`, building reloaded routes with another stage registry (tests).
    pub fn with_registry(
        app: Arc<App>,
        loader: Option<Loader>,
        registry: Vec<StageFactory>,
    ) -> Arc<Live> {
        app.metrics
            .config(&app.stamp.hash, app.stamp.loaded_at.timestamp());
        Arc::new(Live {
            current: ArcSwap::from_pointee(Served::new(app)),
            loader,
            registry,
            reloading: tokio::sync::Mutex::new(()),
            last: Mutex::new(None),
        })
    }

    /// The loader of the routes.yaml at `path`, with the process environment.
    pub fn file_loader(path: PathBuf) -> Loader {
        Arc::new(move || crate::config::load(&path))
    }

    pub fn served(&self) -> Arc<Served> {
        self.current.load_full()
    }

    pub fn app(&self) -> Arc<App> {
        self.current.load().app.clone()
    }

    pub fn last_reload(&self) -> Option<ReloadReport> {
        self.last.lock().ok().and_then(|l| l.clone())
    }

    /// Re-reads, validates and swaps; on any problem the running config stays.
    pub async fn reload(&self) -> ReloadReport {
        let _one = self.reloading.lock().await;
        let old = self.app();
        let report = match self.try_reload(&old) {
            Ok((app, restart_needed)) => {
                let stamp = app.stamp.clone();
                let routes = app.routes.len();
                old.metrics.config(&stamp.hash, stamp.loaded_at.timestamp());
                self.current.store(Arc::new(Served::new(Arc::new(app))));
                old.metrics.reloads.with_label_values(&["ok"]).inc();
                for s in &restart_needed {
                    tracing::warn!(setting = %s, "changed in the configuration; applies only after a restart");
                }
                tracing::info!(hash = %stamp.hash, routes, "configuration reloaded");
                ReloadReport {
                    ok: true,
                    stamp,
                    errors: Vec::new(),
                    restart_needed,
                    routes,
                }
            }
            Err(errors) => {
                old.metrics.reloads.with_label_values(&["error"]).inc();
                tracing::error!(
                    problems = errors.len(),
                    errors = %errors.join("\n"),
                    "configuration reload refused; the running configuration stays"
                );
                ReloadReport {
                    ok: false,
                    stamp: old.stamp.clone(),
                    errors,
                    restart_needed: Vec::new(),
                    routes: old.routes.len(),
                }
            }
        };
        if let Ok(mut l) = self.last.lock() {
            *l = Some(report.clone());
        }
        report
    }

    fn try_reload(&self, old: &App) -> Result<(App, Vec<String>), Vec<String>> {
        let loader = self.loader.as_ref().ok_or_else(|| {
            vec!["this server was started without a configuration file".to_string()]
        })?;
        let located = |e: ConfigErrors| e.0.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        let config = loader().map_err(located)?;
        // As `paycall check`: the services must build from it too (they are not replaced).
        crate::server::services::build(&config).map_err(|e| vec![e])?;
        let restart_needed = needs_restart(&old.config, &config);
        let mut app = server::build_app_with(config, old.services.clone(), &self.registry)
            .map_err(located)?;
        // Paid calls in flight on the old App are still waited for at shutdown.
        app.paid_calls = old.paid_calls.clone();
        app.started = old.started;
        Ok((app, restart_needed))
    }
}

/// Settings the running process was built from that differ between `old` and `new`.
pub fn needs_restart(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let mut cmp = |name: &str, a: String, b: String| {
        if a != b {
            out.push(name.to_string());
        }
    };
    cmp(
        "service.listen",
        old.service.listen.to_string(),
        new.service.listen.to_string(),
    );
    cmp(
        "service.admin_listen",
        format!("{:?}", old.service.admin_listen),
        format!("{:?}", new.service.admin_listen),
    );
    cmp(
        "ledger",
        format!("{:?}", old.ledger),
        format!("{:?}", new.ledger),
    );
    cmp(
        "payment.facilitator",
        format!("{:?}", old.payment.facilitator),
        format!("{:?}", new.payment.facilitator),
    );
    if old.payment.facilitators.len() > 1 || new.payment.facilitators.len() > 1 {
        cmp(
            "payment.facilitators",
            format!("{:?}", old.payment.facilitators),
            format!("{:?}", new.payment.facilitators),
        );
    }
    cmp(
        "payment.failover",
        format!("{:?}", old.payment.failover),
        format!("{:?}", new.payment.failover),
    );
    cmp(
        "payment.verify_per_minute",
        format!("{:?}", old.payment.verify_per_minute),
        format!("{:?}", new.payment.verify_per_minute),
    );
    cmp(
        "payment.accepts[].rpc",
        format!(
            "{:?}",
            old.payment
                .accepts
                .iter()
                .map(|a| &a.rpc)
                .collect::<Vec<_>>()
        ),
        format!(
            "{:?}",
            new.payment
                .accepts
                .iter()
                .map(|a| &a.rpc)
                .collect::<Vec<_>>()
        ),
    );
    cmp(
        "guard",
        format!("{:?}", old.guard),
        format!("{:?}", new.guard),
    );
    cmp(
        "upstreams",
        format!("{:?}", old.upstreams),
        format!("{:?}", new.upstreams),
    );
    out
}
