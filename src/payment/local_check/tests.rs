use super::*;
use k256::ecdsa::SigningKey;
use serde_json::json;

/// anvil's second well-known account (a test key, funds nothing real).
const KEY: &str = "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const KEY_ADDR: &str = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const USDC: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const PAY_TO: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
const NOW: u64 = 1_795_300_000;

fn unhex(s: &str) -> Vec<u8> {
    parse_hex(s).unwrap()
}

fn evm_offer() -> Requirement {
    Requirement {
        scheme: "exact".into(),
        network: "eip155:8453".into(),
        amount: "10000".into(),
        asset: USDC.into(),
        pay_to: PAY_TO.into(),
        max_timeout_seconds: 120,
        extra: json!({"name": "USD Coin", "version": "2"})
            .as_object()
            .cloned()
            .unwrap(),
    }
}

fn sign(digest: &[u8; 32]) -> String {
    let key = SigningKey::from_slice(&unhex(&format!("0x{KEY}"))).unwrap();
    let (sig, rec) = key.sign_prehash_recoverable(digest).unwrap();
    let mut bytes = sig.to_bytes().to_vec();
    bytes.push(27 + rec.to_byte());
    hex0x(&bytes)
}

/// A correctly signed EIP-3009 payment for `evm_offer()`, valid from 0 to NOW + 120.
fn eip3009_payload() -> Value {
    let offer = evm_offer();
    let mut p = json!({
        "x402Version": 2,
        "accepted": offer.to_value(),
        "payload": {
            "authorization": {
                "from": KEY_ADDR,
                "to": PAY_TO,
                "value": "10000",
                "validAfter": "0",
                "validBefore": (NOW + 120).to_string(),
                "nonce": format!("0x{}", "ab".repeat(32)),
            }
        }
    });
    resign(&mut p);
    p
}

/// Signs the payload's authorization as it stands (with the test key).
fn resign(p: &mut Value) {
    let a = &p["payload"]["authorization"];
    let domain = Domain {
        name: "USD Coin",
        version: Some("2"),
        chain_id: U256::from_u64(8453),
        verifying_contract: parse_address(USDC).unwrap(),
    };
    let digest = eip3009_digest(
        &domain,
        &parse_address(a["from"].as_str().unwrap()).unwrap(),
        &parse_address(a["to"].as_str().unwrap()).unwrap(),
        &U256::from_decimal(a["value"].as_str().unwrap()).unwrap(),
        &U256::from_decimal(a["validAfter"].as_str().unwrap()).unwrap(),
        &U256::from_decimal(a["validBefore"].as_str().unwrap()).unwrap(),
        &unhex(a["nonce"].as_str().unwrap()).try_into().unwrap(),
    );
    p["payload"]["signature"] = json!(sign(&digest));
}

fn run(p: &Value) -> Result<CheckedPayment, Refusal> {
    check(p, &evm_offer(), NOW, 30)
}

fn refused(p: &Value) -> Refusal {
    run(p).expect_err("must be refused")
}

#[test]
fn eip3009_digest_and_recovery_match_the_official_client() {
    // x402-vectors/payment-signature.json: signed by @x402/evm 2.27 (viem) on chain 8453.
    let domain = Domain {
        name: "USD Coin",
        version: Some("2"),
        chain_id: U256::from_u64(8453),
        verifying_contract: parse_address(USDC).unwrap(),
    };
    let from = parse_address("0x07680410500c834d36e40246d40F6072029C3759").unwrap();
    let digest = eip3009_digest(
        &domain,
        &from,
        &parse_address(PAY_TO).unwrap(),
        &U256::from_decimal("5000").unwrap(),
        &U256::from_decimal("0").unwrap(),
        &U256::from_decimal("1795313843").unwrap(),
        &unhex("0x5db1a2ec6497d535a328f3bf58590e4ebcbd2dad9fa4767ba7063bdf68c4a452")
            .try_into()
            .unwrap(),
    );
    assert_eq!(
        hex0x(&digest),
        "0x4400d50ed42ae502f1b5903768fb1bc4d8818f33d286ef69db08531e2828c591"
    );
    let sig = unhex("0xce9d0f2068a2641b7efe85986e1804fdedddaa81ff7dde3122c21b14c50db1285998c72846f9fb9023bf76f92efe0d867fba0d244afa2ac44b67bff45518b9931c");
    assert_eq!(recover_signer(&digest, &sig), Some(from));
}

#[test]
fn permit2_digest_and_recovery_match_viem() {
    // Produced with viem 2.57 (tests/e2e/node_modules) hashTypedData / signTypedData over the
    // x402 Permit2 witness types, key KEY.
    let digest = permit2_digest(
        U256::from_u64(8453),
        &parse_address(USDC).unwrap(),
        &U256::from_decimal("10000").unwrap(),
        &parse_address(EXACT_PERMIT2_PROXY).unwrap(),
        &U256::from_decimal("123456789012345678901234567890").unwrap(),
        &U256::from_decimal("1795313843").unwrap(),
        &parse_address(PAY_TO).unwrap(),
        &U256::from_decimal("0").unwrap(),
    );
    assert_eq!(
        hex0x(&digest),
        "0x9f6173a8958bf0adb3de37c8742667d1fe91987a4573439c9324213e4eb1c7d3"
    );
    let sig = unhex("0x5c6de3dc48ecdfd0546c18296a181fea955774701c201a888ad0658a5ec3b8d17c09c517a950c85efe6a507f2d637472639748cb0164d65e9ed108b6d2df85a71c");
    assert_eq!(
        recover_signer(&digest, &sig),
        parse_address(KEY_ADDR),
        "recovers to the signer"
    );
}

#[test]
fn a_correct_eip3009_payment_passes_typed() {
    let p = eip3009_payload();
    let CheckedPayment::Eip3009(a) = run(&p).unwrap() else {
        panic!("not eip3009")
    };
    assert_eq!(a.signature_check, SignatureCheck::Recovered);
    assert_eq!(a.from, parse_address(KEY_ADDR).unwrap());
    assert_eq!(a.value, U256::from_u64(10_000));
    let checked = run(&p).unwrap();
    assert_eq!(
        checked.payer().as_deref(),
        Some(KEY_ADDR.to_ascii_lowercase().as_str())
    );
    assert_eq!(checked.valid_before(), Some(NOW + 120));
    // Lower-case addresses (x402-reqwest) and validAfter = now − 600 pass too.
    let mut q = p.clone();
    q["payload"]["authorization"]["from"] = json!(KEY_ADDR.to_ascii_lowercase());
    q["payload"]["authorization"]["to"] = json!(PAY_TO.to_ascii_lowercase());
    q["payload"]["authorization"]["validAfter"] = json!((NOW - 600).to_string());
    resign(&mut q);
    assert!(run(&q).is_ok(), "{:?}", run(&q));
}

#[test]
fn malformed_fields_are_400_naming_the_field() {
    let base = eip3009_payload();
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "value",
            Value::Null,
            "missing",
            "payload.authorization.value",
        ),
        (
            "value",
            json!(10000),
            "wrong_type",
            "payload.authorization.value",
        ),
        (
            "value",
            json!(1.5),
            "wrong_type",
            "payload.authorization.value",
        ),
        (
            "value",
            json!("1.5"),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "value",
            json!("1e400"),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "value",
            json!("-1"),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "value",
            json!(""),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "value",
            json!("１０"),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "value",
            json!({"n": 1}),
            "wrong_type",
            "payload.authorization.value",
        ),
        (
            "value",
            json!("1".repeat(79)),
            "not_uint256",
            "payload.authorization.value",
        ),
        (
            "validAfter",
            json!([]),
            "wrong_type",
            "payload.authorization.validAfter",
        ),
        (
            "validBefore",
            Value::Null,
            "missing",
            "payload.authorization.validBefore",
        ),
        (
            "from",
            json!("0x1234"),
            "bad_address",
            "payload.authorization.from",
        ),
        (
            "from",
            json!("0x70997970c51812dc3A010C7d01b50e0d17dc79C8"),
            "bad_checksum",
            "payload.authorization.from",
        ),
        (
            "to",
            json!("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFé"),
            "bad_address",
            "payload.authorization.to",
        ),
        (
            "nonce",
            json!(format!("0x{}", "ab".repeat(31))),
            "bad_length",
            "payload.authorization.nonce",
        ),
        (
            "nonce",
            json!("0xzz"),
            "bad_hex",
            "payload.authorization.nonce",
        ),
        (
            "nonce",
            json!(7),
            "wrong_type",
            "payload.authorization.nonce",
        ),
    ];
    for (key, v, code, field) in cases {
        let mut p = base.clone();
        if v.is_null() {
            p["payload"]["authorization"]
                .as_object_mut()
                .unwrap()
                .remove(key);
        } else {
            p["payload"]["authorization"][key] = v.clone();
        }
        let r = refused(&p);
        assert_eq!(
            (r.kind, r.code, r.field),
            (RefusalKind::Malformed, code, field),
            "{key} = {v}: {r:?}"
        );
        assert_eq!(r.status(), 400);
        assert!(r.message.contains(field), "{}", r.message);
    }
    // The same value set to JSON null counts as missing.
    let mut p = base.clone();
    p["payload"]["authorization"]["value"] = Value::Null;
    assert_eq!(refused(&p).code, "missing");
}

#[test]
fn malformed_signatures_and_containers() {
    let base = eip3009_payload();
    for (v, code) in [
        (json!(12), "wrong_type"),
        (json!([]), "wrong_type"),
        (json!(""), "bad_hex"),
        (json!("0x"), "bad_hex"),
        (json!("0xabc"), "bad_hex"),
        (json!(format!("0x{}", "11".repeat(64))), "bad_length"),
        (
            json!(format!("0x{}", "11".repeat(MAX_SIGNATURE_BYTES + 1))),
            "too_large",
        ),
    ] {
        let mut p = base.clone();
        p["payload"]["signature"] = v.clone();
        let r = refused(&p);
        assert_eq!((r.code, r.field), (code, "payload.signature"), "{v}");
    }
    let mut p = base.clone();
    p["payload"].as_object_mut().unwrap().remove("signature");
    assert_eq!(refused(&p).code, "missing");

    let mut p = base.clone();
    p["payload"]["authorization"] = json!("0xdead");
    assert_eq!(
        (refused(&p).code, refused(&p).field),
        ("wrong_type", "payload.authorization")
    );
    let mut p = base.clone();
    p["payload"] = json!({"signature": "0x00"});
    assert_eq!(refused(&p).code, "unknown_payload");
    let mut p = base.clone();
    p["payload"] = json!([1]);
    assert_eq!(refused(&p).field, "payload");
    let mut p = base.clone();
    p.as_object_mut().unwrap().remove("accepted");
    assert_eq!(refused(&p).field, "accepted");
}

#[test]
fn terms_must_be_the_offers() {
    let base = eip3009_payload();
    let with = |key: &str, v: Value| {
        let mut p = base.clone();
        p["payload"]["authorization"][key] = v;
        resign(&mut p);
        refused(&p)
    };
    let r = with("to", json!(KEY_ADDR));
    assert_eq!(
        (r.kind, r.code, r.field),
        (
            RefusalKind::Invalid,
            "invalid_exact_evm_payload_recipient_mismatch",
            "payload.authorization.to"
        )
    );
    assert_eq!(r.status(), 402);
    for v in ["9999", "10001", "0", "100000"] {
        let r = with("value", json!(v));
        assert_eq!(
            r.code, "invalid_exact_evm_payload_authorization_value_mismatch",
            "{v}"
        );
    }
    // Leading zeros are the same number: the signature covers the integer.
    let mut p = base.clone();
    p["payload"]["authorization"]["value"] = json!("010000");
    assert!(run(&p).is_ok());

    // The echoed offer must be ours too.
    for (k, v, field) in [
        ("network", json!("eip155:84532"), "accepted.network"),
        ("asset", json!(PAY_TO), "accepted.asset"),
        ("payTo", json!(USDC), "accepted.payTo"),
        ("amount", json!("10001"), "accepted.amount"),
    ] {
        let mut p = base.clone();
        p["accepted"][k] = v;
        let r = refused(&p);
        assert_eq!((r.kind, r.field), (RefusalKind::Invalid, field), "{r:?}");
    }
}

#[test]
fn the_window_must_cover_the_work() {
    let base = eip3009_payload();
    let with = |after: u64, before: u64| {
        let mut p = base.clone();
        p["payload"]["authorization"]["validAfter"] = json!(after.to_string());
        p["payload"]["authorization"]["validBefore"] = json!(before.to_string());
        resign(&mut p);
        run(&p)
    };
    assert!(with(NOW, NOW + 30).is_ok(), "exactly the work's time");
    let r = with(0, NOW + 29).unwrap_err();
    assert_eq!(
        (r.code, r.field),
        (
            "invalid_exact_evm_payload_authorization_valid_before",
            "payload.authorization.validBefore"
        )
    );
    assert!(r.is_window());
    assert!(with(0, NOW - 1).unwrap_err().is_window(), "expired");
    let r = with(NOW + 1, NOW + 300).unwrap_err();
    assert_eq!(
        (r.code, r.field),
        (
            "invalid_exact_evm_payload_authorization_valid_after",
            "payload.authorization.validAfter"
        )
    );
    // Huge values saturate: a far-future validBefore is fine, a far-future validAfter is not.
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    let mut p = base.clone();
    p["payload"]["authorization"]["validBefore"] = json!(max);
    resign(&mut p);
    assert!(run(&p).is_ok());
    p["payload"]["authorization"]["validAfter"] = json!(max);
    resign(&mut p);
    assert!(refused(&p).is_window());
    // The work's time never drops below the facilitators' margin.
    let mut p = base.clone();
    p["payload"]["authorization"]["validBefore"] = json!((NOW + 5).to_string());
    resign(&mut p);
    assert!(check(&p, &evm_offer(), NOW, 0).is_err());
}

#[test]
fn signatures_must_recover_to_from() {
    let base = eip3009_payload();
    // Signed by KEY for another payer.
    let mut p = base.clone();
    p["payload"]["authorization"]["from"] = json!(PAY_TO);
    resign(&mut p);
    let r = refused(&p);
    assert_eq!(
        (r.kind, r.code, r.field),
        (
            RefusalKind::Invalid,
            "invalid_exact_evm_payload_signature",
            "payload.signature"
        )
    );
    // A changed nonce after signing: the signature recovers to someone else.
    let mut p = base.clone();
    p["payload"]["authorization"]["nonce"] = json!(format!("0x{}", "cd".repeat(32)));
    assert_eq!(refused(&p).code, "invalid_exact_evm_payload_signature");
    // v out of range, r = 0, and the high-s twin of a valid signature.
    let sig = unhex(base["payload"]["signature"].as_str().unwrap());
    let mut bad_v = sig.clone();
    bad_v[64] = 29;
    let mut zero_r = sig.clone();
    zero_r[..32].fill(0);
    let s = k256::ecdsa::Signature::from_slice(&sig[..64]).unwrap();
    let (r_, s_) = s.split_scalars();
    let high = k256::ecdsa::Signature::from_scalars(r_, -*s_).unwrap();
    let mut high_s = high.to_bytes().to_vec();
    high_s.push(if sig[64] == 27 { 28 } else { 27 });
    for bad in [bad_v, zero_r, high_s] {
        let mut p = base.clone();
        p["payload"]["signature"] = json!(hex0x(&bad));
        assert_eq!(refused(&p).code, "invalid_exact_evm_payload_signature");
    }
    // v as 0/1 (yParity) is accepted.
    let mut parity = sig.clone();
    parity[64] -= 27;
    let mut p = base.clone();
    p["payload"]["signature"] = json!(hex0x(&parity));
    assert!(run(&p).is_ok());
    // Longer signatures (smart wallets) and offers without a domain are the facilitator's.
    let mut p = base.clone();
    p["payload"]["signature"] = json!(format!("0x{}", "11".repeat(200)));
    let Ok(CheckedPayment::Eip3009(a)) = run(&p) else {
        panic!()
    };
    assert_eq!(a.signature_check, SignatureCheck::LeftToFacilitator);
    let mut offer = evm_offer();
    offer.extra.clear();
    let mut p = base.clone();
    p["accepted"] = offer.to_value();
    p["payload"]["signature"] = json!(format!("0x{}", "11".repeat(65)));
    let Ok(CheckedPayment::Eip3009(a)) = check(&p, &offer, NOW, 30) else {
        panic!()
    };
    assert_eq!(a.signature_check, SignatureCheck::LeftToFacilitator);
}

fn permit2_payload() -> Value {
    json!({
        "x402Version": 2,
        "accepted": evm_offer().to_value(),
        "payload": {
            "signature": "0x5c6de3dc48ecdfd0546c18296a181fea955774701c201a888ad0658a5ec3b8d17c09c517a950c85efe6a507f2d637472639748cb0164d65e9ed108b6d2df85a71c",
            "permit2Authorization": {
                "from": KEY_ADDR,
                "permitted": {"token": USDC, "amount": "10000"},
                "spender": EXACT_PERMIT2_PROXY,
                "nonce": "123456789012345678901234567890",
                "deadline": "1795313843",
                "witness": {"to": PAY_TO, "validAfter": "0"}
            }
        }
    })
}

#[test]
fn permit2_payments_are_checked_too() {
    let base = permit2_payload();
    let Ok(CheckedPayment::Permit2(p)) = run(&base) else {
        panic!("{:?}", run(&base))
    };
    assert_eq!(p.signature_check, SignatureCheck::Recovered);
    let field = |path: &[&str], v: Value| {
        let mut p = base.clone();
        let mut at = &mut p["payload"]["permit2Authorization"];
        for k in path {
            at = &mut at[*k];
        }
        *at = v;
        refused(&p)
    };
    for (path, v, code) in [
        (&["spender"][..], json!(PAY_TO), "invalid_permit2_spender"),
        (
            &["witness", "to"][..],
            json!(KEY_ADDR),
            "invalid_permit2_recipient_mismatch",
        ),
        (
            &["permitted", "token"][..],
            json!(PAY_TO),
            "permit2_token_mismatch",
        ),
        (
            &["permitted", "amount"][..],
            json!("10001"),
            "permit2_amount_mismatch",
        ),
        (&["deadline"][..], json!("1"), "permit2_deadline_expired"),
        (
            &["witness", "validAfter"][..],
            json!((NOW + 60).to_string()),
            "permit2_not_yet_valid",
        ),
        (&["nonce"][..], json!("1"), "invalid_permit2_signature"),
        (&["nonce"][..], json!("0x01"), "not_uint256"),
        (&["permitted"][..], json!("x"), "wrong_type"),
        (&["witness"][..], Value::Null, "missing"),
    ] {
        let r = field(path, v.clone());
        assert_eq!(r.code, code, "{path:?} = {v}: {r:?}");
    }
}

/// A v0 transaction: 2 signature slots (fee payer, buyer), 4 accounts, one instruction.
fn solana_tx(fee_payer: [u8; 32]) -> Vec<u8> {
    let mut tx = vec![2u8];
    tx.extend([0u8; 128]);
    tx.extend([0x80, 2, 0, 1]); // v0, 2 required signers, 0 ro signed, 1 ro unsigned
    tx.push(4);
    tx.extend(fee_payer);
    tx.extend([7u8; 96]);
    tx.extend([9u8; 32]); // blockhash
    tx.push(1); // one instruction
    tx.extend([3, 2, 1, 2, 3, 0xaa, 0xbb, 0xcc]); // program 3, accounts [1, 2], 3 data bytes
    tx.push(0); // no lookup tables
    tx
}

fn sol_offer() -> Requirement {
    Requirement {
        scheme: "exact".into(),
        network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into(),
        amount: "10000".into(),
        asset: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".into(),
        pay_to: "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1".into(),
        max_timeout_seconds: 120,
        extra: json!({"feePayer": bs58::encode([5u8; 32]).into_string()})
            .as_object()
            .cloned()
            .unwrap(),
    }
}

fn sol_payload(tx: &str) -> Value {
    json!({"x402Version": 2, "accepted": sol_offer().to_value(), "payload": {"transaction": tx}})
}

#[test]
fn solana_transactions_must_parse() {
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let good = solana_tx([5u8; 32]);
    let Ok(CheckedPayment::Solana(tx)) = check(&sol_payload(&b64(&good)), &sol_offer(), NOW, 30)
    else {
        panic!()
    };
    assert_eq!(
        (tx.signatures, tx.version, tx.size),
        (2, Some(0), good.len())
    );
    let code = |p: Value| check(&p, &sol_offer(), NOW, 30).unwrap_err().code;
    assert_eq!(
        code(sol_payload(&b64(&solana_tx([6u8; 32])))),
        "invalid_exact_svm_payload_fee_payer_mismatch"
    );
    assert_eq!(code(sol_payload("%%%")), "bad_base64");
    assert_eq!(
        code(sol_payload(&b64(&good).replace('=', ""))),
        "bad_base64"
    );
    assert_eq!(code(sol_payload(&"A".repeat(4000))), "too_large");
    assert_eq!(code(sol_payload(&b64(&[0u8; 1233]))), "too_large");
    assert_eq!(
        code(
            json!({"x402Version": 2, "accepted": sol_offer().to_value(), "payload": {"transaction": 5}})
        ),
        "wrong_type"
    );
    let mut truncated = good.clone();
    truncated.pop();
    let mut trailing = good.clone();
    trailing.push(0);
    let mut no_sigs = good.clone();
    no_sigs[0] = 0;
    let mut bad_index = good.clone();
    let at = good.len() - 9;
    bad_index[at] = 40; // program index past the accounts
    let mut version1 = good.clone();
    version1[129] = 0x81;
    for (name, tx) in [
        ("truncated", truncated),
        ("trailing", trailing),
        ("no sigs", no_sigs),
        ("bad index", bad_index),
        ("version 1", version1),
        ("empty", vec![]),
    ] {
        assert_eq!(code(sol_payload(&b64(&tx))), "bad_transaction", "{name}");
    }
}

#[test]
fn uint256_parsing() {
    assert_eq!(U256::from_decimal("0"), Some(U256([0; 32])));
    assert_eq!(U256::from_decimal("10000"), Some(U256::from_u64(10_000)));
    let max = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
    assert_eq!(U256::from_decimal(max), Some(U256([0xff; 32])));
    let over = "115792089237316195423570985008687907853269984665640564039457584007913129639936";
    assert_eq!(U256::from_decimal(over), None);
    for bad in ["", " 1", "1 ", "+1", "0x10", "1_000", "٣"] {
        assert_eq!(U256::from_decimal(bad), None, "{bad:?}");
    }
    assert_eq!(U256::from_u64(7).saturating_u64(), 7);
    assert_eq!(U256([0xff; 32]).saturating_u64(), u64::MAX);
}

#[test]
fn work_window_is_bounded() {
    let mut o = evm_offer();
    assert_eq!(work_window(&o), 30);
    o.max_timeout_seconds = 20;
    assert_eq!(work_window(&o), 10);
    o.max_timeout_seconds = 1;
    assert_eq!(work_window(&o), FACILITATOR_MARGIN_S);
}
