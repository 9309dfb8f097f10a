//! What the ledger adds to one paid call: the four statements the money path makes (claim,
//! verified, settling with the reply kept, settled with the receipt), timed per call over
//! SQLite (a temp file, WAL) and Postgres (a throwaway local cluster), sequential and with 16
//! calls at once. Prints p50/p99 per backend; not a test.
//!
//!   cargo bench --bench ledger [-- --calls 2000]

#[path = "../tests/support/mod.rs"]
mod support;
use support::postgres;

use std::sync::Arc;
use std::time::Instant;

use paycall::payment::ledger::{
    connect, now_ms, Binding, KeptReply, LedgerUrl, NewPayment, State, Store, Update,
};

fn payment(i: usize) -> NewPayment {
    NewPayment {
        key: format!("eip155:8453|0xbuyer|0x{i:064x}"),
        binding: Binding {
            route: "/api/http".into(),
            method: "GET".into(),
            input_hash: "0".repeat(64),
        },
        header_hash: "1".repeat(64),
        pid: None,
        amount: "10000".into(),
        asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913".into(),
        network: "eip155:8453".into(),
        pay_to: "0x90f79bf6eb2c4f870365e785982e1f101e93b906".into(),
        payer: Some("0xbuyer".into()),
        request_id: format!("r{i}"),
        valid_before: 2_000_000_000,
    }
}

async fn one_call(s: &dyn Store, i: usize, body: &[u8]) {
    let p = payment(i);
    s.claim(&p, "bench", now_ms(), 180_000).await.unwrap();
    let verified = Update {
        state: Some(State::Verified),
        payer: Some("0xbuyer".into()),
        verified_by: Some("bench".into()),
        ..Default::default()
    };
    s.update(&p.key, "bench", &verified, now_ms())
        .await
        .unwrap();
    let kept = KeptReply {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.to_vec(),
    };
    let settling = Update {
        state: Some(State::Settling),
        reply: Some((kept.clone(), now_ms() + 180_000)),
        settled_by: Some("bench".into()),
        ..Default::default()
    };
    s.update(&p.key, "bench", &settling, now_ms())
        .await
        .unwrap();
    let settled = Update {
        state: Some(State::Settled),
        transaction: Some(format!("0x{i:064x}")),
        reply: Some((kept, now_ms() + 180_000)),
        release: true,
        ..Default::default()
    };
    s.update(&p.key, "bench", &settled, now_ms()).await.unwrap();
}

fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

async fn run(name: &str, s: Arc<dyn Store>, calls: usize) {
    s.migrate().await.unwrap();
    let body = vec![b'x'; 2_000];
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        one_call(&*s, i, &body).await;
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "{name:<10} sequential  {calls} calls: p50 {:.3} ms  p99 {:.3} ms",
        pct(times.clone(), 0.5),
        pct(times, 0.99)
    );
    let t = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (s, body) = (s.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut times = Vec::new();
            for i in 0..calls / 16 {
                let t = Instant::now();
                one_call(&*s, calls + w * calls + i, &body).await;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            times
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let n = all.len();
    println!(
        "{name:<10} 16 at once  {n} calls: p50 {:.3} ms  p99 {:.3} ms  ({:.0} calls/s)",
        pct(all.clone(), 0.5),
        pct(all, 0.99),
        n as f64 / t.elapsed().as_secs_f64()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let calls = args
        .iter()
        .position(|a| a == "--calls")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000usize);
    let dir = tempfile::tempdir().unwrap();
    let sqlite = connect(&LedgerUrl::Sqlite(dir.path().join("bench.db"))).unwrap();
    run("sqlite", sqlite, calls).await;
    let pg = postgres::Cluster::start();
    let url = pg.database("bench");
    let store = connect(&LedgerUrl::Postgres(url)).unwrap();
    run("postgres", store, calls).await;
}
