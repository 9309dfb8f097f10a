//! The ledger on a real Postgres (a throwaway cluster started here) shared by two paycall
//! instances: the store contract, a payment claimed on A and retried on B served at most once,
//! a payment-identifier retry on B answered with A's reply, 50 concurrent copies of one payment
//! over both instances worked and settled once; and a database that is down: a clear startup
//! error naming the URL (password hidden), 503 before any verify while serving, 402s and demos
//! unaffected.

use crate::support;
use support::shipped;
use support::{postgres, stack, upstream};

use base64::Engine;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use paycall::payment::ledger::model::SCHEMA_VERSION;
use paycall::payment::ledger::{
    connect, postgres as postgres_ledger, Binding, Claim, KeptReply, LedgerUrl, NewPayment, State,
    Update,
};
use stack::LocalStack;
use support::server::{enc, send_signed, EVM_PAY_TO, SOL_PAY_TO};

fn payment(key: &str, route: &str, pid: Option<&str>) -> NewPayment {
    NewPayment {
        key: key.into(),
        binding: Binding {
            route: route.into(),
            method: "GET".into(),
            input_hash: "h1".into(),
        },
        header_hash: "hh".into(),
        pid: pid.map(str::to_string),
        amount: "10000".into(),
        asset: "0xa".into(),
        network: "eip155:8453".into(),
        pay_to: "0xb".into(),
        payer: Some("0xc".into()),
        request_id: "r1".into(),
        valid_before: 2_000_000_000,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_contract_holds_on_postgres() {
    let pg = postgres::Cluster::start();
    let url = LedgerUrl::Postgres(pg.database("contract"));
    let s = connect(&url).unwrap();
    assert_eq!(s.schema_version().await.unwrap(), None);
    // Two instances migrating at once: the advisory lock serialises them.
    let s2 = connect(&url).unwrap();
    let (a, b) = tokio::join!(s.migrate(), s2.migrate());
    assert_eq!((a.unwrap(), b.unwrap()), (SCHEMA_VERSION, SCHEMA_VERSION));
    assert_eq!(s.schema_version().await.unwrap(), Some(SCHEMA_VERSION));

    let p = payment("k1", "/api/http", Some("pid_0123456789abcdef"));
    assert!(matches!(
        s.claim(&p, "a", 1_000, 60_000).await.unwrap(),
        Claim::Fresh
    ));
    assert!(matches!(
        s2.claim(&p, "b", 2_000, 60_000).await.unwrap(),
        Claim::Busy(_)
    ));
    let other = payment("k1", "/api/fetch", None);
    assert!(matches!(
        s2.claim(&other, "b", 2_000, 60_000).await.unwrap(),
        Claim::Mismatch(_)
    ));
    let reply = KeptReply {
        status: 200,
        headers: vec![("payment-response".into(), "abc".into())],
        body: vec![0, 1, 2, 255],
    };
    let u = Update {
        state: Some(State::Settled),
        transaction: Some("0xt".into()),
        reply: Some((reply.clone(), 90_000)),
        release: true,
        ..Default::default()
    };
    assert!(
        !s2.update("k1", "b", &u, 3_000).await.unwrap(),
        "b does not hold it"
    );
    assert!(s.update("k1", "a", &u, 3_000).await.unwrap());
    let row = s2
        .by_pid("/api/http", "pid_0123456789abcdef")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.reply, Some(reply));
    assert_eq!(row.state, State::Settled);
    match s2.claim(&p, "b", 4_000, 60_000).await.unwrap() {
        Claim::Taken(r) => assert_eq!(r.attempts, 2),
        c => panic!("{c:?}"),
    }
    // The upkeep's take-over: only after the lease, never counted as an attempt.
    assert!(s
        .take_over("k1", "u", 5_000, 60_000)
        .await
        .unwrap()
        .is_none());
    let r = s
        .take_over("k1", "u", 70_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.attempts, r.lease_owner.as_str()), (2, "u"));
    let q = payment("k2", "/api/http", Some("pid_0123456789abcdef"));
    assert!(matches!(
        s.claim(&q, "a", 5_000, 60_000).await.unwrap(),
        Claim::PidTaken
    ));
    // 20 instances racing for one new payment: exactly one wins.
    let r = payment("k3", "/api/http", None);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let (s, r) = (connect(&url).unwrap(), r.clone());
        tasks.push(tokio::spawn(async move {
            matches!(
                s.claim(&r, &format!("i{i}"), 6_000, 60_000).await.unwrap(),
                Claim::Fresh
            )
        }));
    }
    let mut fresh = 0;
    for t in tasks {
        fresh += t.await.unwrap() as usize;
    }
    assert_eq!(fresh, 1);
    s.update(
        "k2",
        "a",
        &Update {
            release: true,
            ..Default::default()
        },
        7_000,
    )
    .await
    .unwrap();
    s2.update(
        "k1",
        "b",
        &Update {
            release: true,
            ..Default::default()
        },
        7_000,
    )
    .await
    .unwrap();
    assert_eq!(s.prune(100_000, 0).await.unwrap(), (1, 0));
    assert_eq!(s.report(&Default::default()).await.unwrap().len(), 2);

    // A database paycall left at schema 1 (no facilitator columns), with a payment in doubt:
    // readable as is, then migrated in place by the next start, its row kept.
    let old = pg.database("old_schema");
    let (db, conn) = tokio_postgres::connect(&old, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    db.batch_execute(postgres_ledger::MIGRATIONS[0].1)
        .await
        .unwrap();
    db.batch_execute(
        "CREATE TABLE ledger_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
         INSERT INTO ledger_meta VALUES ('schema', '1');
         INSERT INTO payments (key, route, method, input_hash, header_hash, amount, asset,
            network, pay_to, request_id, state, lease_owner, lease_until, valid_before, tx,
            created_ms, updated_ms)
         VALUES ('old', '/api/http', 'GET', 'h1', 'hh', '10000', '0xa', 'eip155:8453', '0xb',
            'r0', 'pending', 'o', 0, 2000000000, '0xt', 1000, 1000);",
    )
    .await
    .unwrap();
    let s = connect(&LedgerUrl::Postgres(old)).unwrap();
    assert_eq!(s.schema_version().await.unwrap(), Some(1));
    let rows = s.report(&Default::default()).await.unwrap();
    assert_eq!((rows.len(), rows[0].settled_by.clone()), (1, None));
    assert_eq!(s.migrate().await.unwrap(), SCHEMA_VERSION);
    assert_eq!(s.schema_version().await.unwrap(), Some(SCHEMA_VERSION));
    let row = s.get("old").await.unwrap().unwrap();
    assert_eq!(
        (row.state, row.transaction.as_deref(), row.settled_by),
        (State::Pending, Some("0xt"), None)
    );
    assert!(s
        .take_over("old", "i", 2_000, 60_000)
        .await
        .unwrap()
        .is_some());
    let u = Update {
        verified_by: Some("cdp".into()),
        settled_by: Some("self-hosted".into()),
        release: true,
        ..Default::default()
    };
    assert!(s.update("old", "i", &u, 3_000).await.unwrap());
    let row = s.get("old").await.unwrap().unwrap();
    assert_eq!(row.verified_by.as_deref(), Some("cdp"));
    assert_eq!(row.settled_by.as_deref(), Some("self-hosted"));
    assert_eq!(s.migrate().await.unwrap(), SCHEMA_VERSION, "idempotent");
}

/// paycall with the shipped config on this ledger URL, as instance `name`.
async fn instance(stack: &LocalStack, ledger: &str, name: &str) -> support::server::TestServer {
    let vars = shipped::vars(
        stack,
        &[
            ("PAYCALL_LEDGER_URL", ledger.to_string()),
            ("PAYCALL_INSTANCE", name.to_string()),
        ],
    );
    shipped::start(shipped::config(&shipped::routes_yaml(), vars))
        .await
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_database_serve_each_payment_once() {
    let pg = postgres::Cluster::start();
    let db = pg.database("shared");
    let stack = LocalStack::start();
    let canary = upstream::canary("127.0.0.2").await;
    let up = upstream::start(&canary.url()).await;
    let a = instance(&stack, &db, "a").await;
    let b = instance(&stack, &db, "b").await;
    let buyer_start = stack.usdc_balance(&stack.buyer);
    let path = |u: &str| format!("/api/http?url={}", enc(u));

    // Claimed on A (a slow upstream), retried on B meanwhile: B does no work.
    let slow = path(&up.url("/slow?ms=1500"));
    let sig = stack
        .sign_only_async(&a.url(&slow), "GET", None)
        .await
        .payment_signature;
    let first = {
        let (u, s) = (a.url(&slow), sig.clone());
        tokio::spawn(async move { send_signed(&u, &s).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let (s, h, body) = send_signed(&b.url(&slow), &sig).await;
    assert_eq!(
        (s, body["error"].as_str()),
        (409, Some("payment_in_flight")),
        "{body}"
    );
    assert!(h.get("retry-after").is_some());
    let (s, h, body_a) = first.await.unwrap();
    assert_eq!(s, 200, "{body_a}");
    let receipt_a = h["payment-response"].clone();
    // After A finished, B answers the same payment with A's kept reply: no work, no settle.
    let (s, h, body_b) = send_signed(&b.url(&slow), &sig).await;
    assert_eq!(s, 200, "{body_b}");
    assert_eq!(body_b, body_a);
    assert_eq!(h["payment-response"], receipt_a);
    assert_eq!(up.hits.slow.load(Ordering::SeqCst), 1);
    assert_eq!(stack.settle_calls(), 1);

    // payment-identifier: paid on A, retried on B → A's reply and receipt.
    stack.reset_calls();
    let hello = path(&up.url("/hello"));
    let signed = stack.sign_only_async(&a.url(&hello), "GET", None).await;
    let mut p = signed.payload.clone();
    p["extensions"]["payment-identifier"] =
        json!({"info": {"required": false, "id": "two-instances-0123456789"}});
    let with_id = base64::engine::general_purpose::STANDARD.encode(p.to_string());
    let (s, h1, b1) = send_signed(&a.url(&hello), &with_id).await;
    assert_eq!(s, 200, "{b1}");
    let (s, h2, b2) = send_signed(&b.url(&hello), &with_id).await;
    assert_eq!(s, 200, "{b2}");
    assert_eq!(b2, b1);
    assert_eq!(h2["payment-response"], h1["payment-response"]);
    assert_eq!(stack.verify_calls(), 1);
    assert_eq!(stack.settle_calls(), 1);

    // 50 concurrent copies of one payment, spread over both: one piece of work, one settle.
    stack.reset_calls();
    let hits_before = up.hits.slow.load(Ordering::SeqCst);
    let slow2 = path(&up.url("/slow?ms=800"));
    let sig = stack
        .sign_only_async(&a.url(&slow2), "GET", None)
        .await
        .payment_signature;
    let urls = Arc::new((a.url(&slow2), b.url(&slow2)));
    let tasks: Vec<_> = (0..50)
        .map(|i| {
            let (urls, s) = (urls.clone(), sig.clone());
            tokio::spawn(async move {
                let u = if i % 2 == 0 { &urls.0 } else { &urls.1 };
                send_signed(u, &s).await
            })
        })
        .collect();
    let mut ok_bodies: Vec<Value> = Vec::new();
    for t in tasks {
        let (s, _, body) = t.await.unwrap();
        match s {
            200 => ok_bodies.push(body),
            409 => assert_eq!(body["error"], "payment_in_flight", "{body}"),
            other => panic!("{other}: {body}"),
        }
    }
    assert!(!ok_bodies.is_empty());
    assert!(
        ok_bodies.iter().all(|b| *b == ok_bodies[0]),
        "every 200 is the same answer"
    );
    assert_eq!(
        up.hits.slow.load(Ordering::SeqCst),
        hits_before + 1,
        "worked once"
    );
    assert_eq!(stack.settle_calls(), 1, "settled once");
    assert_eq!(stack.usdc_balance(&stack.buyer), buyer_start - 30_000);
    assert_eq!(canary.hits(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_is_down_stops_payments_not_the_service() {
    // At startup: a clear error naming the URL, the password hidden.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paycall"))
        .env_clear()
        .env("PAYCALL_EVM_PAY_TO", EVM_PAY_TO)
        .env("PAYCALL_SOLANA_PAY_TO", SOL_PAY_TO)
        .env("PAYCALL_LISTEN", "127.0.0.1:0")
        .env(
            "PAYCALL_LEDGER_URL",
            "postgres://paycall:s3cret@127.0.0.1:9/paycall",
        )
        .arg("--config")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml"))
        .arg("serve")
        .current_dir(dir.path())
        .output()
        .expect("run paycall");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("127.0.0.1:9"),
        "names the database: {stderr}"
    );
    assert!(!stderr.contains("s3cret"), "never the password: {stderr}");

    // While serving: paid calls get 503 before any verify; 402s and demos keep working.
    let stack = LocalStack::start();
    let paycall = instance(
        &stack,
        "postgres://paycall:s3cret@127.0.0.1:9/paycall",
        "down",
    )
    .await;
    let target = paycall.url("/api/http?url=http%3A%2F%2F127.0.0.1%3A9%2F");
    let (s, h, b) = support::server::get_json(&target).await;
    assert_eq!(s, 402, "{b}");
    assert!(h.get("payment-required").is_some());
    let sig = stack
        .sign_only_async(&target, "GET", None)
        .await
        .payment_signature;
    stack.reset_calls();
    let (s, h, b) = send_signed(&target, &sig).await;
    assert_eq!(
        (s, b["error"].as_str()),
        (503, Some("ledger_unavailable")),
        "{b}"
    );
    assert!(h.get("retry-after").is_some());
    assert!(!b.to_string().contains("s3cret"));
    assert_eq!(stack.verify_calls(), 0, "no verify without a ledger row");
    assert_eq!(stack.settle_calls(), 0);
    let (s, _, b) = support::server::get_json(&paycall.url("/api/demo/pdf")).await;
    assert_eq!(s, 200, "demos do not need the ledger: {b}");
}
