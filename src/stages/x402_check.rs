//! `x402_check`: one unpaid probe of a third party's x402 endpoint and the audit report
//! (docs/audit.md; needs `target` from url_guard). Never pays, never signs, exactly one probe with the
//! method asked for (docs/decisions.md#outbound).
//!
//! Any HTTP answer, 5xx included, is a report (200, charged). Not charged: a refused redirect
//! hop (400), unreachable or too many redirects (502), timeout (504).
//!
//! Parameters:
//! - `method_param` (default `method`): input parameter holding GET or POST.
//! - `timeout_ms` (8000), `max_redirects` (3), `max_bytes` (65536): the probe's caps.
//! - `rpcs`: CAIP-2 network → upstream name of its JSON-RPC endpoint (default Base → `base_rpc`,
//!   Ethereum → `eth_rpc`); each must exist in routes.yaml `upstreams:`.
//! - `rpc_timeout_ms` (3000): bound on the payTo code look-ups (they run after the probe).
//! - `max_offers` (20): offers audited one by one (and payTo addresses looked up); a 402 listing
//!   more gets one `accepts_bounded` finding ("the 402 lists 100000 offers; the first 20 were
//!   audited"). A 402 with 100,000 offers once made a 101 MB report (issue 21).
//! - `max_findings` (200): findings kept; the rest become one `findings_bounded` finding at
//!   their worst level.
//! - `max_report_bytes` (262144): the report's JSON size cap (`audit::fit_report`: long strings
//!   cut, the echoed offers dropped, findings bounded; `reportTrimmed: true`).

use async_trait::async_trait;
use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::audit::challenge_checks::{analyse_with, bound_findings, Level, Limits, ProbeView};
use crate::audit::onchain::{default_rpc_upstreams, rpcs_from_upstreams};
use crate::audit::{fit_report, pay_to_types, probe, Rpcs};
use crate::net::{FetchError, Guard, GuardedClient};
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "x402_check",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<url::Url>("target")],
    gives: &[],
    doc: "one unpaid probe of an x402 endpoint; challenge, offers, payTo type and pass/warn/fail checks",
    errors: &[
        (400, "A redirect to a refused (private, loopback, metadata) target"),
        (502, "The target is unreachable or redirected more than 3 times; not charged"),
        (504, "The target did not answer within 8 s; not charged"),
    ],
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_method_param")]
    method_param: String,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    #[serde(default = "default_redirects")]
    max_redirects: u32,
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    #[serde(default = "default_rpc_upstreams")]
    rpcs: BTreeMap<String, String>,
    #[serde(default = "default_rpc_timeout")]
    rpc_timeout_ms: u64,
    #[serde(default = "default_max_offers")]
    max_offers: usize,
    #[serde(default = "default_max_findings")]
    max_findings: usize,
    #[serde(default = "default_max_report")]
    max_report_bytes: usize,
}

fn default_max_offers() -> usize {
    crate::audit::challenge_checks::DEFAULT_MAX_OFFERS
}
fn default_max_findings() -> usize {
    crate::audit::challenge_checks::DEFAULT_MAX_FINDINGS
}
fn default_max_report() -> usize {
    DEFAULT_MAX_REPORT_BYTES
}

/// Default report size cap: real reports are 5–30 KB.
pub const DEFAULT_MAX_REPORT_BYTES: usize = 256 * 1024;

fn default_method_param() -> String {
    "method".into()
}
fn default_timeout() -> u64 {
    8000
}
fn default_redirects() -> u32 {
    3
}
fn default_max_bytes() -> usize {
    64 * 1024
}
fn default_rpc_timeout() -> u64 {
    3000
}

struct X402Check {
    p: Params,
    client: Arc<GuardedClient>,
    guard: Arc<Guard>,
    rpcs: Rpcs,
    methodology: Value,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if p.max_offers == 0 || p.max_findings < 2 || p.max_report_bytes < 16 * 1024 {
        return Err("max_offers must be positive, max_findings at least 2 and max_report_bytes at least 16384".into());
    }
    if ctx.route.param(&p.method_param).is_none() {
        return Err(format!(
            "the route has no input parameter `{}`",
            p.method_param
        ));
    }
    if p.timeout_ms == 0 || p.max_bytes == 0 || p.max_redirects > 20 {
        return Err("timeout_ms and max_bytes must be positive, max_redirects at most 20".into());
    }
    let client = ctx.services.need::<GuardedClient>()?;
    let rpcs = rpcs_from_upstreams(
        &ctx.config.upstreams,
        &p.rpcs,
        &client,
        Duration::from_millis(p.rpc_timeout_ms),
    )?;
    let methodology = json!({
        "probe": "exactly one unpaid request with the method asked for (POST sends the body {}), no payment header, no cookies; the answer is never paid or signed",
        "timeoutMs": p.timeout_ms,
        "maxRedirects": p.max_redirects,
        "maxBodyBytes": p.max_bytes,
        "blocked": "private, loopback, link-local, CGNAT, multicast, reserved and cloud-metadata addresses, checked on every DNS answer and redirect hop",
        "classification": "PAYMENT-REQUIRED header decoded (base64 JSON) → v2; else a JSON body with x402Version 1 → v1; a v2 object only in the body is reported as non-conformant; a v2 header with a v1 body is `dual`",
        "payToType": format!("eth_getCode at the latest block on {} (rpc upstreams {}), within {} ms", p.rpcs.keys().cloned().collect::<Vec<_>>().join(", "), p.rpcs.values().cloned().collect::<Vec<_>>().join(", "), p.rpc_timeout_ms),
        "levels": "pass: conforms; warn: works but costs buyers, listings or safety; fail: payments or listings will break",
        "checks": "documented in docs/audit.md (ids are stable)",
        "https": "judged on the challenge's resource.url, the canonical URL buyers pay and the Bazaar lists",
    });
    Ok(Arc::new(X402Check {
        p,
        client,
        guard: ctx.services.need::<Guard>()?,
        rpcs,
        methodology,
    }))
}

#[allow(clippy::result_large_err)] // Reply is the house error type (as in url_guard, chain)
fn probe_method(input: &serde_json::Map<String, Value>, param: &str) -> Result<Method, Reply> {
    match input.get(param).and_then(Value::as_str) {
        None => Ok(Method::GET),
        Some(m) => match m.to_ascii_uppercase().as_str() {
            "GET" => Ok(Method::GET),
            "POST" => Ok(Method::POST),
            other => Err(Reply::error(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!("method `{other}` is not supported: use GET or POST"),
            )),
        },
    }
}

/// Maps a failed probe to the route's not-charged answers.
pub(crate) fn probe_failure(e: &FetchError) -> (StatusCode, &'static str, String) {
    let status = match e {
        FetchError::BadUrl(_) | FetchError::Blocked { .. } => StatusCode::BAD_REQUEST,
        FetchError::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        _ => StatusCode::BAD_GATEWAY,
    };
    (
        status,
        e.code(),
        format!("{e}; the target was not audited and you were not charged"),
    )
}

#[async_trait]
impl Stage for X402Check {
    fn check_input(&self, input: &serde_json::Map<String, Value>) -> Result<(), Reply> {
        probe_method(input, &self.p.method_param).map(|_| ())
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(url) = ex.target.clone() else {
            return ex.fail_internal("no target");
        };
        let method = match probe_method(&ex.input, &self.p.method_param) {
            Ok(m) => m,
            Err(r) => {
                ex.reply = Some(r);
                return Flow::Reply;
            }
        };
        // Allowlisted (operator's own) addresses are reached over plain http (docs/audit.md).
        let sent = crate::audit::bazaar_listing::transport_url(&url, &self.guard);
        let resp = match probe(
            &self.client,
            &sent,
            &method,
            self.p.max_redirects,
            self.p.max_bytes,
            Duration::from_millis(self.p.timeout_ms),
        )
        .await
        {
            Ok(r) => r,
            Err(e) => {
                let (status, code, msg) = probe_failure(&e);
                return ex.fail(status, code, msg);
            }
        };
        let limits = Limits {
            max_offers: self.p.max_offers,
            max_findings: self.p.max_findings,
        };
        let mut analysis = analyse_with(
            &ProbeView {
                url: &url,
                final_url: &resp.final_url,
                method: method.as_str(),
                status: resp.status.as_u16(),
                headers: &resp.headers,
                body: &resp.body,
                truncated: resp.truncated,
            },
            &self.guard,
            &limits,
        );
        let (pay_to_rows, pay_to_checks) = pay_to_types(&self.rpcs, &analysis.pay_tos).await;
        analysis.checks.extend(pay_to_checks);
        bound_findings(&mut analysis.checks, limits.max_findings);
        let verdict = match analysis.worst() {
            Level::Pass => "pass",
            Level::Warn => "warn",
            Level::Fail => "fail",
        };
        let mut body = json!({
            "ok": true,
            "url": url.as_str(),
            "method": method.as_str(),
            "finalUrl": resp.final_url.as_str(),
            "redirects": resp.redirects.iter().map(|u| u.as_str()).collect::<Vec<_>>(),
            "httpStatus": analysis.http_status,
            "truncated": resp.truncated,
            "validChallenge": analysis.valid_challenge,
            "x402Version": analysis.x402_version,
            "challengeSource": analysis.challenge_source,
            "challengeError": analysis.error_text,
            "resource": analysis.resource,
            "accepts": analysis.accepts,
            "payToTypes": pay_to_rows,
            "discovery": analysis.discovery,
            "verdict": verdict,
            "summary": {
                "pass": analysis.count(Level::Pass),
                "warn": analysis.count(Level::Warn),
                "fail": analysis.count(Level::Fail),
            },
            "checks": analysis.checks,
            "elapsedMs": ex.elapsed_ms(),
            "methodology": self.methodology,
        });
        fit_report(
            &mut body,
            self.p.max_report_bytes,
            &["accepts", "resource", "discovery"],
        );
        ex.respond_ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_probe_method_is_get_or_post() {
        assert_eq!(
            probe_method(&input(json!({})), "method").unwrap(),
            Method::GET
        );
        assert_eq!(
            probe_method(&input(json!({"method": "post"})), "method").unwrap(),
            Method::POST
        );
        let r = probe_method(&input(json!({"method": "PUT"})), "method").unwrap_err();
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(r.body_json().unwrap()["error"], "invalid_parameter");
    }

    #[test]
    fn a_failed_probe_is_never_charged_and_keeps_its_status() {
        let timeout = FetchError::Timeout {
            after: Duration::from_secs(8),
        };
        let (status, _, message) = probe_failure(&timeout);
        assert_eq!(status, StatusCode::GATEWAY_TIMEOUT);
        assert!(message.ends_with("you were not charged"), "{message}");
    }
}
