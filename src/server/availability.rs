//! Can a route work right now? One answer for the request path, /status and discovery.
//!
//! A paid route that cannot work (a stage not ready: no search provider key, no chromium; or no
//! offered network the facilitator settles) must not answer 402: a challenge invites a payment
//! that can only fail. `handle_route` asks `check` before anything else and answers 503 with
//! `Retry-After`, before any challenge, input check or facilitator call; /status lists the
//! route under `degraded` with the same reason; /openapi.json, /llms.txt and /.well-known/x402
//! mark it unavailable.

use http::StatusCode;
use serde_json::{json, Map};

use super::{App, RouteEntry};
use crate::pipeline::Reply;

/// Seconds a client is asked to wait: /status re-checks the facilitator every 30 s, and a
/// missing key or browser is an operator's fix, not a blip.
pub const RETRY_AFTER_S: u64 = 60;

/// Why `entry` cannot work now, or Ok. Cheap and side-effect free (stages' `readiness()` and the
/// startup network verdicts), so it runs on every request.
pub fn check(app: &App, entry: &RouteEntry) -> Result<(), String> {
    let offered = offered_networks(app);
    verdict(entry.spec.is_paid(), entry.chain.readiness(), offered)
}

/// The decision, pure: a stage's reason wins; a paid route also needs one payable network.
pub fn verdict(
    paid: bool,
    stages: Result<(), String>,
    offered_networks: usize,
) -> Result<(), String> {
    stages?;
    if paid && offered_networks == 0 {
        return Err(
            "payment: the facilitator settles none of the offered networks (see /status networks)"
                .into(),
        );
    }
    Ok(())
}

fn offered_networks(app: &App) -> usize {
    offered(app).len()
}

/// The payment options challenges offer: `payment.accepts` without those left out at startup
/// (`payment.unsupported_network: leave_out`), each with its index in `payment.accepts` (a
/// price's `atomic` has one amount per entry). Discovery lists these, not the configured ones.
pub fn offered(app: &App) -> Vec<(usize, &crate::config::AcceptOption)> {
    let readiness = app.services.get::<crate::payment::readiness::Readiness>();
    app.config
        .payment
        .accepts
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            !readiness
                .as_ref()
                .is_some_and(|r| r.is_left_out(&a.network))
        })
        .collect()
}

/// The 503 a route that cannot work answers instead of a challenge. Never charged: no payment
/// is verified, nothing is settled.
pub fn unavailable_reply(path: &str, reason: &str) -> Reply {
    let mut extra = Map::new();
    extra.insert("reason".into(), json!(reason));
    extra.insert("retryAfterSeconds".into(), json!(RETRY_AFTER_S));
    Reply::error_with(
        StatusCode::SERVICE_UNAVAILABLE,
        "route_unavailable",
        format!(
            "{path} cannot work right now ({reason}); no payment is asked or taken. Retry after \
             Retry-After seconds; /status lists it under `degraded` until it can"
        ),
        extra,
    )
    .with_header("retry-after", &RETRY_AFTER_S.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_reason_or_no_payable_network_makes_a_route_unavailable() {
        assert_eq!(verdict(true, Ok(()), 2), Ok(()));
        assert_eq!(
            verdict(false, Ok(()), 0),
            Ok(()),
            "a free route needs no network"
        );
        assert_eq!(
            verdict(true, Err("search: no key".into()), 2),
            Err("search: no key".into())
        );
        assert!(verdict(true, Ok(()), 0)
            .unwrap_err()
            .contains("facilitator"));
    }

    #[test]
    fn the_503_says_retry_after_and_not_charged() {
        let r = unavailable_reply("/api/search", "search: BRAVE_API_KEY is not set");
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers["retry-after"], "60");
        let body = r.body_json().unwrap();
        assert_eq!(body["error"], "route_unavailable");
        assert_eq!(body["reason"], "search: BRAVE_API_KEY is not set");
        assert!(body["message"].as_str().unwrap().contains("no payment"));
    }
}
