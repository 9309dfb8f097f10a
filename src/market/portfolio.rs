//! An address on one EVM network (native balance, token balances through one Multicall3
//! `aggregate3`, transaction count, code) and the pure risk rules over the priced holdings.

use serde_json::json;

use super::evm::{self, address_bytes, be_to_decimal, hex_quantity_to_decimal, quantity, unhex};
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
    /// Native balance in wei, exact.
    pub native_wei: RawAmount,
    pub tx_count: u64,
    pub code: Vec<u8>,
    /// Raw token balances in token units × 10^decimals, exact; None when that call failed.
    pub tokens: Vec<Option<RawAmount>>,
}

/// An on-chain integer amount (wei, token base units) as its exact decimal digits: a uint256
/// does not fit an f64 (2123456789012345678 wei would read 2.1234567890123456 ETH), and a
/// balance shown to a caller must be the chain's own number. f64 only for USD valuations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawAmount(String);

impl RawAmount {
    /// From decimal digits (leading zeros dropped); None unless all ASCII digits.
    pub fn from_digits(s: &str) -> Option<RawAmount> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let t = s.trim_start_matches('0');
        Some(RawAmount(if t.is_empty() { "0".into() } else { t.into() }))
    }

    pub fn digits(&self) -> &str {
        &self.0
    }

    /// Approximate value for pricing (USD), never for display.
    pub fn to_f64(&self) -> f64 {
        self.0.parse::<f64>().unwrap_or(0.0)
    }

    /// `self / 10^decimals` as an approximate number (for USD values).
    pub fn scaled_f64(&self, decimals: u32) -> f64 {
        self.to_f64() / 10f64.powi(decimals as i32)
    }
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
        .and_then(hex_quantity_to_decimal)
        .and_then(|d| RawAmount::from_digits(&d))
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
            .map(|(ok, data)| {
                (ok && data.len() == 32)
                    .then(|| RawAmount::from_digits(&be_to_decimal(&data)))
                    .flatten()
            })
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

/// `raw / 10^decimals` as a plain decimal string, exact whatever the size: the decimal point
/// is placed in the integer's own digits, trailing zeros of the fraction dropped.
pub fn format_units(raw: &RawAmount, decimals: u32) -> String {
    let digits = raw.digits();
    let d = decimals as usize;
    let padded = if digits.len() <= d {
        format!("{}{digits}", "0".repeat(d + 1 - digits.len()))
    } else {
        digits.to_string()
    };
    let (int, frac) = padded.split_at(padded.len() - d);
    let frac = frac.trim_end_matches('0');
    if frac.is_empty() {
        int.to_string()
    } else {
        format!("{int}.{frac}")
    }
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

    fn raw(s: &str) -> RawAmount {
        RawAmount::from_digits(s).unwrap()
    }

    #[test]
    fn units() {
        assert_eq!(format_units(&raw("1500000"), 6), "1.5");
        assert_eq!(format_units(&raw("2000000000000000000"), 18), "2");
        assert_eq!(format_units(&raw("0"), 18), "0");
        assert_eq!(format_units(&raw("123"), 0), "123");
        assert_eq!(format_units(&raw("1"), 18), "0.000000000000000001");
        assert_eq!(format_units(&raw("100"), 2), "1");
        assert_eq!(format_units(&raw("000120"), 3), "0.12");
        // Exact where an f64 is not: the example, and a full uint256.
        assert_eq!(
            format_units(&raw("2123456789012345678"), 18),
            "2.123456789012345678"
        );
        assert_eq!(
            format_units(
                &raw("115792089237316195423570985008687907853269984665640564039457584007913129639935"),
                18
            ),
            "115792089237316195423570985008687907853269984665640564039457.584007913129639935"
        );
        assert!(RawAmount::from_digits("").is_none());
        assert!(RawAmount::from_digits("1.5").is_none());
        assert!((raw("2123456789012345678").scaled_f64(18) - 2.123456789).abs() < 1e-9);
    }

    #[test]
    fn delegation_designator_is_not_a_contract() {
        let mut o = Onchain {
            upstream: "x".into(),
            native_wei: raw("0"),
            tx_count: 0,
            code: vec![0xef, 0x01, 0x00],
            tokens: vec![],
        };
        o.code.extend_from_slice(&[0x11; 20]);
        assert!(o.delegated() && !o.is_contract());
        o.code = vec![0x60, 0x80];
        assert!(!o.delegated() && o.is_contract());
        assert_eq!(
            hex_quantity_to_decimal("0xde0b6b3a7640000").as_deref(),
            Some("1000000000000000000")
        );
    }
}
