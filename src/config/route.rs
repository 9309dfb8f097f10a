//! One entry of `routes:` → a `RouteSpec`: path, methods, price, pipeline, billing rule, input
//! and demo. Every check runs, so one pass reports every mistake in the route.

use super::param::validate_param;
use super::pipelines::Pipelines;
use super::{
    hints, raw, Origin, ParamSpec, PaymentSettings, Price, Reporter, RouteDemo, RouteSpec,
    BILL_RULES,
};
use serde_json::Value;
use serde_saphyr::Spanned;
use std::path::Path;
use std::time::Duration;

/// Paths the server answers itself.
const RESERVED_PATHS: &[&str] = &["/status", "/openapi.json", "/llms.txt", "/.well-known/x402"];

/// The route, or None when anything in it was reported.
pub fn validate_route(
    path: &Path,
    route: raw::Route,
    payment: &PaymentSettings,
    pipelines: &Pipelines,
    r: &mut Reporter<'_>,
) -> Option<RouteSpec> {
    let at = |loc: serde_saphyr::Location| Origin {
        file: path.to_path_buf(),
        loc,
    };
    let route_path = route_path(&route.path, r);
    let methods = methods(&route, r);
    // Outer None: reported; inner None: the route has none (free, or no demo twin).
    let price = match &route.price_usd {
        None => Some(None),
        Some(pr) => price(pr, payment, r).map(Some),
    };
    let pipeline = pipeline(&route.pipeline, pipelines, r);
    let billing = billing(route.billing.as_ref(), r);
    let description = route
        .description
        .clone()
        .unwrap_or_else(|| route.summary.clone());
    let description_ok = description.chars().count() <= 500;
    if !description_ok {
        r.at(route.path.referenced, "description is longer than 500 characters", "shorten it: the CDP facilitator rejects payments whose resource.description exceeds 500 characters");
    }
    let input = input(&route.input, r);
    let demo = match &route.demo {
        None => Some(None),
        Some(d) => demo(d, &route.path, &at, r).map(Some),
    };
    let caps = route
        .caps
        .iter()
        .map(|(k, v)| (k.clone(), (v.value.clone(), at(v.referenced))))
        .collect();
    let (
        Some(route_path),
        Some(methods),
        Some(price),
        Some(()),
        Some(billing),
        true,
        Some(input),
        Some(demo),
    ) = (
        route_path,
        methods,
        price,
        pipeline,
        billing,
        description_ok,
        input,
        demo,
    )
    else {
        return None;
    };
    let name = route_path.rsplit('/').next().unwrap_or("").to_string();
    Some(RouteSpec {
        path: route_path,
        name,
        methods,
        price,
        summary: route.summary,
        description,
        pipeline: route.pipeline.value.clone(),
        billing,
        max_request_bytes: route.max_request_bytes,
        input,
        caps,
        demo,
        output_example: route.output_example,
        tags: route.tags,
        origin: at(route.path.referenced),
        pipeline_origin: at(route.pipeline.referenced),
    })
}

/// A plain absolute path that the server does not answer itself; its last segment names the
/// demo twin, so it has to be a simple name.
fn route_path(p: &Spanned<String>, r: &mut Reporter<'_>) -> Option<String> {
    let mut ok = true;
    let v = &p.value;
    let plain = v.starts_with('/')
        && v.len() > 1
        && !v.ends_with('/')
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/-_.".contains(c))
        && !v.contains("//");
    if !plain {
        r.at(
            p.referenced,
            format!("route path `{v}` is not a plain absolute path"),
            "write it like /api/http (letters, digits, - _ . /)",
        );
        ok = false;
    }
    if v.starts_with("/api/demo/") || RESERVED_PATHS.contains(&v.as_str()) {
        r.at(
            p.referenced,
            format!("route path `{v}` is reserved by the server"),
            "choose another path",
        );
        ok = false;
    }
    ok.then(|| v.clone())
}

/// At least one method, each one warp can route (OPTIONS is answered for every route).
fn methods(route: &raw::Route, r: &mut Reporter<'_>) -> Option<Vec<http::Method>> {
    let mut ok = true;
    let mut methods = Vec::new();
    for m in &route.methods {
        match m.value.to_ascii_uppercase().as_str() {
            "GET" => methods.push(http::Method::GET),
            "POST" => methods.push(http::Method::POST),
            "PUT" => methods.push(http::Method::PUT),
            "PATCH" => methods.push(http::Method::PATCH),
            "DELETE" => methods.push(http::Method::DELETE),
            other => {
                r.at(
                    m.referenced,
                    format!("method `{other}` cannot be served"),
                    "use GET, POST, PUT, PATCH or DELETE (OPTIONS is always answered)",
                );
                ok = false;
            }
        }
    }
    if methods.is_empty() {
        r.at(
            route.path.referenced,
            "a route needs at least one method",
            "add methods: [GET]",
        );
        ok = false;
    }
    ok.then_some(methods)
}

/// The price in USD and, for each offer, in the asset's atomic units: it must be exact in
/// every one of them (one error naming every offer it is not).
fn price(pr: &Spanned<String>, payment: &PaymentSettings, r: &mut Reporter<'_>) -> Option<Price> {
    if let Some(problem) = hints::price_problem(&pr.value) {
        r.at(
            pr.referenced,
            problem,
            "write a positive USD decimal such as \"0.01\"; a free route has no price_usd",
        );
        return None;
    }
    let mut atomic = Vec::new();
    let mut inexact = Vec::new();
    for a in &payment.accepts {
        match crate::x402::price::usd_to_atomic(&pr.value, a.decimals) {
            Ok(v) => atomic.push(v),
            Err(e) => inexact.push((a.name.clone(), e.to_string())),
        }
    }
    if let Some((_, reason)) = inexact.first() {
        let names: Vec<&str> = inexact.iter().map(|(n, _)| n.as_str()).collect();
        r.at(
            pr.referenced,
            format!(
                "price_usd `{}` cannot be paid in {}: {reason}",
                pr.value,
                names.join(", ")
            ),
            "use no more decimal places than the asset has (USDC: 6), e.g. \"0.015\"",
        );
        return None;
    }
    Some(Price {
        usd: normalise_usd(&pr.value),
        atomic,
    })
}

/// The named pipeline exists. A pipeline file that failed to load was reported already: one
/// error per mistake.
fn pipeline(name: &Spanned<String>, pipelines: &Pipelines, r: &mut Reporter<'_>) -> Option<()> {
    if pipelines.specs.contains_key(&name.value) {
        return Some(());
    }
    if !pipelines.unreadable.contains(&name.value) {
        let known: Vec<&str> = pipelines.specs.keys().map(String::as_str).collect();
        let near = hints::did_you_mean(&name.value, known.iter().copied());
        r.at(
            name.referenced,
            format!(
                "unknown pipeline `{}`{}",
                name.value,
                near.map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default()
            ),
            format!(
                "name a pipeline defined in pipelines/*.yaml beside routes.yaml: {}",
                known.join(", ")
            ),
        );
    }
    None
}

/// The bill rule (the bill stage implements them); charged iff status < 400 by default.
fn billing(b: Option<&Spanned<String>>, r: &mut Reporter<'_>) -> Option<String> {
    match b {
        None => Some("status_below_400".to_string()),
        Some(b) if BILL_RULES.contains(&b.value.as_str()) => Some(b.value.clone()),
        Some(b) => {
            r.at(
                b.referenced,
                format!("unknown billing rule `{}`", b.value),
                format!("use one of: {}", BILL_RULES.join(", ")),
            );
            None
        }
    }
}

/// Every parameter valid, and none declared twice.
fn input(params: &[Spanned<raw::Param>], r: &mut Reporter<'_>) -> Option<Vec<ParamSpec>> {
    let mut ok = true;
    let mut input: Vec<ParamSpec> = Vec::new();
    for param in params {
        match validate_param(&param.value) {
            Ok(spec) => {
                if input.iter().any(|x| x.name == spec.name) {
                    r.at(
                        param.referenced,
                        format!("parameter `{}` is declared twice", spec.name),
                        "remove the duplicate",
                    );
                    ok = false;
                }
                input.push(spec)
            }
            Err((msg, hint)) => {
                r.at(param.referenced, msg, hint);
                ok = false;
            }
        }
    }
    ok.then_some(input)
}

/// The demo twin's fixed input and how long its sample is reused; the input is checked against
/// the route's schema later, at chain building.
fn demo(
    d: &raw::RouteDemo,
    route_path: &Spanned<String>,
    at: &dyn Fn(serde_saphyr::Location) -> Origin,
    r: &mut Reporter<'_>,
) -> Option<RouteDemo> {
    if d.ttl_s == 0 {
        r.at(
            route_path.referenced,
            "demo.ttl_s must be positive",
            "samples are reused for ttl_s seconds",
        );
        return None;
    }
    Some(RouteDemo {
        input: d
            .input
            .as_ref()
            .map(|i| i.value.clone())
            .unwrap_or_default(),
        ttl: Duration::from_secs(d.ttl_s),
        describe: d.describe.clone(),
        origin: at(d
            .input
            .as_ref()
            .map(|i| i.referenced)
            .unwrap_or(route_path.referenced)),
    })
}

/// Demo inputs may name the service itself: `{base_url}` in a string value is replaced by the
/// canonical base URL (after PAYCALL_BASE_URL), without its trailing slash.
pub fn fill_in_base_url(routes: &mut [RouteSpec], base_url: &url::Url) {
    let base = base_url.as_str().trim_end_matches('/');
    for demo in routes.iter_mut().filter_map(|r| r.demo.as_mut()) {
        for v in demo.input.values_mut() {
            if let Value::String(s) = v {
                if s.contains("{base_url}") {
                    *s = s.replace("{base_url}", base);
                }
            }
        }
    }
}

/// "0.010" → "0.01", "1" → "1"; the input has already been validated by the price parser.
fn normalise_usd(s: &str) -> String {
    let s = s.trim().trim_start_matches('$');
    if let Some((i, f)) = s.split_once('.') {
        let f = f.trim_end_matches('0');
        if f.is_empty() {
            i.to_string()
        } else {
            format!("{i}.{f}")
        }
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;
    use crate::config::{
        AcceptOption, FacilitatorAuthSetting, FacilitatorSettings, UnsupportedNetwork,
    };
    use std::collections::BTreeMap;

    fn payment() -> PaymentSettings {
        let facilitator = FacilitatorSettings {
            name: "default".into(),
            url: url::Url::parse("http://127.0.0.1:1/").unwrap(),
            verify_timeout: Duration::ZERO,
            settle_timeout: Duration::ZERO,
            supported_ttl: Duration::ZERO,
            pool_idle_timeout: Duration::ZERO,
            auth: FacilitatorAuthSetting::None,
        };
        PaymentSettings {
            facilitators: vec![facilitator.clone()],
            facilitator,
            failover: Default::default(),
            max_timeout_seconds: 120,
            accepts: vec![AcceptOption {
                network: "eip155:8453".into(),
                name: "base".into(),
                asset: "0x0".into(),
                decimals: 6,
                eip712: None,
                pay_to: "0x0".into(),
                rpc: None,
            }],
            verify_per_minute: (0, 0),
            unsupported_network: UnsupportedNetwork::Refuse,
        }
    }

    fn pipelines() -> Pipelines {
        let p: crate::config::PipelineSpec = crate::config::PipelineSpec {
            name: "http".into(),
            description: String::new(),
            stages: Vec::new(),
            origin: Origin {
                file: "p.yaml".into(),
                loc: serde_saphyr::Location::UNKNOWN,
            },
        };
        Pipelines {
            specs: BTreeMap::from([("http".to_string(), p)]),
            unreadable: vec!["broken".into()],
        }
    }

    fn check(yaml: &str) -> (Option<RouteSpec>, Vec<String>) {
        let route: raw::Route = serde_saphyr::from_str(yaml).unwrap();
        reported(|r| validate_route(Path::new("routes.yaml"), route, &payment(), &pipelines(), r))
    }

    #[test]
    fn a_good_route_is_named_by_its_last_segment_and_priced_in_atomic_units() {
        let (spec, errors) = check(
            "{ path: /api/http, methods: [get], price_usd: '0.010', summary: s, pipeline: http }",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let spec = spec.unwrap();
        assert_eq!(spec.name, "http");
        assert_eq!(
            spec.price,
            Some(Price {
                usd: "0.01".into(),
                atomic: vec!["10000".into()]
            })
        );
        assert_eq!(spec.billing, "status_below_400");
    }

    #[test]
    fn every_mistake_in_a_route_is_reported_in_one_pass() {
        let (spec, errors) = check(
            "{ path: /status, methods: [TRACE], price_usd: '0.0000001', summary: s, pipeline: htp, billing: always, demo: { ttl_s: 0, describe: d } }",
        );
        assert!(spec.is_none());
        assert_eq!(
            errors,
            [
                "route path `/status` is reserved by the server",
                "method `TRACE` cannot be served",
                "a route needs at least one method",
                "price_usd `0.0000001` cannot be paid in base: the price \"0.0000001\" has more precision than the asset's 6 decimals",
                "unknown pipeline `htp` (did you mean `http`?)",
                "unknown billing rule `always`",
                "demo.ttl_s must be positive",
            ]
        );
    }

    #[test]
    fn a_route_naming_an_unreadable_pipeline_gets_no_second_error() {
        let (spec, errors) =
            check("{ path: /api/x, methods: [GET], summary: s, pipeline: broken }");
        assert!(spec.is_none());
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn paths_must_be_plain_and_parameters_unique() {
        let (_, errors) = check(
            "{ path: /api//x/, methods: [GET], summary: s, pipeline: http, input: [{ name: a, type: string }, { name: a, type: string }] }",
        );
        assert_eq!(
            errors,
            [
                "route path `/api//x/` is not a plain absolute path",
                "parameter `a` is declared twice",
            ]
        );
    }

    #[test]
    fn base_url_is_filled_into_demo_strings() {
        let (spec, _) = check(
            "{ path: /api/x, methods: [GET], summary: s, pipeline: http, demo: { ttl_s: 60, describe: d, input: { url: '{base_url}/llms.txt', n: 1 } } }",
        );
        let mut routes = vec![spec.unwrap()];
        fill_in_base_url(&mut routes, &url::Url::parse("https://a.example/").unwrap());
        let input = &routes[0].demo.as_ref().unwrap().input;
        assert_eq!(input["url"], "https://a.example/llms.txt");
        assert_eq!(input["n"], 1);
    }

    #[test]
    fn usd_prices_are_normalised() {
        assert_eq!(normalise_usd("0.010"), "0.01");
        assert_eq!(normalise_usd("$1.00"), "1");
        assert_eq!(normalise_usd("2"), "2");
    }
}
