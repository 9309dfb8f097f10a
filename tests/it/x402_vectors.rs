//! Interop with the official TypeScript x402 packages: headers and facilitator bodies
//! captured from one real payment (fixtures/x402-vectors, see its README).

use paycall::x402::{
    check_payload_shape, decode_header, decode_lenient, encode_header, find_offer, payload_version,
    payment_key, payment_required, Base64Variant, Requirement, ResourceInfo,
};
use serde_json::{json, Value};

fn vector(name: &str) -> Value {
    let path = format!(
        "{}/fixtures/x402-vectors/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn offer_from_vector() -> Requirement {
    let pr = vector("payment-required.json");
    serde_json::from_value(pr["decoded"]["accepts"][0].clone()).unwrap()
}

#[test]
fn decodes_the_official_payment_signature() {
    let v = vector("payment-signature.json");
    let decoded = decode_header(v["raw"].as_str().unwrap()).unwrap();
    assert_eq!(decoded, v["decoded"]);
    assert_eq!(
        decode_lenient(v["raw"].as_str().unwrap()).unwrap(),
        (v["decoded"].clone(), Base64Variant::Standard)
    );
    assert_eq!(check_payload_shape(&decoded), Ok(()));
    assert_eq!(payload_version(&decoded), Some(2));
    assert_eq!(
        payment_key(&decoded).as_deref(),
        Some(
            "eip155:8453|0x07680410500c834d36e40246d40f6072029c3759|\
             0x5db1a2ec6497d535a328f3bf58590e4ebcbd2dad9fa4767ba7063bdf68c4a452"
        )
    );
}

#[test]
fn payment_required_and_response_round_trip() {
    for file in ["payment-required.json", "payment-response.json"] {
        let v = vector(file);
        let decoded = decode_header(v["raw"].as_str().unwrap()).unwrap();
        assert_eq!(decoded, v["decoded"], "{file}");
        let ours = encode_header(&v["decoded"]);
        assert_eq!(decode_header(&ours).unwrap(), v["decoded"], "{file}");
        // Same key order (preserve_order) and compact JSON: byte-identical to the TS output.
        assert_eq!(ours, v["raw"].as_str().unwrap(), "{file}");
    }
}

#[test]
fn offer_matching_against_the_captured_payment() {
    let accepted = vector("payment-signature.json")["decoded"]["accepted"].clone();
    let offer = offer_from_vector();
    let offers = [offer.clone()];
    assert_eq!(find_offer(&offers, &accepted), Some(&offers[0]));

    // A Solana offer listed first does not steal the match.
    let mut sol = offer.clone();
    sol.network = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp".into();
    let both = [sol, offer.clone()];
    assert_eq!(find_offer(&both, &accepted), Some(&both[1]));

    type Mutation = (&'static str, fn(&mut Requirement));
    let mutations: [Mutation; 5] = [
        ("amount", |r| r.amount = "5001".into()),
        ("payTo", |r| {
            r.pay_to = "0x0000000000000000000000000000000000000001".into()
        }),
        ("network", |r| r.network = "eip155:84532".into()),
        ("maxTimeoutSeconds", |r| r.max_timeout_seconds = 120),
        ("extra.name", |r| {
            r.extra.insert("name".into(), json!("USDC"));
        }),
    ];
    for (what, mutate) in mutations {
        let mut changed = offer.clone();
        mutate(&mut changed);
        assert!(
            find_offer(&[changed], &accepted).is_none(),
            "{what} differs, must not match"
        );
    }

    // The client's extra must contain ours: drop `name` on the client side.
    let mut lacking = accepted.clone();
    lacking["extra"].as_object_mut().unwrap().remove("name");
    assert!(find_offer(&offers, &lacking).is_none());
}

#[test]
fn our_challenge_has_the_captured_shape() {
    let captured = vector("payment-required.json")["decoded"].clone();
    let resource: ResourceInfo = serde_json::from_value(captured["resource"].clone()).unwrap();
    let ours = payment_required("Payment required", &resource, &[offer_from_vector()], None);
    assert_eq!(ours, captured);
    assert!(ours["x402Version"].is_u64());
    // And through the header codec, byte for byte.
    assert_eq!(
        encode_header(&ours),
        vector("payment-required.json")["raw"].as_str().unwrap()
    );
}

#[test]
fn facilitator_request_bodies_use_our_requirement() {
    // The official server sent exactly {x402Version, paymentPayload, paymentRequirements}
    // with its own offer as paymentRequirements: ours serialises to the same object.
    let req = vector("facilitator-verify.json")["request"].clone();
    assert_eq!(req["paymentRequirements"], offer_from_vector().to_value());
    assert_eq!(
        req["paymentPayload"],
        vector("payment-signature.json")["decoded"]
    );
}
