//! The shared runtime services stages use, built once from the config. No network I/O
//! happens here (so `paycall check` can call it); `start` kicks off background warm-ups.

use std::sync::Arc;

use crate::config::{Config, FacilitatorAuthSetting};
use crate::net::{Guard, GuardedClient, Resolver, SystemResolver};
use crate::payment::confirm::Confirmer;
use crate::payment::ledger::Ledger;
use crate::pipeline::Services;
use crate::x402::facilitator::{FacilitatorAuth, FacilitatorClient, FacilitatorConfig};
use crate::x402::facilitators::{Event, Facilitators};

/// Builds the services with the system DNS resolver.
pub fn build(config: &Config) -> Result<Services, String> {
    build_with_resolver(config, Arc::new(SystemResolver))
}

/// Builds the services with a chosen resolver (tests inject a static map).
pub fn build_with_resolver(
    config: &Config,
    resolver: Arc<dyn Resolver>,
) -> Result<Services, String> {
    crate::net::install_crypto_provider();
    let guard = Arc::new(
        Guard::new(config.guard.allow_cidrs.clone())
            .with_nat64(config.guard.nat64_prefixes.clone()),
    );
    let browsers = Arc::new(crate::browser::Browsers::new(
        guard.clone(),
        resolver.clone(),
    ));
    let client = Arc::new(
        GuardedClient::new(guard.clone(), resolver, &config.guard.user_agent)
            .map_err(|e| e.to_string())?,
    );
    let metrics = Arc::new(crate::ops::metrics::Metrics::new());
    let facilitator = Arc::new(facilitators(config, &metrics)?);
    // On-chain confirmation of settlements: each EVM offer's `rpc` upstream.
    let rpcs = config
        .payment
        .accepts
        .iter()
        .filter_map(|a| {
            let name = a.rpc.as_ref()?;
            Some((a.network.clone(), config.upstreams.get(name)?.clone()))
        })
        .collect();
    let confirmer = Arc::new(Confirmer::new(rpcs)?);
    Ok(Services::builder()
        .with(metrics)
        .with(Arc::new(config.clone()))
        .with(guard)
        .with(client.clone())
        .with(facilitator)
        .with(Arc::new(Ledger::new(config.ledger.clone())))
        .with(confirmer)
        .with(Arc::new(crate::payment::limits::VerifyLimiter::new(
            config.payment.verify_per_minute.0,
            config.payment.verify_per_minute.1,
        )))
        .with(Arc::new(crate::payment::readiness::Readiness::default()))
        .with(Arc::new(crate::market::MarketHub::new(
            client.clone(),
            config.upstreams.clone(),
        )))
        .with(browsers)
        .build())
}

/// Background warm-ups once the runtime runs: the facilitator's /supported (Solana feePayer),
/// the browser pools' `warm` sessions.
pub fn start(services: &Services) {
    if let (Some(l), Some(c)) = (services.get::<Ledger>(), services.get::<Confirmer>()) {
        crate::payment::upkeep::start(l, c);
    }
    if let Some(b) = services.get::<crate::browser::Browsers>() {
        b.start();
    }
    if let Some(f) = services.get::<Facilitators>() {
        f.start_health_checks();
        tokio::spawn(async move {
            match f.supported().await {
                Ok(s) => tracing::info!(kinds = s.kinds.len(), "facilitator /supported loaded"),
                Err(e) => {
                    tracing::warn!(error = %e, "facilitator /supported unavailable at startup; retrying on demand")
                }
            }
        });
    }
}

/// Stops what needs stopping (browser pools, …) when the server shuts down.
pub async fn shutdown(services: &Services) {
    if let Some(b) = services.get::<crate::browser::Browsers>() {
        b.shutdown().await;
    }
}

/// The configured facilitators (payment.facilitator or payment.facilitators), observed by the
/// metrics: the unlabelled per-endpoint series as before, and per facilitator.
fn facilitators(
    config: &Config,
    metrics: &Arc<crate::ops::metrics::Metrics>,
) -> Result<Facilitators, String> {
    let p = &config.payment;
    let mut members = Vec::with_capacity(p.facilitators.len());
    // `payment.facilitator` is the first one (code that adjusts it, e.g. a test's timeout, keeps
    // working); the rest of the list follows.
    let all = std::iter::once(&p.facilitator).chain(p.facilitators.iter().skip(1));
    for (i, f) in all.enumerate() {
        let client = FacilitatorClient::new(FacilitatorConfig {
            url: f.url.clone(),
            verify_timeout: f.verify_timeout,
            settle_timeout: f.settle_timeout,
            supported_ttl: f.supported_ttl,
            pool_idle_timeout: f.pool_idle_timeout,
            auth: match &f.auth {
                FacilitatorAuthSetting::None => FacilitatorAuth::None,
                FacilitatorAuthSetting::Cdp { key_id, key_secret } => FacilitatorAuth::Cdp {
                    key_id: key_id.clone(),
                    key_secret: key_secret.clone(),
                },
            },
        })
        .map_err(|e| {
            if p.facilitators.len() == 1 {
                format!("payment.facilitator: {e}")
            } else {
                format!("payment.facilitators[{i}] ({}): {e}", f.name)
            }
        })?;
        let m = metrics.clone();
        client.observe(Arc::new(move |endpoint, elapsed, error| {
            m.facilitator(endpoint, elapsed, error)
        }));
        members.push((f.name.clone(), client));
    }
    let pool = Facilitators::new(
        members,
        p.failover.failures,
        p.failover.cooldown,
        p.failover.slow,
        p.failover.check_interval,
    );
    for name in pool.names() {
        metrics.facilitator_state(&name, 0);
    }
    let m = metrics.clone();
    pool.observe(Arc::new(move |e: &Event<'_>| match *e {
        Event::Exchange {
            facilitator,
            endpoint,
            elapsed,
            error,
        } => m.facilitator_exchange(facilitator, endpoint, elapsed, error),
        Event::Failover { endpoint, from } => m.facilitator_failover(endpoint, from),
        Event::Breaker { facilitator, state } => m.facilitator_state(facilitator, state.gauge()),
    }));
    Ok(pool)
}
