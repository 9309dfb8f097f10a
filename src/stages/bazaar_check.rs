//! `bazaar_check`: audit of a host's listing in the public x402 discovery index (docs/audit.md).
//! The work is in `audit::bazaar_listing`; this stage reads its parameters, vets the input before the
//! payment gate verifies (bare host or https origin; http:// and blocked hosts → 400), and maps
//! the audit's refusals to not-charged answers (host unreachable, `discovery_unavailable`,
//! too little time left after verification: 502).
//!
//! Parameters (defaults are the limits in docs/decisions.md#limits):
//! - `param` (`url`); `index_upstream` (`cdp_discovery`); `rpcs` (Base → `base_rpc`, Ethereum
//!   → `eth_rpc`); `index_cache_s` (300).
//! - `probe_window_ms` 12000, `hard_deadline_ms` 18000, `slow_share` 0.6, `per_request_ms` 6000,
//!   `max_bytes` 65536, `max_redirects` 3, `max_routes` 25, `concurrency` 5, `max_pay_tos` 4,
//!   `max_pages` 3, `min_time_left_ms` 3000, `transfer_blocks` 10000.
//! - `max_report_bytes` (524288): the report's JSON size cap (`audit::fit_report`: long strings
//!   cut, echoed offers dropped, findings bounded; `reportTrimmed: true`). Each route's
//!   challenge is audited under `audit::challenge_checks::Limits` (20 offers, 200 findings), so 25
//!   routes stay well under it unless sellers echo huge fields.

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::bazaar_listing::{parse_target, BazaarAudit, Limits};
use crate::audit::discovery_index::DiscoveryIndex;
use crate::audit::onchain::{default_rpc_upstreams, rpcs_from_upstreams};
use crate::net::{Guard, GuardedClient};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "bazaar_check",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[],
    doc: "a host's /.well-known/x402, one unpaid probe per route and method, compared with the discovery index",
    errors: &[
        (400, "Missing or bad host, http:// input, or a blocked (private, loopback, metadata) host"),
        (502, "Host unreachable on every request, discovery index unavailable (discovery_unavailable), or too little time left after payment verification; not charged"),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "d_param")]
    param: String,
    #[serde(default = "d_index")]
    index_upstream: String,
    #[serde(default = "default_rpc_upstreams")]
    rpcs: BTreeMap<String, String>,
    #[serde(default = "d_cache")]
    index_cache_s: u64,
    #[serde(default = "d_rpc_timeout")]
    rpc_timeout_ms: u64,
    #[serde(default = "d_12000")]
    probe_window_ms: u64,
    #[serde(default = "d_18000")]
    hard_deadline_ms: u64,
    #[serde(default = "d_share")]
    slow_share: f64,
    #[serde(default = "d_6000")]
    per_request_ms: u64,
    #[serde(default = "d_bytes")]
    max_bytes: usize,
    #[serde(default = "d_3")]
    max_redirects: u32,
    #[serde(default = "d_25")]
    max_routes: usize,
    #[serde(default = "d_5")]
    concurrency: usize,
    #[serde(default = "d_4")]
    max_pay_tos: usize,
    #[serde(default = "d_3usize")]
    max_pages: usize,
    #[serde(default = "d_3000")]
    min_time_left_ms: u64,
    #[serde(default = "d_blocks")]
    transfer_blocks: u64,
    #[serde(default = "d_report")]
    max_report_bytes: usize,
}

fn d_report() -> usize {
    512 * 1024
}

fn d_param() -> String {
    "url".into()
}
fn d_index() -> String {
    "cdp_discovery".into()
}
fn d_cache() -> u64 {
    300
}
fn d_rpc_timeout() -> u64 {
    3000
}
fn d_12000() -> u64 {
    12_000
}
fn d_18000() -> u64 {
    18_000
}
fn d_share() -> f64 {
    0.6
}
fn d_6000() -> u64 {
    6000
}
fn d_bytes() -> usize {
    64 * 1024
}
fn d_3() -> u32 {
    3
}
fn d_25() -> usize {
    25
}
fn d_5() -> usize {
    5
}
fn d_4() -> usize {
    4
}
fn d_3usize() -> usize {
    3
}
fn d_3000() -> u64 {
    3000
}
fn d_blocks() -> u64 {
    10_000
}

struct BazaarCheck {
    param: String,
    guard: Arc<Guard>,
    audit: BazaarAudit,
    methodology: Value,
    max_report_bytes: usize,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if ctx.route.param(&p.param).is_none() {
        return Err(format!("the route has no input parameter `{}`", p.param));
    }
    if !(0.0..=1.0).contains(&p.slow_share)
        || p.hard_deadline_ms < p.probe_window_ms
        || p.concurrency == 0
    {
        return Err(
            "slow_share must be within 0..1, hard_deadline_ms ≥ probe_window_ms, concurrency ≥ 1"
                .into(),
        );
    }
    let client = ctx.services.need::<GuardedClient>()?;
    let guard = ctx.services.need::<Guard>()?;
    let index_url = ctx.config.upstreams.get(&p.index_upstream).ok_or_else(|| {
        format!(
            "index_upstream `{}` is not defined in routes.yaml `upstreams:`",
            p.index_upstream
        )
    })?;
    let rpcs = rpcs_from_upstreams(
        &ctx.config.upstreams,
        &p.rpcs,
        &client,
        Duration::from_millis(p.rpc_timeout_ms),
    )?;
    let limits = Limits {
        probe_window: Duration::from_millis(p.probe_window_ms),
        hard_deadline: Duration::from_millis(p.hard_deadline_ms),
        slow_share: p.slow_share,
        per_request: Duration::from_millis(p.per_request_ms),
        max_bytes: p.max_bytes,
        max_redirects: p.max_redirects,
        max_routes: p.max_routes,
        concurrency: p.concurrency,
        max_pay_tos: p.max_pay_tos,
        max_pages: p.max_pages,
        min_time_left: Duration::from_millis(p.min_time_left_ms),
        transfer_blocks: p.transfer_blocks,
    };
    let methodology = json!({
        "wellKnown": "GET https://<host>/.well-known/x402 (x402scan version 1: absolute URLs or \"METHOD /path\")",
        "probes": format!("one unpaid request per listed route and method (GET without a body, POST with {{}}), never a payment header; at most {} routes, {} at a time, {} ms and {} bytes each, {} redirects; routes on other hosts are listed, not probed", p.max_routes, p.concurrency, p.per_request_ms, p.max_bytes, p.max_redirects),
        "deadlines": format!("probes end {} ms after the request arrived, or use {}% of the time left when payment verification was slow; everything ends {} ms after arrival; under {} ms left after verification → 502, not charged", p.probe_window_ms, (p.slow_share * 100.0).round(), p.hard_deadline_ms, p.min_time_left_ms),
        "index": format!("{} (upstream `{}`): merchant look-up for each payTo seen in the live challenges (at most {}, up to {} pages of 100), plus a search by host; pages cached {} s", index_url, p.index_upstream, p.max_pay_tos, p.max_pages, p.index_cache_s),
        "matching": "a listed route is indexed when an index item's resource URL has the same host and path (query ignored)",
        "onchain": "read-only: USDC balanceOf and recent USDC Transfer logs to each EVM payTo on the configured RPC upstreams",
        "verdicts": {
            "fully_indexed": "every route /.well-known/x402 lists on this host is in the index",
            "partially_indexed": "some listed routes are indexed, some are not",
            "not_indexed": "no listed route is indexed although at least one answers a ready v2 challenge with a valid bazaar extension",
            "not_ready": "no listed route is indexed and none answers a ready v2 challenge with a valid bazaar extension",
            "no_routes": "/.well-known/x402 lists no route on this host",
            "no_well_known": "/.well-known/x402 is missing or unreadable",
        },
        "transport": "the host is reached over https; hosts at addresses on the operator's allowlist (self-hosting, tests; empty by default) are reached over plain http on the same port",
    });
    Ok(Arc::new(BazaarCheck {
        param: p.param,
        guard: guard.clone(),
        audit: BazaarAudit {
            client: client.clone(),
            guard,
            index: Arc::new(DiscoveryIndex::new(
                index_url,
                client,
                Duration::from_secs(p.index_cache_s),
            )),
            rpcs,
            limits,
        },
        methodology,
        max_report_bytes: p.max_report_bytes,
    }))
}

#[async_trait]
impl Stage for BazaarCheck {
    fn check_input(&self, input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        match input.get(&self.param).and_then(Value::as_str) {
            Some(raw) => parse_target(raw, &self.guard)
                .map(|_| ())
                .map_err(|r| Reply::error(r.status, r.code, r.message)),
            None => Ok(()),
        }
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(raw) = ex.input_str(&self.param).map(str::to_string) else {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "missing_parameter",
                format!("`{}` is required", self.param),
            );
        };
        let origin = match parse_target(&raw, &self.guard) {
            Ok(o) => o,
            Err(r) => return ex.fail(r.status, r.code, r.message),
        };
        match self.audit.run(&raw, origin, ex.arrived).await {
            Ok(mut report) => {
                report["methodology"] = self.methodology.clone();
                crate::audit::fit_report(
                    &mut report,
                    self.max_report_bytes,
                    &["accepts", "resource", "discovery", "listing", "entry"],
                );
                ex.respond_ok(report)
            }
            Err(r) => ex.fail(r.status, r.code, r.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn the_probe_window_fits_the_deadline() {
        with_shipped_route("/api/bazaar-check", |ctx| {
            let e = build(ctx, json!({"param": "nope"})).err().unwrap();
            assert!(e.contains("no input parameter `nope`"), "{e}");
            let e = build(ctx, json!({"slow_share": 1.5})).err().unwrap();
            assert!(e.contains("slow_share"), "{e}");
            let e = build(
                ctx,
                json!({"probe_window_ms": 20000, "hard_deadline_ms": 10000}),
            )
            .err()
            .unwrap();
            assert!(e.contains("hard_deadline_ms"), "{e}");
        });
    }
}
