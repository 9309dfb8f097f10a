//! `GET /llms.txt`: the llmstxt.org summary for agents, with a curl line per paid route; the
//! parameter rules and curl lines are also used by the route reference pages.

use http::Method;
use serde_json::{Map, Value};
use std::fmt::Write as _;

use super::{
    methods_list, number, origin, paid_routes, reads_body, OPENAPI_PATH, STATUS_PATH,
    WELL_KNOWN_PATH,
};
use crate::config::{Config, ParamSpec, RouteSpec};
use crate::server::{demo, App, RouteEntry};

fn param_line(p: &ParamSpec) -> String {
    let mut facts = vec![p.ty.json_name().to_string()];
    facts.push(if p.required { "required" } else { "optional" }.into());
    facts.extend(param_rules(p));
    let desc = if p.description.is_empty() {
        String::new()
    } else {
        format!(": {}", p.description)
    };
    format!("`{}` ({}){desc}", p.name, facts.join(", "))
}

/// A parameter's rules in words (bounds, lengths, enum, pattern, default), as input validation
/// applies them.
pub fn param_rules(p: &ParamSpec) -> Vec<String> {
    let mut facts = Vec::new();
    if p.format.as_deref() == Some("uri") {
        facts.push("absolute http(s) URL".to_string());
    }
    match (p.minimum, p.maximum) {
        (Some(lo), Some(hi)) => facts.push(format!("{} to {}", number(lo), number(hi))),
        (Some(lo), None) => facts.push(format!("at least {}", number(lo))),
        (None, Some(hi)) => facts.push(format!("at most {}", number(hi))),
        _ => {}
    }
    if let Some(n) = p.max_length {
        facts.push(format!("at most {n} characters"));
    }
    if let Some(n) = p.min_length {
        facts.push(format!("at least {n} characters"));
    }
    if let Some(e) = &p.enumeration {
        let list: Vec<String> = e
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .collect();
        facts.push(format!("one of {}", list.join("/")));
    }
    if let Some(re) = &p.pattern {
        facts.push(format!("pattern `{}`", re.as_str()));
    }
    if let Some(d) = &p.default {
        facts.push(format!(
            "default {}",
            d.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| d.to_string())
        ));
    }
    if p.case_insensitive && p.enumeration.is_some() {
        facts.push("any case".into());
    }
    facts
}

/// The input a curl example uses: the demo input, else the parameters' examples. A demo input
/// too long for a readable command line (a whole sample page as `html`) gives way to the
/// parameters' examples when there are any.
fn example_input(spec: &RouteSpec) -> Map<String, Value> {
    const READABLE: usize = 600;
    if let Some(d) = &spec.demo {
        let long = Value::Object(d.input.clone()).to_string().len() > READABLE;
        if !long || spec.input.iter().all(|p| p.example.is_none()) {
            return d.input.clone();
        }
    }
    spec.input
        .iter()
        .filter_map(|p| p.example.clone().map(|x| (p.name.clone(), x)))
        .collect()
}

/// One shell-safe curl command for a route.
pub fn curl_example(base: &str, spec: &RouteSpec) -> String {
    let input = example_input(spec);
    let url = format!("{base}{}", spec.path);
    if spec.methods.contains(&Method::GET) || !spec.methods.iter().any(reads_body) {
        let mut u = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &input {
            let text = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            u.append_pair(k, &text);
        }
        let q = u.finish();
        let full = if q.is_empty() {
            url
        } else {
            format!("{url}?{q}")
        };
        let method = if spec.methods.contains(&Method::GET) {
            Method::GET
        } else {
            spec.methods.first().cloned().unwrap_or(Method::GET)
        };
        if method == Method::GET {
            format!("curl -i {}", shell_quote(&full))
        } else {
            format!("curl -i -X {method} {}", shell_quote(&full))
        }
    } else {
        let method = spec
            .methods
            .iter()
            .find(|m| reads_body(m))
            .cloned()
            .unwrap_or(Method::POST);
        let body = Value::Object(input).to_string();
        format!(
            "curl -i -X {method} {} -H 'content-type: application/json' -d {}",
            shell_quote(&url),
            shell_quote(&body)
        )
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The llmstxt.org document: the service in a line, how to pay, the paid routes, the free
/// routes, the demo twins, the other discovery documents.
pub fn llms_txt(app: &App) -> String {
    let base = origin(&app.config);
    let mut t = String::new();
    intro(&mut t, &app.config, &base);
    how_to_pay_section(&mut t, app);
    paid_section(&mut t, app, &base);
    free_section(&mut t, app, &base);
    demo_section(&mut t, app, &base);
    discovery_section(&mut t, &base);
    t
}

/// The title, the summary and the base URL.
fn intro(t: &mut String, config: &Config, base: &str) {
    let _ = writeln!(t, "# {}\n", config.service.name);
    let summary = if config.service.description.is_empty() {
        "Pay-per-call functions for software agents, paid with x402 v2.".to_string()
    } else {
        config.service.description.trim().replace('\n', " ")
    };
    let _ = writeln!(t, "> {summary}\n");
    let _ = writeln!(
        t,
        "Base URL: {base}{}. Version {}. Answers are JSON; errors are `{{\"error\": code, \"message\": text}}`, and an answer with an error status is never charged (each route's billing below).\n",
        config
            .service
            .backup_url
            .as_ref()
            .map(|b| format!(" (backup: {})", b.as_str().trim_end_matches('/')))
            .unwrap_or_default(),
        config.service.version
    );
}

/// `## How to pay`: the networks offered now and the three steps.
fn how_to_pay_section(t: &mut String, app: &App) {
    let _ = writeln!(t, "## How to pay\n");
    let _ = writeln!(t, "- No API key, no account: every call is paid on its own with x402 version 2 (scheme `exact`).");
    for (_, a) in crate::server::availability::offered(app) {
        let _ = writeln!(
            t,
            "- Network `{}` ({}): asset `{}`, paid to `{}`.",
            a.network, a.name, a.asset, a.pay_to
        );
    }
    let _ = writeln!(t, "- 1. Call the route without payment: the answer is `402` with a `PAYMENT-REQUIRED` header (base64 JSON: x402Version 2, resource, accepts with network, amount in atomic units, asset, payTo).");
    let _ = writeln!(t, "- 2. Sign one of the accepted options with an x402 client (on Base: an EIP-3009 transferWithAuthorization for the exact amount).");
    let _ = writeln!(t, "- 3. Repeat the same request with the `PAYMENT-SIGNATURE` header. The `200` answer carries `PAYMENT-RESPONSE` (base64 JSON settlement receipt with the transaction hash).");
    let _ = writeln!(t, "- {}", crate::server::reference::service_billing(app));
    let _ = writeln!(
        t,
        "- A route that cannot work now answers `503` with `Retry-After` instead of `402`: no payment is asked.\n"
    );
}

/// `## Paid routes`, one entry each (none: no section).
fn paid_section(t: &mut String, app: &App, base: &str) {
    let paid: Vec<&RouteEntry> = paid_routes(app).collect();
    if paid.is_empty() {
        return;
    }
    let _ = writeln!(t, "## Paid routes\n");
    for e in &paid {
        paid_entry(t, app, base, e);
    }
    t.push('\n');
}

/// One paid route: price and methods, availability, description, billing, parameters, a curl
/// line, its free sample.
fn paid_entry(t: &mut String, app: &App, base: &str, e: &RouteEntry) {
    let s = &e.spec;
    let price = s.price.as_ref().map(|p| p.usd.as_str()).unwrap_or("");
    let _ = writeln!(
        t,
        "- [{}]({base}{}): ${price} per call; {}. {}",
        s.path,
        s.path,
        methods_list(s),
        s.summary
    );
    if let Err(reason) = crate::server::availability::check(app, e) {
        let _ = writeln!(
            t,
            "  - Unavailable now ({reason}): answers 503 with Retry-After, no payment asked."
        );
    }
    if s.description != s.summary {
        let _ = writeln!(t, "  - {}", s.description.trim().replace('\n', " "));
    }
    let _ = writeln!(
        t,
        "  - Billing: {}",
        crate::server::reference::Billing::of(e).sentence()
    );
    if s.input.is_empty() {
        let _ = writeln!(t, "  - Parameters: none.");
    } else {
        let list: Vec<String> = s.input.iter().map(param_line).collect();
        let _ = writeln!(
            t,
            "  - Parameters, {}: {}",
            parameters_place(s),
            list.join("; ")
        );
    }
    let _ = writeln!(
        t,
        "  - Try (answers 402 until paid): `{}`",
        curl_example(base, s)
    );
    if s.demo.is_some() {
        let _ = writeln!(t, "  - Free sample: {base}/api/demo/{}", s.name);
    }
}

/// Where a route's parameters go, by the methods it serves: the query string, a JSON body or
/// either.
fn parameters_place(s: &RouteSpec) -> String {
    let join = |body: bool| {
        s.methods
            .iter()
            .filter(|m| reads_body(m) == body)
            .map(Method::as_str)
            .collect::<Vec<_>>()
            .join("/")
    };
    let (query, body) = (join(false), join(true));
    match (query.is_empty(), body.is_empty()) {
        (false, false) => {
            format!("in the query string ({query}) or a JSON body ({body})")
        }
        (true, false) => format!("as a JSON body ({body})"),
        _ => format!("in the query string ({query})"),
    }
}

/// `## Free routes` (none: no section).
fn free_section(t: &mut String, app: &App, base: &str) {
    let free: Vec<&RouteEntry> = app.routes.iter().filter(|r| !r.spec.is_paid()).collect();
    if free.is_empty() {
        return;
    }
    let _ = writeln!(t, "## Free routes\n");
    for e in free {
        let s = &e.spec;
        let _ = writeln!(
            t,
            "- [{}]({base}{}): {}. {}",
            s.path,
            s.path,
            methods_list(s),
            s.summary
        );
    }
    t.push('\n');
}

/// `## Free demo twins`: the envelope, the rate limit, one line each (none: no section).
fn demo_section(t: &mut String, app: &App, base: &str) {
    let demos: Vec<&RouteEntry> = demo::demo_routes(app).collect();
    if demos.is_empty() {
        return;
    }
    let _ = writeln!(t, "## Free demo twins\n");
    let _ = writeln!(
        t,
        "Each runs the paid route on a fixed input, free, and wraps the answer in `{{demo, note, paid_endpoint, price, fixed_input, sample_status, sample}}`. Limited to {} requests per minute per client (burst {}).\n",
        app.config.demo.per_minute, app.config.demo.burst
    );
    for e in demos {
        let s = &e.spec;
        let d = s.demo.as_ref().map(|d| d.describe.as_str()).unwrap_or("");
        let _ = writeln!(
            t,
            "- [/api/demo/{}]({base}/api/demo/{}): {} on {d}",
            s.name, s.name, s.path
        );
    }
    t.push('\n');
}

/// `## Discovery`: the other documents and /status.
fn discovery_section(t: &mut String, base: &str) {
    let _ = writeln!(t, "## Discovery\n");
    let _ = writeln!(
        t,
        "- [OpenAPI 3.1]({base}{OPENAPI_PATH}): every operation with its parameters, errors and `x-payment-info`"
    );
    let _ = writeln!(
        t,
        "- [x402 resource list]({base}{WELL_KNOWN_PATH}): the paid endpoints (x402scan format)"
    );
    let _ = writeln!(
        t,
        "- [MCP server]({base}{}): every paid route as a paid MCP tool (streamable HTTP; x402 in `_meta[\"x402/payment\"]`), free `*_demo` tools",
        crate::mcp::PATH
    );
    let _ = writeln!(
        t,
        "- [Status]({base}{STATUS_PATH}): `ok` when paid calls can be taken (facilitator reachable), routes that cannot serve under `degraded`"
    );
}

#[cfg(test)]
mod tests {
    use super::super::{shipped_route, test_param};
    use super::*;
    use crate::config::ParamType;

    #[test]
    fn shell_quoting_survives_a_single_quote() {
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn rules_read_as_validation_applies_them() {
        let mut p = test_param("limit", ParamType::Integer);
        p.minimum = Some(1.0);
        p.maximum = Some(50.0);
        p.default = Some(serde_json::json!(10));
        assert_eq!(param_rules(&p), ["1 to 50", "default 10"]);
        p.required = true;
        p.description = "how many".into();
        assert_eq!(
            param_line(&p),
            "`limit` (integer, required, 1 to 50, default 10): how many"
        );
    }

    #[test]
    fn a_get_route_is_called_with_a_query_string() {
        let curl = curl_example("https://a.example", &shipped_route("/api/fetch"));
        assert!(
            curl.starts_with("curl -i 'https://a.example/api/fetch?"),
            "{curl}"
        );
    }
}
