//! `spot_prices`: BTC, ETH and SOL spot prices with 24 h statistics, for pulse, gas and
//! portfolio. Leaves `Fresh<SpotSet>` in the exchange.
//!
//! Parameters (see `market_common::SourceParams`): `upstreams` tried in order (default
//! pipeline: `coinbase_exchange`, then `coingecko`; an upstream whose name starts with
//! `coingecko` speaks CoinGecko's simple/price, any other Coinbase Exchange's product stats),
//! `ttl_s` (15–300, the route's cache lifetime), `timeout_ms`, `max_bytes`.

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

use super::market_common::{upstream_failure, SourceParams, UPSTREAM_ERRORS};
use crate::market::{first_ok, spot, MarketHub};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "spot_prices",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &["spot_prices"],
    errors: UPSTREAM_ERRORS,
    doc: "BTC/ETH/SOL spot and 24h stats: Coinbase Exchange, CoinGecko as second source (cached)",
    build,
};

struct SpotPrices {
    p: SourceParams,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: SourceParams = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    p.check(&hub)?;
    Ok(Arc::new(SpotPrices { p, hub }))
}

#[async_trait]
impl Stage for SpotPrices {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let hub = &*self.hub;
        let limits = self.p.limits();
        let got = first_ok(&self.p.upstreams, |u| async move {
            hub.cached(
                format!("spot|{u}"),
                self.p.ttl(),
                spot::fetch_spot(hub, &u, limits),
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
