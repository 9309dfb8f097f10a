//! Plain EVM JSON-RPC over the market hub (no SDK: a handful of read calls) and the little ABI
//! the market routes need, encoded by hand: `balanceOf(address)`, Multicall3
//! `aggregate3((address,bool,bytes)[])` and its `(bool,bytes)[]` result, OP-stack
//! GasPriceOracle `getL1FeeUpperBound(uint256)` and `l1BaseFee()`.

use serde_json::{json, Value};

use super::hub::{Limits, MarketHub, UpstreamError};

/// Multicall3, deployed at the same address on Ethereum, Base and most EVM chains.
pub const MULTICALL3: &str = "0xcA11bde05977b3631167028862bE2a173976CA11";
pub const SEL_BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
pub const SEL_AGGREGATE3: [u8; 4] = [0x82, 0xad, 0x56, 0xcb];
pub const SEL_L1_FEE_UPPER_BOUND: [u8; 4] = [0xf1, 0xc7, 0xa5, 0x8b];
pub const SEL_L1_BASE_FEE: [u8; 4] = [0x51, 0x9b, 0x4b, 0xd3];

/// One JSON-RPC call; an `error` member or a null result is a bad answer.
pub async fn rpc(
    hub: &MarketHub,
    upstream: &str,
    method: &str,
    params: Value,
    limits: Limits,
) -> Result<Value, UpstreamError> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let v: Value = hub.post_json(upstream, "", &body, limits).await?;
    if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
        return Err(UpstreamError::bad(
            upstream,
            format!(
                "{method} failed: {}",
                e["message"].as_str().unwrap_or(&e.to_string())
            ),
        ));
    }
    match v.get("result") {
        None | Some(Value::Null) => Err(UpstreamError::bad(
            upstream,
            format!("{method} returned no result"),
        )),
        Some(r) => Ok(r.clone()),
    }
}

/// `eth_call` at the latest block; the return data as bytes.
pub async fn eth_call(
    hub: &MarketHub,
    upstream: &str,
    to: &str,
    data: &[u8],
    limits: Limits,
) -> Result<Vec<u8>, UpstreamError> {
    let r = rpc(
        hub,
        upstream,
        "eth_call",
        json!([{"to": to, "data": hex(data)}, "latest"]),
        limits,
    )
    .await?;
    let s = r
        .as_str()
        .ok_or_else(|| UpstreamError::bad(upstream, "eth_call result is not a hex string"))?;
    unhex(s).ok_or_else(|| UpstreamError::bad(upstream, "eth_call result is not valid hex"))
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(2 + bytes.len() * 2);
    s.push_str("0x");
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A JSON-RPC quantity ("0x1a") as u128; None when malformed or above u128.
pub fn quantity(v: &Value) -> Option<u128> {
    let s = v.as_str()?;
    let h = s.strip_prefix("0x")?;
    if h.is_empty() {
        return Some(0);
    }
    u128::from_str_radix(h, 16).ok()
}

/// A big-endian unsigned integer of any width (a uint256 word) as its exact decimal digits,
/// without leading zeros ("0" for zero). Schoolbook division by 10^19 on 32-bit limbs.
pub fn be_to_decimal(bytes: &[u8]) -> String {
    // limbs, most significant first
    let mut limbs: Vec<u32> = bytes
        .rchunks(4)
        .rev()
        .map(|c| c.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)))
        .collect();
    const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19
    let mut parts: Vec<u64> = Vec::new();
    while limbs.iter().any(|l| *l != 0) {
        let mut rem: u128 = 0;
        for l in limbs.iter_mut() {
            let cur = (rem << 32) | u128::from(*l);
            *l = (cur / u128::from(CHUNK)) as u32;
            rem = cur % u128::from(CHUNK);
        }
        parts.push(rem as u64);
    }
    match parts.split_last() {
        None => "0".into(),
        Some((top, rest)) => {
            let mut out = top.to_string();
            for p in rest.iter().rev() {
                out.push_str(&format!("{p:019}"));
            }
            out
        }
    }
}

/// A JSON-RPC quantity of any size ("0x" + hex digits) as exact decimal digits.
pub fn hex_quantity_to_decimal(s: &str) -> Option<String> {
    let h = s.strip_prefix("0x")?;
    if !h.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let padded = if h.len() % 2 == 1 {
        format!("0{h}")
    } else {
        h.to_string()
    };
    Some(be_to_decimal(&unhex(&padded)?))
}

/// An address ("0x" + 40 hex) as its 20 bytes.
pub fn address_bytes(addr: &str) -> Option<[u8; 20]> {
    let v = unhex(addr)?;
    v.try_into().ok()
}

fn word_u(n: usize) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[24..].copy_from_slice(&(n as u64).to_be_bytes());
    w
}

fn word_addr(a: &[u8; 20]) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[12..].copy_from_slice(a);
    w
}

/// `balanceOf(owner)` calldata.
pub fn balance_of(owner: &[u8; 20]) -> Vec<u8> {
    let mut d = SEL_BALANCE_OF.to_vec();
    d.extend_from_slice(&word_addr(owner));
    d
}

/// `getL1FeeUpperBound(size)` calldata.
pub fn l1_fee_upper_bound(unsigned_tx_size: usize) -> Vec<u8> {
    let mut d = SEL_L1_FEE_UPPER_BOUND.to_vec();
    d.extend_from_slice(&word_u(unsigned_tx_size));
    d
}

/// `aggregate3(calls)` calldata, every call with allowFailure = true.
pub fn aggregate3(calls: &[([u8; 20], Vec<u8>)]) -> Vec<u8> {
    let mut out = SEL_AGGREGATE3.to_vec();
    out.extend_from_slice(&word_u(0x20)); // offset of the array
    out.extend_from_slice(&word_u(calls.len()));
    // Each element is a dynamic tuple: head = offsets (from the start of the heads), then tails.
    let tails: Vec<Vec<u8>> = calls
        .iter()
        .map(|(target, data)| {
            let mut t = Vec::new();
            t.extend_from_slice(&word_addr(target));
            t.extend_from_slice(&word_u(1)); // allowFailure
            t.extend_from_slice(&word_u(0x60)); // offset of callData within the tuple
            t.extend_from_slice(&word_u(data.len()));
            t.extend_from_slice(data);
            let pad = (32 - data.len() % 32) % 32;
            t.extend(std::iter::repeat_n(0u8, pad));
            t
        })
        .collect();
    let mut offset = 32 * calls.len();
    for t in &tails {
        out.extend_from_slice(&word_u(offset));
        offset += t.len();
    }
    for t in tails {
        out.extend_from_slice(&t);
    }
    out
}

fn read_word(data: &[u8], at: usize) -> Option<&[u8]> {
    data.get(at..at.checked_add(32)?)
}

fn read_usize(data: &[u8], at: usize) -> Option<usize> {
    let w = read_word(data, at)?;
    if w[..24].iter().any(|b| *b != 0) {
        return None;
    }
    usize::try_from(u64::from_be_bytes(w[24..].try_into().ok()?)).ok()
}

/// Decodes aggregate3's `(bool success, bytes returnData)[]`; None when malformed.
pub fn decode_aggregate3(data: &[u8]) -> Option<Vec<(bool, Vec<u8>)>> {
    let arr = read_usize(data, 0)?;
    let n = read_usize(data, arr)?;
    let heads = arr.checked_add(32)?;
    if n > data.len() / 32 {
        return None;
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let tuple = heads.checked_add(read_usize(data, heads.checked_add(i * 32)?)?)?;
        let success = read_usize(data, tuple)? != 0;
        let bytes_at = tuple.checked_add(read_usize(data, tuple + 32)?)?;
        let len = read_usize(data, bytes_at)?;
        let start = bytes_at.checked_add(32)?;
        let ret = data.get(start..start.checked_add(len)?)?.to_vec();
        out.push((success, ret));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    //! Expected encodings were produced independently with viem 2.x (`encodeFunctionData` /
    //! `encodeAbiParameters` in tests/e2e/node_modules), not with this code.
    use super::*;

    const OWNER: &str = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
    const USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
    const WETH: &str = "0x4200000000000000000000000000000000000006";

    #[test]
    fn balance_of_and_l1_fee_calldata() {
        let owner = address_bytes(OWNER).unwrap();
        assert_eq!(
            hex(&balance_of(&owner)),
            "0x70a08231000000000000000000000000d8da6bf26964af9d7eed9e03e53415d37aa96045"
        );
        assert_eq!(
            hex(&l1_fee_upper_bound(60)),
            "0xf1c7a58b000000000000000000000000000000000000000000000000000000000000003c"
        );
    }

    #[test]
    fn aggregate3_matches_viem() {
        let owner = address_bytes(OWNER).unwrap();
        let calls = vec![
            (address_bytes(USDC).unwrap(), balance_of(&owner)),
            (address_bytes(WETH).unwrap(), balance_of(&owner)),
        ];
        assert_eq!(hex(&aggregate3(&calls)), VIEM_AGGREGATE3);
    }

    #[test]
    fn aggregate3_results_decode_and_malformed_is_none() {
        let data = unhex(VIEM_RESULT).unwrap();
        let r = decode_aggregate3(&data).unwrap();
        assert_eq!(r.len(), 2);
        assert!(r[0].0);
        assert_eq!(be_to_decimal(&r[0].1), "1234567890");
        assert!(!r[1].0);
        assert!(r[1].1.is_empty());
        assert!(decode_aggregate3(&data[..data.len() - 40]).is_none());
        assert!(decode_aggregate3(&[]).is_none());
        assert_eq!(
            decode_aggregate3(&unhex(&format!("{:064x}{:064x}", 32, 0)).unwrap()),
            Some(vec![])
        );
    }

    #[test]
    fn big_integers_become_exact_decimal_digits() {
        assert_eq!(be_to_decimal(&[]), "0");
        assert_eq!(be_to_decimal(&[0; 32]), "0");
        assert_eq!(be_to_decimal(&[1]), "1");
        let n: u128 = 2_123_456_789_012_345_678;
        assert_eq!(be_to_decimal(&n.to_be_bytes()), "2123456789012345678");
        assert_eq!(
            be_to_decimal(&u128::MAX.to_be_bytes()),
            u128::MAX.to_string()
        );
        // 2^256 - 1, the largest uint256
        assert_eq!(
            be_to_decimal(&[0xff; 32]),
            "115792089237316195423570985008687907853269984665640564039457584007913129639935"
        );
        // 10^19 exactly (a chunk boundary) and 10^38
        assert_eq!(
            be_to_decimal(&10_000_000_000_000_000_000u128.to_be_bytes()),
            "10000000000000000000"
        );
        assert_eq!(
            be_to_decimal(&(10u128.pow(38)).to_be_bytes()),
            "100000000000000000000000000000000000000"
        );
        assert_eq!(
            hex_quantity_to_decimal("0x1d7808b2f4f8f34e").as_deref(),
            Some("2123456789012345678")
        );
        assert_eq!(hex_quantity_to_decimal("0x0").as_deref(), Some("0"));
        assert_eq!(hex_quantity_to_decimal("0x").as_deref(), Some("0"));
        assert_eq!(hex_quantity_to_decimal("0xfff").as_deref(), Some("4095"));
        assert_eq!(hex_quantity_to_decimal("12"), None);
        assert_eq!(hex_quantity_to_decimal("0xzz"), None);
    }

    #[test]
    fn quantities_and_hex() {
        assert_eq!(quantity(&json!("0x1a")), Some(26));
        assert_eq!(quantity(&json!("0x")), Some(0));
        assert_eq!(quantity(&json!("12")), None);
        assert_eq!(unhex("0xzz"), None);
        assert_eq!(unhex("0x0"), None);
    }

    // viem: encodeFunctionData({abi: aggregate3, args: [[{target: USDC, allowFailure: true,
    // callData: balanceOf(OWNER)}, {target: WETH, …}]]})
    const VIEM_AGGREGATE3: &str = "0x82ad56cb0000000000000000000000000000000000000000000000000000000000000020000000000000000000000000000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000000000100000000000000000000000000833589fcd6edb6e08f4c7c32d4f71b54bda0291300000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000060000000000000000000000000000000000000000000000000000000000000002470a08231000000000000000000000000d8da6bf26964af9d7eed9e03e53415d37aa9604500000000000000000000000000000000000000000000000000000000000000000000000000000000420000000000000000000000000000000000000600000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000060000000000000000000000000000000000000000000000000000000000000002470a08231000000000000000000000000d8da6bf26964af9d7eed9e03e53415d37aa9604500000000000000000000000000000000000000000000000000000000";
    // viem: encodeAbiParameters([(bool,bytes)[]], [[[true, uint256 1234567890], [false, 0x]]])
    const VIEM_RESULT: &str = "0x00000000000000000000000000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000000004000000000000000000000000000000000000000000000000000000000000000c000000000000000000000000000000000000000000000000000000000000000010000000000000000000000000000000000000000000000000000000000000040000000000000000000000000000000000000000000000000000000000000002000000000000000000000000000000000000000000000000000000000499602d2000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000400000000000000000000000000000000000000000000000000000000000000000";
}
