//! Discovery and information routes, generated from the Config and the built chains (nothing
//! here is written per route):
//!
//! - `GET /.well-known/x402` (`well_known`), `GET /openapi.json` (`openapi`), `GET /llms.txt`
//!   (`llms`): one module per document;
//! - `GET /status` (`status`): a report computed per call. `ok` means "this service can take
//!   paid calls": the config loaded (it did, or nothing would answer) and the facilitator
//!   answers. Routes that cannot serve (a missing browser, no search key) do not make it false:
//!   they are listed under `degraded` with the reason (`availability::check`), and answer 503
//!   before any challenge. The HTTP status is 200 either way (it is a report, not a
//!   load-balancer probe).
//!
//! The three documents are built when the filter is built and again when a route's availability
//! changes (`availability::check`: such a route is marked unavailable in each); /status is
//! computed per call. Billing per route comes from `reference::Billing` (the bill rule and the
//! stages' billing cases), the same source as the behaviour.
//! Every answer goes through `respond::to_response` (CORS) with `Cache-Control: public,
//! max-age=60`.

mod llms;
mod openapi;
mod status;
mod well_known;

pub use llms::{curl_example, llms_txt, param_rules};
pub(crate) use openapi::error_statuses;
pub use openapi::{openapi, param_schema};
pub use status::{status, FacilitatorProbe, FACILITATOR_CHECK_TTL, FACILITATOR_TIMEOUT};
pub use well_known::well_known;

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use warp::filters::BoxedFilter;
use warp::Filter;

use super::{respond, App, RouteEntry};
use crate::config::{Config, RouteSpec};
use crate::pipeline::exchange::new_request_id;
use crate::pipeline::reply_headers::cors_preflight;
use crate::pipeline::Reply;
use crate::x402::facilitators::Facilitators;

pub const WELL_KNOWN_PATH: &str = "/.well-known/x402";
pub const OPENAPI_PATH: &str = "/openapi.json";
pub const LLMS_PATH: &str = "/llms.txt";
pub const STATUS_PATH: &str = "/status";

const CACHE_CONTROL: &str = "public, max-age=60";

/// The served documents, serialised once.
pub struct Documents {
    pub well_known: Bytes,
    pub openapi: Bytes,
    pub llms: Bytes,
}

impl Documents {
    pub fn build(app: &App) -> Documents {
        let to_bytes = |v: &Value| Bytes::from(serde_json::to_vec_pretty(v).unwrap_or_default());
        Documents {
            well_known: to_bytes(&well_known(app)),
            openapi: to_bytes(&openapi(app)),
            llms: Bytes::from(llms_txt(app)),
        }
    }
}

/// The documents, rebuilt when a route's availability changes (a browser found, a circuit
/// closed): discovery marks unavailable routes, and must not keep saying so after they recover.
pub struct DocCache {
    current: std::sync::Mutex<(Vec<Option<String>>, Arc<Documents>)>,
}

impl DocCache {
    pub fn new(app: &App) -> DocCache {
        DocCache {
            current: std::sync::Mutex::new((
                availability_key(app),
                Arc::new(Documents::build(app)),
            )),
        }
    }

    pub fn get(&self, app: &App) -> Arc<Documents> {
        let key = availability_key(app);
        let Ok(mut current) = self.current.lock() else {
            return Arc::new(Documents::build(app));
        };
        if current.0 != key {
            *current = (key, Arc::new(Documents::build(app)));
        }
        current.1.clone()
    }
}

fn availability_key(app: &App) -> Vec<Option<String>> {
    app.routes
        .iter()
        .map(|r| super::availability::check(app, r).err())
        .collect()
}

pub fn filter(app: Arc<App>) -> BoxedFilter<(warp::reply::Response,)> {
    let docs = Arc::new(DocCache::new(&app));
    let probe = Arc::new(FacilitatorProbe::new(
        &app.config,
        app.services.get::<Facilitators>(),
    ));
    warp::path::full()
        .and(warp::method())
        .and_then(move |full: warp::path::FullPath, method: Method| {
            let app = app.clone();
            let docs = docs.clone();
            let probe = probe.clone();
            async move {
                let path = full.as_str();
                if ![WELL_KNOWN_PATH, OPENAPI_PATH, LLMS_PATH, STATUS_PATH].contains(&path) {
                    return Err(warp::reject::not_found());
                }
                let reply = answer(&app, &docs.get(&app), &probe, path, &method).await;
                let mut resp = respond::to_response(reply, &new_request_id());
                if method == Method::HEAD {
                    *resp.body_mut() = Default::default();
                }
                Ok::<_, warp::Rejection>(resp)
            }
        })
        .boxed()
}

async fn answer(
    app: &App,
    docs: &Documents,
    probe: &FacilitatorProbe,
    path: &str,
    method: &Method,
) -> Reply {
    if *method == Method::OPTIONS {
        return cors_preflight();
    }
    if !matches!(*method, Method::GET | Method::HEAD) {
        return Reply::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
            format!("{path} answers GET only"),
        )
        .with_header("allow", "GET, HEAD, OPTIONS");
    }
    let (body, content_type) = match path {
        WELL_KNOWN_PATH => (docs.well_known.clone(), "application/json"),
        OPENAPI_PATH => (docs.openapi.clone(), "application/json"),
        LLMS_PATH => (docs.llms.clone(), "text/markdown; charset=utf-8"),
        _ => {
            let v = status(app, probe).await;
            (
                Bytes::from(serde_json::to_vec_pretty(&v).unwrap_or_default()),
                "application/json",
            )
        }
    };
    let mut reply = Reply {
        status: StatusCode::OK,
        headers: Default::default(),
        body,
    };
    reply.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    reply.headers.insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static(CACHE_CONTROL),
    );
    reply
}

/// The canonical origin, without a trailing slash.
fn origin(config: &Config) -> String {
    config
        .service
        .base_url
        .as_str()
        .trim_end_matches('/')
        .to_string()
}

fn paid_routes(app: &App) -> impl Iterator<Item = &RouteEntry> {
    app.routes.iter().filter(|r| r.spec.is_paid())
}

fn reads_body(m: &Method) -> bool {
    crate::pipeline::input::reads_body(m)
}

/// "GET, POST"
fn methods_list(spec: &RouteSpec) -> String {
    spec.methods
        .iter()
        .map(Method::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn networks_text(app: &App) -> String {
    super::availability::offered(app)
        .iter()
        .map(|(_, a)| format!("{} ({})", a.network, a.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn how_to_pay(app: &App) -> String {
    format!(
        "Paid routes use x402 version 2, scheme exact, in USDC on {}. 1) Call the route without \
         payment: it answers 402 with a PAYMENT-REQUIRED header (base64 JSON listing the accepted \
         payments: network, asset, amount in atomic units, payTo). 2) Sign one of them with an x402 \
         client (on Base an EIP-3009 transferWithAuthorization). 3) Repeat the same request with \
         the PAYMENT-SIGNATURE header; the 200 answer carries PAYMENT-RESPONSE, the settlement \
         receipt. {} A route that cannot work now answers 503 with Retry-After instead of 402. \
         No API key, no signup. Every paid route has a free sample at GET /api/demo/<name>.",
        networks_text(app),
        super::reference::service_billing(app)
    )
}

/// A JSON number without a spurious ".0" for whole bounds.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9e15 {
        json!(f as i64)
    } else {
        json!(f)
    }
}

/// A parameter with nothing but a name and a type, for the document modules' unit tests.
#[cfg(test)]
fn test_param(name: &str, ty: crate::config::ParamType) -> crate::config::ParamSpec {
    crate::config::ParamSpec {
        name: name.into(),
        ty,
        required: false,
        default: None,
        description: String::new(),
        enumeration: None,
        minimum: None,
        maximum: None,
        min_length: None,
        max_length: None,
        pattern: None,
        format: None,
        example: None,
        error_code: "invalid_parameter".into(),
        case_insensitive: false,
    }
}

/// The shipped routes.yaml's route at `path`, loaded with placeholder payTo addresses.
#[cfg(test)]
fn shipped_route(path: &str) -> RouteSpec {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
    let config = crate::config::load_with_env(&file, &crate::config::placeholder_pay_to)
        .expect("the shipped routes.yaml loads");
    config
        .routes
        .into_iter()
        .find(|r| r.path == path)
        .expect("a shipped route")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_bounds_are_written_without_a_fraction() {
        assert_eq!(number(50.0), json!(50));
        assert_eq!(number(0.5), json!(0.5));
        assert_eq!(number(1e16), json!(1e16));
    }

    #[test]
    fn methods_are_listed_as_written() {
        assert_eq!(methods_list(&shipped_route("/api/extract")), "GET, POST");
    }
}
