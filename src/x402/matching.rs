//! What to do with a decoded `PAYMENT-SIGNATURE` before calling the facilitator: check its
//! shape, find which of our offers it accepted, and derive its replay / in-flight key.
//!
//! Matching rule (the x402 v2 specification, as `@x402/core` 2.27 applies it):
//! * `scheme`, `network`, `amount`, `maxTimeoutSeconds` must be exactly equal (amount as the
//!   same decimal string, the timeout as the same integer);
//! * `asset` and `payTo` must be equal, except that on `eip155:*` networks two `0x` + 40-hex
//!   addresses are compared case-insensitively: EIP-55 checksum casing carries no value, and
//!   a wallet that re-cases our address still pays the same account. Solana addresses are
//!   base58, where case is significant, so they are compared exactly;
//! * the client's `extra` must contain every key of ours with an equal value (it may add
//!   keys; newer clients do).

use ring::digest;
use serde_json::Value;

use super::types::Requirement;

/// Finds the offer the client's `accepted` object refers to.
pub fn find_offer<'a>(offers: &'a [Requirement], accepted: &Value) -> Option<&'a Requirement> {
    offers.iter().find(|offer| offer_matches(offer, accepted))
}

fn offer_matches(offer: &Requirement, accepted: &Value) -> bool {
    let s = |k: &str| accepted.get(k).and_then(Value::as_str);
    let evm = offer.network.starts_with("eip155:");
    s("scheme") == Some(offer.scheme.as_str())
        && s("network") == Some(offer.network.as_str())
        && s("amount") == Some(offer.amount.as_str())
        && accepted.get("maxTimeoutSeconds").and_then(Value::as_u64)
            == Some(offer.max_timeout_seconds)
        && s("asset").is_some_and(|a| same_address(evm, &offer.asset, a))
        && s("payTo").is_some_and(|a| same_address(evm, &offer.pay_to, a))
        && extra_contains(accepted.get("extra"), &offer.extra)
}

fn same_address(evm: bool, ours: &str, theirs: &str) -> bool {
    if evm && is_evm_address(ours) && is_evm_address(theirs) {
        ours.eq_ignore_ascii_case(theirs)
    } else {
        ours == theirs
    }
}

fn is_evm_address(s: &str) -> bool {
    s.len() == 42
        && (s.starts_with("0x") || s.starts_with("0X"))
        && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

fn extra_contains(theirs: Option<&Value>, ours: &serde_json::Map<String, Value>) -> bool {
    if ours.is_empty() {
        // Nothing required; a missing, null or object `extra` is fine, another type is not.
        return matches!(theirs, None | Some(Value::Null) | Some(Value::Object(_)));
    }
    let Some(Value::Object(theirs)) = theirs else {
        return false;
    };
    ours.iter().all(|(k, v)| theirs.get(k) == Some(v))
}

/// `x402Version` of a decoded payload, when it is a non-negative integer.
pub fn payload_version(payload: &Value) -> Option<u64> {
    payload.get("x402Version").and_then(Value::as_u64)
}

/// The minimal structure we need before doing anything with a payload. An error here is a
/// malformed header: the caller answers 400 with the message.
pub fn check_payload_shape(payload: &Value) -> Result<(), String> {
    if !payload.is_object() {
        return Err("the PAYMENT-SIGNATURE payload must be a JSON object".into());
    }
    match payload.get("x402Version") {
        Some(v) if v.as_u64() == Some(2) => {}
        Some(Value::String(s)) => {
            return Err(format!(
                "x402Version must be the number 2, not the string {s:?}"
            ))
        }
        Some(v) => {
            return Err(format!(
                "x402Version must be 2 (this service speaks x402 v2), got {v}"
            ))
        }
        None => return Err("x402Version is missing; this service speaks x402 v2".into()),
    }
    let accepted = payload
        .get("accepted")
        .ok_or("`accepted` is missing: echo the offer you chose from the 402's accepts")?;
    if !accepted.is_object() {
        return Err("`accepted` must be an object (one entry of the 402's accepts)".into());
    }
    for key in ["scheme", "network"] {
        if !accepted.get(key).is_some_and(Value::is_string) {
            return Err(format!("`accepted.{key}` must be a string"));
        }
    }
    match payload.get("payload") {
        Some(Value::Object(_)) => {}
        Some(_) => return Err("`payload` must be an object (the signed authorization)".into()),
        None => return Err("`payload` is missing: it carries the signed authorization".into()),
    }
    if let Some(r) = payload.get("resource") {
        if !r.is_object() {
            return Err("`resource` must be an object when present".into());
        }
    }
    Ok(())
}

/// Key identifying one payment for the in-flight / replay guard.
///
/// * EVM: `eip155:<chain>|<from>|<nonce>` (lower-cased), from the EIP-3009 `authorization`
///   or the Permit2 `permit2Authorization`. The nonce is what the token consumes on chain.
/// * Solana: `solana|<hex SHA-256 of the transaction message>`. The message (everything
///   after the signature slots) fixes blockhash, instructions and memo nonce, so a client
///   cannot make one transaction look like two by rewriting the empty fee-payer signature
///   slot or re-encoding the base64. If the transaction cannot be parsed, the hash covers the
///   raw string (the facilitator will reject it anyway).
///
/// `None` when the payload lacks the fields (unknown scheme layout or network family).
pub fn payment_key(payload: &Value) -> Option<String> {
    let network = payload.get("accepted")?.get("network")?.as_str()?;
    let inner = payload.get("payload")?;
    if network.starts_with("eip155:") {
        let auth = inner
            .get("authorization")
            .or_else(|| inner.get("permit2Authorization"))?;
        let from = auth.get("from")?.as_str()?;
        let nonce = match auth.get("nonce")? {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => return None,
        };
        if from.is_empty() || nonce.is_empty() {
            return None;
        }
        Some(format!(
            "{}|{}|{}",
            network.to_ascii_lowercase(),
            from.to_ascii_lowercase(),
            nonce.to_ascii_lowercase()
        ))
    } else if network.starts_with("solana:") {
        let tx = inner.get("transaction")?.as_str()?;
        if tx.is_empty() {
            return None;
        }
        let hashed = solana_message(tx);
        let d = digest::digest(&digest::SHA256, hashed.as_deref().unwrap_or(tx.as_bytes()));
        Some(format!("solana|{}", hex(d.as_ref())))
    } else {
        None
    }
}

/// The message bytes of a base64 serialized (legacy or v0) Solana transaction:
/// `shortvec(num_signatures) || signatures[64 each] || message`.
fn solana_message(tx_b64: &str) -> Option<Vec<u8>> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(tx_b64.trim())
        .ok()?;
    let (count, used) = read_shortvec(&bytes)?;
    let start = used.checked_add(count.checked_mul(64)?)?;
    if count == 0 || start >= bytes.len() {
        return None;
    }
    Some(bytes[start..].to_vec())
}

/// Solana's compact-u16 length prefix (1–3 bytes, 7 bits each).
fn read_shortvec(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut value = 0usize;
    for (i, b) in bytes.iter().take(3).enumerate() {
        value |= ((b & 0x7f) as usize) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use serde_json::json;

    fn sol_offer() -> Requirement {
        Requirement {
            scheme: "exact".into(),
            network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into(),
            amount: "5000".into(),
            asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".into(),
            pay_to: "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".into(),
            max_timeout_seconds: 120,
            extra: json!({"feePayer": "KamSsA9RceywmY8dmJu2qHSAm1eHntibXf9TsURCbkvs"})
                .as_object()
                .cloned()
                .unwrap(),
        }
    }

    fn evm_offer() -> Requirement {
        Requirement {
            scheme: "exact".into(),
            network: "eip155:8453".into(),
            amount: "5000".into(),
            asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913".into(),
            pay_to: "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3".into(),
            max_timeout_seconds: 120,
            extra: json!({"name": "USD Coin", "version": "2"})
                .as_object()
                .cloned()
                .unwrap(),
        }
    }

    #[test]
    fn solana_addresses_are_case_sensitive_evm_are_not() {
        let offers = [evm_offer(), sol_offer()];
        let mut sol = sol_offer().to_value();
        assert_eq!(find_offer(&offers, &sol), Some(&offers[1]));
        sol["payTo"] = json!("nd48BViZsbav2eBRjGoU1tRJWoFeToZtXUpBqdtCBGCc");
        assert_eq!(find_offer(&offers, &sol), None);

        let mut evm = evm_offer().to_value();
        evm["payTo"] = json!("0xdf1d7b5c056d78f5aa14138a5695f7ff6f7acff3");
        evm["asset"] = json!("0x833589FCD6EDB6E08F4C7C32D4F71B54BDA02913");
        assert_eq!(find_offer(&offers, &evm), Some(&offers[0]));
        // Same letters but not an address shape: exact comparison applies.
        evm["payTo"] = json!("0xdf1d7b5c056d78f5aa14138a5695f7ff6f7acff3 ");
        assert_eq!(find_offer(&offers, &evm), None);
    }

    #[test]
    fn strict_values_superset_extra() {
        let offers = [evm_offer()];
        let base = evm_offer().to_value();
        assert!(find_offer(&offers, &base).is_some());

        let mut more = base.clone();
        more["extra"]["assetTransferMethod"] = json!("eip3009");
        assert!(
            find_offer(&offers, &more).is_some(),
            "client may add extra keys"
        );

        for (k, v) in [
            ("amount", json!("05000")),
            ("amount", json!(5000)),
            ("maxTimeoutSeconds", json!("120")),
            ("maxTimeoutSeconds", json!(120.5)),
            ("maxTimeoutSeconds", json!(300)),
            ("scheme", json!("upto")),
            ("network", json!("eip155:84532")),
            ("extra", json!({"name": "USDC", "version": "2"})),
            ("extra", json!({"name": "USD Coin"})),
            ("extra", json!("USD Coin")),
        ] {
            let mut a = base.clone();
            a[k] = v.clone();
            assert!(
                find_offer(&offers, &a).is_none(),
                "{k} = {v} must not match"
            );
        }
        let mut no_extra = base.clone();
        no_extra.as_object_mut().unwrap().remove("extra");
        assert!(find_offer(&offers, &no_extra).is_none());

        // An offer without extra accepts a client extra that is absent, null or an object.
        let mut bare = evm_offer();
        bare.extra.clear();
        let bare_offers = [bare];
        assert!(find_offer(&bare_offers, &no_extra).is_some());
        let mut with_extra = no_extra.clone();
        with_extra["extra"] = json!({"x": 1});
        assert!(find_offer(&bare_offers, &with_extra).is_some());
        with_extra["extra"] = json!([1]);
        assert!(find_offer(&bare_offers, &with_extra).is_none());
        assert!(find_offer(&bare_offers, &json!("not an object")).is_none());
    }

    #[test]
    fn shape_check_messages() {
        let good = json!({"x402Version": 2, "accepted": evm_offer().to_value(), "payload": {}});
        assert_eq!(check_payload_shape(&good), Ok(()));
        assert_eq!(payload_version(&good), Some(2));
        let cases = [
            (json!([]), "JSON object"),
            (json!({"accepted": {}, "payload": {}}), "missing"),
            (
                json!({"x402Version": "2", "accepted": {}, "payload": {}}),
                "not the string",
            ),
            (
                json!({"x402Version": 1, "accepted": {}, "payload": {}}),
                "got 1",
            ),
            (
                json!({"x402Version": 2, "payload": {}}),
                "`accepted` is missing",
            ),
            (
                json!({"x402Version": 2, "accepted": [], "payload": {}}),
                "must be an object",
            ),
            (
                json!({"x402Version": 2, "accepted": {"scheme": "exact"}, "payload": {}}),
                "accepted.network",
            ),
            (
                json!({"x402Version": 2, "accepted": evm_offer().to_value()}),
                "`payload` is missing",
            ),
            (
                json!({"x402Version": 2, "accepted": evm_offer().to_value(), "payload": "0x"}),
                "`payload` must be",
            ),
            (
                json!({"x402Version": 2, "accepted": evm_offer().to_value(), "payload": {}, "resource": "u"}),
                "`resource`",
            ),
        ];
        for (payload, want) in cases {
            let err = check_payload_shape(&payload).unwrap_err();
            assert!(err.contains(want), "{payload}: {err}");
        }
        assert_eq!(payload_version(&json!({"x402Version": "2"})), None);
    }

    #[test]
    fn evm_keys_from_eip3009_and_permit2() {
        let p = json!({
            "accepted": {"network": "eip155:8453"},
            "payload": {"authorization": {"from": "0xAbC0000000000000000000000000000000000001", "nonce": "0xDEAD"}}
        });
        assert_eq!(
            payment_key(&p).as_deref(),
            Some("eip155:8453|0xabc0000000000000000000000000000000000001|0xdead")
        );
        let p2 = json!({
            "accepted": {"network": "eip155:8453"},
            "payload": {"permit2Authorization": {"from": "0xAB", "nonce": "123456"}}
        });
        assert_eq!(payment_key(&p2).as_deref(), Some("eip155:8453|0xab|123456"));
        let missing = json!({"accepted": {"network": "eip155:8453"}, "payload": {"authorization": {"from": "0xab"}}});
        assert_eq!(payment_key(&missing), None);
        let other = json!({"accepted": {"network": "cosmos:hub"}, "payload": {}});
        assert_eq!(payment_key(&other), None);
    }

    #[test]
    fn solana_key_ignores_signature_slots() {
        let b64 = base64::engine::general_purpose::STANDARD;
        let message = b"\x80\x01\x00\x01message-bytes-with-blockhash-and-memo".to_vec();
        let mut tx_a = vec![2u8];
        tx_a.extend([0u8; 64]); // empty fee-payer slot
        tx_a.extend([7u8; 64]); // buyer signature
        tx_a.extend(&message);
        let mut tx_b = tx_a.clone();
        tx_b[1..65].copy_from_slice(&[9u8; 64]); // someone scribbles in the fee-payer slot
        let key = |tx: &[u8]| {
            payment_key(&json!({
                "accepted": {"network": "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"},
                "payload": {"transaction": b64.encode(tx)}
            }))
            .unwrap()
        };
        let ka = key(&tx_a);
        assert_eq!(ka, key(&tx_b));
        let want = digest::digest(&digest::SHA256, &message);
        assert_eq!(ka, format!("solana|{}", hex(want.as_ref())));
        let mut tx_c = tx_a.clone();
        *tx_c.last_mut().unwrap() ^= 1;
        assert_ne!(ka, key(&tx_c));

        // Unparseable transactions still get a (raw) key instead of none.
        let raw = payment_key(&json!({
            "accepted": {"network": "solana:x"},
            "payload": {"transaction": "%%%"}
        }))
        .unwrap();
        assert_eq!(
            raw,
            format!(
                "solana|{}",
                hex(digest::digest(&digest::SHA256, b"%%%").as_ref())
            )
        );
        assert_eq!(read_shortvec(&[0xff, 0xff, 0xff]), None);
        assert_eq!(read_shortvec(&[0x80, 0x01]), Some((128, 2)));
    }
}
