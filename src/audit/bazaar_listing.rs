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

use super::challenge_checks::{analyse, ProbeView};
use super::discovery_index::{DiscoveryIndex, MerchantPages};
use super::known_networks::{self, Family};
use super::listing_report::{
    count_levels, host_findings, index_view, indexed_not_listed, revealed_pay_tos, route_report,
    skip_reasons, tally, verdict, HostFacts, HostRead, ProbeOutcome, RouteReport,
};
use super::onchain::Rpc;
use super::probe;
use crate::net::{FetchError, FetchResponse, Guard, GuardedClient};

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

/// Same host name (case-insensitive) and port.
pub(super) fn same_host(a: &Url, origin: &Url) -> bool {
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

/// The refusal when less than `min_time_left` of the budget is left as the work starts (payment
/// verification took the rest): nothing is audited, nothing charged.
fn check_time_left(hard: Instant, started: Instant, l: &Limits) -> Result<(), Refusal> {
    let left = hard.saturating_duration_since(started);
    if left < l.min_time_left {
        return Err(refuse(StatusCode::BAD_GATEWAY, "too_little_time", format!("only {} ms were left of the {} s budget after payment verification; nothing was audited and you were not charged", left.as_millis(), l.hard_deadline.as_secs())));
    }
    Ok(())
}

/// The refusal when the host answered nothing at all (any HTTP answer, an error status
/// included, counts as an answer).
fn unreachable(host: &str, read: &HostRead) -> Option<Refusal> {
    let any_answer = read.reachable || read.by_route.values().flatten().any(|o| o.result.is_ok());
    if any_answer {
        return None;
    }
    let why = read
        .well_known
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or("no answer");
    Some(refuse(StatusCode::BAD_GATEWAY, "host_unreachable", format!("{host} did not answer any request ({why}); nothing was audited and you were not charged")))
}

/// The refusal when the index answered none of the look-ups: there is nothing to compare with.
fn index_unavailable(
    merchants: &[Result<MerchantPages, String>],
    search: &Result<Vec<Value>, String>,
    source: &str,
) -> Option<Refusal> {
    if merchants.iter().any(Result::is_ok) || search.is_ok() {
        return None;
    }
    let why = merchants
        .iter()
        .find_map(|m| m.as_ref().err())
        .or(search.as_ref().err())
        .cloned()
        .unwrap_or_default();
    Some(refuse(
        StatusCode::BAD_GATEWAY,
        "discovery_unavailable",
        format!(
            "the discovery index ({source}) did not answer in time: {why}; you were not charged"
        ),
    ))
}

impl BazaarAudit {
    /// Reads `/.well-known/x402` before `until`: the report's `wellKnown` part, the document
    /// when it has a `resources` array, and whether the host gave any HTTP answer.
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
        match self.get(&url, &Method::GET, timeout).await {
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

    /// One unpaid request to the host under the route's redirect and size caps.
    async fn get(
        &self,
        url: &Url,
        method: &Method,
        timeout: Duration,
    ) -> Result<FetchResponse, FetchError> {
        probe(
            &self.client,
            &transport_url(url, &self.guard),
            method,
            self.limits.max_redirects,
            self.limits.max_bytes,
            timeout,
        )
        .await
    }

    /// Probes one (route, method) once, when a permit of `sem` and enough time are left, and
    /// analyses the answer.
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
        let result = match self.get(&url, &method, timeout).await {
            Ok(r) => {
                let view = ProbeView {
                    url: &url,
                    final_url: &r.final_url,
                    method: method.as_str(),
                    status: r.status.as_u16(),
                    headers: &r.headers,
                    body: &r.body,
                    truncated: r.truncated,
                };
                Ok((analyse(&view, &self.guard), r.status.as_u16()))
            }
            Err(e) => Err(e.code().to_string()),
        };
        ProbeOutcome { method, result }
    }

    /// Reads the host's well-known document and probes each listed (route, method) that is not
    /// skipped, at most `concurrency` at a time, all before `until`.
    async fn read_host(&self, origin: &Url, until: Instant) -> HostRead {
        let (well_known, doc, reachable) = self.fetch_well_known(origin, until).await;
        let (listed, bad_entries) = match &doc {
            Some(d) => parse_well_known(d, origin),
            None => (Vec::new(), Vec::new()),
        };
        let skipped = skip_reasons(&listed, origin, self.limits.max_routes);
        let sem = Arc::new(Semaphore::new(self.limits.concurrency.max(1)));
        let mut jobs = Vec::new();
        for (i, r) in listed.iter().enumerate() {
            if skipped[i].is_some() {
                continue;
            }
            for m in &r.methods {
                let job = self.probe_route(r.url.clone(), m.clone(), until, sem.clone());
                jobs.push((i, job));
            }
        }
        let (idx, futs): (Vec<usize>, Vec<_>) = jobs.into_iter().unzip();
        let outcomes = futures_util::future::join_all(futs).await;
        let mut by_route: BTreeMap<usize, Vec<ProbeOutcome>> = BTreeMap::new();
        for (i, o) in idx.into_iter().zip(outcomes) {
            by_route.entry(i).or_default().push(o);
        }
        HostRead {
            well_known,
            well_known_found: doc.is_some(),
            reachable,
            listed,
            bad_entries,
            skipped,
            by_route,
        }
    }

    /// The merchant look-up of each payTo and the chain facts, concurrently, before `until`.
    async fn look_up_pay_tos(
        &self,
        pay_tos: &[(String, String)],
        until: Instant,
    ) -> (Vec<Result<MerchantPages, String>>, Vec<Value>) {
        let merchant_futs = pay_tos
            .iter()
            .map(|(_, addr)| self.index.merchant(addr, self.limits.max_pages, until));
        tokio::join!(
            futures_util::future::join_all(merchant_futs),
            self.onchain(pay_tos, until)
        )
    }

    /// Runs the audit. `arrived` is when the request reached the service.
    pub async fn run(&self, input: &str, origin: Url, arrived: Instant) -> Result<Value, Refusal> {
        let started = Instant::now();
        let l = &self.limits;
        let hard = arrived + l.hard_deadline;
        check_time_left(hard, started, l)?;
        let probes_until = probe_deadline(arrived, started, l).min(hard);
        // Index and chain look-ups stop a little before the hard deadline to leave time to answer.
        let index_until = hard - Duration::from_millis(300);
        let host = origin.host_str().unwrap_or("").to_string();

        // The search by host runs while the host is read and probed.
        let (search, mut read) = tokio::join!(
            self.index.search(&host, index_until),
            self.read_host(&origin, probes_until)
        );
        if let Some(refusal) = unreachable(&host, &read) {
            return Err(refusal);
        }
        let revealed = read.by_route.values().flatten();
        let revealed = revealed.filter_map(|o| o.result.as_ref().ok());
        let (pay_tos, pay_tos_dropped) =
            revealed_pay_tos(revealed.flat_map(|(a, _)| &a.pay_tos), l.max_pay_tos);
        let (merchants, onchain) = self.look_up_pay_tos(&pay_tos, index_until).await;
        if let Some(refusal) = index_unavailable(&merchants, &search, self.index.source()) {
            return Err(refusal);
        }

        let index = index_view(&origin, &pay_tos, &merchants, &search);
        let now = chrono::Utc::now();
        let routes: Vec<RouteReport> = (read.listed.iter().enumerate())
            .map(|(i, r)| {
                let outcomes = read.by_route.remove(&i).unwrap_or_default();
                route_report(r, read.skipped[i], &index.items, outcomes, now)
            })
            .collect();
        let t = tally(&routes);
        let not_listed = indexed_not_listed(&index.items, &read.listed);
        let facts = HostFacts {
            indexed_not_listed: not_listed.len(),
            pay_tos_dropped,
            index_partial: merchants.iter().any(Result::is_err),
        };
        let findings = host_findings(&read, &t, &facts, l);
        let routes: Vec<Value> = routes.into_iter().map(|r| r.json).collect();
        let (fail, warn) = count_levels(&findings, &routes);
        Ok(json!({
            "ok": true,
            "target": {"input": input, "host": host, "origin": origin.as_str().trim_end_matches('/')},
            "verdict": verdict(read.well_known_found, &t),
            "summary": {
                "routesListed": read.listed.len(),
                "routesProbed": t.probed,
                "indexed": t.indexed,
                "notIndexed": t.not_indexed,
                "indexedOnBase": t.on_base,
                "indexedOnSolana": t.on_solana,
                "fail": fail,
                "warn": warn,
            },
            "wellKnown": read.well_known,
            "index": {
                "source": self.index.source(),
                "payTos": index.pay_to_rows,
                "searchHitsOnHost": index.search_hits,
                "searchError": index.search_error,
                "indexedNotListed": not_listed,
            },
            "onchain": onchain,
            "routes": routes,
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

    #[test]
    fn too_little_time_after_verification_is_refused() {
        let l = Limits::default();
        let t0 = Instant::now();
        let hard = t0 + l.hard_deadline;
        assert!(check_time_left(hard, t0 + Duration::from_secs(15), &l).is_ok());
        let r = check_time_left(hard, t0 + Duration::from_millis(15_001), &l).unwrap_err();
        assert_eq!(
            (r.status, r.code),
            (StatusCode::BAD_GATEWAY, "too_little_time")
        );
        assert!(r
            .message
            .starts_with("only 2999 ms were left of the 18 s budget"));
    }

    #[test]
    fn refusals_when_nothing_answered() {
        let mut read = HostRead {
            well_known: json!({"error": "connect_failed: refused"}),
            well_known_found: false,
            reachable: false,
            listed: vec![],
            bad_entries: vec![],
            skipped: vec![],
            by_route: BTreeMap::new(),
        };
        let r = unreachable("h.example", &read).unwrap();
        assert_eq!(r.code, "host_unreachable");
        assert!(r
            .message
            .starts_with("h.example did not answer any request (connect_failed: refused)"));
        read.reachable = true;
        assert!(unreachable("h.example", &read).is_none());

        let failed: Vec<Result<MerchantPages, String>> = vec![Err("timeout".into())];
        let r = index_unavailable(&failed, &Err("search".into()), "cdp").unwrap();
        assert_eq!(r.code, "discovery_unavailable");
        assert_eq!(
            r.message,
            "the discovery index (cdp) did not answer in time: timeout; you were not charged"
        );
        assert!(index_unavailable(&failed, &Ok(vec![]), "cdp").is_none());
        assert!(index_unavailable(&[], &Err("search".into()), "cdp").is_some());
    }
}
