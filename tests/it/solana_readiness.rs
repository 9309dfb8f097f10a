//! The operator cannot misconfigure an offer silently: `paycall check` and startup verify, per
//! offered network, that the facilitator's /supported lists it and (Solana, with the solana_rpc
//! upstream) that payTo has a USDC token account; `payment.unsupported_network` refuses or leaves
//! the offer out; /status shows each network. Against the real local stack (both legs) and a
//! facilitator that lists only Solana.

use crate::support;
use support::stack;

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use paycall::config;
use paycall::payment::readiness::{self, Readiness};
use paycall::server;
use stack::LocalStack;

const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";

fn routes() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml")
}

/// `paycall check` on the shipped routes.yaml with these variables only.
fn check(vars: &[(&str, String)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_paycall"));
    cmd.env_clear()
        .env("PAYCALL_LEDGER_URL", "sqlite::memory:")
        .arg("--config")
        .arg(routes())
        .arg("check");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("run the paycall binary")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn stack_vars(stack: &LocalStack, sol_pay_to: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PAYCALL_FACILITATOR_URL", stack.facilitator_url.clone()),
        ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
        ("PAYCALL_SOLANA_PAY_TO", sol_pay_to.to_string()),
        ("PAYCALL_UPSTREAM_SOLANA_RPC", stack.solana("rpcUrl")),
        ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
    ]
}

#[test]
fn check_verifies_the_facilitator_and_the_solana_token_account() {
    let stack = LocalStack::start();

    // Both networks payable: exit 0, each named ready, Solana with the fee payer.
    let out = check(&stack_vars(&stack, &stack.solana("payTo")));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stdout:\n{so}\nstderr:\n{se}");
    assert!(
        so.contains("network eip155:8453 (base): ready (facilitator: listed"),
        "{so}"
    );
    assert!(
        so.contains(&format!(
            "network {SOLANA} (solana): ready (facilitator: listed, feePayer {}, payTo token account: present)",
            stack.solana("feePayer")
        )),
        "{so}"
    );

    // A Solana payTo without a token account: refused, naming the address and how to create it.
    let spare = stack.solana("spare");
    let out = check(&stack_vars(&stack, &spare));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "stdout:\n{so}\nstderr:\n{se}");
    assert!(so.contains("CANNOT BE PAID"), "{so}");
    assert!(
        se.contains(&format!(
            "Solana payTo {spare} has no associated token account"
        )),
        "{se}"
    );
    assert!(
        se.contains(&format!(
            "spl-token create-account EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v --owner {spare}"
        )),
        "{se}"
    );
    assert!(
        se.contains("unsupported_network"),
        "names the setting: {se}"
    );

    // The same under leave_out: exit 0 with a warning that the offer is left out.
    let mut vars = stack_vars(&stack, &spare);
    vars.push(("PAYCALL_UNSUPPORTED_NETWORK", "leave_out".into()));
    let out = check(&vars);
    let se = text(&out.stderr);
    assert!(out.status.success(), "{se}");
    assert!(
        se.contains(&format!(
            "warning: {SOLANA} (solana) left out of every offer"
        )),
        "{se}"
    );

    // An unreachable Solana RPC is a warning (not verified), never a refusal.
    let mut vars = stack_vars(&stack, &spare);
    vars.retain(|(k, _)| *k != "PAYCALL_UPSTREAM_SOLANA_RPC");
    vars.push(("PAYCALL_UPSTREAM_SOLANA_RPC", "http://127.0.0.1:9/".into()));
    let out = check(&vars);
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{se}");
    assert!(so.contains("not verified"), "{so}");
    assert!(se.contains("cannot reach the Solana RPC"), "{se}");

    // A token account of payTo's that is not its associated one does not count: the client
    // pays into the associated account only. (The RPC lists it for the owner, as a node does.)
    let fund = |extra: Value| {
        let mut body = json!({"owner": spare, "amount": "0"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let url = format!("{}/_fund", stack.solana("rpcUrl"));
        let (st, t) = stack::http_request("POST", &url, Some(&body.to_string())).unwrap();
        assert_eq!(st, 200, "{t}");
        serde_json::from_str::<Value>(&t).unwrap()["tokenAccount"]
            .as_str()
            .unwrap()
            .to_string()
    };
    fund(json!({"at": "7Sa6JgAHBKWiEkqW3tJu3umYtSDxcouhRurwQeN1589X"}));
    let listed = stack.solana_rpc(
        "getTokenAccountsByOwner",
        json!([spare, {"mint": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}, {"encoding": "base64"}]),
    );
    assert_eq!(
        listed["result"]["value"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );
    let out = check(&stack_vars(&stack, &spare));
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "stdout:\n{so}\nstderr:\n{se}");
    // Its associated account, derived by the official token library: then it is ready, and the
    // refusal above named exactly that address.
    let ata = fund(json!({}));
    assert!(se.contains(&format!("(expected at {ata})")), "{se}");
    let out = check(&stack_vars(&stack, &spare));
    let so = text(&out.stdout);
    assert!(out.status.success(), "{so}\n{}", text(&out.stderr));
    assert!(so.contains("payTo token account: present"), "{so}");
}

/// A facilitator whose /supported lists only Solana (with a fee payer).
async fn solana_only_facilitator() -> String {
    let (listener, addr) = support::net::listen().await;
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = tokio::time::timeout(Duration::from_secs(5), sock.read(&mut buf)).await;
                let body =
                    json!({"kinds": [{"x402Version": 2, "scheme": "exact", "network": SOLANA,
                    "extra": {"feePayer": "FiXUmyx6xNRTicUNkNhJ2ATPnUoMwVixxRytoQYNWw6R"}}]})
                    .to_string();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = sock.write_all(resp.as_bytes()).await;
            });
        }
    });
    format!("http://{addr}/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_follow_the_facilitator_one_rule_for_both_networks() {
    let fac = solana_only_facilitator().await;
    let load = |rule: &'static str| {
        let fac = fac.clone();
        let env = move |k: &str| -> Option<String> {
            match k {
                "PAYCALL_FACILITATOR_URL" => Some(fac.clone()),
                "PAYCALL_EVM_PAY_TO" => Some(support::server::EVM_PAY_TO.into()),
                "PAYCALL_SOLANA_PAY_TO" => Some(support::server::SOL_PAY_TO.into()),
                "PAYCALL_LEDGER_URL" => Some("sqlite::memory:".into()),
                // No Solana RPC reachable here: the token account is "not verified", a warning.
                "PAYCALL_UPSTREAM_SOLANA_RPC" => Some("http://127.0.0.1:9/".into()),
                "PAYCALL_UNSUPPORTED_NETWORK" => Some(rule.into()),
                _ => None,
            }
        };
        config::load_with_env(&routes(), &env).unwrap_or_else(|e| panic!("{e}"))
    };

    // refuse: Base is offered but not settled by this facilitator → startup's verdict refuses.
    let cfg = load("refuse");
    let services = server::services::build(&cfg).expect("services");
    let client = services
        .get::<paycall::x402::facilitators::Facilitators>()
        .unwrap();
    let checks = readiness::check(&cfg, &client).await;
    let refusal = readiness::verdict(&checks, cfg.payment.unsupported_network).unwrap_err();
    assert!(
        refusal.contains("does not list `exact` x402 v2 for eip155:8453 (base)"),
        "{refusal}"
    );
    assert!(
        refusal.contains("leave_out"),
        "says how to serve anyway: {refusal}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_paycall"))
        .env_clear()
        .env("PAYCALL_FACILITATOR_URL", &fac)
        .env("PAYCALL_EVM_PAY_TO", support::server::EVM_PAY_TO)
        .env("PAYCALL_SOLANA_PAY_TO", support::server::SOL_PAY_TO)
        .env("PAYCALL_LEDGER_URL", "sqlite::memory:")
        .env("PAYCALL_UPSTREAM_SOLANA_RPC", "http://127.0.0.1:9/")
        .env("PAYCALL_LISTEN", "127.0.0.1:0")
        .arg("--config")
        .arg(routes())
        .arg("serve")
        .output()
        .expect("run paycall serve");
    let se = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "serve refuses to start: {se}");
    assert!(se.contains("eip155:8453"), "{se}");

    // leave_out: the Base offer is dropped (a warning), Solana stays; /status says which.
    let cfg = load("leave_out");
    let services = server::services::build(&cfg).expect("services");
    let client = services
        .get::<paycall::x402::facilitators::Facilitators>()
        .unwrap();
    let checks = readiness::check(&cfg, &client).await;
    let warnings = readiness::verdict(&checks, cfg.payment.unsupported_network).unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("eip155:8453 (base) left out of every offer")),
        "{warnings:?}"
    );
    services
        .get::<Readiness>()
        .unwrap()
        .record(checks, cfg.payment.unsupported_network);
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let paycall = support::server::start_app(app).await;
    let url = paycall.url("/api/http?url=https%3A%2F%2Fexample.com%2F");
    let r = support::server::client().get(&url).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 402);
    let body: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
    let networks: Vec<&str> = body["accepts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["network"].as_str().unwrap())
        .collect();
    assert_eq!(
        networks,
        vec![SOLANA],
        "only what the facilitator settles: {body}"
    );

    let (_, _, status) = support::server::get_json(&paycall.url("/status")).await;
    let nets = status["networks"].as_array().expect("networks in /status");
    let base = nets.iter().find(|n| n["network"] == "eip155:8453").unwrap();
    assert_eq!(base["offered"], false, "{status}");
    assert_eq!(base["ready"], false);
    assert_eq!(base["facilitator"], "not_listed");
    assert!(base["problem"].as_str().unwrap().contains("does not list"));
    let sol = nets.iter().find(|n| n["network"] == SOLANA).unwrap();
    assert_eq!(sol["offered"], true, "{status}");
    assert_eq!(sol["facilitator"], "listed");
    assert_eq!(
        sol["feePayer"],
        "FiXUmyx6xNRTicUNkNhJ2ATPnUoMwVixxRytoQYNWw6R"
    );
    assert_eq!(sol["tokenAccount"], "unknown");
    assert!(sol["warning"]
        .as_str()
        .unwrap()
        .contains("cannot reach the Solana RPC"));
}
