//! Market-route hot paths, timed on this machine (prints figures; no thresholds):
//! - parsing DefiLlama's /pools (a synthetic list of real-shaped pools, 20,000 by default, made
//!   by repeating fixtures/market/defillama_yields/pools.json with varied TVL) and ranking it;
//! - the three indicators over 300 candles;
//! - Multicall3 aggregate3 encoding and decoding.
//!
//! ```text
//! cargo bench --bench market [-- --pools <n>] [-- --rounds <n>]
//! ```

use paycall::market::evm::{aggregate3, balance_of, decode_aggregate3};
use paycall::market::indicators::{bollinger, macd, rsi_wilder};
use paycall::market::yields::{parse_pools, rank, Filters, TVL_FLOOR_USD};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(mut v: Vec<Duration>, p: f64) -> Duration {
    v.sort();
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn report(what: &str, times: Vec<Duration>) {
    println!(
        "{what}: median {:.3} ms, p90 {:.3} ms over {} rounds",
        percentile(times.clone(), 0.5).as_secs_f64() * 1e3,
        percentile(times.clone(), 0.9).as_secs_f64() * 1e3,
        times.len()
    );
}

fn synthetic_pools(n: usize) -> Vec<u8> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/market/defillama_yields/pools.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("fixture")).expect("JSON");
    let seed = doc["data"].as_array().expect("data").clone();
    let mut data = Vec::with_capacity(n);
    for i in 0..n {
        let mut p = seed[i % seed.len()].clone();
        // Spread TVL log-uniformly over 10k … 10B USD: about half pass the 10M floor.
        let tvl = 10f64.powf(4.0 + (i * 7919 % 10_000) as f64 / 10_000.0 * 6.0);
        p["tvlUsd"] = serde_json::json!(tvl);
        p["pool"] = Value::String(format!("pool-{i:06}"));
        data.push(p);
    }
    serde_json::to_vec(&serde_json::json!({"status": "success", "data": data})).expect("encode")
}

/// An aggregate3 answer: `(bool success, bytes returnData)[]`, each a uint256 balance.
fn aggregate3_result(n: usize) -> Vec<u8> {
    let word = |x: usize| {
        let mut w = [0u8; 32];
        w[24..].copy_from_slice(&(x as u64).to_be_bytes());
        w
    };
    let mut out = Vec::new();
    out.extend_from_slice(&word(0x20));
    out.extend_from_slice(&word(n));
    for i in 0..n {
        out.extend_from_slice(&word(n * 32 + i * 128));
    }
    for i in 0..n {
        out.extend_from_slice(&word(1));
        out.extend_from_slice(&word(0x40));
        out.extend_from_slice(&word(32));
        out.extend_from_slice(&word(1_000_000 * (i + 1)));
    }
    out
}

fn main() {
    let n = arg("--pools", 20_000);
    let rounds = arg("--rounds", 20).max(1);
    let body = synthetic_pools(n);
    println!(
        "yields: {n} pools, {:.1} MB of JSON",
        body.len() as f64 / 1e6
    );
    let mut parse_t = Vec::new();
    let mut rank_t = Vec::new();
    let mut kept = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let list = parse_pools("bench", &body).expect("parse");
        parse_t.push(t.elapsed());
        kept = list.pools.len();
        let f = Filters {
            chain: None,
            stablecoin: None,
            min_tvl: TVL_FLOOR_USD,
            limit: 20,
            max_apy_pct: 1000.0,
        };
        let t = Instant::now();
        let (matched, top) = rank(&list.pools, &f);
        rank_t.push(t.elapsed());
        assert!(matched >= top.len());
    }
    let mb_s = body.len() as f64 / 1e6 / percentile(parse_t.clone(), 0.5).as_secs_f64();
    report(
        &format!("yields parse ({kept} kept, {mb_s:.0} MB/s)"),
        parse_t,
    );
    report("yields filter+rank", rank_t);

    let closes: Vec<f64> = (0..300)
        .map(|i| 100.0 + 10.0 * (i as f64 / 7.0).sin() + 0.05 * i as f64)
        .collect();
    let mut ind_t = Vec::new();
    for _ in 0..rounds * 100 {
        let t = Instant::now();
        let r = rsi_wilder(&closes, 14);
        let m = macd(&closes, 12, 26, 9);
        let b = bollinger(&closes, 20, 2.0);
        ind_t.push(t.elapsed());
        assert!(r.is_some() && m.is_some() && b.is_some());
    }
    report("indicators (RSI+MACD+Bollinger, 300 closes)", ind_t);

    let owner = [0x11u8; 20];
    let calls: Vec<([u8; 20], Vec<u8>)> = (0..5)
        .map(|i| ([i as u8; 20], balance_of(&owner)))
        .collect();
    let result = aggregate3_result(calls.len());
    let mut abi_t = Vec::new();
    for _ in 0..rounds * 100 {
        let t = Instant::now();
        let data = aggregate3(&calls);
        let decoded = decode_aggregate3(&result).expect("decodes");
        abi_t.push(t.elapsed());
        assert_eq!(decoded.len(), calls.len());
        assert!(data.len() > 4);
    }
    report("aggregate3 encode+decode (5 calls)", abi_t);
}
