//! `funding_rates`: BTC, ETH and SOL perpetual funding, for /api/funding and /api/signals.
//! Leaves `Fresh<FundingSet>` in the exchange.
//!
//! Parameters (see `market_common::SourceParams`): `upstreams` tried in order (default
//! pipeline: `okx`, then `hyperliquid`; a name starting with `hyperliquid` speaks Hyperliquid's
//! info API, any other OKX's v5 public API), `ttl_s` (15–300), `timeout_ms`, `max_bytes`.

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

use super::market_common::{upstream_failure, SourceParams, UPSTREAM_ERRORS};
use crate::market::{first_ok, funding, MarketHub};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "funding_rates",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &["funding_rates"],
    errors: UPSTREAM_ERRORS,
    doc: "BTC/ETH/SOL perpetual funding: OKX, Hyperliquid as second source (cached)",
    build,
};

struct FundingRates {
    p: SourceParams,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: SourceParams = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    p.check(&hub)?;
    Ok(Arc::new(FundingRates { p, hub }))
}

#[async_trait]
impl Stage for FundingRates {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let hub = &*self.hub;
        let limits = self.p.limits();
        let got = first_ok(&self.p.upstreams, |u| async move {
            hub.cached(
                format!("funding|{u}"),
                self.p.ttl(),
                funding::fetch_funding(hub, &u, limits),
            )
            .await
        })
        .await;
        match got {
            Ok(fresh) => {
                ex.slots.put(fresh);
                Flow::Continue
            }
            Err(e) => upstream_failure(ex, &e),
        }
    }
}
