//! Paid MCP tool calls for real: the SHIPPED routes.yaml served at /mcp, called by the official
//! MCP TypeScript SDK (tests/e2e/mcp.mjs) which pays with the official x402 client, on the local
//! chain with the official facilitator (tests/e2e), local upstreams on 127.0.0.1 (a page server,
//! the market fixtures).
//!
//! Unpaid → the PaymentRequired as the tool result, no work, no facilitator call; paid → the
//! route's answer, the receipt in `_meta["x402/payment-response"]`, exactly one settle, the
//! price moved on chain; a not-charged outcome never settles and moves nothing.

use crate::support;
use support::clients;

use serde_json::{json, Value};

fn num(v: &Value) -> i128 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| v.as_i64().map(i128::from))
        .unwrap_or_else(|| panic!("not an amount: {v}"))
}

fn spent(out: &Value) -> (i128, i128) {
    (
        num(&out["buyerBefore"]) - num(&out["buyerAfter"]),
        num(&out["payToAfter"]) - num(&out["payToBefore"]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_sdk_lists_and_pays_tools_and_each_charged_call_settles_once() {
    let (stack, canary, up, _market, paycall) = clients::setup().await;
    let mcp = paycall.url("/mcp");

    // fetch: unpaid → PaymentRequired, no work; paid → markdown + receipt, one settle.
    let args = json!({ "url": up.url("/article") }).to_string();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "fetch", "--args", &args])
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    let tools = out["tools"].as_array().expect("tools/list");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for want in ["http", "fetch", "extract", "pulse", "fetch_demo"] {
        assert!(names.contains(&want), "{want} not in {names:?}");
    }
    let fetch = tools.iter().find(|t| t["name"] == "fetch").unwrap();
    assert_eq!(fetch["_meta"]["x402/price"]["usd"], "0.02");
    assert_eq!(fetch["inputSchema"]["required"], json!(["url"]));
    assert!(fetch["outputSchema"].is_object());

    let unpaid = &out["unpaid"];
    assert_eq!(unpaid["isError"], true, "{unpaid}");
    let pr = &unpaid["structuredContent"];
    assert_eq!(pr["x402Version"], 2);
    assert_eq!(pr["accepts"][0]["amount"], "20000");
    assert_eq!(pr["accepts"][0]["payTo"], stack.pay_to);
    assert_eq!(
        pr["resource"]["url"],
        "mcp://paycall.example.com/tools/fetch"
    );
    assert_eq!(pr["extensions"]["bazaar"]["info"]["input"]["type"], "mcp");
    assert_eq!(
        pr["extensions"]["bazaar"]["info"]["input"]["toolName"],
        "fetch"
    );
    let text: Value = serde_json::from_str(unpaid["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        &text, pr,
        "text and structuredContent hold the same PaymentRequired"
    );

    let paid = &out["paid"];
    assert_eq!(paid["isError"], false, "{paid}");
    let b = &paid["structuredContent"];
    assert_eq!(b["format"], "markdown");
    assert!(b["content"]
        .as_str()
        .unwrap()
        .contains("The harbour was quiet that morning"));
    assert_eq!(b["source"], "fetch");
    let receipt = &paid["_meta"]["x402/payment-response"];
    assert_eq!(receipt["success"], true, "{paid}");
    assert!(receipt["transaction"].as_str().unwrap().starts_with("0x"));
    assert_eq!(spent(&out), (20_000, 20_000), "the price moved on chain");
    assert_eq!(stack.settle_calls(), 1, "exactly one settle");
    assert_eq!(stack.verify_calls(), 1);
    assert_eq!(canary.hits(), 0);

    // The same payment again (a lost answer): the kept answer, no second settle, no charge.
    stack.reset_calls();
    let payload = out["payload"].to_string();
    let again = stack
        .mcp_async(&[
            "--url",
            &mcp,
            "--tool",
            "fetch",
            "--args",
            &args,
            "--payment-json",
            &payload,
        ])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again["paid"]["isError"], false, "{}", again["paid"]);
    assert_eq!(
        again["paid"]["_meta"]["x402/payment-response"]["transaction"],
        receipt["transaction"]
    );
    assert_eq!(stack.settle_calls(), 0);
    assert_eq!(spent(&again), (0, 0));

    // extract: POST-style arguments (an object field) through the tool.
    stack.reset_calls();
    let args = json!({ "url": up.url("/article"), "fields": { "headline": "h1" } }).to_string();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "extract", "--args", &args])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out["unpaid"]["structuredContent"]["accepts"][0]["amount"],
        "15000"
    );
    let paid = &out["paid"];
    assert_eq!(paid["isError"], false, "{paid}");
    assert!(
        paid["structuredContent"]["fields"]["headline"].is_string(),
        "{paid}"
    );
    assert_eq!(paid["_meta"]["x402/payment-response"]["success"], true);
    assert_eq!(spent(&out), (15_000, 15_000));
    assert_eq!(stack.settle_calls(), 1);

    // pulse: no arguments, a market route.
    stack.reset_calls();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "pulse"])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        out["unpaid"]["structuredContent"]["accepts"][0]["amount"],
        "5000"
    );
    let paid = &out["paid"];
    assert_eq!(paid["isError"], false, "{paid}");
    assert_eq!(paid["structuredContent"]["source"], "pulse", "{paid}");
    assert_eq!(paid["_meta"]["x402/payment-response"]["success"], true);
    assert_eq!(spent(&out), (5_000, 5_000));
    assert_eq!(stack.settle_calls(), 1);

    // A free demo twin: no payment, no facilitator.
    stack.reset_calls();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "fetch_demo", "--no-pay"])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out["unpaid"]["isError"], false, "{}", out["unpaid"]);
    assert_eq!(out["unpaid"]["structuredContent"]["demo"], true);
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_not_charged_tool_call_never_settles() {
    let (stack, canary, up, _market, paycall) = clients::setup().await;
    let mcp = paycall.url("/mcp");

    // The upstream page is missing: the route's error, isError, no settlement, nothing moved.
    let args = json!({ "url": up.url("/missing") }).to_string();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "fetch", "--args", &args])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let paid = &out["paid"];
    assert_eq!(paid["isError"], true, "{paid}");
    assert!(paid["structuredContent"]["error"].is_string(), "{paid}");
    assert!(paid["_meta"]["paycall/status"].as_u64().unwrap() >= 400);
    assert!(
        paid["_meta"].get("x402/payment-response").is_none(),
        "{paid}"
    );
    assert_eq!(
        stack.settle_calls(),
        0,
        "a not-charged outcome never settles"
    );
    assert_eq!(spent(&out), (0, 0));

    // Invalid arguments with a payment: the route's 400 before the facilitator.
    stack.reset_calls();
    let out = stack
        .mcp_async(&["--url", &mcp, "--tool", "fetch", "--args", r#"{"url": 5}"#])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(out["paid"]["isError"], true, "{}", out["paid"]);
    assert_eq!(out["paid"]["_meta"]["paycall/status"], 400);
    assert_eq!(stack.verify_calls() + stack.settle_calls(), 0);
    assert_eq!(spent(&out), (0, 0));
    assert_eq!(canary.hits(), 0);
}
