//! Running the service: Prometheus metrics (`metrics`) and live reload of the configuration
//! (`reload`). Both are served on the admin listener (`server::admin`), never the public port.

pub mod metrics;
pub mod reload;

use crate::payment::Settled;
use crate::pipeline::Exchange;
use crate::server::RouteEntry;
use metrics::Metrics;

/// What one finished route exchange adds to the metrics: the paid call's outcome and revenue,
/// a guard refusal. (Requests by status and 402s are counted where the response leaves.)
pub fn observe_exchange(m: &Metrics, entry: &RouteEntry, ex: &Exchange) {
    if let Some(s) = ex.slots.get::<Settled>() {
        if !ex.demo {
            m.paid(&entry.spec.path, s.outcome.label(), &s.network, &s.amount);
        }
    }
    let Some(reply) = ex.reply.as_ref() else {
        return;
    };
    // Cold path only: a 400/403 whose error is the guard's.
    if matches!(reply.status.as_u16(), 400 | 403) && memchr_blocked(&reply.body) {
        let reason = reply
            .body_json()
            .and_then(|v| v.get("reason").and_then(|r| r.as_str()).map(str::to_string))
            .filter(|r| r.len() <= 32 && r.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
            .unwrap_or_else(|| "blocked_target".into());
        m.guard_refusals.with_label_values(&[&reason]).inc();
    }
}

fn memchr_blocked(body: &[u8]) -> bool {
    const NEEDLE: &[u8] = b"\"blocked_target\"";
    body.windows(NEEDLE.len()).any(|w| w == NEEDLE)
}
