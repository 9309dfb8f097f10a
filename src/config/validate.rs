//! routes.yaml, parsed → `Config`: each section by its own validator, in file order, then the
//! checks that span sections (offers' RPCs name upstreams, routes do not clash).

use super::guard::validate_guard;
use super::ledger::validate_ledger;
use super::payment::{link_rpcs, validate_payment};
use super::pipelines::Pipelines;
use super::route::{fill_in_base_url, validate_route};
use super::service::validate_service;
use super::upstreams::validate_upstreams;
use super::{raw, Config, ConfigError, DemoSettings, Reporter, RouteSpec};
use std::path::{Path, PathBuf};

/// Every section is checked even after an error, so one run reports every mistake; the
/// returned `Config` is meaningful only when `errors` stayed empty.
pub fn validate(
    path: &Path,
    root: PathBuf,
    file: raw::RoutesFile,
    pipelines: Pipelines,
    env: &dyn Fn(&str) -> Option<String>,
    errors: &mut Vec<ConfigError>,
) -> Config {
    let mut r = Reporter::new(path, errors);
    let service = validate_service(file.service, env, &mut r);
    let mut payment = validate_payment(&file.payment, env, &mut r);
    let guard = validate_guard(file.guard, &service.base_url, env, &mut r);
    let upstreams = validate_upstreams(&file.upstreams, env, &mut r);
    let ledger = validate_ledger(&file.ledger, &root, &service.listen, env, &mut r);
    link_rpcs(&mut payment.accepts, &upstreams, &mut r);
    let mut routes = validate_routes(path, file.routes, &payment, &pipelines, &mut r);
    fill_in_base_url(&mut routes, &service.base_url);
    Config {
        root,
        service,
        payment,
        guard,
        demo: DemoSettings {
            per_minute: file.demo.per_minute.max(1),
            burst: file.demo.burst.max(1),
        },
        upstreams,
        ledger,
        routes,
        pipelines: pipelines.specs,
    }
}

/// Each route, then no two with the same path or the same last segment (it names the demo
/// twin, /api/demo/<name>).
fn validate_routes(
    path: &Path,
    raw_routes: Vec<raw::Route>,
    payment: &super::PaymentSettings,
    pipelines: &Pipelines,
    r: &mut Reporter<'_>,
) -> Vec<RouteSpec> {
    let mut routes: Vec<RouteSpec> = Vec::new();
    for route in raw_routes {
        let Some(spec) = validate_route(path, route, payment, pipelines, r) else {
            continue;
        };
        if let Some(prev) = routes
            .iter()
            .find(|x| x.path == spec.path || x.name == spec.name)
        {
            let msg = format!(
                "route `{}` clashes with `{}` (same path or same name)",
                spec.path, prev.path
            );
            r.at(spec.origin.loc, msg, "paths and their last segments must be unique (the last segment names the demo twin)");
            continue;
        }
        routes.push(spec);
    }
    routes
}
