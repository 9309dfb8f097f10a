//! Gas fee snapshot of one EVM network from `eth_feeHistory` (and, on OP-stack chains such as
//! Base, the L1 data fee from the GasPriceOracle predeploy).
//!
//! Tiers: the priority fee is the median, over the sampled blocks, of the 10th (slow), 50th
//! (standard) and 90th (fast) percentile of the priority fees paid in each block. The expected
//! fee per gas is `nextBaseFee + priority`; the suggested `maxFeePerGas` is
//! `2 × nextBaseFee + priority` (room for the base fee to double before inclusion).

use serde_json::{json, Value};

use super::evm::{self, quantity};
use super::hub::{Limits, MarketHub, UpstreamError};

pub const PERCENTILES: [f64; 3] = [10.0, 50.0, 90.0];
pub const TIER_NAMES: [&str; 3] = ["slow", "standard", "fast"];

#[derive(Debug, Clone, PartialEq)]
pub struct FeeSnapshot {
    pub latest_block: u128,
    /// Base fee of the latest block, wei.
    pub base_fee: u128,
    /// Base fee of the next block (the last entry of feeHistory), wei.
    pub next_base_fee: u128,
    pub blocks: usize,
    pub avg_gas_used_ratio: f64,
    /// Priority fee per tier (slow, standard, fast), wei.
    pub priority: [u128; 3],
}

/// L1 data fee estimates on an OP-stack chain, wei.
#[derive(Debug, Clone, PartialEq)]
pub struct L1Fees {
    pub plain_transfer: u128,
    pub erc20_transfer: u128,
    pub l1_base_fee: Option<u128>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NetworkGas {
    pub upstream: String,
    pub fees: FeeSnapshot,
    pub l1: Option<L1Fees>,
}

fn median(mut v: Vec<u128>) -> u128 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Reads an `eth_feeHistory` result asked for with the three PERCENTILES.
pub fn parse_fee_history(upstream: &str, v: &Value) -> Result<FeeSnapshot, UpstreamError> {
    let bad = |m: &str| UpstreamError::bad(upstream, format!("eth_feeHistory: {m}"));
    let oldest = quantity(&v["oldestBlock"]).ok_or_else(|| bad("no oldestBlock"))?;
    let base: Vec<u128> = v["baseFeePerGas"]
        .as_array()
        .ok_or_else(|| bad("no baseFeePerGas"))?
        .iter()
        .map(quantity)
        .collect::<Option<_>>()
        .ok_or_else(|| bad("a base fee is not a quantity"))?;
    let ratios: Vec<f64> = v["gasUsedRatio"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    let rewards = v["reward"].as_array().ok_or_else(|| bad("no reward"))?;
    let blocks = rewards.len();
    if blocks == 0 || base.len() < 2 {
        return Err(bad("no blocks"));
    }
    let mut cols: [Vec<u128>; 3] = Default::default();
    for r in rewards {
        let row = r
            .as_array()
            .ok_or_else(|| bad("a reward row is not an array"))?;
        if row.len() != 3 {
            return Err(bad("a reward row does not have three percentiles"));
        }
        for (k, col) in cols.iter_mut().enumerate() {
            col.push(quantity(&row[k]).ok_or_else(|| bad("a reward is not a quantity"))?);
        }
    }
    let [c0, c1, c2] = cols;
    let mut priority = [median(c0), median(c1), median(c2)];
    // Tiers never cross when a percentile column is noisy.
    priority[1] = priority[1].max(priority[0]);
    priority[2] = priority[2].max(priority[1]);
    Ok(FeeSnapshot {
        latest_block: oldest + blocks as u128 - 1,
        base_fee: base[base.len() - 2],
        next_base_fee: base[base.len() - 1],
        blocks,
        avg_gas_used_ratio: if ratios.is_empty() {
            0.0
        } else {
            ratios.iter().sum::<f64>() / ratios.len() as f64
        },
        priority,
    })
}

/// Unsigned transaction sizes (bytes) used for the L1 data fee upper bounds.
#[derive(Debug, Clone, Copy)]
pub struct L1Sizes {
    pub plain_transfer: usize,
    pub erc20_transfer: usize,
}

/// Fee history of one network, and its L1 data fees when `oracle` is given.
pub async fn fetch_network_gas(
    hub: &MarketHub,
    upstream: &str,
    blocks: u32,
    oracle: Option<&str>,
    sizes: L1Sizes,
    limits: Limits,
) -> Result<NetworkGas, UpstreamError> {
    let history = evm::rpc(
        hub,
        upstream,
        "eth_feeHistory",
        json!([format!("0x{blocks:x}"), "latest", PERCENTILES]),
        limits,
    );
    let l1 = async {
        let Some(oracle) = oracle else {
            return Ok(None);
        };
        let word = |d: Vec<u8>| -> Result<u128, UpstreamError> {
            if d.len() != 32 || d[..16].iter().any(|b| *b != 0) {
                return Err(UpstreamError::bad(
                    upstream,
                    "GasPriceOracle answered something other than a uint256",
                ));
            }
            Ok(u128::from_be_bytes(d[16..].try_into().unwrap_or([0; 16])))
        };
        let (plain, erc20, base) = futures_util::future::join3(
            evm::eth_call(
                hub,
                upstream,
                oracle,
                &evm::l1_fee_upper_bound(sizes.plain_transfer),
                limits,
            ),
            evm::eth_call(
                hub,
                upstream,
                oracle,
                &evm::l1_fee_upper_bound(sizes.erc20_transfer),
                limits,
            ),
            evm::eth_call(hub, upstream, oracle, &evm::SEL_L1_BASE_FEE, limits),
        )
        .await;
        Ok(Some(L1Fees {
            plain_transfer: word(plain?)?,
            erc20_transfer: word(erc20?)?,
            l1_base_fee: base.ok().and_then(|d| word(d).ok()),
        }))
    };
    let (history, l1) = futures_util::future::join(history, l1).await;
    Ok(NetworkGas {
        upstream: upstream.to_string(),
        fees: parse_fee_history(upstream, &history?)?,
        l1: l1?,
    })
}

/// Wei → gwei.
pub fn gwei(wei: u128) -> f64 {
    wei as f64 / 1e9
}

/// The USD cost of `gas` units at `fee_per_gas` wei plus `extra_wei`, at `eth_usd`.
pub fn cost_usd(gas: u64, fee_per_gas: u128, extra_wei: u128, eth_usd: f64) -> f64 {
    (gas as f64 * fee_per_gas as f64 + extra_wei as f64) / 1e18 * eth_usd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_medians_of_percentile_columns() {
        let v = json!({
            "oldestBlock": "0x64",
            "baseFeePerGas": ["0x3b9aca00", "0x3b9aca00", "0x77359400"],
            "gasUsedRatio": [0.5, 0.7],
            "reward": [["0x1", "0x5", "0x9"], ["0x3", "0x7", "0xb"]]
        });
        let f = parse_fee_history("rpc", &v).unwrap();
        assert_eq!(f.latest_block, 101);
        assert_eq!(f.base_fee, 1_000_000_000);
        assert_eq!(f.next_base_fee, 2_000_000_000);
        assert_eq!(f.priority, [2, 6, 10]);
        assert!((f.avg_gas_used_ratio - 0.6).abs() < 1e-12);
        assert!(parse_fee_history(
            "rpc",
            &json!({"oldestBlock":"0x1","baseFeePerGas":["0x1"],"reward":[]})
        )
        .is_err());
        assert!(parse_fee_history("rpc", &json!({})).is_err());
    }

    #[test]
    fn usd_cost() {
        // 21000 gas × 10 gwei = 0.00021 ETH; at 3000 USD = 0.63 USD
        let c = cost_usd(21_000, 10_000_000_000, 0, 3000.0);
        assert!((c - 0.63).abs() < 1e-12);
        // plus 0.0001 ETH of L1 fee = 0.3 USD
        let c = cost_usd(21_000, 10_000_000_000, 100_000_000_000_000, 3000.0);
        assert!((c - 0.93).abs() < 1e-12);
    }
}
