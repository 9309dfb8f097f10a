//! Issue 19, part 1: hostile payments cost nothing. A real payment signed by the official client
//! for /api/http (shipped routes.yaml, local chain, official facilitator) is mutated a few
//! hundred ways with a fixed seed — fields removed, wrong types, huge or non-integer numbers,
//! wrong network / asset / payTo, amounts off by one, expired or future windows, bad
//! signatures and nonces, deep nesting, 100 KB values, unicode — and every answer must be a
//! 400 or a 402 (never a 5xx, never paid work) with the facilitator seeing no /verify at all.
//! The unmutated payment then goes through: one /verify, one settlement.

use crate::support;
use support::shipped;
use support::{stack, upstream};

use base64::Engine;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::BTreeMap;

use stack::LocalStack;
use support::server::{enc, send_signed};

const MUTATIONS: usize = 300;
const SEED: u64 = 19;

async fn paycall_for(stack: &LocalStack) -> support::server::TestServer {
    let rpc_down = (
        "PAYCALL_UPSTREAM_BASE_RPC",
        "http://127.0.0.1:9/".to_string(),
    );
    let vars = shipped::vars(stack, &[rpc_down]);
    shipped::start(shipped::config(&shipped::routes_yaml(), vars))
        .await
        .0
}

fn b64(v: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(v)
}

const AUTH: [&str; 6] = ["from", "to", "value", "validAfter", "validBefore", "nonce"];

/// A JSON value of the wrong kind for a field that wants a string.
fn wrong_value(rng: &mut impl Rng) -> Value {
    let deep = (0..60).fold(json!(1), |v, _| json!([v]));
    let options = [
        Value::Null,
        json!(10000),
        json!(1.5),
        json!(-1),
        json!(true),
        json!([]),
        json!({}),
        json!({"value": "10000"}),
        json!(["10000"]),
        json!(""),
        json!("1e400"),
        json!("1.5"),
        json!("-10000"),
        json!("0x2710"),
        json!(" 10000"),
        json!("1".repeat(100)),
        json!("9".repeat(78)),
        json!("１００００"),
        json!("😀"),
        json!("0x\u{0663}\u{0664}"),
        json!("a".repeat(100_000)),
        json!("1".repeat(100_000)),
        deep,
    ];
    options[rng.random_range(0..options.len())].clone()
}

/// One mutation of the signed payload; `None` when it is a raw (non-JSON) header.
fn mutate(base: &Value, rng: &mut impl Rng) -> (String, Result<Value, String>) {
    let mut p = base.clone();
    let auth_key = AUTH[rng.random_range(0..AUTH.len())];
    let kind = rng.random_range(0..16u32);
    let name;
    match kind {
        0 => {
            name = format!("remove authorization.{auth_key}");
            p["payload"]["authorization"]
                .as_object_mut()
                .unwrap()
                .remove(auth_key);
        }
        1 | 2 => {
            let v = wrong_value(rng);
            name = format!(
                "authorization.{auth_key} = {}",
                v.to_string().chars().take(40).collect::<String>()
            );
            p["payload"]["authorization"][auth_key] = v;
        }
        3 => {
            let v = wrong_value(rng);
            name = format!(
                "signature = {}",
                v.to_string().chars().take(40).collect::<String>()
            );
            p["payload"]["signature"] = v;
        }
        4 => {
            let which = ["signature", "authorization"][rng.random_range(0..2)];
            name = format!("remove payload.{which}");
            p["payload"].as_object_mut().unwrap().remove(which);
        }
        5 => {
            let (k, v) = [
                ("network", json!("eip155:84532")),
                ("network", json!("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp")),
                ("asset", json!("0x036CbD53842c5426634e7929541eC2318f3dCF7e")),
                ("payTo", json!("0x0000000000000000000000000000000000000001")),
                ("scheme", json!("upto")),
                ("maxTimeoutSeconds", json!(1e300)),
                ("amount", json!("1e4")),
            ][rng.random_range(0..7)]
            .clone();
            name = format!("accepted.{k} = {v}");
            p["accepted"][k] = v;
        }
        6 => {
            let amount: u128 = p["accepted"]["amount"].as_str().unwrap().parse().unwrap();
            let off = [amount - 1, amount + 1, 0, amount * 10][rng.random_range(0..4)];
            let (place, v) = if rng.random_bool(0.5) {
                ("authorization.value", off.to_string())
            } else {
                ("accepted.amount", off.to_string())
            };
            name = format!("{place} = {v}");
            if place == "accepted.amount" {
                p["accepted"]["amount"] = json!(v);
            } else {
                p["payload"]["authorization"]["value"] = json!(v);
            }
        }
        7 => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let (k, v) = [
                ("validBefore", now - 1),
                ("validBefore", now + 3),
                ("validBefore", 0),
                ("validAfter", now + 60),
                ("validAfter", u64::MAX),
            ][rng.random_range(0..5)];
            name = format!("authorization.{k} = {v}");
            p["payload"]["authorization"][k] = json!(v.to_string());
        }
        8 => {
            let sig = p["payload"]["signature"].as_str().unwrap().to_string();
            let mut chars: Vec<char> = sig.chars().collect();
            let at = rng.random_range(2..chars.len());
            chars[at] = if chars[at] == '0' { '1' } else { '0' };
            let variants = [
                chars.iter().collect::<String>(),
                sig[..sig.len() - 2].to_string(),
                format!("{}1d", &sig[..sig.len() - 2]),
                format!("0x{}", "00".repeat(65)),
                sig.trim_start_matches("0x").to_string(),
            ];
            let i = rng.random_range(0..variants.len());
            name = format!("signature variant {i}");
            p["payload"]["signature"] = json!(variants[i].clone());
        }
        9 => {
            let nonce = format!("0x{:064x}", rng.random::<u64>());
            let (k, v) = [
                ("nonce", json!(nonce)),
                ("nonce", json!("0x1234")),
                ("from", json!("0x0000000000000000000000000000000000000002")),
                ("from", json!("0x1234")),
                ("to", json!("0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf")),
            ][rng.random_range(0..5)]
            .clone();
            name = format!("authorization.{k} = {v}");
            p["payload"]["authorization"][k] = v;
        }
        10 => {
            let depth = [100, 127, 200, 1000][rng.random_range(0..4)];
            name = format!("payload nested {depth} deep");
            let open = "[".repeat(depth);
            let close = "]".repeat(depth);
            let text = p
                .to_string()
                .replacen("\"payload\":{", &format!("\"payload\":{open}{{"), 1)
                .replacen("}},\"", &format!("}}}}{close},\""), 1);
            return (name, Err(b64(&text)));
        }
        11 => {
            let k = ["x402Version", "accepted", "payload"][rng.random_range(0..3)];
            let v = wrong_value(rng);
            name = format!(
                "{k} = {}",
                v.to_string().chars().take(40).collect::<String>()
            );
            p[k] = v;
        }
        12 => {
            name = "authorization is a string".into();
            p["payload"]["authorization"] = json!(p["payload"]["authorization"].to_string());
        }
        13 => {
            let raws = [
                "%%%".to_string(),
                b64("not json"),
                b64(&p.to_string())[..40].to_string(),
                b64("[]"),
                b64("null"),
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(p.to_string()),
            ];
            let i = rng.random_range(0..raws.len());
            name = format!("raw header {i}");
            return (name, Err(raws[i].clone()));
        }
        14 => {
            name = format!("unicode in authorization.{auth_key}");
            let s = p["payload"]["authorization"][auth_key]
                .as_str()
                .unwrap()
                .to_string();
            let mut chars: Vec<char> = s.chars().collect();
            let at = rng.random_range(0..chars.len());
            chars[at] = ['é', '０', 'Ａ', '\u{200b}', '😀'][rng.random_range(0..5)];
            p["payload"]["authorization"][auth_key] = json!(chars.into_iter().collect::<String>());
        }
        _ => {
            name = "100 KB signature".into();
            p["payload"]["signature"] = json!(format!("0x{}", "ab".repeat(50_000)));
        }
    }
    (name, Ok(p))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_payments_are_refused_locally_and_never_reach_verify() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let url = paycall.url(&format!("/api/http?url={}", enc(&up.url("/hello"))));
    let signed = stack.sign_only_async(&url, "GET", None).await;
    let base = signed.payload.clone();
    stack.reset_calls();

    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let mut by_status: BTreeMap<u16, usize> = BTreeMap::new();
    let mut by_error: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..MUTATIONS {
        let (name, mutated) = mutate(&base, &mut rng);
        let header = match &mutated {
            Ok(v) => {
                assert_ne!(v, &base, "#{i} {name}: a mutation must change the payment");
                b64(&v.to_string())
            }
            Err(raw) => raw.clone(),
        };
        let (status, headers, body) = send_signed(&url, &header).await;
        assert!(
            status == 400 || status == 402,
            "#{i} {name}: {status} {body}"
        );
        assert!(headers.get("payment-response").is_none(), "#{i} {name}");
        if status == 400 {
            assert!(body["message"].is_string(), "#{i} {name}: {body}");
            if body["error"] == "invalid_payment" {
                assert!(body["field"].is_string(), "#{i} {name}: {body}");
            }
        } else {
            assert!(headers.get("payment-required").is_some(), "#{i} {name}");
        }
        *by_status.entry(status).or_default() += 1;
        *by_error
            .entry(format!(
                "{}{}",
                body["error"].as_str().unwrap_or("?"),
                body["reason"]
                    .as_str()
                    .map(|r| format!("/{r}"))
                    .unwrap_or_default()
            ))
            .or_default() += 1;
        assert_eq!(
            stack.verify_calls(),
            0,
            "#{i} {name} reached /verify: {status} {body}"
        );
    }
    eprintln!("statuses {by_status:?}\nerrors {by_error:?}");
    assert_eq!(up.total(), 0, "no hostile payment bought any work");
    assert_eq!(stack.settle_calls(), 0);
    assert!(
        by_error.len() >= 12,
        "the mutations reach many distinct refusals: {by_error:?}"
    );

    // The unmutated payment still works: exactly one /verify, one settlement.
    let (status, headers, body) = send_signed(&url, &signed.payment_signature).await;
    assert_eq!(status, 200, "{body}");
    assert!(headers.get("payment-response").is_some());
    assert_eq!((stack.verify_calls(), stack.settle_calls()), (1, 1));
}
