//! `signals`: the /api/signals answer: for BTC, ETH and SOL, from Coinbase Exchange candles,
//! RSI(14, Wilder), MACD(12, 26, 9) and Bollinger(20, 2σ), plus the perpetual funding rate
//! left by `funding_rates` (needs it).
//!
//! Parameters:
//! - `upstreams` (default `[coinbase_exchange]`), `ttl_s` (15–300), `timeout_ms`, `max_bytes`:
//!   the candle source, as in `market::SourceParams`.
//! - `interval_param` (default `interval`): the input parameter naming the candle interval
//!   (1m, 5m, 15m, 1h, 6h, 1d); `default_interval` (default `1h`) when the route has none.
//! - `min_candles` (default 100): fewer candles than this is a 502 (RSI and MACD are not yet
//!   stable on a short history).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::future::try_join_all;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::market::candles::{self, Candle};
use crate::market::format::{iso, jnum, round};
use crate::market::funding::FundingSet;
use crate::market::indicators::{bollinger, macd, rsi_wilder, Bollinger, Macd};
use crate::market::spot::ASSETS;
use crate::market::{first_ok, Fresh, MarketHub, SourceParams, UpstreamError, UPSTREAM_ERRORS};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "signals",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<FundingSet>>("funding_rates")],
    gives: &[],
    errors: UPSTREAM_ERRORS,
    doc: "RSI(14 Wilder), MACD(12,26,9), Bollinger(20,2) from Coinbase candles, plus funding",
    build,
};

pub const METHODOLOGY: &str = "Computed on candle closes (oldest first) of the chosen interval. \
RSI: Wilder's smoothing over 14 periods; rsiZone is overbought at 70 or above, oversold at 30 or below, \
otherwise neutral. MACD: EMA12 - EMA26 (EMAs seeded with a simple mean), signal = EMA9 of the line, \
histogram = line - signal; macd.direction is up when the histogram is positive, down when negative. \
Bollinger: 20-period simple mean +/- 2 population standard deviations; percentB = (close - lower) / (upper - lower); \
bandwidth = (upper - lower) / middle. momentum: one vote each from RSI (above 55 up, below 45 down), \
the MACD histogram sign and the close against the Bollinger middle; up or down needs a net of two votes, \
otherwise flat. Funding is the perpetual funding rate (see /api/funding). Descriptive only, not advice.";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_upstreams")]
    upstreams: Vec<String>,
    #[serde(default = "default_ttl")]
    ttl_s: u64,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    #[serde(default = "default_max_bytes")]
    max_bytes: usize,
    #[serde(default = "default_interval_param")]
    interval_param: String,
    #[serde(default = "default_interval")]
    default_interval: String,
    #[serde(default = "default_min_candles")]
    min_candles: usize,
}

fn default_upstreams() -> Vec<String> {
    vec!["coinbase_exchange".into()]
}
fn default_ttl() -> u64 {
    60
}
fn default_timeout() -> u64 {
    8000
}
fn default_max_bytes() -> usize {
    1_000_000
}
fn default_interval_param() -> String {
    "interval".into()
}
fn default_interval() -> String {
    "1h".into()
}
fn default_min_candles() -> usize {
    100
}

struct Signals {
    source: SourceParams,
    interval_param: String,
    default_interval: String,
    min_candles: usize,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    let source = SourceParams {
        upstreams: p.upstreams,
        ttl_s: p.ttl_s,
        timeout_ms: p.timeout_ms,
        max_bytes: p.max_bytes,
    };
    source.check(&hub)?;
    if candles::granularity(&p.default_interval).is_none() {
        return Err(format!(
            "default_interval `{}` is not one of 1m, 5m, 15m, 1h, 6h, 1d",
            p.default_interval
        ));
    }
    if !(35..=300).contains(&p.min_candles) {
        return Err("min_candles must be between 35 and 300".into());
    }
    Ok(Arc::new(Signals {
        source,
        interval_param: p.interval_param,
        default_interval: p.default_interval,
        min_candles: p.min_candles,
        hub,
    }))
}

/// The candle history of every asset for one interval, fetched together.
#[derive(Debug)]
pub struct CandleSet {
    pub upstream: String,
    pub series: Vec<(&'static str, Vec<Candle>)>,
}

pub fn rsi_zone(rsi: f64) -> &'static str {
    if rsi >= 70.0 {
        "overbought"
    } else if rsi <= 30.0 {
        "oversold"
    } else {
        "neutral"
    }
}

/// The histogram's sign, treating rounding noise (below 1e-9 of the price) as zero.
fn histogram_sign(h: f64, close: f64) -> i32 {
    if h.abs() <= 1e-9 * close.abs() {
        0
    } else if h > 0.0 {
        1
    } else {
        -1
    }
}

/// Net vote of RSI, MACD histogram and close vs Bollinger middle (see METHODOLOGY).
pub fn momentum(rsi: f64, m: &Macd, b: &Bollinger, close: f64) -> &'static str {
    let vote = |up: bool, down: bool| (up as i32) - (down as i32);
    let h = histogram_sign(m.histogram, close);
    let score = vote(rsi > 55.0, rsi < 45.0)
        + vote(h > 0, h < 0)
        + vote(close > b.middle, close < b.middle);
    if score >= 2 {
        "up"
    } else if score <= -2 {
        "down"
    } else {
        "flat"
    }
}

/// One asset's indicators, or None when the series is too short.
pub fn asset_signals(closes: &[f64]) -> Option<Value> {
    let last = *closes.last()?;
    let rsi = rsi_wilder(closes, 14)?;
    let m = macd(closes, 12, 26, 9)?;
    let b = bollinger(closes, 20, 2.0)?;
    let dir = |x: f64| match histogram_sign(x, last) {
        1 => "up",
        -1 => "down",
        _ => "flat",
    };
    let position = if last > b.upper {
        "above_upper"
    } else if last < b.lower {
        "below_lower"
    } else {
        "inside"
    };
    Some(json!({
        "lastClose": jnum(last),
        "rsi14": jnum(round(rsi, 2)),
        "rsiZone": rsi_zone(rsi),
        "macd": {
            "line": jnum(round(m.line, 6)),
            "signal": jnum(round(m.signal, 6)),
            "histogram": jnum(round(m.histogram, 6)),
            "direction": dir(m.histogram),
            "histogramChange": match m.prev_histogram.map(|p| dir(m.histogram.abs() - p.abs())).unwrap_or("flat") {
                "up" => "widening",
                "down" => "narrowing",
                _ => "unchanged",
            },
        },
        "bollinger": {
            "upper": jnum(round(b.upper, 6)),
            "middle": jnum(round(b.middle, 6)),
            "lower": jnum(round(b.lower, 6)),
            "percentB": jnum(round(b.percent_b, 4)),
            "bandwidth": jnum(round(b.bandwidth, 6)),
            "position": position,
        },
        "momentum": momentum(rsi, &m, &b, last),
    }))
}

impl Signals {
    async fn candles(&self, interval: &str, gran: u32) -> Result<Fresh<CandleSet>, UpstreamError> {
        let hub = &*self.hub;
        let limits = self.source.limits();
        first_ok(&self.source.upstreams, |u| async move {
            let key = format!("candles|{u}|{gran}");
            hub.cached(key, self.source.ttl(), async {
                let series = try_join_all(ASSETS.iter().map(|a| {
                    let u = u.clone();
                    async move {
                        let c = candles::fetch_candles(hub, &u, a.coinbase, gran, limits).await?;
                        if c.len() < self.min_candles {
                            return Err(UpstreamError::bad(
                                &u,
                                format!(
                                    "sent {} {interval} candles for {}, fewer than the {} needed",
                                    c.len(),
                                    a.coinbase,
                                    self.min_candles
                                ),
                            ));
                        }
                        Ok((a.symbol, c))
                    }
                }))
                .await?;
                Ok(CandleSet {
                    upstream: u.clone(),
                    series,
                })
            })
            .await
        })
        .await
    }
}

fn body(candles: &CandleSet, funding: &FundingSet, interval: &str) -> Result<Value, UpstreamError> {
    let mut out = Map::new();
    for (symbol, series) in &candles.series {
        let closes: Vec<f64> = series.iter().map(|c| c.close).collect();
        let mut v = asset_signals(&closes).ok_or_else(|| {
            UpstreamError::bad(&candles.upstream, format!("too few candles for {symbol}"))
        })?;
        if let Value::Object(o) = &mut v {
            o.insert("interval".into(), Value::String(interval.into()));
            o.insert("candles".into(), json!(series.len()));
            o.insert(
                "lastCandleTime".into(),
                Value::String(iso(series.last().map(|c| c.time).unwrap_or_default())),
            );
            o.insert(
                "funding".into(),
                funding
                    .get(symbol)
                    .map(|f| f.to_json())
                    .unwrap_or(Value::Null),
            );
        }
        out.insert(symbol.to_string(), v);
    }
    out.insert("interval".into(), Value::String(interval.into()));
    out.insert(
        "dataSource".into(),
        json!({ "candles": candles.upstream, "funding": funding.upstream }),
    );
    out.insert("methodology".into(), Value::String(METHODOLOGY.into()));
    Ok(Value::Object(out))
}

fn older(a: DateTime<Utc>, b: DateTime<Utc>) -> DateTime<Utc> {
    a.min(b)
}

#[async_trait]
impl Stage for Signals {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(funding) = ex.slots.get::<Fresh<FundingSet>>().cloned() else {
            return ex.missing("funding rates");
        };
        let interval = ex
            .input_str(&self.interval_param)
            .unwrap_or(&self.default_interval)
            .to_string();
        let Some(gran) = candles::granularity(&interval) else {
            return ex.fail(
                http::StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!(
                    "`{}` must be one of 1m, 5m, 15m, 1h, 6h, 1d",
                    self.interval_param
                ),
            );
        };
        let candles = match self.candles(&interval, gran).await {
            Ok(c) => c,
            Err(e) => return ex.fail_upstream_error(&e),
        };
        match body(&candles.value, &funding.value, &interval) {
            Ok(b) => ex.respond_ok_as_of(b, older(candles.taken, funding.taken)),
            Err(e) => ex.fail_upstream_error(&e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn momentum_needs_two_net_votes() {
        let m = |h: f64| Macd {
            line: 0.0,
            signal: 0.0,
            histogram: h,
            prev_histogram: None,
        };
        let b = Bollinger {
            upper: 12.0,
            middle: 10.0,
            lower: 8.0,
            percent_b: 0.5,
            bandwidth: 0.4,
        };
        assert_eq!(momentum(60.0, &m(1.0), &b, 11.0), "up");
        assert_eq!(momentum(60.0, &m(1.0), &b, 9.0), "flat");
        assert_eq!(momentum(50.0, &m(-1.0), &b, 9.0), "down");
        assert_eq!(momentum(40.0, &m(1.0), &b, 11.0), "flat");
        assert_eq!(rsi_zone(70.0), "overbought");
        assert_eq!(rsi_zone(30.0), "oversold");
        assert_eq!(rsi_zone(50.0), "neutral");
    }

    #[test]
    fn a_rising_series_reads_up() {
        let closes: Vec<f64> = (0..120).map(|i| 100.0 + i as f64 * 0.5).collect();
        let v = asset_signals(&closes).unwrap();
        assert_eq!(v["rsi14"], 100.0);
        assert_eq!(v["rsiZone"], "overbought");
        assert_eq!(v["momentum"], "up");
        assert!(asset_signals(&closes[..30]).is_none());
    }
}
