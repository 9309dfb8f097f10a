//! `yield_pools`: DefiLlama's yield pools at or above the 10 M USD TVL floor, parsed in one
//! pass and cached (see `market::yields`). Leaves `Fresh<PoolList>` in the exchange.
//!
//! Parameters (see `market_common::SourceParams`): `upstreams` (default pipeline:
//! `defillama_yields`), `ttl_s` (15–300), `timeout_ms`, `max_bytes` (the list is large: tens of
//! megabytes are allowed).

use async_trait::async_trait;
use serde_json::Value;
use std::sync::Arc;

use super::market_common::{upstream_failure, SourceParams, UPSTREAM_ERRORS};
use crate::market::yields::{parse_pools, PoolList};
use crate::market::{first_ok, MarketHub, UpstreamError};
use crate::pipeline::{params, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "yield_pools",
    phase: Phase::Work,
    payment: false,
    needs: &[],
    gives: &["yield_pools"],
    errors: UPSTREAM_ERRORS,
    doc: "DefiLlama yield pools with TVL >= 10M USD, parsed in one pass and cached",
    build,
};

struct YieldPools {
    p: SourceParams,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: SourceParams = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    p.check(&hub)?;
    Ok(Arc::new(YieldPools { p, hub }))
}

/// GET `pools` and parse it off the async workers (a large body takes tens of milliseconds).
async fn fetch(
    hub: &MarketHub,
    upstream: String,
    p: &SourceParams,
) -> Result<PoolList, UpstreamError> {
    let body = hub.get_bytes(&upstream, "pools", p.limits()).await?;
    let name = upstream.clone();
    tokio::task::spawn_blocking(move || parse_pools(&name, &body))
        .await
        .map_err(|e| UpstreamError::bad(&upstream, format!("parsing failed: {e}")))?
}

#[async_trait]
impl Stage for YieldPools {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let hub = &*self.hub;
        let got = first_ok(&self.p.upstreams, |u| async move {
            hub.cached(
                format!("yields|{u}"),
                self.p.ttl(),
                fetch(hub, u.clone(), &self.p),
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
