//! Read-only EVM JSON-RPC questions the auditors ask about a payTo address: has it code
//! (`eth_getCode`: contract or externally owned account), does it hold USDC (`balanceOf` by
//! `eth_call`), did it receive USDC lately (`eth_getLogs` for Transfer events to it).
//!
//! The RPC endpoints are named upstreams in routes.yaml (`base_rpc`, `eth_rpc`), so tests point
//! them at a local chain. Requests go through the guarded client like everything else.

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use url::Url;

use crate::net::{FetchRequest, GuardedClient, OverCap};

/// keccak256("Transfer(address,address,uint256)")
pub const TRANSFER_TOPIC: &str =
    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/// One configured RPC endpoint.
#[derive(Clone)]
pub struct Rpc {
    /// The upstream's name in routes.yaml (shown in reports, never the URL: it may hold a key).
    pub name: String,
    pub url: Url,
    pub client: Arc<GuardedClient>,
    pub timeout: Duration,
}

/// The default RPC upstream per network: Base → `base_rpc`, Ethereum → `eth_rpc`.
pub fn default_rpc_upstreams() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("eip155:8453".to_string(), "base_rpc".to_string()),
        ("eip155:1".to_string(), "eth_rpc".to_string()),
    ])
}

/// The RPC list of an auditor from its network → upstream-name map (CAIP-2 eip155 ids, names
/// defined in routes.yaml `upstreams:`).
pub fn rpcs_from_upstreams(
    upstreams: &BTreeMap<String, Url>,
    map: &BTreeMap<String, String>,
    client: &Arc<GuardedClient>,
    timeout: Duration,
) -> Result<super::Rpcs, String> {
    let mut rpcs = Vec::new();
    for (net, name) in map {
        if !super::known_networks::is_caip2(net) || !net.starts_with("eip155:") {
            return Err(format!("rpcs: `{net}` is not an eip155 CAIP-2 network id"));
        }
        let url = upstreams.get(name).ok_or_else(|| {
            format!("rpcs: upstream `{name}` is not defined in routes.yaml `upstreams:`")
        })?;
        rpcs.push((
            net.clone(),
            Rpc {
                name: name.clone(),
                url: url.clone(),
                client: client.clone(),
                timeout,
            },
        ));
    }
    Ok(rpcs)
}

impl Rpc {
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let req = FetchRequest {
            url: self.url.clone(),
            method: Method::POST,
            headers,
            body: Some(Bytes::from(body.to_string())),
            max_redirects: 0,
            max_bytes: 256 * 1024,
            timeout: self.timeout,
            over_cap: OverCap::Reject,
        };
        let resp = self
            .client
            .fetch(req)
            .await
            .map_err(|e| format!("{}: {}", self.name, e.code()))?;
        if !resp.status.is_success() {
            return Err(format!("{}: HTTP {}", self.name, resp.status.as_u16()));
        }
        let v: Value = serde_json::from_slice(&resp.body)
            .map_err(|_| format!("{}: the answer is not JSON", self.name))?;
        if let Some(e) = v.get("error") {
            let msg = e.get("message").and_then(Value::as_str).unwrap_or("error");
            return Err(format!("{}: {msg}", self.name));
        }
        v.get("result")
            .cloned()
            .ok_or_else(|| format!("{}: no result", self.name))
    }

    /// Whether the address has code (a contract or a smart account) at the latest block.
    pub async fn is_contract(&self, addr: &str) -> Result<bool, String> {
        let r = self.call("eth_getCode", json!([addr, "latest"])).await?;
        let code = r
            .as_str()
            .ok_or_else(|| format!("{}: bad eth_getCode result", self.name))?;
        Ok(!(code == "0x" || code == "0x0" || code.is_empty()))
    }

    /// ERC-20 `balanceOf(addr)` of `token`.
    pub async fn token_balance(&self, token: &str, addr: &str) -> Result<u128, String> {
        let data = format!("0x70a08231{}", pad_address(addr));
        let r = self
            .call("eth_call", json!([{"to": token, "data": data}, "latest"]))
            .await?;
        parse_quantity(r.as_str().unwrap_or(""))
            .ok_or_else(|| format!("{}: bad balanceOf result", self.name))
    }

    /// Whether `token` emitted a Transfer to `addr` in the last `blocks` blocks.
    pub async fn received_recently(
        &self,
        token: &str,
        addr: &str,
        blocks: u64,
    ) -> Result<bool, String> {
        let head = self.call("eth_blockNumber", json!([])).await?;
        let head = parse_quantity(head.as_str().unwrap_or(""))
            .ok_or_else(|| format!("{}: bad eth_blockNumber result", self.name))?
            as u64;
        let from = head.saturating_sub(blocks);
        let topic_to = format!("0x{}", pad_address(addr));
        let r = self
            .call(
                "eth_getLogs",
                json!([{
                    "address": token,
                    "fromBlock": format!("0x{from:x}"),
                    "toBlock": "latest",
                    "topics": [TRANSFER_TOPIC, Value::Null, topic_to],
                }]),
            )
            .await?;
        Ok(r.as_array().is_some_and(|a| !a.is_empty()))
    }
}

/// 32-byte left-padded lower-case hex of a 20-byte address (no 0x).
pub fn pad_address(addr: &str) -> String {
    let hex = addr.trim_start_matches("0x").to_ascii_lowercase();
    format!("{hex:0>64}")
}

/// A JSON-RPC hex quantity or 32-byte word → integer (None when it does not fit u128).
pub fn parse_quantity(s: &str) -> Option<u128> {
    let h = s.strip_prefix("0x")?;
    let h = h.trim_start_matches('0');
    if h.is_empty() {
        return Some(0);
    }
    if h.len() > 32 {
        return None;
    }
    u128::from_str_radix(h, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_helpers() {
        assert_eq!(parse_quantity("0x"), Some(0));
        assert_eq!(parse_quantity("0x0"), Some(0));
        assert_eq!(parse_quantity("0x2710"), Some(10_000));
        assert_eq!(
            parse_quantity("0x0000000000000000000000000000000000000000000000000000000000002710"),
            Some(10_000)
        );
        assert_eq!(parse_quantity("12"), None);
        assert_eq!(
            pad_address("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3"),
            "000000000000000000000000df1d7b5c056d78f5aa14138a5695f7ff6f7acff3"
        );
        assert_eq!(
            format!("0x{}", hex_keccak(b"Transfer(address,address,uint256)")),
            TRANSFER_TOPIC
        );
    }

    fn hex_keccak(b: &[u8]) -> String {
        super::super::address::keccak256(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect()
    }
}
