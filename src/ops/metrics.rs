//! Prometheus metrics, served on the admin listener only (`service.admin_listen`, docs/decisions.md#operations).
//!
//! One `Metrics` per running service, kept in `Services` (so it survives a live reload and each
//! test server counts on its own). Label values are bounded: route paths and names from the
//! config (anything else is `other`), methods from a fixed set, status codes, the facilitator's
//! endpoints and error codes, guard refusal codes, payment outcomes. Never a URL or a payer.
//!
//! Instrumentation calls are one line at the place the event happens (server, demo, payment
//! settle, facilitator observer); the pure functions stay free of them.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::time::Duration;

/// The label for a route that is not in the config (404s, probes of random paths).
pub const OTHER: &str = "other";

pub struct Metrics {
    registry: Registry,
    /// Requests by route (config path or discovery path), method and status.
    pub requests: IntCounterVec,
    /// 402s answered, by route and kind (`challenge`: no payment sent; `refused`: a payment the
    /// gate or settlement refused).
    pub payment_required: IntCounterVec,
    /// Paid calls by route and outcome: charged, not_charged, settle_failed, pending, not_settled.
    pub paid_calls: IntCounterVec,
    /// Revenue in the asset's atomic units, by route and network (charged calls only).
    pub revenue_atomic: IntCounterVec,
    /// Facilitator request latency by endpoint (verify, settle, supported).
    pub facilitator_seconds: HistogramVec,
    /// Facilitator exchanges that produced no verdict, by endpoint and error code.
    pub facilitator_errors: IntCounterVec,
    /// Per facilitator (names from the config): latency by endpoint.
    pub facilitator_exchange_seconds: HistogramVec,
    /// Per facilitator: exchanges without a usable answer, by endpoint and kind.
    pub facilitator_exchange_errors: IntCounterVec,
    /// Calls that left a facilitator for the next one, by endpoint and facilitator left.
    pub facilitator_failovers: IntCounterVec,
    /// Breaker per facilitator: 0 closed, 1 half-open, 2 open.
    pub facilitator_breaker: IntGaugeVec,
    /// Outbound targets the guard refused, by reason code.
    pub guard_refusals: IntCounterVec,
    /// Demo twin samples by route name and result (hit, miss).
    pub demo_cache: IntCounterVec,
    /// Paid calls running now (counted by `PaidCalls`).
    pub paid_in_flight: IntGauge,
    /// Live reloads by result (ok, error).
    pub reloads: IntCounterVec,
    /// Unix seconds when the configuration now served was loaded.
    pub config_loaded: IntGauge,
    /// Constant 1 with the version and the served config's hash as labels.
    pub build_info: IntGaugeVec,
    pub config_info: IntGaugeVec,
    pub scrapes: IntCounter,
}

fn counter(r: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    r.register(Box::new(c.clone())).expect("unique metric");
    c
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let r = Registry::new_custom(Some("paycall".into()), None).expect("valid prefix");
        let requests = counter(
            &r,
            "http_requests_total",
            "HTTP requests by route, method and status",
            &["route", "method", "status"],
        );
        let payment_required = counter(
            &r,
            "payment_required_total",
            "402 answers by route and kind (challenge, refused)",
            &["route", "kind"],
        );
        let paid_calls = counter(
            &r,
            "paid_calls_total",
            "Verified paid calls by route and outcome (charged, not_charged, settle_failed, pending, not_settled)",
            &["route", "outcome"],
        );
        let revenue_atomic = counter(
            &r,
            "revenue_atomic_total",
            "Settled revenue in the asset's atomic units (USDC: 1e-6 USD) by route and network",
            &["route", "network"],
        );
        let facilitator_seconds = HistogramVec::new(
            HistogramOpts::new(
                "facilitator_request_seconds",
                "Facilitator request latency by endpoint",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["endpoint"],
        )
        .expect("valid metric");
        r.register(Box::new(facilitator_seconds.clone()))
            .expect("unique metric");
        let facilitator_errors = counter(
            &r,
            "facilitator_errors_total",
            "Facilitator exchanges without a verdict, by endpoint and kind",
            &["endpoint", "kind"],
        );
        let facilitator_exchange_seconds = HistogramVec::new(
            HistogramOpts::new(
                "facilitator_exchange_seconds",
                "Facilitator latency by facilitator and endpoint (verify, settle, supported)",
            )
            .buckets(vec![
                0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
            ]),
            &["facilitator", "endpoint"],
        )
        .expect("valid metric");
        r.register(Box::new(facilitator_exchange_seconds.clone()))
            .expect("unique metric");
        let facilitator_exchange_errors = counter(
            &r,
            "facilitator_exchange_errors_total",
            "Facilitator exchanges without a usable answer, by facilitator, endpoint and kind",
            &["facilitator", "endpoint", "kind"],
        );
        let facilitator_failovers = counter(
            &r,
            "facilitator_failovers_total",
            "Calls passed on to the next facilitator, by endpoint and the facilitator left",
            &["endpoint", "from"],
        );
        let facilitator_breaker = IntGaugeVec::new(
            Opts::new(
                "facilitator_breaker_state",
                "Circuit breaker per facilitator: 0 closed, 1 half-open, 2 open",
            ),
            &["facilitator"],
        )
        .expect("valid metric");
        r.register(Box::new(facilitator_breaker.clone()))
            .expect("unique metric");
        let guard_refusals = counter(
            &r,
            "guard_refusals_total",
            "Requests whose outbound target the guard refused, by reason",
            &["reason"],
        );
        let demo_cache = counter(
            &r,
            "demo_samples_total",
            "Demo twin answers by route and sample cache result (hit, miss)",
            &["route", "result"],
        );
        let paid_in_flight =
            IntGauge::new("paid_calls_in_flight", "Paid calls running now").expect("valid metric");
        r.register(Box::new(paid_in_flight.clone()))
            .expect("unique metric");
        let reloads = counter(
            &r,
            "config_reloads_total",
            "Live reloads of routes.yaml and pipelines/ by result",
            &["result"],
        );
        let config_loaded = IntGauge::new(
            "config_loaded_timestamp_seconds",
            "Unix time the served configuration was loaded",
        )
        .expect("valid metric");
        r.register(Box::new(config_loaded.clone()))
            .expect("unique metric");
        let build_info = IntGaugeVec::new(
            Opts::new("build_info", "Constant 1, labelled with the version"),
            &["version"],
        )
        .expect("valid metric");
        r.register(Box::new(build_info.clone()))
            .expect("unique metric");
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION")])
            .set(1);
        let config_info = IntGaugeVec::new(
            Opts::new(
                "config_info",
                "Constant 1, labelled with the served configuration's hash",
            ),
            &["hash"],
        )
        .expect("valid metric");
        r.register(Box::new(config_info.clone()))
            .expect("unique metric");
        let scrapes =
            IntCounter::new("metrics_scrapes_total", "Scrapes of /metrics").expect("valid metric");
        r.register(Box::new(scrapes.clone()))
            .expect("unique metric");
        Metrics {
            registry: r,
            requests,
            payment_required,
            paid_calls,
            revenue_atomic,
            facilitator_seconds,
            facilitator_errors,
            facilitator_exchange_seconds,
            facilitator_exchange_errors,
            facilitator_failovers,
            facilitator_breaker,
            guard_refusals,
            demo_cache,
            paid_in_flight,
            reloads,
            config_loaded,
            build_info,
            config_info,
            scrapes,
        }
    }

    /// The exposition text (format 0.0.4).
    pub fn render(&self) -> String {
        self.scrapes.inc();
        let mut buf = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }

    /// One facilitator exchange: its latency, and its error code when it gave no verdict.
    pub fn facilitator(&self, endpoint: &str, elapsed: Duration, error: Option<&str>) {
        self.facilitator_seconds
            .with_label_values(&[endpoint])
            .observe(elapsed.as_secs_f64());
        if let Some(kind) = error {
            self.facilitator_errors
                .with_label_values(&[endpoint, kind])
                .inc();
        }
    }

    /// One exchange with the facilitator named `name` (a configured name: bounded).
    pub fn facilitator_exchange(
        &self,
        name: &str,
        endpoint: &str,
        elapsed: Duration,
        error: Option<&str>,
    ) {
        self.facilitator_exchange_seconds
            .with_label_values(&[name, endpoint])
            .observe(elapsed.as_secs_f64());
        if let Some(kind) = error {
            self.facilitator_exchange_errors
                .with_label_values(&[name, endpoint, kind])
                .inc();
        }
    }

    /// A call left the facilitator `from` for the next one.
    pub fn facilitator_failover(&self, endpoint: &str, from: &str) {
        self.facilitator_failovers
            .with_label_values(&[endpoint, from])
            .inc();
    }

    /// The facilitator's breaker state (0 closed, 1 half-open, 2 open).
    pub fn facilitator_state(&self, name: &str, state: i64) {
        self.facilitator_breaker
            .with_label_values(&[name])
            .set(state);
    }

    /// A paid call's outcome, and its revenue when charged.
    pub fn paid(&self, route: &str, outcome: &str, network: &str, amount_atomic: &str) {
        self.paid_calls.with_label_values(&[route, outcome]).inc();
        if outcome == "charged" {
            if let Ok(n) = amount_atomic.parse::<u64>() {
                self.revenue_atomic
                    .with_label_values(&[route, network])
                    .inc_by(n);
            }
        }
    }

    /// The served configuration changed (startup or reload).
    pub fn config(&self, hash: &str, loaded_unix: i64) {
        self.config_info.reset();
        self.config_info.with_label_values(&[hash]).set(1);
        self.config_loaded.set(loaded_unix);
    }
}

/// The method label: the standard methods, anything else `other` (bounded).
pub fn method_label(m: &http::Method) -> &'static str {
    match *m {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        http::Method::PUT => "PUT",
        http::Method::DELETE => "DELETE",
        http::Method::PATCH => "PATCH",
        _ => OTHER,
    }
}

/// A parsed exposition text: `name{labels}` → value, labels sorted as written. For tests and
/// `paycall` tooling; not a general parser (no escapes inside label values are expected here).
pub fn parse_exposition(text: &str) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let Some((key, value)) = line.rsplit_once(' ') else {
            continue;
        };
        if let Ok(v) = value.parse::<f64>() {
            out.insert(key.to_string(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revenue_counts_only_charged_calls_and_the_text_parses_back() {
        let m = Metrics::new();
        m.paid("/api/http", "charged", "eip155:8453", "10000");
        m.paid("/api/http", "charged", "eip155:8453", "10000");
        m.paid("/api/http", "not_charged", "eip155:8453", "10000");
        m.facilitator("verify", Duration::from_millis(3), None);
        m.facilitator(
            "settle",
            Duration::from_millis(30),
            Some("facilitator_timeout"),
        );
        let parsed = parse_exposition(&m.render());
        assert_eq!(
            parsed[r#"paycall_revenue_atomic_total{network="eip155:8453",route="/api/http"}"#],
            20000.0
        );
        assert_eq!(
            parsed[r#"paycall_paid_calls_total{outcome="not_charged",route="/api/http"}"#],
            1.0
        );
        assert_eq!(
            parsed[r#"paycall_facilitator_errors_total{endpoint="settle",kind="facilitator_timeout"}"#],
            1.0
        );
        assert_eq!(
            parsed[r#"paycall_facilitator_request_seconds_count{endpoint="verify"}"#],
            1.0
        );
        assert_eq!(
            parsed[&format!(
                r#"paycall_build_info{{version="{}"}}"#,
                env!("CARGO_PKG_VERSION")
            )],
            1.0
        );
    }
}
