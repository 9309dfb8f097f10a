//! Spot prices and 24 h statistics for BTC, ETH and SOL: Coinbase Exchange product stats (no
//! key) first, CoinGecko simple/price as the second source.

use futures_util::future::try_join_all;
use serde_json::{Map, Value};

use super::hub::{num, Limits, MarketHub, UpstreamError};

/// The assets the market routes cover, with each venue's name for them.
#[derive(Debug, Clone, Copy)]
pub struct Asset {
    pub symbol: &'static str,
    pub coinbase: &'static str,
    pub coingecko: &'static str,
    pub okx_swap: &'static str,
    pub hyperliquid: &'static str,
}

pub const ASSETS: &[Asset] = &[
    Asset {
        symbol: "BTC",
        coinbase: "BTC-USD",
        coingecko: "bitcoin",
        okx_swap: "BTC-USDT-SWAP",
        hyperliquid: "BTC",
    },
    Asset {
        symbol: "ETH",
        coinbase: "ETH-USD",
        coingecko: "ethereum",
        okx_swap: "ETH-USDT-SWAP",
        hyperliquid: "ETH",
    },
    Asset {
        symbol: "SOL",
        coinbase: "SOL-USD",
        coingecko: "solana",
        okx_swap: "SOL-USDT-SWAP",
        hyperliquid: "SOL",
    },
];

/// One asset's spot snapshot. Fields a source does not give are None.
#[derive(Debug, Clone, PartialEq)]
pub struct Spot {
    pub symbol: &'static str,
    pub price_usd: f64,
    pub change_24h_pct: Option<f64>,
    pub high_24h: Option<f64>,
    pub low_24h: Option<f64>,
    /// Traded volume over 24 h in the asset's own units.
    pub volume_24h_base: Option<f64>,
    /// Traded volume over 24 h in USD (Coinbase: base volume × last price, an estimate).
    pub volume_24h_usd: Option<f64>,
}

/// Spot snapshots of every asset and the upstream they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotSet {
    pub upstream: String,
    pub spots: Vec<Spot>,
}

impl SpotSet {
    pub fn price(&self, symbol: &str) -> Option<f64> {
        self.spots
            .iter()
            .find(|s| s.symbol == symbol)
            .map(|s| s.price_usd)
    }
}

/// Which API an upstream speaks, from its name's prefix (`coingecko…`, else Coinbase).
pub async fn fetch_spot(
    hub: &MarketHub,
    upstream: &str,
    limits: Limits,
) -> Result<SpotSet, UpstreamError> {
    if upstream.starts_with("coingecko") {
        coingecko(hub, upstream, limits).await
    } else {
        coinbase(hub, upstream, limits).await
    }
}

/// Coinbase Exchange `GET /products/<id>/stats`, one request per asset, concurrently.
pub async fn coinbase(
    hub: &MarketHub,
    upstream: &str,
    limits: Limits,
) -> Result<SpotSet, UpstreamError> {
    let spots = try_join_all(ASSETS.iter().map(|a| async move {
        let v: Value = hub
            .get_json(upstream, &format!("products/{}/stats", a.coinbase), limits)
            .await?;
        parse_coinbase_stats(upstream, a.symbol, &v)
    }))
    .await?;
    Ok(SpotSet {
        upstream: upstream.to_string(),
        spots,
    })
}

pub fn parse_coinbase_stats(
    upstream: &str,
    symbol: &'static str,
    v: &Value,
) -> Result<Spot, UpstreamError> {
    let Value::Object(o) = v else {
        return Err(UpstreamError::bad(
            upstream,
            format!("{symbol} stats are not a JSON object"),
        ));
    };
    let get = |k: &str| o.get(k).and_then(num);
    let last = get("last").filter(|p| *p > 0.0).ok_or_else(|| {
        UpstreamError::bad(upstream, format!("{symbol} stats carry no last price"))
    })?;
    let open = get("open").filter(|p| *p > 0.0);
    let volume = get("volume");
    Ok(Spot {
        symbol,
        price_usd: last,
        change_24h_pct: open.map(|o| (last - o) / o * 100.0),
        high_24h: get("high"),
        low_24h: get("low"),
        volume_24h_base: volume,
        volume_24h_usd: volume.map(|v| v * last),
    })
}

/// CoinGecko `GET /simple/price` for all assets in one request.
pub async fn coingecko(
    hub: &MarketHub,
    upstream: &str,
    limits: Limits,
) -> Result<SpotSet, UpstreamError> {
    let ids: Vec<&str> = ASSETS.iter().map(|a| a.coingecko).collect();
    let path = format!(
        "simple/price?ids={}&vs_currencies=usd&include_24hr_change=true&include_24hr_vol=true&include_last_updated_at=true",
        ids.join(",")
    );
    let v: Value = hub.get_json(upstream, &path, limits).await?;
    parse_coingecko(upstream, &v)
}

pub fn parse_coingecko(upstream: &str, v: &Value) -> Result<SpotSet, UpstreamError> {
    let empty = Map::new();
    let o = v.as_object().unwrap_or(&empty);
    let mut spots = Vec::new();
    for a in ASSETS {
        let entry = o
            .get(a.coingecko)
            .and_then(Value::as_object)
            .ok_or_else(|| {
                UpstreamError::bad(
                    upstream,
                    format!("no price for {} ({})", a.symbol, a.coingecko),
                )
            })?;
        let price = entry
            .get("usd")
            .and_then(num)
            .filter(|p| *p > 0.0)
            .ok_or_else(|| {
                UpstreamError::bad(upstream, format!("no USD price for {}", a.symbol))
            })?;
        let vol_usd = entry.get("usd_24h_vol").and_then(num);
        spots.push(Spot {
            symbol: a.symbol,
            price_usd: price,
            change_24h_pct: entry.get("usd_24h_change").and_then(num),
            high_24h: None,
            low_24h: None,
            volume_24h_base: vol_usd.map(|v| v / price),
            volume_24h_usd: vol_usd,
        });
    }
    Ok(SpotSet {
        upstream: upstream.to_string(),
        spots,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn coinbase_stats_give_change_from_the_24h_open() {
        let v = json!({"open":"100.00","high":"112.5","low":"95","last":"110.00","volume":"2.5","volume_30day":"99"});
        let s = parse_coinbase_stats("cb", "BTC", &v).unwrap();
        assert_eq!(s.price_usd, 110.0);
        assert!((s.change_24h_pct.unwrap() - 10.0).abs() < 1e-9);
        assert_eq!(s.high_24h, Some(112.5));
        assert_eq!(s.volume_24h_usd, Some(275.0));
        let err = parse_coinbase_stats("cb", "BTC", &json!({"message":"NotFound"})).unwrap_err();
        assert_eq!(err.status(), 502);
        assert!(err.message.contains("BTC"));
    }

    #[test]
    fn coingecko_needs_every_asset() {
        let v = json!({"bitcoin":{"usd":100.0,"usd_24h_vol":1000.0,"usd_24h_change":-1.5},
                       "ethereum":{"usd":10.0},"solana":{"usd":1.0}});
        let set = parse_coingecko("cg", &v).unwrap();
        assert_eq!(set.price("BTC"), Some(100.0));
        assert_eq!(set.spots[0].volume_24h_base, Some(10.0));
        assert_eq!(set.spots[1].change_24h_pct, None);
        let err = parse_coingecko("cg", &json!({"bitcoin":{"usd":1}})).unwrap_err();
        assert!(err.message.contains("ETH"));
    }
}
