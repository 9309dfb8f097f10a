//! `gas`: the /api/gas answer: per configured EVM network (Base and Ethereum by default) the
//! base fee, next base fee and slow/standard/fast priority-fee tiers from `eth_feeHistory`, the
//! USD cost of a plain ETH transfer and of an ERC-20 transfer per tier, and on OP-stack networks
//! (Base) the L1 data fee component from the GasPriceOracle. Needs `spot_prices` (ETH/USD).
//!
//! Parameters:
//! - `networks`: list of `{ name, chain_id, rpc: [upstream, …], l1_fee_oracle? }`.
//! - `ttl_s` (15–300), `timeout_ms`: per-network cache lifetime and RPC deadline.
//! - `blocks` (default 20, 1–1024): blocks of fee history sampled.
//! - `gas_units`: `{ plain_transfer: 21000, erc20_transfer: 65000 }`.
//! - `l1_tx_bytes`: unsigned transaction sizes for the L1 fee bound
//!   `{ plain_transfer: 60, erc20_transfer: 130 }`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::future::join_all;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::market::format::round;
use crate::market::gas::{self, cost_usd, gwei, L1Sizes, NetworkGas, TIER_NAMES};
use crate::market::networks::{check_networks, NetworkParams};
use crate::market::source::check_ttl_and_timeout;
use crate::market::spot::SpotSet;
use crate::market::UPSTREAM_ERRORS;
use crate::market::{first_ok, Fresh, Limits, MarketHub};
use crate::pipeline::{params, Artefact, BuildCtx, Exchange, Flow, Phase, Stage, StageFactory};

pub const FACTORY: StageFactory = StageFactory {
    name: "gas",
    phase: Phase::Work,
    payment: false,
    needs: &[Artefact::of::<Fresh<SpotSet>>("spot_prices")],
    gives: &[],
    errors: UPSTREAM_ERRORS,
    doc: "gas tiers from eth_feeHistory, USD transfer costs, L1 data fee on OP-stack networks",
    build,
};

#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Pair<T> {
    plain_transfer: T,
    erc20_transfer: T,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    networks: Vec<NetworkParams>,
    #[serde(default = "default_ttl")]
    ttl_s: u64,
    #[serde(default = "default_timeout")]
    timeout_ms: u64,
    #[serde(default = "default_blocks")]
    blocks: u32,
    #[serde(default = "default_units")]
    gas_units: Pair<u64>,
    #[serde(default = "default_sizes")]
    l1_tx_bytes: Pair<usize>,
}

fn default_ttl() -> u64 {
    15
}
fn default_timeout() -> u64 {
    6000
}
fn default_blocks() -> u32 {
    20
}
fn default_units() -> Pair<u64> {
    Pair {
        plain_transfer: 21_000,
        erc20_transfer: 65_000,
    }
}
fn default_sizes() -> Pair<usize> {
    Pair {
        plain_transfer: 60,
        erc20_transfer: 130,
    }
}

struct Gas {
    p: Params,
    hub: Arc<MarketHub>,
}

fn build(ctx: &BuildCtx<'_>, p: Value) -> Result<Arc<dyn Stage>, String> {
    let p: Params = params(p)?;
    let hub = ctx.services.need::<MarketHub>()?;
    check_networks(&p.networks, &hub)?;
    check_ttl_and_timeout(p.ttl_s, p.timeout_ms)?;
    if !(1..=1024).contains(&p.blocks) {
        return Err("blocks must be between 1 and 1024".into());
    }
    Ok(Arc::new(Gas { p, hub }))
}

pub const METHODOLOGY: &str = "Per network, eth_feeHistory over the last blocks with the 10th, 50th and 90th \
percentile priority fees: each tier's priority fee is the median of that percentile over the blocks \
(slow = 10th, standard = 50th, fast = 90th) and is the tier's maxPriorityFeeGwei. expectedFeeGwei = \
nextBaseFeeGwei + maxPriorityFeeGwei (what a transaction pays per gas); maxFeeGwei = 2 x nextBaseFeeGwei + \
maxPriorityFeeGwei (a safe maxFeePerGas). Costs: gasUnits x expectedFeeGwei, in ETH at the spot ETH/USD price. On OP-stack networks (Base) each cost adds the L1 data fee, an upper bound \
from the GasPriceOracle (getL1FeeUpperBound) for a transaction of l1TxBytes unsigned bytes: each tier's \
plainTransferUsd and erc20TransferUsd include it, and l1DataFee gives it alone.";

fn network_json(n: &NetworkParams, g: &NetworkGas, units: Pair<u64>, eth_usd: f64) -> Value {
    let f = &g.fees;
    let l1_plain = g.l1.as_ref().map(|l| l.plain_transfer).unwrap_or(0);
    let l1_erc20 = g.l1.as_ref().map(|l| l.erc20_transfer).unwrap_or(0);
    let mut tiers = Map::new();
    for (k, name) in TIER_NAMES.iter().enumerate() {
        let prio = f.priority[k];
        let expected = f.next_base_fee + prio;
        let usd = |gas: u64, extra: u128| round(cost_usd(gas, expected, extra, eth_usd), 6);
        tiers.insert(
            name.to_string(),
            json!({
                "maxPriorityFeeGwei": round(gwei(prio), 9),
                "expectedFeeGwei": round(gwei(expected), 9),
                "maxFeeGwei": round(gwei(2 * f.next_base_fee + prio), 9),
                "plainTransferUsd": usd(units.plain_transfer, l1_plain),
                "erc20TransferUsd": usd(units.erc20_transfer, l1_erc20),
            }),
        );
    }
    let l1 = g.l1.as_ref().map(|l| {
        json!({
            "plainTransferUsd": round(cost_usd(0, 0, l.plain_transfer, eth_usd), 6),
            "erc20TransferUsd": round(cost_usd(0, 0, l.erc20_transfer, eth_usd), 6),
            "plainTransferWei": l.plain_transfer.to_string(),
            "erc20TransferWei": l.erc20_transfer.to_string(),
            "l1BaseFeeGwei": l.l1_base_fee.map(|b| round(gwei(b), 9)),
            "method": "GasPriceOracle.getL1FeeUpperBound",
        })
    });
    json!({
        "chainId": n.chain_id,
        "latestBlock": f.latest_block.to_string().parse::<u64>().unwrap_or(0),
        "baseFeeGwei": round(gwei(f.base_fee), 9),
        "nextBaseFeeGwei": round(gwei(f.next_base_fee), 9),
        "blocksSampled": f.blocks,
        "avgGasUsedRatio": round(f.avg_gas_used_ratio, 4),
        "tiers": tiers,
        "l1DataFee": l1.unwrap_or(Value::Null),
        "rpc": g.upstream,
    })
}

#[async_trait]
impl Stage for Gas {
    async fn run(&self, ex: &mut Exchange) -> Flow {
        let Some(spot) = ex.slots.get::<Fresh<SpotSet>>().cloned() else {
            return ex.missing("spot prices");
        };
        let Some(eth_usd) = spot.value.price("ETH") else {
            return ex.missing("the ETH price");
        };
        let hub = &*self.hub;
        let limits = Limits {
            timeout: Duration::from_millis(self.p.timeout_ms),
            max_bytes: 1_000_000,
        };
        let sizes = L1Sizes {
            plain_transfer: self.p.l1_tx_bytes.plain_transfer,
            erc20_transfer: self.p.l1_tx_bytes.erc20_transfer,
        };
        let ttl = Duration::from_secs(self.p.ttl_s);
        let blocks = self.p.blocks;
        let results = join_all(self.p.networks.iter().map(|n| async move {
            first_ok(&n.rpc, |u| async move {
                hub.cached(
                    format!("gas|{u}|{blocks}|{:?}", n.l1_fee_oracle),
                    ttl,
                    gas::fetch_network_gas(
                        hub,
                        &u,
                        blocks,
                        n.l1_fee_oracle.as_deref(),
                        sizes,
                        limits,
                    ),
                )
                .await
            })
            .await
        }))
        .await;
        let mut out = Map::new();
        let mut taken: DateTime<Utc> = spot.taken;
        let mut sources = Map::new();
        sources.insert("prices".into(), Value::String(spot.value.upstream.clone()));
        for (n, r) in self.p.networks.iter().zip(results) {
            let g = match r {
                Ok(g) => g,
                Err(e) => return ex.fail_upstream_error(&e),
            };
            taken = taken.min(g.taken);
            sources.insert(n.name.clone(), Value::String(g.value.upstream.clone()));
            out.insert(
                n.name.clone(),
                network_json(n, &g.value, self.p.gas_units, eth_usd),
            );
        }
        out.insert("ethPriceUsd".into(), json!(eth_usd));
        out.insert(
            "gasUnits".into(),
            json!({
                "plainTransfer": self.p.gas_units.plain_transfer,
                "erc20Transfer": self.p.gas_units.erc20_transfer,
            }),
        );
        out.insert(
            "l1TxBytes".into(),
            json!({
                "plainTransfer": self.p.l1_tx_bytes.plain_transfer,
                "erc20Transfer": self.p.l1_tx_bytes.erc20_transfer,
            }),
        );
        out.insert("dataSource".into(), Value::Object(sources));
        out.insert("methodology".into(), Value::String(METHODOLOGY.into()));
        ex.respond_ok_as_of(Value::Object(out), taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::market::gas::{FeeSnapshot, L1Fees};

    fn keys(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    out.push(k.clone());
                    keys(x, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| keys(x, out)),
            _ => {}
        }
    }

    /// Every field the methodology names (a camelCase word) is a field of the answer: the text
    /// once promised a `totalUsd` that /api/gas never had.
    #[test]
    fn the_methodology_names_only_fields_the_answer_has() {
        let n = NetworkParams {
            name: "base".into(),
            chain_id: 8453,
            rpc: vec!["base_rpc".into()],
            l1_fee_oracle: Some("0x420000000000000000000000000000000000000F".into()),
            tokens: vec![],
        };
        let g = NetworkGas {
            upstream: "base_rpc".into(),
            fees: FeeSnapshot {
                latest_block: 1,
                base_fee: 1_000_000,
                next_base_fee: 1_000_000,
                blocks: 20,
                avg_gas_used_ratio: 0.5,
                priority: [1, 2, 3],
            },
            l1: Some(L1Fees {
                plain_transfer: 10,
                erc20_transfer: 20,
                l1_base_fee: Some(5),
            }),
        };
        let units = Pair {
            plain_transfer: 21_000,
            erc20_transfer: 65_000,
        };
        let mut fields = vec![
            "ethPriceUsd".to_string(),
            "gasUnits".into(),
            "l1TxBytes".into(),
            "dataSource".into(),
        ];
        keys(&network_json(&n, &g, units, 3000.0), &mut fields);
        let named = regex::Regex::new(r"\b[a-z0-9]+(?:[A-Z][a-z0-9]*)+\b").unwrap();
        let not_fields = ["eth_feeHistory", "getL1FeeUpperBound", "maxFeePerGas"];
        for m in named.find_iter(METHODOLOGY) {
            let word = m.as_str();
            if not_fields.iter().any(|n| n.contains(word)) {
                continue;
            }
            assert!(
                fields.iter().any(|f| f == word),
                "the methodology names `{word}`, which the answer does not have"
            );
        }
    }
}
