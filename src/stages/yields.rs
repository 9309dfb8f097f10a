//! `yields`: the /api/yield answer from `yield_pools`: pools filtered by the caller (chain,
//! stablecoin, minTvl, limit), outliers dropped, ranked by a sustainable APY (see
//! `market::yields` and the `methodology` text in the answer).
//!
//! Parameters: `chain_param` (`chain`), `stablecoin_param` (`stablecoin`), `min_tvl_param`
//! (`minTvl`), `limit_param` (`limit`): the route's input names; `default_limit` (20),
//! `max_limit` (100); `max_apy_pct` (1000): APYs above this are treated as implausible.

use async_trait::async_trait;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::market::format::{jopt, round};
use crate::market::yields::{rank, sustainable_apy, Filters, Pool, PoolList, TVL_FLOOR_USD};
use crate::market::Fresh;
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "yields",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<PoolList>>("yield_pools")],
    gives: &[],
    errors: &[],
    doc: "filter (chain, stablecoin, minTvl, limit) and rank yield pools by sustainable APY",
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "p_chain")]
    chain_param: String,
    #[serde(default = "p_stable")]
    stablecoin_param: String,
    #[serde(default = "p_min_tvl")]
    min_tvl_param: String,
    #[serde(default = "p_limit")]
    limit_param: String,
    #[serde(default = "default_limit")]
    default_limit: usize,
    #[serde(default = "max_limit")]
    max_limit: usize,
    #[serde(default = "max_apy")]
    max_apy_pct: f64,
}

fn p_chain() -> String {
    "chain".into()
}
fn p_stable() -> String {
    "stablecoin".into()
}
fn p_min_tvl() -> String {
    "minTvl".into()
}
fn p_limit() -> String {
    "limit".into()
}
fn default_limit() -> usize {
    20
}
fn max_limit() -> usize {
    100
}
fn max_apy() -> f64 {
    1000.0
}

struct Yields {
    p: Params,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if p.default_limit == 0 || p.default_limit > p.max_limit || p.max_limit > 1000 {
        return Err("need 1 <= default_limit <= max_limit <= 1000".into());
    }
    if p.max_apy_pct <= 0.0 {
        return Err("max_apy_pct must be positive".into());
    }
    Ok(Arc::new(Yields { p }))
}

pub fn methodology(max_apy_pct: f64) -> String {
    format!(
        "Source: DefiLlama yields (all pools it lists). Kept: tvlUsd >= 10,000,000 (or your minTvl), \
         not flagged as an outlier by DefiLlama, 0 < apy <= {max_apy_pct}%. Ranked by sustainableApy, \
         then TVL: sustainableApy = min(apy, apyMean30d) when the 30-day mean is known, so a one-day \
         reward spike cannot lift a pool above what it paid on average over the month; without a \
         30-day history it is apyBase (fees and interest, no token rewards). APYs are percentages. \
         Filters: chain (exact name, any case), stablecoin=true for stablecoin pools only or false \
         for the others, minTvl (USD, at least 10,000,000), limit (1-100, default 20). prediction \
         is DefiLlama's own APY trend forecast. Descriptive only, not advice."
    )
}

fn pool_json(rank: usize, p: &Pool) -> Value {
    json!({
        "rank": rank,
        "pool": p.pool,
        "project": p.project,
        "chain": p.chain,
        "symbol": p.symbol,
        "poolMeta": p.pool_meta,
        "tvlUsd": round(p.tvl_usd, 0),
        "apy": jopt(p.apy.map(|x| round(x, 4))),
        "apyBase": jopt(p.apy_base.map(|x| round(x, 4))),
        "apyReward": jopt(p.apy_reward.map(|x| round(x, 4))),
        "apyMean30d": jopt(p.apy_mean_30d.map(|x| round(x, 4))),
        "sustainableApy": round(sustainable_apy(p), 4),
        "stablecoin": p.stablecoin,
        "ilRisk": p.il_risk,
        "exposure": p.exposure,
        "prediction": p.prediction.as_ref().map(|x| json!({
            "predictedClass": x.predicted_class,
            "predictedProbability": jopt(x.probability),
            "binnedConfidence": jopt(x.confidence),
        })),
    })
}

impl Yields {
    fn filters(&self, input: &Map<String, Value>) -> Result<Filters, String> {
        let chain = input
            .get(&self.p.chain_param)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        let stablecoin = input.get(&self.p.stablecoin_param).and_then(Value::as_bool);
        let min_tvl = match input.get(&self.p.min_tvl_param) {
            None | Some(Value::Null) => TVL_FLOOR_USD,
            Some(v) => v
                .as_f64()
                .filter(|t| t.is_finite() && *t >= TVL_FLOOR_USD)
                .ok_or_else(|| {
                    format!(
                        "`{}` must be a number of at least 10000000",
                        self.p.min_tvl_param
                    )
                })?,
        };
        let limit = match input.get(&self.p.limit_param) {
            None | Some(Value::Null) => self.p.default_limit,
            Some(v) => v
                .as_u64()
                .map(|l| l as usize)
                .filter(|l| (1..=self.p.max_limit).contains(l))
                .ok_or_else(|| {
                    format!(
                        "`{}` must be between 1 and {}",
                        self.p.limit_param, self.p.max_limit
                    )
                })?,
        };
        Ok(Filters {
            chain,
            stablecoin,
            min_tvl,
            limit,
            max_apy_pct: self.p.max_apy_pct,
        })
    }
}

#[async_trait]
impl Stage for Yields {
    fn check_input(&self, input: &Map<String, Value>) -> Result<(), Reply> {
        self.filters(input)
            .map(|_| ())
            .map_err(|m| Reply::error(StatusCode::BAD_REQUEST, "invalid_parameter", m))
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let f = match self.filters(&ex.input) {
            Ok(f) => f,
            Err(m) => return ex.fail(StatusCode::BAD_REQUEST, "invalid_parameter", m),
        };
        let Some(fresh) = ex.slots.get::<Fresh<PoolList>>().cloned() else {
            return ex.missing("yield pools");
        };
        let list = &fresh.value;
        let (matched, top) = rank(&list.pools, &f);
        let pools: Vec<Value> = top
            .iter()
            .enumerate()
            .map(|(i, p)| pool_json(i + 1, p))
            .collect();
        let body = json!({
            "pools": pools,
            "count": pools.len(),
            "matched": matched,
            "filters": {
                "chain": f.chain,
                "stablecoin": f.stablecoin,
                "minTvl": f.min_tvl,
                "limit": f.limit,
            },
            "universe": {
                "poolsListed": list.listed,
                "poolsAtOrAboveFloor": list.pools.len(),
                "tvlFloorUsd": TVL_FLOOR_USD,
            },
            "dataSource": list.upstream,
            "methodology": methodology(self.p.max_apy_pct),
        });
        ex.respond_ok_as_of(body, fresh.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn limits_are_ordered_and_apy_cap_positive() {
        with_shipped_route("/api/yield", |ctx| {
            assert!(build(ctx, Value::Null).is_ok());
            let e = build(ctx, json!({"default_limit": 0})).err().unwrap();
            assert!(e.contains("default_limit"), "{e}");
            let e = build(ctx, json!({"default_limit": 50, "max_limit": 10}))
                .err()
                .unwrap();
            assert!(e.contains("default_limit"), "{e}");
            let e = build(ctx, json!({"max_apy_pct": 0.0})).err().unwrap();
            assert!(e.contains("max_apy_pct"), "{e}");
        });
    }

    #[test]
    fn the_methodology_names_the_apy_cap() {
        assert!(methodology(500.0).contains("0 < apy <= 500%"));
    }
}
