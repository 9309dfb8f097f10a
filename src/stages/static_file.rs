//! `static_file`: answers a fixed file from disk with a fixed content type (a sample document
//! a demo twin can point at, a logo…). The file is read once at startup: a missing or oversized
//! file is a startup error, never a failing request.
//! Parameters: `file` (path, relative to the folder of routes.yaml), `content_type`,
//! `max_age_s` (Cache-Control max-age, default 86400), `max_bytes` (default 20 MB).
//!
//! `own_file`: for demo runs only. When the vetted target's path is served by one of this
//! service's `static_file` routes, the file is handed to the next stages as if fetched, without
//! going out to the network: a demo twin pointing at the service's own sample then works
//! wherever the service runs (no hairpin NAT, no DNS for its own name, and the guard, which
//! refuses loopback, never has to make an exception). Paid calls always fetch. No parameters;
//! put it right before `fetch` (which then has nothing to do).

use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::net::FetchResponse;
use crate::net::Fetched;
use crate::pipeline::chain::with_route_caps;
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "static_file",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[],
    errors: &[],
    doc: "answer a fixed file read at startup, with a fixed content type",
    build,
};

pub const OWN_FILE: StageFactory = StageFactory {
    name: "own_file",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<url::Url>("target")],
    gives: &[Artefact::of::<Fetched>("fetched")],
    errors: &[],
    doc: "demo runs: a target served by this service's own static_file routes is read from disk, not fetched",
    build: build_own,
};

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Params {
    file: String,
    content_type: String,
    #[serde(default = "default_max_age")]
    max_age_s: u64,
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
}

fn default_max_age() -> u64 {
    86_400
}
fn default_max_bytes() -> usize {
    20_000_000
}

struct StaticFile {
    body: Bytes,
    content_type: HeaderValue,
    cache_control: HeaderValue,
}

fn load(root: &Path, p: &Params) -> Result<StaticFile, String> {
    let path = root.join(&p.file);
    let meta = std::fs::metadata(&path).map_err(|e| {
        let looked = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        let why = if e.kind() == std::io::ErrorKind::NotFound {
            "not found".to_string()
        } else {
            e.to_string()
        };
        format!(
            "file `{}` {why} (looked for {}){}`file` is relative to the folder of routes.yaml ({}): put {} there (copy static/ beside the routes.yaml given to --config) or change `file`",
            p.file,
            looked.display(),
            crate::pipeline::chain::BUILD_FIX,
            root.display(),
            p.file
        )
    })?;
    if meta.len() > p.max_bytes as u64 {
        return Err(format!(
            "{} is {} bytes, over max_bytes {}",
            path.display(),
            meta.len(),
            p.max_bytes
        ));
    }
    let body = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let content_type = HeaderValue::from_str(&p.content_type)
        .map_err(|_| format!("content_type `{}` is not a header value", p.content_type))?;
    let cache_control = HeaderValue::from_str(&format!("public, max-age={}", p.max_age_s))
        .map_err(|e| e.to_string())?;
    Ok(StaticFile {
        body: Bytes::from(body),
        content_type,
        cache_control,
    })
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    Ok(Arc::new(load(&ctx.config.root, &p)?))
}

#[async_trait]
impl Stage for StaticFile {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::CONTENT_TYPE, self.content_type.clone());
        headers.insert(http::header::CACHE_CONTROL, self.cache_control.clone());
        ex.reply = Some(Reply {
            status: StatusCode::OK,
            headers,
            body: self.body.clone(),
        });
        Flow::Reply
    }
}

/// The files this service serves through `static_file`, by route path.
fn own_files(config: &Config) -> HashMap<String, Arc<StaticFile>> {
    let mut out = HashMap::new();
    for route in &config.routes {
        let Some(pipeline) = config.pipelines.get(&route.pipeline) else {
            continue;
        };
        for sref in pipeline.stages.iter().filter(|s| s.name == "static_file") {
            let v = with_route_caps(route, &sref.name, sref.params.clone());
            // A file that cannot be loaded is its own route's error (static_file); reporting it
            // again here for every route with own_file would be a cascade.
            let Ok(p) = params::<Params>(v) else {
                continue;
            };
            if let Ok(file) = load(&config.root, &p) {
                out.insert(route.path.clone(), Arc::new(file));
            }
        }
    }
    out
}

struct OwnFile {
    files: HashMap<String, Arc<StaticFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoParams {}

fn build_own(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: NoParams = params(p)?;
    Ok(Arc::new(OwnFile {
        files: own_files(ctx.config),
    }))
}

#[async_trait]
impl Stage for OwnFile {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        if !ex.demo {
            return Flow::Continue;
        }
        let Some(url) = ex.target.clone() else {
            return Flow::Continue;
        };
        let Some(file) = self.files.get(url.path()) else {
            return Flow::Continue;
        };
        let mut headers = HeaderMap::new();
        headers.insert(http::header::CONTENT_TYPE, file.content_type.clone());
        headers.insert(
            http::header::CONTENT_LENGTH,
            HeaderValue::from(file.body.len()),
        );
        ex.slots.put(Fetched {
            requested: url.clone(),
            method: Method::GET,
            response: FetchResponse {
                status: StatusCode::OK,
                headers,
                body: file.body.clone(),
                final_url: url,
                truncated: false,
                bytes_read: file.body.len(),
                redirects: Vec::new(),
                remote_addr: None,
                elapsed: Duration::ZERO,
            },
        });
        Flow::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params_for(file: &str) -> Params {
        Params {
            file: file.into(),
            content_type: "text/html".into(),
            max_age_s: 60,
            max_bytes: 10,
        }
    }

    #[test]
    fn a_missing_or_oversized_file_is_a_startup_error_with_its_fix() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Err(e) = load(root, &params_for("no/such/file.html")) else {
            panic!("a missing file loads")
        };
        assert!(e.contains("not found"), "{e}");
        assert!(e.contains(crate::pipeline::chain::BUILD_FIX), "{e}");
        let Err(e) = load(root, &params_for("Cargo.toml")) else {
            panic!("an oversized file loads")
        };
        assert!(e.contains("over max_bytes 10"), "{e}");
    }
}
