//! The official Python x402 package (PyPI `x402`, pinned in tests/requirements.txt, installed in
//! tests/.venv by scripts/setup.sh) paying paycall for real: the SHIPPED routes.yaml, the local
//! chain with the test USDC and the official facilitator (tests/e2e), local upstreams on 127.0.0.1.
//!
//! - HTTP: its async httpx client and its sync requests client (tests/clients/x402_http.py) pay
//!   /api/fetch (GET) and /api/extract (POST JSON body);
//! - MCP: the official MCP Python SDK's ClientSession with `x402.mcp.x402MCPSession`
//!   (tests/clients/x402_mcp.py) lists the tools and calls fetch, extract and pulse unpaid and paid.
//!
//! Each paid call is checked where the money is: the receipt the client read, the facilitator's
//! trace (one verify, one settle, whose transaction is the receipt's) and the buyer's and payTo's
//! USDC balances on chain. A missing venv fails the tests: they never skip.

use crate::support;
use support::clients;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use clients::{assert_charged, balances};

/// Bound on one client run: Python start-up with web3 is ~2 s, a paid call a few seconds.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs tests/clients/<script> with the venv's Python, bounded, off the async runtime; its
/// JSON line, or a panic with what it printed.
async fn run_client(script: &'static str, args: Vec<String>) -> Value {
    tokio::task::spawn_blocking(move || {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/clients")
            .join(script);
        let mut cmd = Command::new(support::clients::venv_python());
        cmd.arg(path)
            .args(&args)
            .env("PYTHONDONTWRITEBYTECODE", "1");
        clients::run_json(cmd, &format!("{script} {args:?}"), CLIENT_TIMEOUT)
    })
    .await
    .expect("client runner thread panicked")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_x402_http_clients_pay_routes_on_chain() {
    let (stack, canary, up, _market, paycall) = clients::setup().await;
    let key = stack.buyer_key.clone();

    // httpx (async) for the GETs, requests (sync) for the POST with a JSON body.
    let outs = clients::http_client_pays(&stack, &paycall, &up, &canary, "x402 python", |call| {
        let lib = if call.body.is_some() {
            "requests"
        } else {
            "httpx"
        };
        let mut args: Vec<String> = vec![
            "--client".into(),
            lib.into(),
            "--url".into(),
            call.url,
            "--key".into(),
            key.clone(),
        ];
        if let Some(body) = call.body {
            args.extend(["--method".into(), "POST".into(), "--body".into(), body]);
        }
        run_client("x402_http.py", args)
    })
    .await;
    // The payment the client made: the route's price in atomic units.
    assert_eq!(
        outs[0]["payload"]["accepted"]["amount"], "20000",
        "{}",
        outs[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_with_x402_pays_tools_on_chain() {
    let (stack, canary, up, _market, paycall) = clients::setup().await;
    let mcp = paycall.url("/mcp");

    let cases = [
        ("fetch", json!({ "url": up.url("/article") }), 20_000),
        (
            "extract",
            json!({ "url": up.url("/article"), "fields": { "headline": "h1" } }),
            15_000,
        ),
        ("pulse", json!({}), 5_000),
    ];
    for (tool, args, price) in cases {
        stack.reset_calls();
        let before = balances(&stack);
        let out = run_client(
            "x402_mcp.py",
            vec![
                "--url".into(),
                mcp.clone(),
                "--key".into(),
                stack.buyer_key.clone(),
                "--tool".into(),
                tool.into(),
                "--args".into(),
                args.to_string(),
            ],
        )
        .await;
        let what = format!("MCP tool {tool}");
        let revision = out["protocolVersion"].as_str().unwrap_or_default();
        assert!(
            ["2025-06-18", "2025-11-25"].contains(&revision),
            "{what}: negotiated {revision}"
        );

        let names: Vec<&str> = out["tools"]
            .as_array()
            .expect("tools/list")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(names.contains(&tool), "{what}: not listed in {names:?}");

        // Unpaid: the PaymentRequired as the tool result, in structuredContent and as text.
        let unpaid = &out["unpaid"];
        assert_eq!(unpaid["isError"], true, "{what}: {unpaid}");
        let pr = &unpaid["structuredContent"];
        assert_eq!(pr["x402Version"], 2, "{what}: {unpaid}");
        assert_eq!(pr["accepts"][0]["amount"], price.to_string(), "{what}");
        assert_eq!(
            pr["resource"]["url"],
            format!("mcp://paycall.example.com/tools/{tool}")
        );
        let text: Value =
            serde_json::from_str(unpaid["content"][0]["text"].as_str().unwrap_or("null"))
                .unwrap_or(Value::Null);
        assert_eq!(&text, pr, "{what}: text and structuredContent agree");

        // Paid through x402MCPSession: the route's answer and the receipt in _meta.
        assert_eq!(out["paymentMade"], true, "{what}: {out}");
        let paid = &out["paid"];
        assert_eq!(paid["isError"], false, "{what}: {paid}");
        assert_eq!(paid["structuredContent"]["source"], tool, "{what}: {paid}");
        let receipt = &paid["_meta"]["x402/payment-response"];
        assert_eq!(
            out["paymentResponse"]["transaction"], receipt["transaction"],
            "{what}: x402 read the receipt from _meta"
        );
        assert_charged(&stack, &what, receipt, before, price);
    }
    assert_eq!(canary.hits(), 0);
}
