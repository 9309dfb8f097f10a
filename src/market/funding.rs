//! Perpetual funding for BTC, ETH and SOL: OKX public funding-rate (serves cloud IPs, no key)
//! first, Hyperliquid `metaAndAssetCtxs` as the second source.
//!
//! A rate is per funding interval (a fraction: 0.0001 = 0.01 %). Normalised to 8 h:
//! `rate × 8 / intervalHours`; annualised: `rate × (8760 / intervalHours) × 100` (in %).

use chrono::{DateTime, TimeZone, Timelike, Utc};
use futures_util::future::try_join_all;
use serde_json::{json, Value};

use super::format::{iso, jnum, round};
use super::hub::{num, Limits, MarketHub, UpstreamError};
use super::spot::ASSETS;

#[derive(Debug, Clone, PartialEq)]
pub struct Funding {
    pub symbol: &'static str,
    /// `okx` or `hyperliquid`.
    pub venue: &'static str,
    pub instrument: String,
    /// Rate per interval, as a fraction.
    pub rate: f64,
    pub interval_hours: f64,
    pub next_funding: DateTime<Utc>,
    pub mark_price: Option<f64>,
}

impl Funding {
    /// One asset's funding as the /api/funding and /api/signals answers show it.
    pub fn to_json(&self) -> Value {
        json!({
            "venue": self.venue,
            "instrument": self.instrument,
            "rate": jnum(self.rate),
            "ratePct": jnum(round(self.rate * 100.0, 6)),
            "intervalHours": jnum(self.interval_hours),
            "rate8h": jnum(round(self.rate_8h(), 10)),
            "rate8hPct": jnum(round(self.rate_8h() * 100.0, 6)),
            "annualizedPct": jnum(round(self.annualized_pct(), 4)),
            "nextFundingTime": iso(self.next_funding),
            "payer": if self.rate > 0.0 { "longs" } else if self.rate < 0.0 { "shorts" } else { "none" },
        })
    }

    pub fn rate_8h(&self) -> f64 {
        self.rate * 8.0 / self.interval_hours
    }
    pub fn annualized_pct(&self) -> f64 {
        self.rate * (8760.0 / self.interval_hours) * 100.0
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct FundingSet {
    pub upstream: String,
    pub rates: Vec<Funding>,
}

impl FundingSet {
    pub fn get(&self, symbol: &str) -> Option<&Funding> {
        self.rates.iter().find(|f| f.symbol == symbol)
    }
}

/// Which API an upstream speaks, from its name's prefix (`hyperliquid…`, else OKX).
pub async fn fetch_funding(
    hub: &MarketHub,
    upstream: &str,
    limits: Limits,
) -> Result<FundingSet, UpstreamError> {
    if upstream.starts_with("hyperliquid") {
        let v: Value = hub
            .post_json(
                upstream,
                "info",
                &json!({"type": "metaAndAssetCtxs"}),
                limits,
            )
            .await?;
        parse_hyperliquid(upstream, &v, Utc::now())
    } else {
        let rates = try_join_all(ASSETS.iter().map(|a| async move {
            let v: Value = hub
                .get_json(
                    upstream,
                    &format!("api/v5/public/funding-rate?instId={}", a.okx_swap),
                    limits,
                )
                .await?;
            parse_okx(upstream, a.symbol, &v)
        }))
        .await?;
        Ok(FundingSet {
            upstream: upstream.to_string(),
            rates,
        })
    }
}

fn ms_time(v: &Value) -> Option<DateTime<Utc>> {
    let ms = num(v)? as i64;
    Utc.timestamp_millis_opt(ms).single()
}

/// One OKX `/api/v5/public/funding-rate` answer. `fundingTime` is the settlement of the
/// current period (when the quoted rate is paid); `nextFundingTime − fundingTime` is the
/// interval (8 h unless OKX says otherwise).
pub fn parse_okx(
    upstream: &str,
    symbol: &'static str,
    v: &Value,
) -> Result<Funding, UpstreamError> {
    let code = v["code"].as_str().unwrap_or("");
    if code != "0" {
        return Err(UpstreamError::bad(
            upstream,
            format!(
                "answered code {code:?} for {symbol}: {}",
                v["msg"].as_str().unwrap_or("")
            ),
        ));
    }
    let d = v["data"]
        .as_array()
        .and_then(|a| a.first())
        .ok_or_else(|| UpstreamError::bad(upstream, format!("no funding data for {symbol}")))?;
    let rate = num(&d["fundingRate"])
        .ok_or_else(|| UpstreamError::bad(upstream, format!("no funding rate for {symbol}")))?;
    let funding_time = ms_time(&d["fundingTime"])
        .ok_or_else(|| UpstreamError::bad(upstream, format!("no funding time for {symbol}")))?;
    let interval_hours = ms_time(&d["nextFundingTime"])
        .map(|n| (n - funding_time).num_minutes() as f64 / 60.0)
        .filter(|h| (0.5..=24.0).contains(h))
        .unwrap_or(8.0);
    Ok(Funding {
        symbol,
        venue: "okx",
        instrument: d["instId"].as_str().unwrap_or_default().to_string(),
        rate,
        interval_hours,
        next_funding: funding_time,
        mark_price: None,
    })
}

/// Hyperliquid `metaAndAssetCtxs`: `[ {universe: [{name}, …]}, [ctx, …] ]`, contexts in the
/// universe's order. Funding is paid every hour, on the hour.
pub fn parse_hyperliquid(
    upstream: &str,
    v: &Value,
    now: DateTime<Utc>,
) -> Result<FundingSet, UpstreamError> {
    let universe = v[0]["universe"]
        .as_array()
        .ok_or_else(|| UpstreamError::bad(upstream, "the answer has no universe"))?;
    let ctxs = v[1]
        .as_array()
        .ok_or_else(|| UpstreamError::bad(upstream, "the answer has no asset contexts"))?;
    let next_hour = now
        .with_minute(0)
        .and_then(|t| t.with_second(0))
        .and_then(|t| t.with_nanosecond(0))
        .unwrap_or(now)
        + chrono::Duration::hours(1);
    let mut rates = Vec::new();
    for a in ASSETS {
        let idx = universe
            .iter()
            .position(|u| u["name"].as_str() == Some(a.hyperliquid))
            .ok_or_else(|| {
                UpstreamError::bad(upstream, format!("no {} perpetual listed", a.symbol))
            })?;
        let ctx = ctxs
            .get(idx)
            .ok_or_else(|| UpstreamError::bad(upstream, format!("no context for {}", a.symbol)))?;
        let rate = num(&ctx["funding"]).ok_or_else(|| {
            UpstreamError::bad(upstream, format!("no funding rate for {}", a.symbol))
        })?;
        rates.push(Funding {
            symbol: a.symbol,
            venue: "hyperliquid",
            instrument: format!("{}-PERP", a.hyperliquid),
            rate,
            interval_hours: 1.0,
            next_funding: next_hour,
            mark_price: num(&ctx["markPx"]),
        });
    }
    Ok(FundingSet {
        upstream: upstream.to_string(),
        rates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn okx_interval_and_normalisation() {
        let v = json!({"code":"0","msg":"","data":[{"fundingRate":"0.0001","fundingTime":"1795478400000",
            "nextFundingTime":"1795492800000","instId":"ETH-USDT-SWAP"}]});
        let f = parse_okx("okx", "ETH", &v).unwrap();
        assert_eq!(f.interval_hours, 4.0);
        // 0.0001 per 4 h = 0.0002 per 8 h; × 2190 intervals a year × 100 = 21.9 %
        assert!((f.rate_8h() - 0.0002).abs() < 1e-15);
        assert!((f.annualized_pct() - 21.9).abs() < 1e-9);
        assert_eq!(f.next_funding.timestamp_millis(), 1795478400000);
        let err = parse_okx(
            "okx",
            "BTC",
            &json!({"code":"51001","msg":"Instrument ID does not exist","data":[]}),
        )
        .unwrap_err();
        assert!(err.message.contains("51001"));
        assert!(parse_okx("okx", "BTC", &json!({"code":"0","data":[]})).is_err());
    }

    #[test]
    fn hyperliquid_is_hourly_by_universe_position() {
        let v = json!([{"universe":[{"name":"SOL"},{"name":"BTC"},{"name":"ETH"}]},
            [{"funding":"-0.00001","markPx":"240"},{"funding":"0.0000125","markPx":"97000"},{"funding":"0.00001"}]]);
        let now = Utc.with_ymd_and_hms(2026, 11, 23, 18, 20, 5).unwrap();
        let set = parse_hyperliquid("hyperliquid", &v, now).unwrap();
        let btc = set.get("BTC").unwrap();
        assert_eq!(btc.rate, 0.0000125);
        assert!((btc.rate_8h() - 0.0001).abs() < 1e-15);
        // 0.0000125 × 8760 × 100 = 10.95 %
        assert!((btc.annualized_pct() - 10.95).abs() < 1e-9);
        assert_eq!(
            btc.next_funding,
            Utc.with_ymd_and_hms(2026, 11, 23, 19, 0, 0).unwrap()
        );
        assert_eq!(set.get("SOL").unwrap().mark_price, Some(240.0));
        assert!(parse_hyperliquid("h", &json!([{"universe":[]},[]]), now).is_err());
    }
}
