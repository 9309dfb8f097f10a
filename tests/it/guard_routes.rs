//! The outbound guard through the paid routes, by DNS answer: names that resolve (in part) to
//! refused addresses are refused before any connection, redirects to such names too. The DNS
//! seam is a static map (a test seam); only 127.0.0.1 is allowed, canaries listen on 127.0.0.2.

use crate::support;
use support::shipped;
use support::{stack, upstream};

use serde_json::Value;
use std::net::IpAddr;
use std::sync::Arc;

use paycall::net::StaticResolver;
use paycall::server;
use stack::LocalStack;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

use support::server::enc;

/// Signs a payment for exactly this call (a payment pays for one call) and sends it.
async fn pay(stack: &stack::LocalStack, url: &str) -> (u16, Value) {
    let (status, _, body) = support::shipped::send_fresh(stack, url).await;
    (status, body)
}

async fn send(url: &str, sig: &str) -> (u16, Value) {
    let (status, _, body) = support::server::send_signed(url, sig).await;
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_resolving_to_refused_addresses_are_never_dialled() {
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let port = canary.addr.port();
    let up = upstream::start(&format!("http://private.test:{port}/")).await;
    let up_port = up.addr.port();

    let resolver = StaticResolver::new()
        .with("ok.test", [ip("127.0.0.1")])
        .with("rebind.test", [ip("127.0.0.1"), ip("127.0.0.2")])
        .with("private.test", [ip("127.0.0.2")])
        .with("metadata.test", [ip("169.254.169.254")])
        .with("mapped.test", [ip("::ffff:127.0.0.2")])
        .with("nat64.test", [ip("64:ff9b::a00:1")]);
    let cfg = shipped::config(&shipped::routes_yaml(), shipped::vars(&stack, &[]));
    let services =
        server::services::build_with_resolver(&cfg, Arc::new(resolver)).expect("services");
    let app = server::build_app(cfg, services).unwrap_or_else(|e| panic!("{e}"));
    let paycall = support::server::start_app(app).await;
    let http = |target: &str| paycall.url(&format!("/api/http?url={}", enc(target)));

    let sig = stack
        .sign_only_async(
            &http(&format!("http://ok.test:{up_port}/hello")),
            "GET",
            None,
        )
        .await
        .payment_signature;
    stack.reset_calls();
    for name in [
        "rebind.test",
        "private.test",
        "metadata.test",
        "mapped.test",
        "nat64.test",
    ] {
        let (s, b) = pay(&stack, &http(&format!("http://{name}:{port}/"))).await;
        assert_eq!(
            (s, b["error"].as_str()),
            (400, Some("blocked_target")),
            "{name}: {b}"
        );
    }
    // A redirect from an allowed upstream to a name that resolves to the canary.
    let (s, b) = pay(&stack, &http(&up.url("/to-canary"))).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (400, Some("blocked_target")),
        "{b}"
    );
    // A name that does not resolve is an upstream failure, not a refusal.
    let (s, b) = pay(&stack, &http(&format!("http://nxdomain.test:{port}/"))).await;
    assert_eq!((s, b["error"].as_str()), (502, Some("dns_failed")), "{b}");
    assert_eq!(canary.hits(), 0, "no refused address was ever dialled");
    assert_eq!(stack.settle_calls(), 0);

    // The allowed name works and is charged once.
    let (s, b) = send(&http(&format!("http://ok.test:{up_port}/hello")), &sig).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["body"], "hello");
    assert_eq!(stack.settle_calls(), 1);
    assert_eq!(canary.hits(), 0);
}
