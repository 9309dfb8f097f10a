//! paycall on the SHIPPED routes.yaml, in process on 127.0.0.1:0, against the local payment
//! stack: the stack's facilitator, payTo and chain (settlements are confirmed on it), loopback
//! targets allowed, an in-memory ledger. Tests add or replace variables and tweak the loaded
//! config where they need to.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use paycall::config::{self, Config};
use paycall::pipeline::Services;
use paycall::server;

use super::server::{start_app, TestServer};
use super::stack::LocalStack;

/// A valid Solana address for the Solana offer when the test does not pay on Solana.
pub const SOL_PLACEHOLDER: &str = "11111111111111111111111111111111";

/// The routes.yaml the service ships with.
pub fn routes_yaml() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml")
}

/// The environment paycall loads its config with against `stack`; `extra` adds variables or
/// replaces these.
pub fn vars(stack: &LocalStack, extra: &[(&str, String)]) -> HashMap<String, String> {
    let mut vars: HashMap<String, String> = [
        ("PAYCALL_FACILITATOR_URL", stack.facilitator_url.clone()),
        ("PAYCALL_EVM_PAY_TO", stack.pay_to.clone()),
        ("PAYCALL_SOLANA_PAY_TO", SOL_PLACEHOLDER.to_string()),
        ("PAYCALL_ALLOW_CIDRS", "127.0.0.1/32".to_string()),
        ("PAYCALL_LEDGER_URL", "sqlite::memory:".to_string()),
        ("PAYCALL_UPSTREAM_BASE_RPC", stack.rpc_url.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    for (k, v) in extra {
        vars.insert(k.to_string(), v.clone());
    }
    vars
}

/// `routes` loaded with exactly `vars` as the environment (a panic on a refused config).
pub fn config(routes: &Path, vars: HashMap<String, String>) -> Config {
    config::load_with_env(routes, &move |k: &str| vars.get(k).cloned())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Builds the services and the app for `cfg` and serves it; the services too, for a test that
/// looks inside them.
pub async fn start(cfg: Config) -> (TestServer, Services) {
    let services = server::services::build(&cfg).expect("services");
    let app = server::build_app(cfg, services.clone()).unwrap_or_else(|e| panic!("{e}"));
    (start_app(app).await, services)
}

/// paycall on the shipped routes against `stack`, nothing else changed.
pub async fn paycall_for(stack: &LocalStack) -> TestServer {
    start(config(&routes_yaml(), vars(stack, &[]))).await.0
}

/// Signs a payment for exactly this call and sends it: the ledger binds a payment to the call
/// it was first presented for, so each call that may fail pays with its own signature.
pub async fn send_fresh(
    stack: &LocalStack,
    url: &str,
) -> (u16, reqwest::header::HeaderMap, serde_json::Value) {
    let sig = stack
        .sign_only_async(url, "GET", None)
        .await
        .payment_signature;
    super::server::send_signed(url, &sig).await
}
