//! `pulse`: the /api/pulse answer from `spot_prices`: per asset (top-level keys BTC, ETH, SOL)
//! the spot price, 24 h change, high, low and volume, where the price sits in its 24 h range, a
//! momentum direction, and an overall direction.
//!
//! Momentum (neutral wording, no advice): `up` when the 24 h change is at least `+flat_band_pct`,
//! `down` when it is at most `−flat_band_pct`, otherwise `flat`. Overall: the same rule applied
//! to the average 24 h change of the three assets.
//!
//! Parameters: `flat_band_pct` (default 0.5, 0–10).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::market::format::{iso, jopt, round};
use crate::market::spot::{Spot, SpotSet};
use crate::market::Fresh;
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "pulse",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<SpotSet>>("spot_prices")],
    gives: &[],
    errors: &[],
    doc: "BTC/ETH/SOL spot, 24h change/high/low/volume and momentum direction (from spot_prices)",
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_band")]
    flat_band_pct: f64,
}

fn default_band() -> f64 {
    0.5
}

struct Pulse {
    band: f64,
}

fn build(_ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    if !(0.0..=10.0).contains(&p.flat_band_pct) {
        return Err("flat_band_pct must be between 0 and 10".into());
    }
    Ok(Arc::new(Pulse {
        band: p.flat_band_pct,
    }))
}

/// `up`, `down` or `flat` for a percentage change and a dead band.
pub fn direction(change_pct: Option<f64>, band: f64) -> &'static str {
    match change_pct {
        Some(c) if c >= band => "up",
        Some(c) if c <= -band => "down",
        _ => "flat",
    }
}

fn asset(s: &Spot, band: f64) -> Value {
    let range_position = match (s.high_24h, s.low_24h) {
        (Some(h), Some(l)) if h > l => Some(((s.price_usd - l) / (h - l)).clamp(0.0, 1.0)),
        _ => None,
    };
    json!({
        "priceUsd": s.price_usd,
        "change24hPct": jopt(s.change_24h_pct.map(|c| round(c, 3))),
        "high24hUsd": jopt(s.high_24h),
        "low24hUsd": jopt(s.low_24h),
        "volume24h": jopt(s.volume_24h_base.map(|v| round(v, 4))),
        "volume24hUsd": jopt(s.volume_24h_usd.map(|v| round(v, 0))),
        "rangePosition24h": jopt(range_position.map(|r| round(r, 3))),
        "momentum": direction(s.change_24h_pct, band),
    })
}

/// The pulse body (without source/priced/asOf).
pub fn pulse_body(set: &SpotSet, band: f64, taken: DateTime<Utc>) -> Value {
    let mut out = Map::new();
    for s in &set.spots {
        out.insert(s.symbol.to_string(), asset(s, band));
    }
    let changes: Vec<f64> = set.spots.iter().filter_map(|s| s.change_24h_pct).collect();
    let avg = (!changes.is_empty()).then(|| changes.iter().sum::<f64>() / changes.len() as f64);
    let count = |d: &str| {
        set.spots
            .iter()
            .filter(|s| direction(s.change_24h_pct, band) == d)
            .count()
    };
    out.insert(
        "overall".into(),
        json!({
            "momentum": direction(avg, band),
            "avgChange24hPct": jopt(avg.map(|a| round(a, 3))),
            "up": count("up"),
            "down": count("down"),
            "flat": count("flat"),
        }),
    );
    out.insert("dataSource".into(), Value::String(set.upstream.clone()));
    out.insert("dataTakenAt".into(), Value::String(iso(taken)));
    out.insert(
        "methodology".into(),
        Value::String(format!(
            "momentum is up when the 24h change is at least +{band}%, down when at most -{band}%, \
             otherwise flat; overall applies the same rule to the average 24h change. \
             rangePosition24h is (price - low) / (high - low). volume24h is in the asset's units; \
             volume24hUsd is volume24h x price (Coinbase) or the reported USD volume (CoinGecko). \
             Descriptive only, not advice."
        )),
    );
    Value::Object(out)
}

#[async_trait]
impl Stage for Pulse {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(fresh) = ex.slots.get::<Fresh<SpotSet>>().cloned() else {
            return ex.missing("spot prices");
        };
        let body = pulse_body(&fresh.value, self.band, fresh.taken);
        ex.respond_ok_as_of(body, fresh.taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spot(symbol: &'static str, change: Option<f64>) -> Spot {
        Spot {
            symbol,
            price_usd: 100.0,
            change_24h_pct: change,
            high_24h: Some(110.0),
            low_24h: Some(90.0),
            volume_24h_base: Some(1.0),
            volume_24h_usd: Some(100.0),
        }
    }

    #[test]
    fn directions_use_the_dead_band() {
        assert_eq!(direction(Some(0.5), 0.5), "up");
        assert_eq!(direction(Some(0.49), 0.5), "flat");
        assert_eq!(direction(Some(-0.5), 0.5), "down");
        assert_eq!(direction(None, 0.5), "flat");
    }

    #[test]
    fn body_has_top_level_assets_and_overall() {
        let set = SpotSet {
            upstream: "coinbase_exchange".into(),
            spots: vec![
                spot("BTC", Some(2.0)),
                spot("ETH", Some(-3.0)),
                spot("SOL", Some(0.1)),
            ],
        };
        let b = pulse_body(&set, 0.5, Utc::now());
        assert_eq!(b["BTC"]["momentum"], "up");
        assert_eq!(b["ETH"]["momentum"], "down");
        assert_eq!(b["SOL"]["momentum"], "flat");
        assert_eq!(b["BTC"]["rangePosition24h"], 0.5);
        // average (2 - 3 + 0.1) / 3 = -0.3 → flat
        assert_eq!(b["overall"]["momentum"], "flat");
        assert_eq!(b["overall"]["avgChange24hPct"], -0.3);
        assert_eq!(b["overall"]["up"], 1);
        assert_eq!(b["dataSource"], "coinbase_exchange");
        let text = b.to_string().to_lowercase();
        assert!(!text.contains("buy") && !text.contains("sell"));
    }
}
