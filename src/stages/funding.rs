//! `funding`: the /api/funding answer from `funding_rates`: per asset (top-level keys BTC, ETH,
//! SOL) the venue, instrument, rate per interval, interval, rate normalised to 8 h, annualised
//! rate, next funding time and which side pays.
//!
//! No parameters.

use async_trait::async_trait;
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::market::funding::FundingSet;
use crate::market::Fresh;
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "funding",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<FundingSet>>("funding_rates")],
    gives: &[],
    errors: &[],
    doc: "BTC/ETH/SOL funding: rate, interval, 8h-normalised, annualised, next time, venue",
    build,
};

pub const METHODOLOGY: &str = "rate is the funding rate per interval as a fraction (0.0001 = 0.01%); \
rate8h = rate x 8 / intervalHours; annualizedPct = rate x (8760 / intervalHours) x 100. \
A positive rate means long positions pay short positions (payer: longs); negative, shorts pay longs. \
nextFundingTime is when the quoted rate is next settled. Source: OKX USDT-margined swaps \
(8h intervals), Hyperliquid (hourly) as second source.";

struct FundingStage;

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let _: Map<String, Value> = params(p)?;
    Ok(Arc::new(FundingStage))
}

pub fn funding_body(set: &FundingSet) -> Value {
    let mut out = Map::new();
    for f in &set.rates {
        out.insert(f.symbol.to_string(), f.to_json());
    }
    let venue = set.rates.first().map(|f| f.venue).unwrap_or("");
    out.insert("venue".into(), Value::String(venue.into()));
    out.insert("dataSource".into(), Value::String(set.upstream.clone()));
    out.insert("methodology".into(), Value::String(METHODOLOGY.into()));
    Value::Object(out)
}

#[async_trait]
impl Stage for FundingStage {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(fresh) = ex.slots.get::<Fresh<FundingSet>>().cloned() else {
            return ex.missing("funding rates");
        };
        let body = funding_body(&fresh.value);
        ex.respond_ok_as_of(body, fresh.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::funding::Funding;
    use chrono::{TimeZone, Utc};

    #[test]
    fn the_answer_has_one_key_per_asset_then_venue_source_and_method() {
        let set = FundingSet {
            upstream: "okx".into(),
            rates: vec![Funding {
                symbol: "BTC",
                venue: "okx",
                instrument: "BTC-USDT-SWAP".into(),
                rate: 0.0001,
                interval_hours: 8.0,
                next_funding: Utc.with_ymd_and_hms(2026, 11, 22, 8, 0, 0).unwrap(),
                mark_price: None,
            }],
        };
        let body = funding_body(&set);
        let keys: Vec<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["BTC", "venue", "dataSource", "methodology"]);
        assert_eq!(body["BTC"]["payer"], "longs");
        assert_eq!(body["BTC"]["nextFundingTime"], "2026-11-22T08:00:00.000Z");
        assert_eq!(body["venue"], "okx");
        assert_eq!(body["dataSource"], "okx");
    }
}
