//! Auditing other people's x402 endpoints (/api/x402-check) and their Bazaar listing
//! (/api/bazaar-check): the unpaid probe, the challenge analysis with its checks, address
//! validation, the known networks and USDC deployments, read-only chain look-ups and the
//! discovery-index client. Stages in src/stages/{x402_check,bazaar_check}.rs put them together.
//! Nothing here ever pays or signs.

pub mod address;
pub mod bazaar_listing;
pub mod challenge_checks;
pub mod discovery_index;
pub mod known_networks;
mod listing_report;
mod offer;
pub mod onchain;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Value};
use std::time::Duration;
use url::Url;

use crate::net::{FetchError, FetchRequest, FetchResponse, GuardedClient, OverCap};
use challenge_checks::{Check, Level};
use known_networks::Family;
use onchain::Rpc;

/// One unpaid request: no payment header, JSON accepted, POST/PUT/PATCH carry `{}` (so a body
/// parser does not answer 400 before the paywall). Never any cookie (the client keeps none).
pub async fn probe(
    client: &GuardedClient,
    url: &Url,
    method: &Method,
    max_redirects: u32,
    max_bytes: usize,
    timeout: Duration,
) -> Result<FetchResponse, FetchError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        http::header::ACCEPT,
        HeaderValue::from_static("application/json, */*;q=0.5"),
    );
    let body = if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        Some(Bytes::from_static(b"{}"))
    } else {
        None
    };
    client
        .fetch(FetchRequest {
            url: url.clone(),
            method: method.clone(),
            headers,
            body,
            max_redirects,
            max_bytes,
            timeout,
            over_cap: OverCap::Truncate,
        })
        .await
}

/// Longest string a trimmed report keeps (characters).
const TRIMMED_STRING_CHARS: usize = 300;

/// Keeps a report under `max_bytes` of JSON, in steps that lose the least first: long strings
/// (echoed offers, messages quoting the seller's fields) are cut to 300 characters, then the
/// echoes named in `echoes` (the offers and resource as the seller wrote them) are dropped,
/// then `checks` arrays are bounded to 50 findings. Marks the report `reportTrimmed: true` when
/// anything was cut. The findings' ids and levels, the verdict and the summary always stay.
pub fn fit_report(report: &mut Value, max_bytes: usize, echoes: &[&str]) {
    let size = |v: &Value| serde_json::to_vec(v).map_or(usize::MAX, |b| b.len());
    if size(report) <= max_bytes {
        return;
    }
    each_value_mut(report, cut_long_string);
    if size(report) > max_bytes {
        each_value_mut(report, |v| drop_echoes(v, echoes));
    }
    if size(report) > max_bytes {
        each_value_mut(report, bound_checks);
    }
    if let Value::Object(m) = report {
        m.insert("reportTrimmed".into(), json!(true));
    }
}

/// Calls `f` on every value under `root`, each before its children (so `f` may replace or cut
/// them). Iterative: a seller's JSON may nest deeply.
fn each_value_mut(root: &mut Value, mut f: impl FnMut(&mut Value)) {
    let mut stack: Vec<&mut Value> = vec![root];
    while let Some(v) = stack.pop() {
        f(&mut *v);
        match v {
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(m) => stack.extend(m.values_mut()),
            _ => {}
        }
    }
}

/// A string longer than 300 characters keeps its first 300 and an ellipsis.
fn cut_long_string(v: &mut Value) {
    if let Value::String(s) = v {
        if let Some((i, _)) = s.char_indices().nth(TRIMMED_STRING_CHARS) {
            s.truncate(i);
            s.push('…');
        }
    }
}

/// The echoes an object holds become a note that they were omitted.
fn drop_echoes(v: &mut Value, echoes: &[&str]) {
    if let Value::Object(m) = v {
        for k in echoes {
            if let Some(e) = m.get_mut(*k) {
                *e = json!("omitted: the report was over its size cap");
            }
        }
    }
}

/// A `checks` array over 50 findings keeps its first 49 and one that counts the rest, at the
/// worst level among them.
fn bound_checks(v: &mut Value) {
    let Value::Object(m) = v else { return };
    let Some(Value::Array(checks)) = m.get_mut("checks") else {
        return;
    };
    if checks.len() <= 50 {
        return;
    }
    let rest = checks.split_off(49);
    let worst = rest
        .iter()
        .filter_map(|c| c.get("level").and_then(Value::as_str))
        .max_by_key(|l| match *l {
            "fail" => 2,
            "warn" => 1,
            _ => 0,
        })
        .unwrap_or("pass")
        .to_string();
    checks.push(json!({
        "id": "findings_bounded",
        "level": worst,
        "message": format!("{} more findings not listed: the report was over its size cap", rest.len()),
        "fix": "fix the findings listed, then audit again",
    }));
}

/// An RPC per EVM network (CAIP-2 id → endpoint).
pub type Rpcs = Vec<(String, Rpc)>;

/// Asks every configured EVM network whether each EVM payTo has code. Returns the report rows
/// and one `pay_to_type` check per payTo on the network it is offered on (when that network has
/// an RPC). RPC failures are reported in the rows, never as the seller's fault.
pub async fn pay_to_types(rpcs: &Rpcs, pay_tos: &[(String, String)]) -> (Vec<Value>, Vec<Check>) {
    let mut addrs: Vec<&str> = Vec::new();
    for (net, addr) in pay_tos {
        if known_networks::family_of(net) == Some(Family::Evm)
            && address::is_valid_evm(addr)
            && !addrs.iter().any(|a| a.eq_ignore_ascii_case(addr))
        {
            addrs.push(addr);
        }
    }
    let mut jobs = Vec::new();
    for a in &addrs {
        for (net, rpc) in rpcs {
            let a = a.to_string();
            let net = net.clone();
            let rpc = rpc.clone();
            jobs.push(async move {
                let r = rpc.is_contract(&a).await;
                (a, net, rpc.name.clone(), r)
            });
        }
    }
    let results = futures_util::future::join_all(jobs).await;
    let mut rows = Vec::new();
    let mut checks = Vec::new();
    for (addr, net, rpc_name, r) in results {
        let (kind, error) = match &r {
            Ok(true) => (json!("contract"), Value::Null),
            Ok(false) => (json!("eoa"), Value::Null),
            Err(e) => (Value::Null, json!(e)),
        };
        rows.push(json!({
            "payTo": addr,
            "network": net,
            "networkName": known_networks::short_name(&net),
            "rpc": rpc_name,
            "type": kind,
            "error": error,
        }));
        let offered_here = pay_tos
            .iter()
            .any(|(n, a)| n == &net && a.eq_ignore_ascii_case(&addr));
        if offered_here {
            match r {
                Ok(false) => checks.push(Check {
                    id: "pay_to_type",
                    level: Level::Pass,
                    message: format!(
                        "payTo {addr} is an externally owned account on {}",
                        known_networks::short_name(&net)
                    ),
                    fix: String::new(),
                    entry: None,
                }),
                Ok(true) => checks.push(Check {
                    id: "pay_to_type",
                    level: Level::Warn,
                    message: format!(
                        "payTo {addr} is a contract on {}",
                        known_networks::short_name(&net)
                    ),
                    fix: "fine for a smart-contract wallet you control; make sure it can move USDC out, and that it is not a token or router contract".into(),
                    entry: None,
                }),
                Err(_) => {}
            }
        }
    }
    (rows, checks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(n_checks: usize, long: usize) -> Value {
        let checks: Vec<Value> = (0..n_checks)
            .map(|i| {
                json!({"id": "scheme", "level": if i == n_checks - 1 { "fail" } else { "pass" },
                       "message": "x".repeat(long), "fix": ""})
            })
            .collect();
        json!({"verdict": "fail", "accepts": [{"extra": "y".repeat(long)}], "checks": checks})
    }

    #[test]
    fn a_report_under_its_cap_is_untouched() {
        let mut r = report(3, 10);
        let before = r.clone();
        fit_report(&mut r, 1 << 20, &["accepts"]);
        assert_eq!(r, before);
    }

    #[test]
    fn reports_are_cut_in_steps_and_keep_the_worst_level() {
        // Long strings only: cutting them is enough.
        let mut r = report(3, 100_000);
        fit_report(&mut r, 16 * 1024, &["accepts"]);
        assert_eq!(r["reportTrimmed"], true);
        assert_eq!(r["checks"].as_array().unwrap().len(), 3);
        assert_eq!(
            r["checks"][0]["message"].as_str().unwrap().chars().count(),
            301
        );
        // Many findings: the echo goes, then findings are bounded with the worst level kept.
        let mut r = report(2000, 400);
        fit_report(&mut r, 32 * 1024, &["accepts"]);
        assert!(r.to_string().len() <= 32 * 1024, "{}", r.to_string().len());
        assert!(r["accepts"].is_string());
        let checks = r["checks"].as_array().unwrap();
        assert_eq!(checks.len(), 50);
        assert_eq!(checks[49]["id"], "findings_bounded");
        assert_eq!(checks[49]["level"], "fail");
        assert_eq!(r["verdict"], "fail");
    }
}
