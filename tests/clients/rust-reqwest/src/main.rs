//! The Rust x402 client (`x402-reqwest` over `x402-chain-eip155`'s exact scheme, signing with an
//! alloy local key) as a command, so paycall's tests can pay a route exactly as a Rust buyer would.
//!
//!   x402-reqwest-pay --url <u> --key <0x EVM private key> [--method GET|POST] [--body <json>]
//!
//! Prints ONE JSON line: {status, headers (lower-case names), body (JSON if it parses, else text),
//! paymentResponse (the decoded PAYMENT-RESPONSE, or null)}. A failure of the client itself (bad
//! arguments, no connection, a payment it could not build) prints {error} and exits 1.
//!
//! Its own cargo project (not a member of paycall's workspace): x402-reqwest pulls alloy and a
//! second reqwest, which paycall's own build never needs.

use std::sync::Arc;
use std::time::Duration;

use alloy_signer_local::PrivateKeySigner;
use base64::Engine;
use serde_json::{json, Value};
use x402_chain_eip155::V2Eip155ExactClient;
use x402_reqwest::{ReqwestWithPayments, ReqwestWithPaymentsBuild, X402Client};

struct Args {
    url: String,
    key: String,
    method: String,
    body: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut url = None;
    let mut key = None;
    let mut method = "GET".to_string();
    let mut body = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => url = Some(value()?),
            "--key" => key = Some(value()?),
            "--method" => method = value()?.to_ascii_uppercase(),
            "--body" => body = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        url: url.ok_or("--url is required")?,
        key: key.ok_or("--key is required")?,
        method,
        body,
    })
}

async fn run(args: Args) -> Result<Value, String> {
    let signer: PrivateKeySigner = args
        .key
        .parse()
        .map_err(|e| format!("--key is not an EVM private key: {e}"))?;
    let payments = X402Client::new().register(V2Eip155ExactClient::new(Arc::new(signer)));
    let inner = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| e.to_string())?;
    let client = inner.with_payments(payments).build();
    let mut request = match args.method.as_str() {
        "GET" => client.get(&args.url),
        "POST" => client.post(&args.url),
        other => return Err(format!("--method {other}: GET or POST")),
    };
    if let Some(body) = args.body {
        request = request
            .header("content-type", "application/json")
            .body(body);
    }
    let response = request.send().await.map_err(|e| format!("{e:#}"))?;
    let status = response.status().as_u16();
    let mut headers = serde_json::Map::new();
    for (name, value) in response.headers() {
        headers.insert(
            name.as_str().to_string(),
            Value::String(String::from_utf8_lossy(value.as_bytes()).into_owned()),
        );
    }
    let payment_response = headers
        .get("payment-response")
        .and_then(Value::as_str)
        .and_then(|raw| base64::engine::general_purpose::STANDARD.decode(raw).ok())
        .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .unwrap_or(Value::Null);
    let text = response.text().await.map_err(|e| e.to_string())?;
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Ok(json!({
        "status": status,
        "headers": headers,
        "body": body,
        "paymentResponse": payment_response,
    }))
}

#[tokio::main]
async fn main() {
    let outcome = match parse_args() {
        Ok(args) => run(args).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(v) => println!("{v}"),
        Err(e) => {
            println!("{}", json!({ "error": e }));
            std::process::exit(1);
        }
    }
}
