//! Auditing other people's x402 endpoints (/api/x402-check) and their Bazaar listing
//! (/api/bazaar-check): the unpaid probe, the challenge analysis with its checks, address
//! validation, the known networks and USDC deployments, read-only chain look-ups and the
//! discovery-index client. Stages in src/stages/{x402_check,bazaar_check}.rs put them together.
//! Nothing here ever pays or signs.

pub mod address;
pub mod bazaar;
pub mod challenge;
pub mod discovery;
pub mod networks;
pub mod onchain;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Value};
use std::time::Duration;
use url::Url;

use crate::net::{FetchError, FetchRequest, FetchResponse, GuardedClient, OverCap};
use challenge::{Check, Level};
use networks::Family;
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

/// An RPC per EVM network (CAIP-2 id → endpoint).
pub type Rpcs = Vec<(String, Rpc)>;

/// Asks every configured EVM network whether each EVM payTo has code. Returns the report rows
/// and one `pay_to_type` check per payTo on the network it is offered on (when that network has
/// an RPC). RPC failures are reported in the rows, never as the seller's fault.
pub async fn pay_to_types(rpcs: &Rpcs, pay_tos: &[(String, String)]) -> (Vec<Value>, Vec<Check>) {
    let mut addrs: Vec<&str> = Vec::new();
    for (net, addr) in pay_tos {
        if networks::family_of(net) == Some(Family::Evm)
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
            "networkName": networks::short_name(&net),
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
                        networks::short_name(&net)
                    ),
                    fix: String::new(),
                    entry: None,
                }),
                Ok(true) => checks.push(Check {
                    id: "pay_to_type",
                    level: Level::Warn,
                    message: format!(
                        "payTo {addr} is a contract on {}",
                        networks::short_name(&net)
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
