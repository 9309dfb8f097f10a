//! Signing x402 `exact` EVM payments in-process: a correctly signed EIP-3009
//! `transferWithAuthorization` for a challenge's first (Base) offer, as the official client
//! builds it, without running node once per payment (benches/memory.rs, benches/soak.rs,
//! benches/hostile.rs, tests/it/hostile_concurrency.rs).

use base64::Engine;
use k256::ecdsa::SigningKey;
use serde_json::{json, Value};

use paycall::audit::address::keccak256;
use paycall::payment::local_check::{eip3009_digest, Domain, U256};

pub fn hex(b: &[u8]) -> String {
    format!(
        "0x{}",
        b.iter().map(|x| format!("{x:02x}")).collect::<String>()
    )
}

pub fn unhex(s: &str) -> Vec<u8> {
    let h = s.trim_start_matches("0x");
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

/// The signing key of a hex private key (with or without 0x).
pub fn key(hex_key: &str) -> SigningKey {
    SigningKey::from_slice(&unhex(hex_key)).expect("a 32-byte secp256k1 key")
}

/// The challenge a 402's PAYMENT-REQUIRED header carries.
pub fn challenge_of(payment_required: &str) -> Value {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(payment_required.trim())
        .expect("PAYMENT-REQUIRED is base64");
    serde_json::from_slice(&raw).expect("PAYMENT-REQUIRED is JSON")
}

/// A PAYMENT-SIGNATURE value paying `challenge`'s first offer from `key`'s address; `n` makes
/// the nonce (distinct payments need distinct `n`), valid for two minutes.
pub fn sign(key: &SigningKey, challenge: &Value, n: u64) -> String {
    sign_valid_for(key, challenge, n, 120)
}

/// [`sign`], valid for `secs` seconds (a soak signs all its payments before it starts).
pub fn sign_valid_for(key: &SigningKey, challenge: &Value, n: u64, secs: u64) -> String {
    let point = key.verifying_key().to_encoded_point(false);
    let from = hex(&keccak256(&point.as_bytes()[1..])[12..]);
    let offer = &challenge["accepts"][0];
    let addr = |s: &str| -> [u8; 20] { unhex(s).try_into().unwrap() };
    let valid_before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + secs;
    let mut nonce = [0u8; 32];
    nonce[..8].copy_from_slice(&n.to_be_bytes());
    nonce[8..16].copy_from_slice(&valid_before.to_be_bytes());
    nonce[16..24].copy_from_slice(&rand::random::<u64>().to_be_bytes());
    let chain: u64 = offer["network"].as_str().unwrap()[7..].parse().unwrap();
    let domain = Domain {
        name: offer["extra"]["name"].as_str().unwrap(),
        version: offer["extra"]["version"].as_str(),
        chain_id: U256::from_u64(chain),
        verifying_contract: addr(offer["asset"].as_str().unwrap()),
    };
    let digest = eip3009_digest(
        &domain,
        &addr(&from),
        &addr(offer["payTo"].as_str().unwrap()),
        &U256::from_decimal(offer["amount"].as_str().unwrap()).unwrap(),
        &U256::from_u64(0),
        &U256::from_u64(valid_before),
        &nonce,
    );
    let (sig, rec) = key.sign_prehash_recoverable(&digest).unwrap();
    let mut sig = sig.to_bytes().to_vec();
    sig.push(27 + rec.to_byte());
    let payment = json!({
        "x402Version": 2,
        "resource": challenge["resource"],
        "accepted": offer,
        "payload": {"signature": hex(&sig), "authorization": {
            "from": from, "to": offer["payTo"], "value": offer["amount"], "validAfter": "0",
            "validBefore": valid_before.to_string(), "nonce": hex(&nonce)}}
    });
    base64::engine::general_purpose::STANDARD.encode(payment.to_string())
}
