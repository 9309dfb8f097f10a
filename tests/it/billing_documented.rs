//! What discovery says a route charges for is what the facilitator sees. The shipped config is
//! paid for real on the local payment stack (tests/e2e): for each outcome below, the documented
//! billing (`x-billing` of /openapi.json: the rule, and the stages' cases such as an upstream's
//! error status) predicts the answer's status and whether it is charged, and the facilitator's
//! trace (/settle calls, the buyer's balance) must agree. Also: every paid route documents its
//! rule, /llms.txt and /.well-known/x402 no longer say "errors are never charged" without the
//! exception.

use crate::support;
use support::shipped::paycall_for;
use support::{stack, upstream};

use serde_json::{json, Value};

use stack::LocalStack;
use support::server::enc;

/// What the documented billing predicts for an outcome: (status, charged). `case` names one of
/// the route's documented cases; without one, the answer is `status` and the rule decides.
fn predicted(billing: &Value, case: Option<&str>, status: u16) -> (u16, bool) {
    if let Some(name) = case {
        let c = billing["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["case"] == name)
            .unwrap_or_else(|| panic!("case {name} is not documented: {billing}"));
        return (
            c["status"].as_u64().unwrap() as u16,
            c["charged"].as_bool().unwrap(),
        );
    }
    let charged = match billing["rule"].as_str().unwrap() {
        "status_below_400" => status < 400,
        "never" => false,
        other => panic!("undocumented rule {other}"),
    };
    (status, charged)
}

/// (route, method, url, body, documented case, status the rule is applied to without a case)
type Outcome<'a> = (
    &'a str,
    &'a str,
    String,
    Option<String>,
    Option<&'a str>,
    u16,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_documented_billing_rule_is_what_the_facilitator_sees() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let paycall = paycall_for(&stack).await;
    let (_, _, openapi) = support::server::get_json(&paycall.url("/openapi.json")).await;

    // Every paid operation documents its rule, in words and as data.
    for (path, item) in openapi["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if op.get("x-payment-info").is_none() {
                continue;
            }
            let b = &op["x-billing"];
            assert_eq!(b["rule"], "status_below_400", "{path} {method}: {b}");
            let d = op["description"].as_str().unwrap();
            assert!(
                d.contains(b["description"].as_str().unwrap()),
                "{path}: the description says the rule: {d}"
            );
            assert!(
                !d.contains("Not charged when the answer is an error."),
                "{d}"
            );
        }
    }
    let billing = |path: &str, method: &str| openapi["paths"][path][method]["x-billing"].clone();

    let body_422 = json!({
        "html": "<html><body><p>nothing to find</p></body></html>",
        "fields": {"price": ".price"}
    })
    .to_string();
    let body_200 = json!({
        "html": "<html><head><title>T</title></head><body><p class=price>3</p></body></html>",
        "fields": {"price": ".price"}
    })
    .to_string();
    let outcomes: Vec<Outcome> = vec![
        (
            "/api/http",
            "get",
            format!("/api/http?url={}", enc(&up.url("/missing"))),
            None,
            Some("upstream_error_status"),
            0,
        ),
        (
            "/api/http",
            "get",
            format!("/api/http?url={}", enc(&up.url("/hello"))),
            None,
            None,
            200,
        ),
        (
            "/api/http",
            "get",
            format!("/api/http?url={}", enc("http://127.0.0.1:9/")),
            None,
            None,
            502,
        ),
        (
            "/api/fetch",
            "get",
            format!("/api/fetch?url={}", enc(&up.url("/missing"))),
            None,
            Some("upstream_error_status"),
            0,
        ),
        (
            "/api/fetch",
            "get",
            format!("/api/fetch?url={}", enc(&up.url("/article"))),
            None,
            None,
            200,
        ),
        (
            "/api/extract",
            "post",
            "/api/extract".into(),
            Some(body_422),
            None,
            422,
        ),
        (
            "/api/extract",
            "post",
            "/api/extract".into(),
            Some(body_200),
            None,
            200,
        ),
    ];
    for (route, method, url, body, case, status) in outcomes {
        let doc = billing(route, method);
        let (want_status, want_charged) = predicted(&doc, case, status);
        let settles_before = stack.settle_calls();
        let paid = stack
            .pay_async(
                &paycall.url(&url),
                &method.to_ascii_uppercase(),
                body.as_deref(),
            )
            .await;
        let what = format!("{route} {url} (case {case:?})");
        assert_eq!(paid.status, want_status, "{what}: {:?}", paid.body);
        let settled = stack.settle_calls() - settles_before;
        assert_eq!(
            settled,
            usize::from(want_charged),
            "{what}: documented charged={want_charged}, the facilitator saw {settled} settlement(s)"
        );
        let price: i128 = openapi["paths"][route][method]["x-payment-info"]["protocols"][0]["x402"]
            ["accepts"][0]["amount"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let spent = paid.buyer_spent();
        if want_charged {
            assert_eq!(spent, price, "{what}: exactly the price");
        } else {
            assert_eq!(spent, 0, "{what}: nothing moves for a not-charged outcome");
        }
    }
    assert_eq!(canary.hits(), 0);

    // The service-wide words carry the exception, not "errors are never charged" alone.
    let llms = support::server::get_text(&paycall.url("/llms.txt")).await;
    assert!(!llms.contains("are never charged.\n"), "{llms}");
    assert!(
        llms.contains("/api/http delivers it in a 200 record, which is charged"),
        "{llms}"
    );
    let (_, _, wk) = support::server::get_json(&paycall.url("/.well-known/x402")).await;
    assert!(
        wk["instructions"]
            .as_str()
            .unwrap()
            .contains("/api/http delivers it in a 200 record"),
        "{wk}"
    );
    paycall.shutdown().await;
}
