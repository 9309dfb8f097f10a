//! `portfolio`: the /api/portfolio answer: for an address on each configured EVM network (Base
//! and Ethereum by default) the native balance, the configured tokens' balances (one Multicall3
//! `aggregate3` per network), transaction count and whether it is a contract, valued in USD from
//! `spot_prices` (needs it), and a risk snapshot with documented rules.
//!
//! Parameters:
//! - `address_param` (default `address`): the input parameter holding the address.
//! - `networks`: `{ name, chain_id, rpc: [upstream, …], tokens: [{ symbol, address, decimals,
//!   price: USD|ETH|BTC|SOL }] }`; the native coin is ETH on every configured network.
//! - `ttl_s` (15–300), `timeout_ms`: per address and network cache lifetime, RPC deadline.
//! - `dust_usd` (10), `high_concentration_pct` (80), `fresh_max_tx` (2): risk thresholds.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::market::format::round;
use crate::market::networks::{check_networks, NetworkParams};
use crate::market::portfolio::{self, format_units, Position, RiskRules, TokenSpec};
use crate::market::source::check_ttl_and_timeout;
use crate::market::spot::SpotSet;
use crate::market::UPSTREAM_ERRORS;
use crate::market::{first_ok, Fresh, Limits, MarketHub, UpstreamError};
use crate::pipeline::{
    params, Artefact, BuildCtx, Exchange, Flow, Phase, Reply, Stage, StageFactory,
};

pub const FACTORY: StageFactory = StageFactory {
    name: "portfolio",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<SpotSet>>("spot_prices")],
    gives: &[],
    errors: UPSTREAM_ERRORS,
    doc: "address balances (native + tokens via Multicall3), tx count, contract check, USD values, risk flags",
    build,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default = "default_param")]
    address_param: String,
    networks: Vec<NetworkParams>,
    #[serde(default = "default_ttl")]
    ttl_s: u64,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    #[serde(default = "default_dust")]
    dust_usd: f64,
    #[serde(default = "default_conc")]
    high_concentration_pct: f64,
    #[serde(default = "default_fresh")]
    fresh_max_tx: u64,
}

fn default_param() -> String {
    "address".into()
}
fn default_ttl() -> u64 {
    30
}
fn default_timeout() -> u64 {
    8000
}
fn default_dust() -> f64 {
    10.0
}
fn default_conc() -> f64 {
    80.0
}
fn default_fresh() -> u64 {
    2
}

struct Portfolio {
    p: Params,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    if ctx.route.param(&p.address_param).is_none() {
        return Err(format!(
            "the route has no input parameter `{}`",
            p.address_param
        ));
    }
    check_networks(&p.networks, &hub)?;
    check_ttl_and_timeout(p.ttl_s, p.timeout_ms)?;
    if !(p.dust_usd >= 0.0 && (0.0..=100.0).contains(&p.high_concentration_pct)) {
        return Err("dust_usd must be ≥ 0 and high_concentration_pct within 0–100".into());
    }
    Ok(Arc::new(Portfolio { p, hub }))
}

fn valid_address(s: &str) -> bool {
    crate::config::is_evm_address(s)
}

impl Portfolio {
    fn methodology(&self) -> String {
        format!(
            "Balances at the latest block of each network: native ETH (eth_getBalance) and the listed \
             tokens (balanceOf through one Multicall3 aggregate3 call per network); transactionCount is \
             the account nonce. USD values: stablecoins at 1.00, ETH/WETH at the spot ETH price, \
             WBTC/cbBTC at the spot BTC price. Risk rules: holdings are grouped by symbol across networks; \
             largestSharePct is the biggest group's share of totalUsd; concentrationHhi is the sum of \
             squared shares (1 = one asset); stablecoinSharePct is the stablecoins' share. Flags: \
             contract_wallet when the address has contract code on any network (not an EIP-7702 \
             delegation, flagged delegated_eoa); fresh_address when the nonces of all networks add up to \
             {} or fewer; empty when nothing listed is held; dust_only when 0 < totalUsd < {} USD; \
             high_concentration when totalUsd >= {} USD and largestSharePct >= {}%. Only the listed \
             tokens are seen. Descriptive only, not advice.",
            self.p.fresh_max_tx, self.p.dust_usd, self.p.dust_usd, self.p.high_concentration_pct
        )
    }
}

fn price_of(spot: &SpotSet, key: &str) -> Option<f64> {
    if key == "USD" {
        Some(1.0)
    } else {
        spot.price(key)
    }
}

#[async_trait]
impl Stage for Portfolio {
    fn check_input(&self, input: &Map<String, Value>) -> Result<(), Reply> {
        match input.get(&self.p.address_param).and_then(Value::as_str) {
            Some(a) if valid_address(a) => Ok(()),
            _ => Err(Reply::error(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                format!(
                    "`{}` must be an EVM address: 0x followed by 40 hex digits",
                    self.p.address_param
                ),
            )),
        }
    }

    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(spot) = ex.slots.get::<Fresh<SpotSet>>().cloned() else {
            return ex.missing("spot prices");
        };
        let Some(address) = ex.input_str(&self.p.address_param).map(str::to_string) else {
            return ex.missing("the address");
        };
        if !valid_address(&address) {
            return ex.fail(
                StatusCode::BAD_REQUEST,
                "invalid_parameter",
                "the address must be 0x followed by 40 hex digits",
            );
        }
        let results = self.read_networks(&address).await;
        let mut taken: DateTime<Utc> = spot.taken;
        let mut networks = Map::new();
        let mut positions: Vec<Position> = Vec::new();
        let mut tx_total = 0u64;
        let (mut any_contract, mut any_delegated) = (false, false);
        let mut sources = Map::new();
        sources.insert("prices".into(), Value::String(spot.value.upstream.clone()));
        for (n, r) in self.p.networks.iter().zip(results) {
            let fresh = match r {
                Ok(f) => f,
                Err(e) => return ex.fail_upstream_error(&e),
            };
            taken = taken.min(fresh.taken);
            let o = &fresh.value;
            sources.insert(n.name.clone(), Value::String(o.upstream.clone()));
            let (entry, held) = network_entry(n, o, &spot.value);
            networks.insert(n.name.clone(), entry);
            positions.extend(held);
            tx_total += o.tx_count;
            any_contract |= o.is_contract();
            any_delegated |= o.delegated();
        }
        let rules = RiskRules {
            dust_usd: self.p.dust_usd,
            high_concentration_pct: self.p.high_concentration_pct,
            fresh_max_tx: self.p.fresh_max_tx,
        };
        let r = portfolio::risk(&positions, tx_total, any_contract, any_delegated, rules);
        let holdings: Vec<Value> = r
            .holdings
            .iter()
            .map(|(s, v, pct)| json!({"symbol": s, "valueUsd": round(*v, 2), "sharePct": round(*pct, 2)}))
            .collect();
        let body = json!({
            "address": address,
            "networks": networks,
            "totalUsd": round(r.total_usd, 2),
            "holdings": holdings,
            "risk": {
                "largestHolding": r.holdings.first().map(|h| h.0.clone()),
                "largestSharePct": round(r.largest_share_pct, 2),
                "concentrationHhi": round(r.hhi, 4),
                "stablecoinSharePct": round(r.stablecoin_share_pct, 2),
                "transactionCountTotal": tx_total,
                "flags": r.flags,
            },
            "prices": {
                "ETH": spot.value.price("ETH"),
                "BTC": spot.value.price("BTC"),
            },
            "dataSource": sources,
            "methodology": self.methodology(),
        });
        ex.respond_ok_as_of(body, taken)
    }
}

impl Portfolio {
    /// Every configured network's on-chain reading of `address`, each from its first RPC that
    /// answers, cached per RPC and address for `ttl_s`; in the order of `networks`.
    async fn read_networks(
        &self,
        address: &str,
    ) -> Vec<Result<Fresh<portfolio::Onchain>, UpstreamError>> {
        let hub = &*self.hub;
        let limits = Limits {
            timeout: Duration::from_millis(self.p.timeout_ms),
            max_bytes: 1_000_000,
        };
        let ttl = Duration::from_secs(self.p.ttl_s);
        let key_addr = address.to_ascii_lowercase();
        join_all(self.p.networks.iter().map(|n| {
            let tokens: Vec<TokenSpec> = n
                .tokens
                .iter()
                .map(|t| TokenSpec {
                    symbol: t.symbol.clone(),
                    address: t.address.clone(),
                    decimals: t.decimals,
                    price: t.price.clone(),
                })
                .collect();
            let key_addr = key_addr.clone();
            async move {
                let tokens = &tokens;
                let key_addr = &key_addr;
                first_ok(&n.rpc, |u| async move {
                    hub.cached(
                        format!("portfolio|{u}|{key_addr}"),
                        ttl,
                        portfolio::fetch_onchain(hub, &u, key_addr, tokens, limits),
                    )
                    .await
                })
                .await
            }
        }))
        .await
    }
}

/// One network's entry of the answer (native balance, tokens, totals) and the positions it adds
/// to the risk figures; a balance without a price is shown but not valued.
fn network_entry(
    n: &NetworkParams,
    o: &portfolio::Onchain,
    spot: &SpotSet,
) -> (Value, Vec<Position>) {
    let native_usd = spot.price("ETH").map(|p| o.native_wei.scaled_f64(18) * p);
    let mut net_total = native_usd.unwrap_or(0.0);
    let mut positions = vec![Position {
        symbol: "ETH".into(),
        network: n.name.clone(),
        value_usd: native_usd.unwrap_or(0.0),
        stablecoin: false,
    }];
    let mut tokens = Vec::new();
    for (t, raw) in n.tokens.iter().zip(o.tokens.iter()) {
        let amount = raw.as_ref().map(|r| r.scaled_f64(t.decimals));
        let usd = amount.and_then(|a| price_of(spot, &t.price).map(|p| a * p));
        if let Some(u) = usd {
            net_total += u;
            positions.push(Position {
                symbol: t.symbol.clone(),
                network: n.name.clone(),
                value_usd: u,
                stablecoin: t.price == "USD",
            });
        }
        tokens.push(json!({
            "symbol": t.symbol,
            "address": t.address,
            "balance": raw.as_ref().map(|r| Value::String(format_units(r, t.decimals))).unwrap_or(Value::Null),
            "valueUsd": usd.map(|u| round(u, 2)),
            "stablecoin": t.price == "USD",
        }));
    }
    let entry = json!({
        "chainId": n.chain_id,
        "native": {
            "symbol": "ETH",
            "balance": format_units(&o.native_wei, 18),
            "valueUsd": native_usd.map(|u| round(u, 2)),
        },
        "tokens": tokens,
        "transactionCount": o.tx_count,
        "isContract": o.is_contract(),
        "eip7702Delegated": o.delegated(),
        "totalUsd": round(net_total, 2),
    });
    (entry, positions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::chain::with_shipped_route;
    use serde_json::json;

    #[test]
    fn networks_are_required_and_risk_settings_bounded() {
        with_shipped_route("/api/portfolio", |ctx| {
            let e = build(ctx, json!({})).err().unwrap();
            assert!(e.contains("missing field `networks`"), "{e}");
            let e = build(
                ctx,
                json!({"networks": [], "high_concentration_pct": 101.0}),
            )
            .err()
            .unwrap();
            assert!(
                e.contains("MarketHub") || e.contains("high_concentration_pct"),
                "{e}"
            );
        });
    }

    #[test]
    fn a_network_entry_values_what_has_a_price_and_shows_the_rest() {
        use crate::market::portfolio::RawAmount;
        use crate::market::spot::Spot;
        let n: NetworkParams = serde_json::from_value(json!({
            "name": "base", "chain_id": 8453, "rpc": ["base_rpc"],
            "tokens": [
                {"symbol": "USDC", "address": "0xa", "decimals": 6, "price": "USD"},
                {"symbol": "WBTC", "address": "0xb", "decimals": 8, "price": "BTC"},
                {"symbol": "X", "address": "0xc", "decimals": 18, "price": "ETH"}
            ]
        }))
        .unwrap();
        let o = portfolio::Onchain {
            upstream: "base_rpc".into(),
            native_wei: RawAmount::from_digits("1500000000000000000").unwrap(),
            tx_count: 7,
            code: vec![],
            // 250 USDC, 0.5 WBTC (no BTC price below), a failed balance call.
            tokens: vec![
                RawAmount::from_digits("250000000"),
                RawAmount::from_digits("50000000"),
                None,
            ],
        };
        let spot = SpotSet {
            upstream: "coinbase".into(),
            spots: vec![Spot {
                symbol: "ETH",
                price_usd: 2000.0,
                change_24h_pct: None,
                high_24h: None,
                low_24h: None,
                volume_24h_base: None,
                volume_24h_usd: None,
            }],
        };
        let (entry, positions) = network_entry(&n, &o, &spot);
        assert_eq!(entry["native"]["valueUsd"], json!(3000.0));
        assert_eq!(entry["totalUsd"], json!(3250.0));
        assert_eq!(entry["tokens"][0]["valueUsd"], json!(250.0));
        assert_eq!(entry["tokens"][0]["stablecoin"], json!(true));
        assert_eq!(entry["tokens"][1]["balance"], json!("0.5"));
        assert_eq!(entry["tokens"][1]["valueUsd"], Value::Null);
        assert_eq!(entry["tokens"][2]["balance"], Value::Null);
        assert_eq!(entry["transactionCount"], json!(7));
        let held: Vec<(&str, f64)> = positions
            .iter()
            .map(|p| (p.symbol.as_str(), p.value_usd))
            .collect();
        assert_eq!(held, [("ETH", 3000.0), ("USDC", 250.0)]);
    }

    #[test]
    fn addresses_are_evm_addresses() {
        assert!(valid_address("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3"));
        assert!(!valid_address("0xdF1D7b5C"));
        assert!(!valid_address(
            "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1"
        ));
    }
}
