//! The EVM networks and tokens the gas and portfolio routes read, as their pipelines configure
//! them, and the checks that make a bad network a startup error.

use serde::Deserialize;

use super::hub::MarketHub;

/// One EVM network as gas and portfolio stages configure it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkParams {
    /// Short name used as the JSON key (`base`, `ethereum`).
    pub name: String,
    pub chain_id: u64,
    /// JSON-RPC upstream names, tried in order.
    pub rpc: Vec<String>,
    /// OP-stack GasPriceOracle predeploy for the L1 data fee (Base: 0x420…0F).
    #[serde(default)]
    pub l1_fee_oracle: Option<String>,
    /// Tokens whose balances portfolio reads (gas ignores them).
    #[serde(default)]
    pub tokens: Vec<TokenParams>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenParams {
    pub symbol: String,
    pub address: String,
    pub decimals: u32,
    /// Which spot price values it: `USD` (a dollar stablecoin, 1.0), `ETH`, `BTC` or `SOL`.
    pub price: String,
}

/// A gas or portfolio stage's networks: at least one, each valid against the hub.
pub fn check_networks(networks: &[NetworkParams], hub: &MarketHub) -> Result<(), String> {
    if networks.is_empty() {
        return Err("`networks` lists at least one network".into());
    }
    networks.iter().try_for_each(|n| n.check(hub))
}

impl NetworkParams {
    pub fn check(&self, hub: &MarketHub) -> Result<(), String> {
        if self.rpc.is_empty() {
            return Err(format!(
                "network {}: `rpc` names at least one upstream",
                self.name
            ));
        }
        for u in &self.rpc {
            hub.check_upstream(u)?;
        }
        if let Some(o) = &self.l1_fee_oracle {
            if !crate::config::is_evm_address(o) {
                return Err(format!(
                    "network {}: l1_fee_oracle is not an address",
                    self.name
                ));
            }
        }
        for t in &self.tokens {
            if !crate::config::is_evm_address(&t.address) {
                return Err(format!("token {} on {}: bad address", t.symbol, self.name));
            }
            if t.decimals > 36 {
                return Err(format!(
                    "token {} on {}: decimals above 36",
                    t.symbol, self.name
                ));
            }
            if !["USD", "ETH", "BTC", "SOL"].contains(&t.price.as_str()) {
                return Err(format!(
                    "token {} on {}: price must be USD, ETH, BTC or SOL",
                    t.symbol, self.name
                ));
            }
        }
        Ok(())
    }
}
