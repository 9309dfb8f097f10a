//! DefiLlama yields (`GET /pools`): a large list (tens of thousands of pools, megabytes of
//! JSON). It is parsed in one pass that keeps only the fields we publish and only the pools at
//! or above the TVL floor (unknown fields are skipped, strings borrowed while parsing), then
//! filtered and ranked per request.
//!
//! Ranking (the route's `methodology`): outliers (DefiLlama's own flag) and pools with a
//! missing, non-positive or implausible APY (above `max_apy_pct`) are dropped. Each remaining
//! pool gets `sustainableApy` = min(apy, apyMean30d) when the 30-day mean is known — a one-day
//! reward spike cannot lift a pool above what it paid on average over the month — and apyBase
//! (the organic part, no token rewards) otherwise. Pools are ranked by sustainableApy, then TVL.

use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::borrow::Cow;
use std::fmt;

use super::hub::UpstreamError;

/// The route's promise: pools with at least this TVL (USD).
pub const TVL_FLOOR_USD: f64 = 10_000_000.0;

#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub predicted_class: Option<String>,
    pub probability: Option<f64>,
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    pub pool: String,
    pub project: String,
    pub chain: String,
    pub symbol: String,
    pub pool_meta: Option<String>,
    pub tvl_usd: f64,
    pub apy: Option<f64>,
    pub apy_base: Option<f64>,
    pub apy_reward: Option<f64>,
    pub apy_mean_30d: Option<f64>,
    pub stablecoin: bool,
    pub il_risk: Option<String>,
    pub exposure: Option<String>,
    pub prediction: Option<Prediction>,
    pub outlier: bool,
}

/// Pools at or above the floor, and how many the upstream listed in all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PoolList {
    /// The upstream the list came from.
    pub upstream: String,
    pub listed: usize,
    pub pools: Vec<Pool>,
}

#[derive(Deserialize)]
struct RawPrediction<'a> {
    #[serde(default, borrow, rename = "predictedClass")]
    predicted_class: Option<Cow<'a, str>>,
    #[serde(default, rename = "predictedProbability")]
    probability: Option<f64>,
    #[serde(default, rename = "binnedConfidence")]
    confidence: Option<f64>,
}

#[derive(Deserialize)]
struct RawPool<'a> {
    #[serde(default, borrow)]
    pool: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    project: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    chain: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    symbol: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "poolMeta")]
    pool_meta: Option<Cow<'a, str>>,
    #[serde(default, rename = "tvlUsd")]
    tvl_usd: Option<f64>,
    #[serde(default)]
    apy: Option<f64>,
    #[serde(default, rename = "apyBase")]
    apy_base: Option<f64>,
    #[serde(default, rename = "apyReward")]
    apy_reward: Option<f64>,
    #[serde(default, rename = "apyMean30d")]
    apy_mean_30d: Option<f64>,
    #[serde(default)]
    stablecoin: Option<bool>,
    #[serde(default, borrow, rename = "ilRisk")]
    il_risk: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    exposure: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    predictions: Option<RawPrediction<'a>>,
    #[serde(default)]
    outlier: Option<bool>,
}

impl RawPool<'_> {
    fn into_pool(self) -> Option<Pool> {
        let tvl = self.tvl_usd.filter(|t| t.is_finite())?;
        if tvl < TVL_FLOOR_USD {
            return None;
        }
        let s = |c: Option<Cow<'_, str>>| c.map(Cow::into_owned);
        let f = |x: Option<f64>| x.filter(|v| v.is_finite());
        Some(Pool {
            pool: s(self.pool).unwrap_or_default(),
            project: s(self.project).unwrap_or_default(),
            chain: s(self.chain).unwrap_or_default(),
            symbol: s(self.symbol).unwrap_or_default(),
            pool_meta: s(self.pool_meta),
            tvl_usd: tvl,
            apy: f(self.apy),
            apy_base: f(self.apy_base),
            apy_reward: f(self.apy_reward),
            apy_mean_30d: f(self.apy_mean_30d),
            stablecoin: self.stablecoin.unwrap_or(false),
            il_risk: s(self.il_risk),
            exposure: s(self.exposure),
            prediction: self.predictions.map(|p| Prediction {
                predicted_class: s(p.predicted_class),
                probability: f(p.probability),
                confidence: f(p.confidence),
            }),
            outlier: self.outlier.unwrap_or(false),
        })
    }
}

/// The `data` array, visited element by element: only pools above the floor are kept.
struct PoolsVisitor;

impl<'de> Visitor<'de> for PoolsVisitor {
    type Value = PoolList;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of pools")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<PoolList, A::Error> {
        let mut out = PoolList::default();
        while let Some(raw) = seq.next_element::<RawPool<'de>>()? {
            out.listed += 1;
            if let Some(p) = raw.into_pool() {
                out.pools.push(p);
            }
        }
        Ok(out)
    }
}

struct Data(PoolList);

impl<'de> Deserialize<'de> for Data {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(PoolsVisitor).map(Data)
    }
}

/// The top-level object: `{status, data: [...]}`; other keys skipped.
struct Doc(Option<PoolList>);

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Doc;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object with a `data` array")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
                let mut data = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "data" {
                        data = Some(map.next_value::<Data>()?.0);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Doc(data))
            }
        }
        d.deserialize_map(V)
    }
}

/// Parses a `/pools` answer. An answer without a `data` array, or with no pools at all, is a
/// bad answer.
pub fn parse_pools(upstream: &str, body: &[u8]) -> Result<PoolList, UpstreamError> {
    let doc: Doc = serde_json::from_slice(body)
        .map_err(|e| UpstreamError::bad(upstream, format!("sent pools we cannot read: {e}")))?;
    let list = doc
        .0
        .ok_or_else(|| UpstreamError::bad(upstream, "the answer has no `data` list of pools"))?;
    if list.listed == 0 {
        return Err(UpstreamError::bad(upstream, "listed no pools"));
    }
    Ok(PoolList {
        upstream: upstream.to_string(),
        ..list
    })
}

/// What a caller asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Filters {
    pub chain: Option<String>,
    /// Some(true): stablecoin pools only; Some(false): non-stablecoin pools only.
    pub stablecoin: Option<bool>,
    pub min_tvl: f64,
    pub limit: usize,
    pub max_apy_pct: f64,
}

/// APY used for ranking (see the module documentation).
pub fn sustainable_apy(p: &Pool) -> f64 {
    match (p.apy, p.apy_mean_30d) {
        (Some(a), Some(m)) => a.min(m).max(0.0),
        _ => p.apy_base.unwrap_or(0.0).max(0.0),
    }
}

/// Filters and ranks; returns (how many matched before the limit, the top `limit`).
pub fn rank<'a>(pools: &'a [Pool], f: &Filters) -> (usize, Vec<&'a Pool>) {
    let mut kept: Vec<(&Pool, f64)> = pools
        .iter()
        .filter(|p| !p.outlier)
        .filter(|p| p.tvl_usd >= f.min_tvl)
        .filter(|p| matches!(p.apy, Some(a) if a > 0.0 && a <= f.max_apy_pct))
        .filter(|p| {
            f.chain
                .as_deref()
                .is_none_or(|c| p.chain.eq_ignore_ascii_case(c))
        })
        .filter(|p| f.stablecoin.is_none_or(|s| p.stablecoin == s))
        .map(|p| (p, sustainable_apy(p)))
        .collect();
    kept.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| b.0.tvl_usd.total_cmp(&a.0.tvl_usd))
            .then_with(|| a.0.pool.cmp(&b.0.pool))
    });
    let matched = kept.len();
    (
        matched,
        kept.into_iter().take(f.limit).map(|(p, _)| p).collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(pools: &str) -> Vec<u8> {
        format!(r#"{{"status":"success","data":[{pools}]}}"#).into_bytes()
    }

    const A: &str = r#"{"chain":"Ethereum","project":"lido","symbol":"STETH","tvlUsd":2.5e10,"apyBase":2.9,"apyReward":null,"apy":2.9,"rewardTokens":null,"pool":"a","apyPct1D":0.1,"stablecoin":false,"ilRisk":"no","exposure":"single","predictions":{"predictedClass":"Stable/Up","predictedProbability":72,"binnedConfidence":2},"poolMeta":null,"mu":3.1,"sigma":0.05,"count":900,"outlier":false,"underlyingTokens":["0x0"],"apyMean30d":3.0}"#;
    const SPIKE: &str = r#"{"chain":"Base","project":"farm","symbol":"USDC-X","tvlUsd":1.2e7,"apyBase":1.0,"apyReward":80.0,"apy":81.0,"pool":"b","stablecoin":true,"ilRisk":"yes","exposure":"multi","outlier":false,"apyMean30d":4.0}"#;
    const SMALL: &str = r#"{"chain":"Base","project":"tiny","symbol":"T","tvlUsd":9.9e6,"apy":9.0,"pool":"c","outlier":false}"#;
    const OUTLIER: &str = r#"{"chain":"Arbitrum","project":"o","symbol":"O","tvlUsd":5e7,"apy":40.0,"pool":"d","outlier":true,"apyMean30d":40.0}"#;
    const NEW: &str = r#"{"chain":"base","project":"new","symbol":"USDC","tvlUsd":3e7,"apy":12.0,"apyBase":3.5,"apyReward":8.5,"pool":"e","stablecoin":true,"outlier":false}"#;

    #[test]
    fn parse_keeps_floor_pools_and_counts_all() {
        let l = parse_pools("llama", &body(&[A, SPIKE, SMALL, OUTLIER, NEW].join(","))).unwrap();
        assert_eq!(l.listed, 5);
        assert_eq!(l.pools.len(), 4);
        let a = &l.pools[0];
        assert_eq!(a.project, "lido");
        assert_eq!(a.apy_reward, None);
        assert_eq!(
            a.prediction.as_ref().unwrap().predicted_class.as_deref(),
            Some("Stable/Up")
        );
        assert!(parse_pools("llama", br#"{"status":"success","data":[]}"#).is_err());
        assert!(parse_pools("llama", br#"{"status":"error"}"#).is_err());
        assert!(parse_pools("llama", br#"{"data":[{"tvlUsd":"#).is_err());
        assert!(parse_pools("llama", br#"[]"#).is_err());
    }

    #[test]
    fn ranking_is_not_fooled_by_a_reward_spike() {
        let l = parse_pools("llama", &body(&[A, SPIKE, SMALL, OUTLIER, NEW].join(","))).unwrap();
        let f = Filters {
            chain: None,
            stablecoin: None,
            min_tvl: TVL_FLOOR_USD,
            limit: 10,
            max_apy_pct: 1000.0,
        };
        let (matched, top) = rank(&l.pools, &f);
        assert_eq!(matched, 3, "outlier and sub-floor pools are gone");
        // spike: min(81, 4) = 4; new: no 30d mean → apyBase 3.5; lido: min(2.9, 3.0) = 2.9
        let order: Vec<&str> = top.iter().map(|p| p.pool.as_str()).collect();
        assert_eq!(order, vec!["b", "e", "a"]);
        let base_stable = Filters {
            chain: Some("BASE".into()),
            stablecoin: Some(true),
            limit: 1,
            ..f.clone()
        };
        let (matched, top) = rank(&l.pools, &base_stable);
        assert_eq!(matched, 2);
        assert_eq!(top.len(), 1);
        let big = Filters {
            min_tvl: 2e10,
            ..f.clone()
        };
        assert_eq!(rank(&l.pools, &big).0, 1);
        let cap = Filters {
            max_apy_pct: 50.0,
            ..f
        };
        assert_eq!(rank(&l.pools, &cap).0, 2, "an 81% APY is above the cap");
    }
}
