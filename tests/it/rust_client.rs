//! The Rust x402 client (the `x402-reqwest` crate with `x402-chain-eip155`'s exact scheme and an
//! alloy local signer) paying paycall for real: the SHIPPED routes.yaml, the local chain with the
//! test USDC and the official facilitator (tests/e2e), a local upstream on 127.0.0.1. Checked
//! where the money is: the receipt, the facilitator's trace, the balances on chain.
//!
//! The client is the small cargo project tests/clients/rust-reqwest (its own Cargo.lock), built
//! here on first use into `<target dir>/x402-reqwest-pay`, so a reused target dir (CI's) builds it
//! once. It is not a dev-dependency of paycall: it pulls alloy and a reqwest with other TLS
//! features, several minutes of compiling that no other test needs.

use crate::support;
use support::clients;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A clean build of the client takes ~3 min on 2 cores; bounded well above that.
const BUILD_TIMEOUT: Duration = Duration::from_secs(1200);
const PAY_TIMEOUT: Duration = Duration::from_secs(90);

/// Builds tests/clients/rust-reqwest (a no-op once built) and returns its binary.
fn client_bin() -> PathBuf {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/rust-reqwest");
    // CARGO_TARGET_TMPDIR is <target dir>/tmp: the client gets a directory beside it.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target dir")
        .join("x402-reqwest-pay");
    let cargo = option_env!("CARGO").unwrap_or("cargo");
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--locked", "--manifest-path"])
        .arg(project.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target);
    let what = "cargo build of tests/clients/rust-reqwest";
    let (status, _, stderr) = clients::run_bounded(cmd, what, BUILD_TIMEOUT);
    assert!(status.success(), "{what} failed ({status}):\n{stderr}");
    let bin = target.join("debug/x402-reqwest-pay");
    assert!(bin.exists(), "{} was not built", bin.display());
    bin
}

async fn pay(bin: &Path, args: Vec<String>) -> Value {
    let bin = bin.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(&bin);
        cmd.args(&args);
        clients::run_json(cmd, &format!("x402-reqwest-pay {args:?}"), PAY_TIMEOUT)
    })
    .await
    .expect("client runner thread panicked")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_x402_reqwest_client_pays_routes_on_chain() {
    let bin = tokio::task::spawn_blocking(client_bin)
        .await
        .expect("build thread");
    let (stack, canary, up, _market, paycall) = clients::setup().await;
    let key = stack.buyer_key.clone();

    // A POST with a JSON body: the middleware repeats the body with the payment.
    clients::http_client_pays(&stack, &paycall, &up, &canary, "x402-reqwest", |call| {
        let mut args: Vec<String> = vec!["--url".into(), call.url, "--key".into(), key.clone()];
        if let Some(body) = call.body {
            args.extend(["--method".into(), "POST".into(), "--body".into(), body]);
        }
        pay(&bin, args)
    })
    .await;
}
