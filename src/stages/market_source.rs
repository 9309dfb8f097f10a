//! `spot_prices`, `funding_rates` and `yield_pools`: the three stages that read one market
//! source and leave what it gave in the exchange for the route's own stage (pulse, gas,
//! portfolio; funding, signals; yields). They differ only in what they read, so one stage
//! serves all three: upstreams tried in order (the second is the fallback), each answer cached
//! for the route's `ttl_s` (see `market::source`). An upstream failure is 502 or 503, not
//! charged.
//!
//! Parameters (`market::SourceParams`): `upstreams` tried in order, `ttl_s` (15–300, the
//! route's cache lifetime), `timeout_ms`, `max_bytes`.
//! - `spot_prices` leaves `Fresh<SpotSet>`: BTC, ETH and SOL spot prices with 24 h statistics
//!   (default pipeline: `coinbase_exchange`, then `coingecko`; an upstream whose name starts
//!   with `coingecko` speaks CoinGecko's simple/price, any other Coinbase Exchange's product
//!   stats).
//! - `funding_rates` leaves `Fresh<FundingSet>`: BTC, ETH and SOL perpetual funding (default
//!   pipeline: `okx`, then `hyperliquid`; a name starting with `hyperliquid` speaks
//!   Hyperliquid's info API, any other OKX's v5 public API).
//! - `yield_pools` leaves `Fresh<PoolList>`: DefiLlama's yield pools at or above the 10 M USD
//!   TVL floor, parsed in one pass off the async workers (default pipeline:
//!   `defillama_yields`; the list is large: tens of megabytes are allowed in `max_bytes`).

use async_trait::async_trait;
use serde_json::Value;
use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::market::funding::{self, FundingSet};
use crate::market::spot::{self, SpotSet};
use crate::market::yields::{parse_pools, PoolList};
use crate::market::{Fresh, Limits, MarketHub, SourceParams, UpstreamError, UPSTREAM_ERRORS};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const SPOT_PRICES: StageFactory = StageFactory {
    name: "spot_prices",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[Artefact::of::<Fresh<SpotSet>>("spot_prices")],
    errors: UPSTREAM_ERRORS,
    doc: "BTC/ETH/SOL spot and 24h stats: Coinbase Exchange, CoinGecko as second source (cached)",
    build: build_spot,
};

pub const FUNDING_RATES: StageFactory = StageFactory {
    name: "funding_rates",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[Artefact::of::<Fresh<FundingSet>>("funding_rates")],
    errors: UPSTREAM_ERRORS,
    doc: "BTC/ETH/SOL perpetual funding: OKX, Hyperliquid as second source (cached)",
    build: build_funding,
};

pub const YIELD_POOLS: StageFactory = StageFactory {
    name: "yield_pools",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &[Artefact::of::<Fresh<PoolList>>("yield_pools")],
    errors: UPSTREAM_ERRORS,
    doc: "DefiLlama yield pools with TVL >= 10M USD, parsed in one pass and cached",
    build: build_yields,
};

type Reading<'a, T> = Pin<Box<dyn Future<Output = Result<T, UpstreamError>> + Send + 'a>>;

/// One upstream's answer, read from the upstream named.
type ReadFn<T> = for<'a> fn(&'a MarketHub, String, Limits) -> Reading<'a, T>;

/// A source stage: what it reads (`kind` names it in the cache) and how.
struct MarketSource<T> {
    kind: &'static str,
    read: ReadFn<T>,
    p: SourceParams,
    hub: Arc<MarketHub>,
}

fn build_source<T: Any + Send + Sync>(
    ctx: &BuildCtx<'_>,
    p: Value,
    kind: &'static str,
    read: ReadFn<T>,
) -> Result<Arc<dyn Stage>, String> {
    let p: SourceParams = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    p.check(&hub)?;
    Ok(Arc::new(MarketSource { kind, read, p, hub }))
}

fn build_spot(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    build_source::<SpotSet>(ctx, p, "spot", |hub, u, limits| {
        Box::pin(async move { spot::fetch_spot(hub, &u, limits).await })
    })
}

fn build_funding(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    build_source::<FundingSet>(ctx, p, "funding", |hub, u, limits| {
        Box::pin(async move { funding::fetch_funding(hub, &u, limits).await })
    })
}

fn build_yields(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    build_source::<PoolList>(ctx, p, "yields", |hub, u, limits| {
        Box::pin(read_pools(hub, u, limits))
    })
}

/// GET `pools` and parse it off the async workers (a large body takes tens of milliseconds).
async fn read_pools(
    hub: &MarketHub,
    upstream: String,
    limits: Limits,
) -> Result<PoolList, UpstreamError> {
    let body = hub.get_bytes(&upstream, "pools", limits).await?;
    let name = upstream.clone();
    tokio::task::spawn_blocking(move || parse_pools(&name, &body))
        .await
        .map_err(|e| UpstreamError::bad(&upstream, format!("parsing failed: {e}")))?
}

#[async_trait]
impl<T: Any + Send + Sync> Stage for MarketSource<T> {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let hub = &*self.hub;
        let limits = self.p.limits();
        let got = self
            .p
            .read(hub, self.kind, |u| (self.read)(hub, u, limits))
            .await;
        match got {
            Ok(fresh) => {
                ex.slots.put(fresh);
                Flow::Continue
            }
            Err(e) => ex.fail_upstream_error(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn the_three_sources_take_source_parameters_and_need_the_hub() {
        with_shipped_route("/api/pulse", |ctx| {
            for f in [SPOT_PRICES, FUNDING_RATES, YIELD_POOLS] {
                let e = (f.build)(ctx, json!({"upstreams": ["okx"], "ttl": 30}))
                    .err()
                    .unwrap();
                assert!(e.contains("unknown field `ttl`"), "{}: {e}", f.name);
                let e = (f.build)(ctx, json!({"upstreams": ["okx"]})).err().unwrap();
                assert!(e.contains("MarketHub"), "{}: {e}", f.name);
            }
        });
    }
}
