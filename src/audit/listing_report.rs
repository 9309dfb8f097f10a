//! The Bazaar listing report (docs/audit.md), made from what `bazaar_listing` gathered: the
//! host's well-known document and probes, the index look-ups and the chain facts. Pure: no I/O,
//! the clock is a parameter, so every rule here is unit-tested.

use http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use url::Url;

use super::bazaar_listing::{same_host, same_resource, Limits, ListedRoute};
use super::challenge_checks::{Analysis, Level};
use super::discovery_index::{item_last_updated, item_networks, item_url, MerchantPages};
use super::known_networks;

/// The answer to one probe of one (route, method): the analysis and HTTP status, or the
/// fetch error's code.
pub struct ProbeOutcome {
    pub method: Method,
    pub result: Result<(Analysis, u16), String>,
}

/// What reading the host gave.
pub struct HostRead {
    /// The `wellKnown` part of the report.
    pub well_known: Value,
    /// The document was read and has a `resources` array.
    pub well_known_found: bool,
    /// The well-known request got an HTTP answer (any status).
    pub reachable: bool,
    pub listed: Vec<ListedRoute>,
    /// Entries of the document that could not be read.
    pub bad_entries: Vec<String>,
    /// One per listed route, in order: why it was not probed (`None`: it was).
    pub skipped: Vec<Option<&'static str>>,
    /// Probe outcomes by index in `listed`.
    pub by_route: BTreeMap<usize, Vec<ProbeOutcome>>,
}

pub fn finding_v(
    id: &str,
    level: Level,
    message: impl Into<String>,
    fix: impl Into<String>,
) -> Value {
    json!({"id": id, "level": level, "message": message.into(), "fix": fix.into()})
}

/// Why each listed route is not probed (`None`: it is): routes on other hosts never are, and
/// of this host's routes only the first `max_routes`.
pub fn skip_reasons(
    listed: &[ListedRoute],
    origin: &Url,
    max_routes: usize,
) -> Vec<Option<&'static str>> {
    let mut probed = 0usize;
    listed
        .iter()
        .map(|r| {
            if !same_host(&r.url, origin) {
                Some("other_host")
            } else if probed >= max_routes {
                Some("route_limit")
            } else {
                probed += 1;
                None
            }
        })
        .collect()
}

/// The valid payTo addresses the live challenges revealed (v2 and v1), first seen first,
/// without duplicates (case-insensitive), at most `max`; and how many more were left out.
pub fn revealed_pay_tos<'a>(
    pay_tos: impl IntoIterator<Item = &'a (String, String)>,
    max: usize,
) -> (Vec<(String, String)>, usize) {
    let mut kept: Vec<(String, String)> = Vec::new();
    let mut dropped = 0usize;
    for (net, addr) in pay_tos {
        let valid = match known_networks::family_of(net) {
            Some(known_networks::Family::Evm) => super::address::is_valid_evm(addr),
            Some(known_networks::Family::Solana) => super::address::is_valid_solana(addr),
            None => false,
        };
        let dup = kept.iter().any(|(_, x)| x.eq_ignore_ascii_case(addr));
        if valid && !dup {
            if kept.len() < max {
                kept.push((net.clone(), addr.clone()));
            } else {
                dropped += 1;
            }
        }
    }
    (kept, dropped)
}

/// An index item (by its URL) is about `host`: same host name, whatever the port.
fn item_on_host(item: &Value, host: Option<&str>) -> bool {
    item_url(item)
        .and_then(|u| Url::parse(&u).ok())
        .is_some_and(|u| u.host_str() == host)
}

/// An indexed URL names a listed route: the same resource, or the same host name and path
/// whatever the scheme and port (indexes record what the client called).
fn same_route(indexed: &Url, listed: &Url) -> bool {
    same_resource(indexed, listed)
        || (indexed.host_str() == listed.host_str()
            && indexed.path().trim_end_matches('/') == listed.path().trim_end_matches('/'))
}

/// What the index says about this host.
pub struct IndexView {
    /// Index items on this host from every look-up, by URL, first seen first.
    pub items: Vec<Value>,
    /// One `index.payTos` row per payTo looked up.
    pub pay_to_rows: Vec<Value>,
    /// Search hits on this host (null when the search failed) and the search's error.
    pub search_hits: Value,
    pub search_error: Value,
}

/// Adds an index item on this host to `items` unless one with its URL is there already.
fn add_item(items: &mut Vec<Value>, item: &Value, origin: &Url) {
    let Some(u) = item_url(item) else { return };
    let Ok(uu) = Url::parse(&u) else { return };
    if !same_host(&uu, origin) && uu.host_str() != origin.host_str() {
        return;
    }
    if !items
        .iter()
        .any(|x| item_url(x).as_deref() == Some(u.as_str()))
    {
        items.push(item.clone());
    }
}

/// One `index.payTos` row: what the merchant look-up of this payTo found, or its error.
fn pay_to_row(net: &str, addr: &str, m: &Result<MerchantPages, String>, origin: &Url) -> Value {
    match m {
        Ok(m) => {
            let on_host = m
                .resources
                .iter()
                .filter(|it| item_on_host(it, origin.host_str()))
                .count();
            json!({"network": known_networks::short_name(net), "payTo": addr, "indexedTotalForPayTo": m.total.unwrap_or(m.resources.len() as u64), "indexedOnHost": on_host, "pagesRead": m.pages, "incomplete": m.incomplete, "error": Value::Null})
        }
        Err(e) => {
            json!({"network": known_networks::short_name(net), "payTo": addr, "indexedTotalForPayTo": Value::Null, "indexedOnHost": Value::Null, "error": e})
        }
    }
}

/// Gathers the merchant look-ups (in payTo order) and then the search into one view.
pub fn index_view(
    origin: &Url,
    pay_tos: &[(String, String)],
    merchants: &[Result<MerchantPages, String>],
    search: &Result<Vec<Value>, String>,
) -> IndexView {
    let mut items: Vec<Value> = Vec::new();
    let mut pay_to_rows = Vec::new();
    for ((net, addr), m) in pay_tos.iter().zip(merchants) {
        for it in m.iter().flat_map(|m| &m.resources) {
            add_item(&mut items, it, origin);
        }
        pay_to_rows.push(pay_to_row(net, addr, m, origin));
    }
    let (search_hits, search_error) = match search {
        Ok(res) => {
            let hits: Vec<&Value> = res
                .iter()
                .filter(|it| item_on_host(it, origin.host_str()))
                .collect();
            for it in &hits {
                add_item(&mut items, it, origin);
            }
            (json!(hits.len()), Value::Null)
        }
        Err(e) => (Value::Null, json!(e)),
    };
    IndexView {
        items,
        pay_to_rows,
        search_hits,
        search_error,
    }
}

/// URLs of the index items on this host that the well-known document does not list.
pub fn indexed_not_listed(items: &[Value], listed: &[ListedRoute]) -> Vec<String> {
    items
        .iter()
        .filter_map(item_url)
        .filter(|u| {
            Url::parse(u)
                .map(|uu| !listed.iter().any(|r| same_route(&uu, &r.url)))
                .unwrap_or(false)
        })
        .collect()
}

/// The networks the matching index items list (short names, first seen first) and the
/// latest `lastUpdated` among them.
fn indexed_networks(matches: &[&Value]) -> (Vec<String>, Option<String>) {
    let mut networks: Vec<String> = Vec::new();
    let mut last: Option<String> = None;
    for it in matches {
        for n in item_networks(it) {
            let s = known_networks::short_name(&n);
            if !networks.contains(&s) {
                networks.push(s);
            }
        }
        if let Some(t) = item_last_updated(it) {
            if last.as_ref().is_none_or(|x| &t > x) {
                last = Some(t);
            }
        }
    }
    (networks, last)
}

/// A challenge the index can list: valid, v2, with a bazaar extension whose schema validates.
fn ready_for_index(a: &Analysis) -> bool {
    a.valid_challenge
        && a.x402_version == Some(2)
        && a.discovery.bazaar
        && a.discovery.schema_valid == Some(true)
}

/// What one route's probes showed.
#[derive(Default)]
struct ProbeSummary {
    /// The `probes` rows of the route's report.
    rows: Vec<Value>,
    /// Networks the challenges offer (short names, first seen first).
    advertised: Vec<String>,
    /// The challenges' findings other than passes.
    findings: Vec<Value>,
    /// Some probe got an HTTP answer.
    probed: bool,
    /// Some challenge is ready for the index.
    ready: bool,
}

fn summarise_probes(outcomes: Vec<ProbeOutcome>) -> ProbeSummary {
    let mut s = ProbeSummary::default();
    for o in outcomes {
        let (a, status) = match o.result {
            Ok(r) => r,
            Err(code) => {
                s.rows.push(
                    json!({"method": o.method.as_str(), "httpStatus": Value::Null, "error": code}),
                );
                continue;
            }
        };
        s.probed = true;
        for n in &a.networks {
            let short = known_networks::short_name(n);
            if !s.advertised.contains(&short) {
                s.advertised.push(short);
            }
        }
        s.ready |= ready_for_index(&a);
        s.rows.push(json!({
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
            s.findings.push(json!({"id": c.id, "level": c.level, "method": o.method.as_str(), "message": c.message, "fix": c.fix}));
        }
    }
    s
}

/// Listings without a paid call in about 30 days drop out; warn a little before.
const STALE_AFTER_DAYS: i64 = 25;

/// The `not_indexed` finding of a route on this host, worded by how far its challenge is from
/// being listable.
fn not_indexed_finding(url: &Url, probes: &ProbeSummary) -> Value {
    if probes.ready {
        finding_v("not_indexed", Level::Fail, format!("{url} is not in the index although its challenge is ready"), "a listing appears only after one settled v2 payment through the CDP facilitator with the bazaar extension echoed by the client; make one real paid call (CDP lists within minutes, its list is cached up to 10 minutes)")
    } else if probes.probed {
        finding_v("not_indexed", Level::Fail, format!("{url} is not in the index and its challenge is not ready for it"), "fix the failing checks (a v2 challenge in PAYMENT-REQUIRED with a valid extensions.bazaar), then make one settled payment through the CDP facilitator")
    } else {
        finding_v(
            "not_indexed",
            Level::Fail,
            format!("{url} is not in the index"),
            "make one settled v2 payment through the CDP facilitator with the bazaar extension echoed",
        )
    }
}

/// The `stale_listing` finding when the route was last indexed more than 25 days before `now`.
fn stale_finding(last: Option<&str>, now: chrono::DateTime<chrono::Utc>) -> Option<Value> {
    let t = last?;
    let d = chrono::DateTime::parse_from_rfc3339(t).ok()?;
    let age = now.signed_duration_since(d.with_timezone(&chrono::Utc));
    (age > chrono::Duration::days(STALE_AFTER_DAYS)).then(|| finding_v("stale_listing", Level::Warn, format!("last indexed {t}, {} days ago", age.num_days()), "resources without a paid call in about 30 days drop out of the catalogue; a paid call refreshes it"))
}

/// One route's part of the report and what the summary counts of it.
pub struct RouteReport {
    pub json: Value,
    pub on_host: bool,
    pub indexed: bool,
    pub probed: bool,
    pub ready: bool,
    pub on_base: bool,
    pub on_solana: bool,
}

/// One route's report: its probes, its index entries and the findings about both.
pub fn route_report(
    r: &ListedRoute,
    skipped: Option<&'static str>,
    items: &[Value],
    outcomes: Vec<ProbeOutcome>,
    now: chrono::DateTime<chrono::Utc>,
) -> RouteReport {
    let on_host = skipped != Some("other_host");
    let matches: Vec<&Value> = items
        .iter()
        .filter(|it| {
            item_url(it)
                .and_then(|u| Url::parse(&u).ok())
                .is_some_and(|u| same_route(&u, &r.url))
        })
        .collect();
    let indexed = !matches.is_empty();
    let (indexed_networks, last) = indexed_networks(&matches);
    let mut probes = summarise_probes(outcomes);
    let mut findings = std::mem::take(&mut probes.findings);
    if on_host && !indexed {
        findings.push(not_indexed_finding(&r.url, &probes));
    }
    if indexed && probes.probed {
        let missing: Vec<&String> = probes
            .advertised
            .iter()
            .filter(|n| !indexed_networks.contains(n))
            .collect();
        if !missing.is_empty() && !indexed_networks.is_empty() {
            findings.push(finding_v("network_not_indexed", Level::Warn, format!("advertised on {} but indexed only on {}", join(&missing), indexed_networks.join(", ")), "each network's listing needs a settled payment on that network through a facilitator that catalogues"));
        }
    }
    findings.extend(stale_finding(last.as_deref(), now));
    let has = |name: &str| indexed_networks.iter().any(|n| n == name);
    RouteReport {
        on_host,
        indexed,
        probed: probes.probed,
        ready: probes.ready,
        on_base: has("base"),
        on_solana: has("solana"),
        json: json!({
            "url": r.url.as_str(),
            "methods": r.methods.iter().map(Method::as_str).collect::<Vec<_>>(),
            "probed": probes.probed,
            "skippedReason": skipped.map(Value::from).unwrap_or_else(|| if probes.probed { Value::Null } else { json!("deadline_or_unreachable") }),
            "indexed": indexed,
            "indexedNetworks": indexed_networks,
            "advertisedNetworks": probes.advertised,
            "lastIndexed": last,
            "probes": probes.rows,
            "findings": findings,
        }),
    }
}

fn join(v: &[&String]) -> String {
    v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

/// The route counts of the summary and the verdict: all but `probed` count this host's routes
/// only.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub on_host: usize,
    pub probed: usize,
    pub indexed: usize,
    pub not_indexed: usize,
    pub on_base: usize,
    pub on_solana: usize,
    pub ready: usize,
}

pub fn tally(routes: &[RouteReport]) -> Tally {
    let mut t = Tally::default();
    for r in routes {
        t.probed += usize::from(r.probed);
        if !r.on_host {
            continue;
        }
        t.on_host += 1;
        t.indexed += usize::from(r.indexed);
        t.not_indexed += usize::from(!r.indexed);
        t.on_base += usize::from(r.on_base);
        t.on_solana += usize::from(r.on_solana);
        t.ready += usize::from(r.ready);
    }
    t
}

/// The report's verdict: the first thing that stands between the host and a full listing.
pub fn verdict(well_known_found: bool, t: &Tally) -> &'static str {
    if !well_known_found {
        "no_well_known"
    } else if t.on_host == 0 {
        "no_routes"
    } else if t.not_indexed == 0 {
        "fully_indexed"
    } else if t.indexed > 0 {
        "partially_indexed"
    } else if t.ready > 0 {
        "not_indexed"
    } else {
        "not_ready"
    }
}

/// What the host-level findings are made of besides the host read and the tally.
pub struct HostFacts {
    pub indexed_not_listed: usize,
    pub pay_tos_dropped: usize,
    /// Some merchant look-up failed.
    pub index_partial: bool,
}

/// The findings about the host as a whole, in the report's order.
pub fn host_findings(read: &HostRead, t: &Tally, f: &HostFacts, l: &Limits) -> Vec<Value> {
    let mut findings = Vec::new();
    let wk = &read.well_known;
    if !read.well_known_found {
        findings.push(finding_v("well_known_missing", Level::Fail, format!("{} not found or not a version-1 document (HTTP {})", wk["url"].as_str().unwrap_or(""), wk["httpStatus"]), "serve /.well-known/x402 as {\"version\": 1, \"resources\": [\"https://host/route\", \"POST /route\"]} so auditors and x402scan can enumerate the paid routes"));
    } else if t.on_host == 0 {
        findings.push(finding_v(
            "well_known_empty",
            Level::Fail,
            "/.well-known/x402 lists no route on this host",
            "list every paid route: absolute URLs or \"METHOD /path\"",
        ));
    }
    if !read.bad_entries.is_empty() {
        let shown: Vec<String> = read.bad_entries.iter().take(5).cloned().collect();
        findings.push(finding_v(
            "well_known_entries",
            Level::Warn,
            format!(
                "{} unreadable entries: {}",
                read.bad_entries.len(),
                shown.join(", ")
            ),
            "entries are absolute URLs or \"METHOD /path\" strings",
        ));
    }
    let skipped_for = |why: &str| read.skipped.iter().filter(|s| **s == Some(why)).count();
    let other_hosts = skipped_for("other_host");
    if other_hosts > 0 {
        findings.push(finding_v(
            "other_hosts",
            Level::Warn,
            format!("{other_hosts} listed route(s) are on other hosts and were not probed"),
            "audit those hosts separately; list only this origin's routes in its /.well-known/x402",
        ));
    }
    let over = skipped_for("route_limit");
    if over > 0 {
        findings.push(finding_v("route_limit", Level::Warn, format!("{over} route(s) beyond the first {} were not probed (their index status is still reported)", l.max_routes), ""));
    }
    findings.extend(index_findings(f, l));
    findings
}

/// The host-level findings about the index look-ups.
fn index_findings(f: &HostFacts, l: &Limits) -> Vec<Value> {
    let mut findings = Vec::new();
    if f.indexed_not_listed > 0 {
        findings.push(finding_v(
            "indexed_not_listed",
            Level::Warn,
            format!(
                "{} indexed resource(s) on this host are not in /.well-known/x402",
                f.indexed_not_listed
            ),
            "list them in /.well-known/x402, or let them lapse if they are retired",
        ));
    }
    if f.pay_tos_dropped > 0 {
        findings.push(finding_v(
            "pay_to_limit",
            Level::Warn,
            format!(
                "{} more payTo address(es) were not looked up (at most {})",
                f.pay_tos_dropped, l.max_pay_tos
            ),
            "a payTo per request (escrow per order) is never catalogued; use one stable payTo",
        ));
    }
    if f.index_partial {
        findings.push(finding_v(
            "index_partial",
            Level::Warn,
            "some merchant look-ups failed; the index view is partial",
            "",
        ));
    }
    findings
}

/// (fail, warn) over the host findings and every route's findings.
pub fn count_levels(findings: &[Value], routes: &[Value]) -> (usize, usize) {
    let route_findings = routes
        .iter()
        .flat_map(|r| r["findings"].as_array().into_iter().flatten());
    let (mut fail, mut warn) = (0usize, 0usize);
    for f in findings.iter().chain(route_findings) {
        match f["level"].as_str() {
            Some("fail") => fail += 1,
            Some("warn") => warn += 1,
            _ => {}
        }
    }
    (fail, warn)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(url: &str) -> ListedRoute {
        ListedRoute {
            url: Url::parse(url).unwrap(),
            methods: vec![Method::GET],
        }
    }

    fn origin() -> Url {
        Url::parse("https://api.example.com/").unwrap()
    }

    #[test]
    fn other_hosts_and_routes_past_the_limit_are_skipped() {
        let listed = [
            route("https://api.example.com/a"),
            route("https://other.example.com/b"),
            route("https://API.example.com/c"),
            route("https://api.example.com/d"),
        ];
        assert_eq!(
            skip_reasons(&listed, &origin(), 2),
            vec![None, Some("other_host"), None, Some("route_limit")]
        );
    }

    #[test]
    fn pay_tos_are_valid_distinct_and_bounded() {
        let evm = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
        let pairs = [
            ("eip155:8453".to_string(), evm.to_string()),
            ("eip155:8453".to_string(), evm.to_ascii_lowercase()),
            ("eip155:8453".to_string(), "0x123".to_string()),
            ("unknown:1".to_string(), evm.to_string()),
            (
                "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".to_string(),
                "EPjFWJd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".to_string(),
            ),
        ];
        let (kept, dropped) = revealed_pay_tos(&pairs, 1);
        assert_eq!(kept, vec![pairs[0].clone()]);
        assert_eq!(dropped, 1, "only the valid, new Solana address is left out");
        assert_eq!(revealed_pay_tos(&pairs, 5).0.len(), 2);
    }

    #[test]
    fn the_index_view_keeps_this_hosts_items_once_merchants_first() {
        let a = json!({"resource": "https://api.example.com/a"});
        let b = json!({"resource": "https://api.example.com/b"});
        let elsewhere = json!({"resource": "https://other.example.com/x"});
        let pay_tos = [("eip155:8453".to_string(), "0xabc".to_string())];
        let merchants = [Ok(MerchantPages {
            resources: vec![a.clone(), elsewhere.clone()],
            total: Some(7),
            pages: 1,
            incomplete: false,
        })];
        let search = Ok(vec![b.clone(), a.clone(), elsewhere]);
        let v = index_view(&origin(), &pay_tos, &merchants, &search);
        assert_eq!(v.items, vec![a, b]);
        assert_eq!(v.search_hits, json!(2));
        assert_eq!(v.search_error, Value::Null);
        assert_eq!(v.pay_to_rows[0]["indexedTotalForPayTo"], json!(7));
        assert_eq!(v.pay_to_rows[0]["indexedOnHost"], json!(1));
        assert_eq!(v.pay_to_rows[0]["network"], json!("base"));

        let failed = index_view(&origin(), &pay_tos, &[Err("t".into())], &Err("s".into()));
        assert!(failed.items.is_empty());
        assert_eq!(failed.pay_to_rows[0]["error"], json!("t"));
        assert_eq!(failed.search_error, json!("s"));
    }

    #[test]
    fn indexed_routes_match_by_host_and_path() {
        let items = [
            json!({"resource": "http://api.example.com/a/"}),
            json!({"resource": "https://api.example.com/z?q=1"}),
        ];
        let listed = [route("https://api.example.com/a")];
        assert_eq!(
            indexed_not_listed(&items, &listed),
            vec!["https://api.example.com/z?q=1".to_string()]
        );
    }

    #[test]
    fn a_route_report_says_what_to_fix() {
        let now = chrono::Utc::now();
        let old = (now - chrono::Duration::days(40)).to_rfc3339();
        let items = [
            json!({"resource": "https://api.example.com/a", "lastUpdated": old,
            "accepts": [{"network": "eip155:8453"}]}),
        ];
        let r = route_report(
            &route("https://api.example.com/a"),
            None,
            &items,
            vec![],
            now,
        );
        assert!(r.indexed && r.on_host && r.on_base && !r.on_solana && !r.probed);
        assert_eq!(r.json["indexedNetworks"], json!(["base"]));
        assert_eq!(r.json["skippedReason"], json!("deadline_or_unreachable"));
        assert_eq!(r.json["findings"][0]["id"], json!("stale_listing"));

        let r = route_report(
            &route("https://api.example.com/b"),
            None,
            &items,
            vec![],
            now,
        );
        assert!(!r.indexed);
        assert_eq!(
            r.json["findings"][0]["message"],
            json!("https://api.example.com/b is not in the index")
        );
        let other = route_report(
            &route("https://other.example.com/b"),
            Some("other_host"),
            &items,
            vec![],
            now,
        );
        assert!(!other.on_host);
        assert_eq!(other.json["findings"], json!([]));
        assert_eq!(other.json["skippedReason"], json!("other_host"));
    }

    #[test]
    fn listings_go_stale_after_25_days() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-31T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        assert!(stale_finding(Some("2026-01-06T00:00:00Z"), now).is_none());
        let f = stale_finding(Some("2026-01-05T00:00:00Z"), now).unwrap();
        assert_eq!(
            f["message"],
            json!("last indexed 2026-01-05T00:00:00Z, 26 days ago")
        );
        assert!(stale_finding(Some("yesterday"), now).is_none());
        assert!(stale_finding(None, now).is_none());
    }

    #[test]
    fn the_verdict_names_the_first_obstacle() {
        let t = |on_host, indexed, ready| Tally {
            on_host,
            indexed,
            not_indexed: on_host - indexed,
            ready,
            ..Tally::default()
        };
        assert_eq!(verdict(false, &t(2, 2, 0)), "no_well_known");
        assert_eq!(verdict(true, &t(0, 0, 0)), "no_routes");
        assert_eq!(verdict(true, &t(2, 2, 0)), "fully_indexed");
        assert_eq!(verdict(true, &t(2, 1, 0)), "partially_indexed");
        assert_eq!(verdict(true, &t(2, 0, 1)), "not_indexed");
        assert_eq!(verdict(true, &t(2, 0, 0)), "not_ready");
    }

    #[test]
    fn host_findings_and_their_counts() {
        let read = HostRead {
            well_known: json!({"url": "https://api.example.com/.well-known/x402", "httpStatus": 404}),
            well_known_found: false,
            reachable: true,
            listed: vec![],
            bad_entries: vec!["5".into()],
            skipped: vec![Some("other_host"), None, Some("route_limit")],
            by_route: BTreeMap::new(),
        };
        let facts = HostFacts {
            indexed_not_listed: 1,
            pay_tos_dropped: 2,
            index_partial: true,
        };
        let f = host_findings(&read, &Tally::default(), &facts, &Limits::default());
        let ids: Vec<&str> = f.iter().map(|f| f["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                "well_known_missing",
                "well_known_entries",
                "other_hosts",
                "route_limit",
                "indexed_not_listed",
                "pay_to_limit",
                "index_partial"
            ]
        );
        assert_eq!(
            f[0]["message"],
            json!("https://api.example.com/.well-known/x402 not found or not a version-1 document (HTTP 404)")
        );
        let routes = [json!({"findings": [{"level": "fail"}, {"level": "pass"}]})];
        assert_eq!(count_levels(&f, &routes), (2, 6));
    }
}
