//! The Bazaar listing audit of one host (/api/bazaar-check, docs/audit.md): read the host's
//! `/.well-known/x402`, probe each listed route and method once, unpaid, compare with the
//! discovery index (merchant look-up by the payTo addresses the probes revealed, search by host)
//! and with read-only chain facts, and say what to fix.
//!
//! Time budget (docs/decisions.md#limits), counted from the request's arrival:
//! - probes end 12 s after arrival; when payment verification was slow (more than 3 s, the point
//!   where 12 s after arrival is less than 60% of what is left of the 18 s), probes get 60% of
//!   the time left instead;
//! - 18 s hard deadline for everything (index and chain look-ups included); 6 s per request;
//! - under 3 s left when the work starts → 502 `too_little_time`, not charged.

use http::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use url::Url;

use super::challenge_checks::{analyse, Analysis, Level, ProbeView};
use super::discovery_index::{
    item_last_updated, item_networks, item_url, DiscoveryIndex, MerchantPages,
};
use super::known_networks::{self, Family};
use super::onchain::Rpc;
use super::{address, probe};
use crate::net::{FetchError, Guard, GuardedClient};

/// The route's limits (pipeline parameters; defaults are docs/decisions.md#limits).
#[derive(Debug, Clone)]
pub struct Limits {
    pub probe_window: Duration,
    pub hard_deadline: Duration,
    pub slow_share: f64,
    pub per_request: Duration,
    pub max_bytes: usize,
    pub max_redirects: u32,
    pub max_routes: usize,
    pub concurrency: usize,
    pub max_pay_tos: usize,
    pub max_pages: usize,
    pub min_time_left: Duration,
    /// Blocks scanned for recent USDC transfers to a payTo.
    pub transfer_blocks: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            probe_window: Duration::from_secs(12),
            hard_deadline: Duration::from_secs(18),
            slow_share: 0.6,
            per_request: Duration::from_secs(6),
            max_bytes: 64 * 1024,
            max_redirects: 3,
            max_routes: 25,
            concurrency: 5,
            max_pay_tos: 4,
            max_pages: 3,
            min_time_left: Duration::from_secs(3),
            transfer_blocks: 10_000,
        }
    }
}

/// When probes must end, given the arrival, when the work starts and the limits. Pure, so the
/// rule is tested at its edges.
pub fn probe_deadline(arrived: Instant, now: Instant, l: &Limits) -> Instant {
    let hard = arrived + l.hard_deadline;
    let normal = arrived + l.probe_window;
    let left = hard.saturating_duration_since(now);
    let share = now + left.mul_f64(l.slow_share);
    // Verification was slow when the fixed window would leave probes less than their share.
    if share > normal {
        share
    } else {
        normal
    }
}

/// The not-charged failures of the route.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
}

fn refuse(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        code,
        message: message.into(),
    }
}

/// The caller's `url` → (https origin, host). A bare host (with an optional port and path) is
/// accepted; any other scheme is refused; the path is ignored.
pub fn parse_target(input: &str, guard: &Guard) -> Result<Url, Refusal> {
    let s = input.trim();
    if s.is_empty() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "missing_parameter",
            "`url` is required: a host or https origin",
        ));
    }
    let with_scheme = if let Some((scheme, _)) = s.split_once("://") {
        if !scheme.eq_ignore_ascii_case("https") {
            return Err(refuse(StatusCode::BAD_REQUEST, "https_only", format!("bazaar-check audits https origins only (got {scheme}://); give a host or an https:// origin")));
        }
        s.to_string()
    } else {
        format!("https://{s}")
    };
    let u = guard.parse_target(&with_scheme).map_err(|r| {
        let e = FetchError::from_url_refusal(r);
        refuse(StatusCode::BAD_REQUEST, e.code(), e.to_string())
    })?;
    if u.scheme() != "https" {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "https_only",
            "bazaar-check audits https origins only",
        ));
    }
    let mut origin = u.clone();
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    Ok(origin)
}

/// The URL a request is actually sent to. Targets at addresses the operator allowlisted (empty in
/// production; self-hosting and tests) are reached over plain http on the same port, as such
/// hosts have no public TLS certificate. Everything else is sent as written (https).
pub fn transport_url(u: &Url, guard: &Guard) -> Url {
    let allowlisted = match u.host() {
        Some(url::Host::Ipv4(ip)) => guard.is_allowlisted(ip.into()),
        Some(url::Host::Ipv6(ip)) => guard.is_allowlisted(ip.into()),
        _ => false,
    };
    if allowlisted && u.scheme() == "https" {
        let port = u.port_or_known_default();
        let mut t = u.clone();
        if t.set_scheme("http").is_ok() {
            let _ = t.set_port(port);
            return t;
        }
    }
    u.clone()
}

/// Same resource: scheme, host, port and path (trailing slash ignored); query ignored.
pub fn same_resource(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == b.port_or_known_default()
        && a.path().trim_end_matches('/') == b.path().trim_end_matches('/')
}

fn same_host(a: &Url, origin: &Url) -> bool {
    a.host_str().map(str::to_ascii_lowercase) == origin.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == origin.port_or_known_default()
}

/// One listed route: its URL and the methods listed for it.
#[derive(Debug, Clone)]
pub struct ListedRoute {
    pub url: Url,
    pub methods: Vec<Method>,
}

/// Parses a `/.well-known/x402` document (x402scan version 1: absolute URLs or "METHOD /path";
/// objects `{url|resource, method}` are accepted too). Returns routes in document order, merged
/// by URL, and the entries that could not be read.
pub fn parse_well_known(doc: &Value, origin: &Url) -> (Vec<ListedRoute>, Vec<String>) {
    let mut routes: Vec<ListedRoute> = Vec::new();
    let mut bad = Vec::new();
    let entries = doc
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for e in entries {
        let (method, target) = match &e {
            Value::String(s) => {
                let s = s.trim();
                match s.split_once(char::is_whitespace) {
                    Some((m, rest)) if m.chars().all(|c| c.is_ascii_uppercase()) => {
                        (m.to_string(), rest.trim().to_string())
                    }
                    _ => ("GET".to_string(), s.to_string()),
                }
            }
            Value::Object(o) => (
                o.get("method")
                    .and_then(Value::as_str)
                    .unwrap_or("GET")
                    .to_ascii_uppercase(),
                o.get("url")
                    .or_else(|| o.get("resource"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            other => {
                bad.push(other.to_string());
                continue;
            }
        };
        let Ok(method) = Method::from_bytes(method.as_bytes()) else {
            bad.push(format!("{method} {target}"));
            continue;
        };
        let url = if target.starts_with('/') {
            origin.join(&target)
        } else {
            Url::parse(&target)
        };
        let Ok(mut url) = url else {
            bad.push(target);
            continue;
        };
        url.set_fragment(None);
        match routes.iter_mut().find(|r| r.url == url) {
            Some(r) => {
                if !r.methods.contains(&method) {
                    r.methods.push(method);
                }
            }
            None => routes.push(ListedRoute {
                url,
                methods: vec![method],
            }),
        }
    }
    (routes, bad)
}

/// Everything bazaar-check needs, built once per route.
pub struct BazaarAudit {
    pub client: Arc<GuardedClient>,
    pub guard: Arc<Guard>,
    pub index: Arc<DiscoveryIndex>,
    /// CAIP-2 network → RPC (EVM only).
    pub rpcs: Vec<(String, Rpc)>,
    pub limits: Limits,
}

struct ProbeOutcome {
    method: Method,
    result: Result<(Analysis, u16), String>,
}

fn finding_v(id: &str, level: Level, message: impl Into<String>, fix: impl Into<String>) -> Value {
    json!({"id": id, "level": level, "message": message.into(), "fix": fix.into()})
}

impl BazaarAudit {
    async fn fetch_well_known(&self, origin: &Url, until: Instant) -> (Value, Option<Value>, bool) {
        let url = origin.join("/.well-known/x402").expect("joinable");
        let timeout = self
            .limits
            .per_request
            .min(until.saturating_duration_since(Instant::now()));
        let mut wk =
            json!({"url": url.as_str(), "httpStatus": Value::Null, "found": false, "entries": 0});
        if timeout.is_zero() {
            wk["error"] = json!("deadline");
            return (wk, None, false);
        }
        match probe(
            &self.client,
            &transport_url(&url, &self.guard),
            &Method::GET,
            self.limits.max_redirects,
            self.limits.max_bytes,
            timeout,
        )
        .await
        {
            Ok(r) => {
                wk["httpStatus"] = json!(r.status.as_u16());
                if r.status.is_success() {
                    match serde_json::from_slice::<Value>(&r.body) {
                        Ok(v) if v.get("resources").is_some_and(Value::is_array) => {
                            wk["found"] = json!(true);
                            wk["entries"] =
                                json!(v["resources"].as_array().map(Vec::len).unwrap_or(0));
                            if let Some(ver) = v.get("version") {
                                wk["version"] = ver.clone();
                            }
                            return (wk, Some(v), true);
                        }
                        Ok(_) => wk["error"] = json!("the document has no `resources` array"),
                        Err(_) => {
                            wk["error"] = json!(if r.truncated {
                                "the document is over the size cap"
                            } else {
                                "the document is not JSON"
                            })
                        }
                    }
                }
                (wk, None, true)
            }
            Err(e) => {
                wk["error"] = json!(format!("{}: {e}", e.code()));
                (wk, None, false)
            }
        }
    }

    async fn probe_route(
        &self,
        url: Url,
        method: Method,
        until: Instant,
        sem: Arc<Semaphore>,
    ) -> ProbeOutcome {
        let _permit = sem.acquire_owned().await;
        let left = until.saturating_duration_since(Instant::now());
        if left < Duration::from_millis(100) {
            return ProbeOutcome {
                method,
                result: Err("deadline".into()),
            };
        }
        let timeout = self.limits.per_request.min(left);
        let sent = transport_url(&url, &self.guard);
        match probe(
            &self.client,
            &sent,
            &method,
            self.limits.max_redirects,
            self.limits.max_bytes,
            timeout,
        )
        .await
        {
            Ok(r) => {
                let a = analyse(
                    &ProbeView {
                        url: &url,
                        final_url: &r.final_url,
                        method: method.as_str(),
                        status: r.status.as_u16(),
                        headers: &r.headers,
                        body: &r.body,
                        truncated: r.truncated,
                    },
                    &self.guard,
                );
                let s = r.status.as_u16();
                ProbeOutcome {
                    method,
                    result: Ok((a, s)),
                }
            }
            Err(e) => ProbeOutcome {
                method,
                result: Err(e.code().to_string()),
            },
        }
    }

    /// Runs the audit. `arrived` is when the request reached the service.
    pub async fn run(&self, input: &str, origin: Url, arrived: Instant) -> Result<Value, Refusal> {
        let started = Instant::now();
        let l = &self.limits;
        let hard = arrived + l.hard_deadline;
        if hard.saturating_duration_since(started) < l.min_time_left {
            return Err(refuse(StatusCode::BAD_GATEWAY, "too_little_time", format!("only {} ms were left of the {} s budget after payment verification; nothing was audited and you were not charged", hard.saturating_duration_since(started).as_millis(), l.hard_deadline.as_secs())));
        }
        let probes_until = probe_deadline(arrived, started, l).min(hard);
        // Index and chain look-ups stop a little before the hard deadline to leave time to answer.
        let index_until = hard - Duration::from_millis(300);
        let host = origin.host_str().unwrap_or("").to_string();

        // The search by host runs while the host is read and probed.
        let search_fut = {
            let index = self.index.clone();
            let host = host.clone();
            async move { index.search(&host, index_until).await }
        };
        let host_fut = async {
            let (wk, doc, reachable) = self.fetch_well_known(&origin, probes_until).await;
            let (listed, bad) = match &doc {
                Some(d) => parse_well_known(d, &origin),
                None => (Vec::new(), Vec::new()),
            };
            // Which (route, method) pairs are probed.
            let sem = Arc::new(Semaphore::new(l.concurrency.max(1)));
            let mut jobs = Vec::new();
            let mut probed_routes = 0usize;
            let mut plan: Vec<(usize, Option<&'static str>)> = Vec::new();
            for (i, r) in listed.iter().enumerate() {
                if !same_host(&r.url, &origin) {
                    plan.push((i, Some("other_host")));
                    continue;
                }
                if probed_routes >= l.max_routes {
                    plan.push((i, Some("route_limit")));
                    continue;
                }
                probed_routes += 1;
                plan.push((i, None));
                for m in &r.methods {
                    jobs.push((
                        i,
                        self.probe_route(r.url.clone(), m.clone(), probes_until, sem.clone()),
                    ));
                }
            }
            let (idx, futs): (Vec<usize>, Vec<_>) = jobs.into_iter().unzip();
            let outcomes = futures_util::future::join_all(futs).await;
            let mut by_route: BTreeMap<usize, Vec<ProbeOutcome>> = BTreeMap::new();
            for (i, o) in idx.into_iter().zip(outcomes) {
                by_route.entry(i).or_default().push(o);
            }
            (wk, doc.is_some(), reachable, listed, bad, plan, by_route)
        };
        let (search, (wk, wk_found, wk_reachable, listed, bad_entries, plan, mut by_route)) =
            tokio::join!(search_fut, host_fut);

        // Reachability: any HTTP answer from the host counts.
        let any_answer = wk_reachable
            || by_route
                .values()
                .flatten()
                .any(|o| o.result.as_ref().is_ok());
        if !any_answer {
            let why = wk
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no answer")
                .to_string();
            return Err(refuse(StatusCode::BAD_GATEWAY, "host_unreachable", format!("{host} did not answer any request ({why}); nothing was audited and you were not charged")));
        }

        // payTo addresses the live challenges revealed (v2 and v1), at most max_pay_tos.
        let mut pay_tos: Vec<(String, String)> = Vec::new();
        let mut pay_tos_dropped = 0usize;
        for o in by_route.values().flatten() {
            if let Ok((a, _)) = &o.result {
                for (net, addr) in &a.pay_tos {
                    let valid = match known_networks::family_of(net) {
                        Some(Family::Evm) => address::is_valid_evm(addr),
                        Some(Family::Solana) => address::is_valid_solana(addr),
                        None => false,
                    };
                    let dup = pay_tos.iter().any(|(_, x)| x.eq_ignore_ascii_case(addr));
                    if valid && !dup {
                        if pay_tos.len() < l.max_pay_tos {
                            pay_tos.push((net.clone(), addr.clone()));
                        } else {
                            pay_tos_dropped += 1;
                        }
                    }
                }
            }
        }

        // Merchant look-ups and chain facts, concurrently, before the hard deadline.
        let merchant_futs = pay_tos.iter().map(|(_, addr)| {
            let index = self.index.clone();
            let addr = addr.clone();
            let pages = l.max_pages;
            async move { index.merchant(&addr, pages, index_until).await }
        });
        let onchain_fut = self.onchain(&pay_tos, index_until);
        let (merchants, onchain): (Vec<Result<MerchantPages, String>>, Vec<Value>) =
            tokio::join!(futures_util::future::join_all(merchant_futs), onchain_fut);

        let merchant_ok = merchants.iter().filter(|m| m.is_ok()).count();
        if merchant_ok == 0 && search.is_err() {
            let why = merchants
                .iter()
                .find_map(|m| m.as_ref().err())
                .or(search.as_ref().err())
                .cloned()
                .unwrap_or_default();
            return Err(refuse(
                StatusCode::BAD_GATEWAY,
                "discovery_unavailable",
                format!(
                    "the discovery index ({}) did not answer in time: {why}; you were not charged",
                    self.index.source()
                ),
            ));
        }

        // Index items on this host, from every look-up, by URL.
        let mut items: Vec<Value> = Vec::new();
        let mut push_item = |it: &Value| {
            let Some(u) = item_url(it) else { return };
            let Ok(uu) = Url::parse(&u) else { return };
            if !same_host(&uu, &origin) && uu.host_str() != origin.host_str() {
                return;
            }
            if !items
                .iter()
                .any(|x| item_url(x).as_deref() == Some(u.as_str()))
            {
                items.push(it.clone());
            }
        };
        let mut pay_to_rows = Vec::new();
        for ((net, addr), m) in pay_tos.iter().zip(&merchants) {
            match m {
                Ok(m) => {
                    let on_host = m.resources.iter().filter(|it| item_url(it).and_then(|u| Url::parse(&u).ok()).is_some_and(|u| u.host_str() == origin.host_str())).count();
                    for it in &m.resources {
                        push_item(it);
                    }
                    pay_to_rows.push(json!({"network": known_networks::short_name(net), "payTo": addr, "indexedTotalForPayTo": m.total.unwrap_or(m.resources.len() as u64), "indexedOnHost": on_host, "pagesRead": m.pages, "incomplete": m.incomplete, "error": Value::Null}));
                }
                Err(e) => pay_to_rows.push(json!({"network": known_networks::short_name(net), "payTo": addr, "indexedTotalForPayTo": Value::Null, "indexedOnHost": Value::Null, "error": e})),
            }
        }
        let (search_hits, search_error) = match &search {
            Ok(res) => {
                let hits: Vec<&Value> = res
                    .iter()
                    .filter(|it| {
                        item_url(it)
                            .and_then(|u| Url::parse(&u).ok())
                            .is_some_and(|u| u.host_str() == origin.host_str())
                    })
                    .collect();
                for it in &hits {
                    push_item(it);
                }
                (json!(hits.len()), Value::Null)
            }
            Err(e) => (Value::Null, json!(e)),
        };

        // Per-route results.
        let mut findings: Vec<Value> = Vec::new();
        let mut routes_out = Vec::new();
        let (mut indexed_n, mut not_indexed_n, mut on_base, mut on_sol, mut probed_n) =
            (0, 0, 0, 0, 0);
        let mut ready_routes = 0usize;
        let mut same_host_routes = 0usize;
        for (i, r) in listed.iter().enumerate() {
            let skipped = plan.iter().find(|(j, _)| *j == i).and_then(|(_, s)| *s);
            let on_host = skipped != Some("other_host");
            let matches: Vec<&Value> = items
                .iter()
                .filter(|it| {
                    item_url(it)
                        .and_then(|u| Url::parse(&u).ok())
                        .is_some_and(|u| {
                            same_resource(&u, &r.url)
                                || (u.host_str() == r.url.host_str()
                                    && u.path().trim_end_matches('/')
                                        == r.url.path().trim_end_matches('/'))
                        })
                })
                .collect();
            let indexed = !matches.is_empty();
            let mut indexed_networks: Vec<String> = Vec::new();
            let mut last: Option<String> = None;
            for it in &matches {
                for n in item_networks(it) {
                    let s = known_networks::short_name(&n);
                    if !indexed_networks.contains(&s) {
                        indexed_networks.push(s);
                    }
                }
                if let Some(t) = item_last_updated(it) {
                    if last.as_ref().is_none_or(|x| &t > x) {
                        last = Some(t);
                    }
                }
            }
            let mut advertised: Vec<String> = Vec::new();
            let mut probes = Vec::new();
            let mut route_findings: Vec<Value> = Vec::new();
            let mut any_ready = false;
            let mut probed = false;
            for o in by_route.remove(&i).unwrap_or_default() {
                match o.result {
                    Ok((a, status)) => {
                        probed = true;
                        for n in &a.networks {
                            let s = known_networks::short_name(n);
                            if !advertised.contains(&s) {
                                advertised.push(s);
                            }
                        }
                        let ready = a.valid_challenge && a.x402_version == Some(2) && a.discovery.bazaar && a.discovery.schema_valid == Some(true);
                        any_ready |= ready;
                        probes.push(json!({
                            "method": o.method.as_str(),
                            "httpStatus": status,
                            "x402Version": a.x402_version,
                            "challengeSource": a.challenge_source,
                            "validChallenge": a.valid_challenge,
                            "bazaar": {"present": a.discovery.bazaar, "method": a.discovery.method, "methodEnum": a.discovery.method_enum, "schemaValid": a.discovery.schema_valid},
                            "fail": a.count(Level::Fail),
                            "warn": a.count(Level::Warn),
                        }));
                        for c in a.checks.iter().filter(|c| c.level != Level::Pass) {
                            route_findings.push(json!({"id": c.id, "level": c.level, "method": o.method.as_str(), "message": c.message, "fix": c.fix}));
                        }
                    }
                    Err(code) => probes.push(json!({"method": o.method.as_str(), "httpStatus": Value::Null, "error": code})),
                }
            }
            if on_host {
                same_host_routes += 1;
                if indexed {
                    indexed_n += 1;
                } else {
                    not_indexed_n += 1;
                }
                if indexed_networks.iter().any(|n| n == "base") {
                    on_base += 1;
                }
                if indexed_networks.iter().any(|n| n == "solana") {
                    on_sol += 1;
                }
                if any_ready {
                    ready_routes += 1;
                }
            }
            if probed {
                probed_n += 1;
            }
            if on_host && !indexed {
                if any_ready {
                    route_findings.push(finding_v("not_indexed", Level::Fail, format!("{} is not in the index although its challenge is ready", r.url), "a listing appears only after one settled v2 payment through the CDP facilitator with the bazaar extension echoed by the client; make one real paid call (CDP lists within minutes, its list is cached up to 10 minutes)"));
                } else if probed {
                    route_findings.push(finding_v("not_indexed", Level::Fail, format!("{} is not in the index and its challenge is not ready for it", r.url), "fix the failing checks (a v2 challenge in PAYMENT-REQUIRED with a valid extensions.bazaar), then make one settled payment through the CDP facilitator"));
                } else {
                    route_findings.push(finding_v("not_indexed", Level::Fail, format!("{} is not in the index", r.url), "make one settled v2 payment through the CDP facilitator with the bazaar extension echoed"));
                }
            }
            if indexed && probed {
                let missing: Vec<&String> = advertised
                    .iter()
                    .filter(|n| !indexed_networks.contains(n))
                    .collect();
                if !missing.is_empty() && !indexed_networks.is_empty() {
                    route_findings.push(finding_v("network_not_indexed", Level::Warn, format!("advertised on {} but indexed only on {}", join(&missing), indexed_networks.join(", ")), "each network's listing needs a settled payment on that network through a facilitator that catalogues"));
                }
            }
            if let Some(t) = &last {
                if let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) {
                    let age =
                        chrono::Utc::now().signed_duration_since(d.with_timezone(&chrono::Utc));
                    if age > chrono::Duration::days(25) {
                        route_findings.push(finding_v("stale_listing", Level::Warn, format!("last indexed {t}, {} days ago", age.num_days()), "resources without a paid call in about 30 days drop out of the catalogue; a paid call refreshes it"));
                    }
                }
            }
            routes_out.push(json!({
                "url": r.url.as_str(),
                "methods": r.methods.iter().map(Method::as_str).collect::<Vec<_>>(),
                "probed": probed,
                "skippedReason": skipped.map(Value::from).unwrap_or_else(|| if probed { Value::Null } else { json!("deadline_or_unreachable") }),
                "indexed": indexed,
                "indexedNetworks": indexed_networks,
                "advertisedNetworks": advertised,
                "lastIndexed": last,
                "probes": probes,
                "findings": route_findings,
            }));
        }

        // Index entries on this host that the well-known document does not list.
        let not_listed: Vec<String> = items
            .iter()
            .filter_map(item_url)
            .filter(|u| {
                Url::parse(u)
                    .map(|uu| {
                        !listed.iter().any(|r| {
                            same_resource(&uu, &r.url)
                                || (uu.host_str() == r.url.host_str()
                                    && uu.path().trim_end_matches('/')
                                        == r.url.path().trim_end_matches('/'))
                        })
                    })
                    .unwrap_or(false)
            })
            .collect();

        // Host-level findings.
        if !wk_found {
            findings.push(finding_v("well_known_missing", Level::Fail, format!("{} not found or not a version-1 document (HTTP {})", wk["url"].as_str().unwrap_or(""), wk["httpStatus"]), "serve /.well-known/x402 as {\"version\": 1, \"resources\": [\"https://host/route\", \"POST /route\"]} so auditors and x402scan can enumerate the paid routes"));
        } else if same_host_routes == 0 {
            findings.push(finding_v(
                "well_known_empty",
                Level::Fail,
                "/.well-known/x402 lists no route on this host",
                "list every paid route: absolute URLs or \"METHOD /path\"",
            ));
        }
        if !bad_entries.is_empty() {
            findings.push(finding_v(
                "well_known_entries",
                Level::Warn,
                format!(
                    "{} unreadable entries: {}",
                    bad_entries.len(),
                    bad_entries
                        .iter()
                        .take(5)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "entries are absolute URLs or \"METHOD /path\" strings",
            ));
        }
        let other_hosts = plan
            .iter()
            .filter(|(_, s)| *s == Some("other_host"))
            .count();
        if other_hosts > 0 {
            findings.push(finding_v("other_hosts", Level::Warn, format!("{other_hosts} listed route(s) are on other hosts and were not probed"), "audit those hosts separately; list only this origin's routes in its /.well-known/x402"));
        }
        let over = plan
            .iter()
            .filter(|(_, s)| *s == Some("route_limit"))
            .count();
        if over > 0 {
            findings.push(finding_v("route_limit", Level::Warn, format!("{over} route(s) beyond the first {} were not probed (their index status is still reported)", l.max_routes), ""));
        }
        if !not_listed.is_empty() {
            findings.push(finding_v(
                "indexed_not_listed",
                Level::Warn,
                format!(
                    "{} indexed resource(s) on this host are not in /.well-known/x402",
                    not_listed.len()
                ),
                "list them in /.well-known/x402, or let them lapse if they are retired",
            ));
        }
        if pay_tos_dropped > 0 {
            findings.push(finding_v(
                "pay_to_limit",
                Level::Warn,
                format!(
                    "{pay_tos_dropped} more payTo address(es) were not looked up (at most {})",
                    l.max_pay_tos
                ),
                "a payTo per request (escrow per order) is never catalogued; use one stable payTo",
            ));
        }
        if merchants.iter().any(|m| m.is_err()) {
            findings.push(finding_v(
                "index_partial",
                Level::Warn,
                "some merchant look-ups failed; the index view is partial",
                "",
            ));
        }

        let verdict = if !wk_found {
            "no_well_known"
        } else if same_host_routes == 0 {
            "no_routes"
        } else if not_indexed_n == 0 {
            "fully_indexed"
        } else if indexed_n > 0 {
            "partially_indexed"
        } else if ready_routes > 0 {
            "not_indexed"
        } else {
            "not_ready"
        };

        let (mut fail, mut warn) = (0usize, 0usize);
        let route_findings = routes_out
            .iter()
            .flat_map(|r| r["findings"].as_array().into_iter().flatten());
        for f in findings.iter().chain(route_findings) {
            match f["level"].as_str() {
                Some("fail") => fail += 1,
                Some("warn") => warn += 1,
                _ => {}
            }
        }
        Ok(json!({
            "ok": true,
            "target": {"input": input, "host": host, "origin": origin.as_str().trim_end_matches('/')},
            "verdict": verdict,
            "summary": {
                "routesListed": listed.len(),
                "routesProbed": probed_n,
                "indexed": indexed_n,
                "notIndexed": not_indexed_n,
                "indexedOnBase": on_base,
                "indexedOnSolana": on_sol,
                "fail": fail,
                "warn": warn,
            },
            "wellKnown": wk,
            "index": {
                "source": self.index.source(),
                "payTos": pay_to_rows,
                "searchHitsOnHost": search_hits,
                "searchError": search_error,
                "indexedNotListed": not_listed,
            },
            "onchain": onchain,
            "routes": routes_out,
            "findings": findings,
            "elapsedMs": arrived.elapsed().as_millis() as u64,
            "probeWindowMs": probes_until.saturating_duration_since(arrived).as_millis() as u64,
        }))
    }

    /// One boolean per question per EVM payTo: holds USDC on the network, received USDC lately.
    async fn onchain(&self, pay_tos: &[(String, String)], until: Instant) -> Vec<Value> {
        let mut jobs = Vec::new();
        for (_, addr) in pay_tos
            .iter()
            .filter(|(n, _)| known_networks::family_of(n) == Some(Family::Evm))
        {
            for (net, rpc) in &self.rpcs {
                let Some(usdc) = known_networks::by_caip2(net)
                    .and_then(|n| n.usdc)
                    .map(|u| u.0)
                else {
                    continue;
                };
                let rpc = rpc.clone();
                let addr = addr.clone();
                let net = net.clone();
                let blocks = self.limits.transfer_blocks;
                jobs.push(async move {
                    let left = until.saturating_duration_since(Instant::now());
                    let bal = tokio::time::timeout(left, rpc.token_balance(usdc, &addr)).await.unwrap_or_else(|_| Err("deadline".into()));
                    let recv = tokio::time::timeout(until.saturating_duration_since(Instant::now()), rpc.received_recently(usdc, &addr, blocks)).await.unwrap_or_else(|_| Err("deadline".into()));
                    let short = known_networks::short_name(&net);
                    vec![
                        json!({"id": "holds_usdc", "network": short, "payTo": addr, "question": format!("payTo holds USDC on {short}"), "value": bal.as_ref().ok().map(|b| *b > 0), "error": bal.err()}),
                        json!({"id": "received_usdc_recently", "network": short, "payTo": addr, "question": format!("payTo received USDC on {short} in the last {blocks} blocks"), "value": recv.as_ref().ok(), "error": recv.err()}),
                    ]
                });
            }
        }
        futures_util::future::join_all(jobs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_deadline_rule() {
        let l = Limits::default();
        let t0 = Instant::now();
        // Fast verification: probes end 12 s after arrival.
        assert_eq!(probe_deadline(t0, t0, &l), t0 + Duration::from_secs(12));
        assert_eq!(
            probe_deadline(t0, t0 + Duration::from_secs(3), &l),
            t0 + Duration::from_secs(12)
        );
        // Slow verification (10 s): 60% of the 8 s left → probes end at 14.8 s.
        let d = probe_deadline(t0, t0 + Duration::from_secs(10), &l);
        assert_eq!(d, t0 + Duration::from_millis(14_800));
    }

    #[test]
    fn targets_and_well_known() {
        let g = Guard::new(vec!["127.0.0.1/32".parse().unwrap()]);
        assert_eq!(
            parse_target("example.com", &g).unwrap().as_str(),
            "https://example.com/"
        );
        assert_eq!(
            parse_target("https://example.com/x?y", &g)
                .unwrap()
                .as_str(),
            "https://example.com/"
        );
        assert_eq!(
            parse_target("http://example.com", &g).unwrap_err().code,
            "https_only"
        );
        assert_eq!(
            parse_target("ftp://example.com", &g).unwrap_err().code,
            "https_only"
        );
        assert_eq!(
            parse_target("10.0.0.1", &g).unwrap_err().code,
            "blocked_target"
        );
        assert_eq!(
            parse_target("localhost", &g).unwrap_err().code,
            "blocked_target"
        );
        let o = parse_target("127.0.0.1:8443", &g).unwrap();
        assert_eq!(transport_url(&o, &g).as_str(), "http://127.0.0.1:8443/");
        let strict = Guard::new(vec![]);
        let pub_o = parse_target("example.com", &strict).unwrap();
        assert_eq!(
            transport_url(&pub_o, &strict).as_str(),
            "https://example.com/"
        );

        let origin = Url::parse("https://api.example.com/").unwrap();
        let doc = json!({"version": 1, "resources": ["https://api.example.com/a", "POST /a", "GET /b", "https://other.example.com/c", {"url": "/d", "method": "post"}, 5]});
        let (routes, bad) = parse_well_known(&doc, &origin);
        assert_eq!(routes.len(), 4);
        assert_eq!(routes[0].methods, vec![Method::GET, Method::POST]);
        assert_eq!(routes[1].url.as_str(), "https://api.example.com/b");
        assert_eq!(routes[3].methods, vec![Method::POST]);
        assert_eq!(bad, vec!["5".to_string()]);
    }
}
