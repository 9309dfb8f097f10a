//! An address on one EVM network (native balance, token balances through one Multicall3
//! `aggregate3`, transaction count, code) and the pure risk rules over the priced holdings.

use serde_json::json;

use super::evm::{self, address_bytes, be_to_f64, quantity, unhex};
use super::hub::{Limits, MarketHub, UpstreamError};

/// A token to read (from the stage's configuration).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenSpec {
    pub symbol: String,
    pub address: String,
    pub decimals: u32,
    /// `USD`, `ETH`, `BTC` or `SOL`: which price values it.
    pub price: String,
}

/// What one network says about an address.
#[derive(Debug, Clone, PartialEq)]
pub struct Onchain {
    pub upstream: String,
    /// Native balance in wei (as f64: balances are displayed, not spent).
    pub native_wei: f64,
    pub tx_count: u64,
    pub code: Vec<u8>,
    /// Raw token balances in token units × 10^decimals; None when that call failed.
    pub tokens: Vec<Option<f64>>,
}

impl Onchain {
    /// EIP-7702: an EOA whose code is the delegation designator 0xef0100 ‖ address.
    pub fn delegated(&self) -> bool {
        self.code.len() == 23 && self.code.starts_with(&[0xef, 0x01, 0x00])
    }
    pub fn is_contract(&self) -> bool {
        !self.code.is_empty() && !self.delegated()
    }
}

/// Reads balance, nonce, code and token balances concurrently.
pub async fn fetch_onchain(
    hub: &MarketHub,
    upstream: &str,
    address: &str,
    tokens: &[TokenSpec],
    limits: Limits,
) -> Result<Onchain, UpstreamError> {
    let owner = address_bytes(address)
        .ok_or_else(|| UpstreamError::bad("input", "the address is not 20 bytes of hex"))?;
    let bad = |m: String| UpstreamError::bad(upstream, m);
    let balance = evm::rpc(
        hub,
        upstream,
        "eth_getBalance",
        json!([address, "latest"]),
        limits,
    );
    let nonce = evm::rpc(
        hub,
        upstream,
        "eth_getTransactionCount",
        json!([address, "latest"]),
        limits,
    );
    let code = evm::rpc(
        hub,
        upstream,
        "eth_getCode",
        json!([address, "latest"]),
        limits,
    );
    let calls: Vec<([u8; 20], Vec<u8>)> = tokens
        .iter()
        .filter_map(|t| Some((address_bytes(&t.address)?, evm::balance_of(&owner))))
        .collect();
    let multicall = async {
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        evm::eth_call(
            hub,
            upstream,
            evm::MULTICALL3,
            &evm::aggregate3(&calls),
            limits,
        )
        .await
    };
    let (balance, nonce, code, multicall) =
        futures_util::future::join4(balance, nonce, code, multicall).await;
    let native_wei = balance?
        .as_str()
        .and_then(unhex_quantity)
        .ok_or_else(|| bad("eth_getBalance did not answer a quantity".into()))?;
    let tx_count = quantity(&nonce?)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| bad("eth_getTransactionCount did not answer a quantity".into()))?;
    let code = code?
        .as_str()
        .and_then(unhex)
        .ok_or_else(|| bad("eth_getCode did not answer hex".into()))?;
    let token_balances = if calls.is_empty() {
        Vec::new()
    } else {
        let raw = multicall?;
        let results = evm::decode_aggregate3(&raw)
            .ok_or_else(|| bad("Multicall3 answered data we cannot decode".into()))?;
        if results.len() != calls.len() {
            return Err(bad(format!(
                "Multicall3 answered {} results for {} calls",
                results.len(),
                calls.len()
            )));
        }
        results
            .into_iter()
            .map(|(ok, data)| (ok && data.len() == 32).then(|| be_to_f64(&data)))
            .collect()
    };
    Ok(Onchain {
        upstream: upstream.to_string(),
        native_wei,
        tx_count,
        code,
        tokens: token_balances,
    })
}

/// A quantity of any size as f64 ("0x" + hex digits).
fn unhex_quantity(s: &str) -> Option<f64> {
    let h = s.strip_prefix("0x")?;
    if h.is_empty() {
        return Some(0.0);
    }
    if !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    Some(h.chars().fold(0.0, |acc, c| {
        acc * 16.0 + c.to_digit(16).unwrap_or(0) as f64
    }))
}

/// One priced position (an asset on a network).
#[derive(Debug, Clone, PartialEq)]
pub struct Position {
    pub symbol: String,
    pub network: String,
    pub value_usd: f64,
    pub stablecoin: bool,
}

/// Thresholds of the risk rules.
#[derive(Debug, Clone, Copy)]
pub struct RiskRules {
    /// Total below this (and above zero) is `dust_only`.
    pub dust_usd: f64,
    /// Largest asset share at or above this (in %) is `high_concentration`.
    pub high_concentration_pct: f64,
    /// Transactions sent on all networks together at or below this is `fresh_address`.
    pub fresh_max_tx: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Risk {
    pub total_usd: f64,
    /// Assets by symbol across networks, largest first: (symbol, USD, share %).
    pub holdings: Vec<(String, f64, f64)>,
    pub largest_share_pct: f64,
    /// Herfindahl–Hirschman index of the asset shares (0–1; 1 = a single asset).
    pub hhi: f64,
    pub stablecoin_share_pct: f64,
    pub flags: Vec<&'static str>,
}

pub fn risk(
    positions: &[Position],
    tx_count_total: u64,
    any_contract: bool,
    any_delegated: bool,
    rules: RiskRules,
) -> Risk {
    let total: f64 = positions.iter().map(|p| p.value_usd).sum();
    let mut by_symbol: Vec<(String, f64)> = Vec::new();
    for p in positions.iter().filter(|p| p.value_usd > 0.0) {
        match by_symbol.iter_mut().find(|(s, _)| *s == p.symbol) {
            Some((_, v)) => *v += p.value_usd,
            None => by_symbol.push((p.symbol.clone(), p.value_usd)),
        }
    }
    by_symbol.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let share = |v: f64| if total > 0.0 { v / total * 100.0 } else { 0.0 };
    let holdings: Vec<(String, f64, f64)> = by_symbol
        .iter()
        .map(|(s, v)| (s.clone(), *v, share(*v)))
        .collect();
    let largest = holdings.first().map(|h| h.2).unwrap_or(0.0);
    let hhi = holdings.iter().map(|h| (h.2 / 100.0).powi(2)).sum();
    let stable: f64 = positions
        .iter()
        .filter(|p| p.stablecoin)
        .map(|p| p.value_usd)
        .sum();
    let mut flags = Vec::new();
    if any_contract {
        flags.push("contract_wallet");
    }
    if any_delegated {
        flags.push("delegated_eoa");
    }
    if tx_count_total <= rules.fresh_max_tx {
        flags.push("fresh_address");
    }
    if total <= 0.0 {
        flags.push("empty");
    } else if total < rules.dust_usd {
        flags.push("dust_only");
    }
    if total >= rules.dust_usd && largest >= rules.high_concentration_pct {
        flags.push("high_concentration");
    }
    Risk {
        total_usd: total,
        holdings,
        largest_share_pct: largest,
        hhi,
        stablecoin_share_pct: share(stable),
        flags,
    }
}

/// `raw / 10^decimals` as a plain decimal string (exact while raw fits in u128).
pub fn format_units(raw: f64, decimals: u32) -> String {
    if raw < 3.0e38 && raw.fract() == 0.0 {
        let r = raw as u128;
        let d = 10u128.pow(decimals.min(38));
        let int = r / d;
        let frac = r % d;
        if frac == 0 || decimals == 0 {
            return int.to_string();
        }
        let s = format!("{frac:0width$}", width = decimals as usize);
        return format!("{int}.{}", s.trim_end_matches('0'));
    }
    format!("{}", raw / 10f64.powi(decimals as i32))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: RiskRules = RiskRules {
        dust_usd: 10.0,
        high_concentration_pct: 80.0,
        fresh_max_tx: 2,
    };

    fn pos(symbol: &str, network: &str, usd: f64, stable: bool) -> Position {
        Position {
            symbol: symbol.into(),
            network: network.into(),
            value_usd: usd,
            stablecoin: stable,
        }
    }

    #[test]
    fn concentration_and_stable_share() {
        let p = vec![
            pos("ETH", "base", 450.0, false),
            pos("ETH", "ethereum", 450.0, false),
            pos("USDC", "base", 100.0, true),
        ];
        let r = risk(&p, 40, false, false, RULES);
        assert_eq!(r.total_usd, 1000.0);
        assert_eq!(r.holdings[0], ("ETH".to_string(), 900.0, 90.0));
        assert!((r.hhi - (0.81 + 0.01)).abs() < 1e-12);
        assert!((r.stablecoin_share_pct - 10.0).abs() < 1e-12);
        assert_eq!(r.flags, vec!["high_concentration"]);
    }

    #[test]
    fn flags() {
        let r = risk(&[pos("USDC", "base", 3.0, true)], 0, true, false, RULES);
        assert_eq!(
            r.flags,
            vec!["contract_wallet", "fresh_address", "dust_only"]
        );
        let r = risk(&[], 5, false, true, RULES);
        assert_eq!(r.flags, vec!["delegated_eoa", "empty"]);
        let balanced = vec![
            pos("ETH", "base", 50.0, false),
            pos("USDC", "base", 50.0, true),
        ];
        assert!(risk(&balanced, 3, false, false, RULES).flags.is_empty());
    }

    #[test]
    fn units() {
        assert_eq!(format_units(1_500_000.0, 6), "1.5");
        assert_eq!(format_units(2e18, 18), "2");
        assert_eq!(format_units(0.0, 18), "0");
        assert_eq!(format_units(123.0, 0), "123");
        assert_eq!(format_units(1.0, 18), "0.000000000000000001");
    }

    #[test]
    fn delegation_designator_is_not_a_contract() {
        let mut o = Onchain {
            upstream: "x".into(),
            native_wei: 0.0,
            tx_count: 0,
            code: vec![0xef, 0x01, 0x00],
            tokens: vec![],
        };
        o.code.extend_from_slice(&[0x11; 20]);
        assert!(o.delegated() && !o.is_contract());
        o.code = vec![0x60, 0x80];
        assert!(!o.delegated() && o.is_contract());
        assert_eq!(unhex_quantity("0xde0b6b3a7640000"), Some(1e18));
    }
}
