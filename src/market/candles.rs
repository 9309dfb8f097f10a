//! Coinbase Exchange candles: `GET /products/<id>/candles?granularity=<s>` answers up to 300
//! rows `[time, low, high, open, close, volume]`, newest first.

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use super::hub::{num, Limits, MarketHub, UpstreamError};

/// Intervals Coinbase serves, by the name callers use.
pub const INTERVALS: &[(&str, u32)] = &[
    ("1m", 60),
    ("5m", 300),
    ("15m", 900),
    ("1h", 3600),
    ("6h", 21600),
    ("1d", 86400),
];

pub fn granularity(name: &str) -> Option<u32> {
    INTERVALS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candle {
    pub time: DateTime<Utc>,
    pub close: f64,
}

/// Candles oldest first, duplicates by time dropped.
pub fn parse_candles(
    upstream: &str,
    product: &str,
    v: &Value,
) -> Result<Vec<Candle>, UpstreamError> {
    let rows = v.as_array().ok_or_else(|| {
        UpstreamError::bad(upstream, format!("{product} candles are not a JSON array"))
    })?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let (Some(t), Some(c)) = (row.get(0).and_then(num), row.get(4).and_then(num)) else {
            return Err(UpstreamError::bad(
                upstream,
                format!("{product} has a candle row we cannot read: {row}"),
            ));
        };
        let Some(time) = Utc.timestamp_opt(t as i64, 0).single() else {
            return Err(UpstreamError::bad(
                upstream,
                format!("{product}: bad candle time {t}"),
            ));
        };
        out.push(Candle { time, close: c });
    }
    out.sort_by_key(|c| c.time);
    out.dedup_by_key(|c| c.time);
    Ok(out)
}

pub async fn fetch_candles(
    hub: &MarketHub,
    upstream: &str,
    product: &str,
    granularity: u32,
    limits: Limits,
) -> Result<Vec<Candle>, UpstreamError> {
    let v: Value = hub
        .get_json(
            upstream,
            &format!("products/{product}/candles?granularity={granularity}"),
            limits,
        )
        .await?;
    parse_candles(upstream, product, &v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_are_sorted_oldest_first() {
        let v = json!([
            [1700003600, 1, 3, 2, 2.5, 10],
            [1700000000, 1, 3, 2, 2.0, 10]
        ]);
        let c = parse_candles("cb", "BTC-USD", &v).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].close, 2.0);
        assert!(parse_candles("cb", "BTC-USD", &json!({"message":"x"})).is_err());
        assert!(parse_candles("cb", "BTC-USD", &json!([[1, 2]])).is_err());
        assert_eq!(granularity("1h"), Some(3600));
        assert_eq!(granularity("2h"), None);
    }
}
