//! The SQLite backend against the store contract (the Postgres backend runs the same contract
//! in tests/it/ledger_postgres.rs on a throwaway cluster).

use super::*;

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

fn store() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let s = connect(&LedgerUrl::Sqlite(dir.path().join("l.db"))).unwrap();
    (dir, s)
}

#[tokio::test]
async fn migrations_are_idempotent_and_versioned() {
    let (_d, s) = store();
    assert_eq!(s.schema_version().await.unwrap(), None);
    assert_eq!(s.migrate().await.unwrap(), model::SCHEMA_VERSION);
    assert_eq!(s.migrate().await.unwrap(), model::SCHEMA_VERSION);
    assert_eq!(
        s.schema_version().await.unwrap(),
        Some(model::SCHEMA_VERSION)
    );
}

/// A ledger file as paycall left it before schema 2 (no facilitator columns), with a payment
/// whose settlement is in doubt.
fn old_ledger(path: &Path) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(sqlite::MIGRATIONS[0].1).unwrap();
    c.execute_batch(
        "CREATE TABLE ledger_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
         INSERT INTO ledger_meta VALUES ('schema', '1');
         INSERT INTO payments (key, route, method, input_hash, header_hash, amount, asset,
            network, pay_to, request_id, state, lease_owner, lease_until, valid_before, tx,
            created_ms, updated_ms)
         VALUES ('old', '/api/http', 'GET', 'h1', 'hh', '10000', '0xa', 'eip155:8453', '0xb',
            'r0', 'pending', 'o', 0, 2000000000, '0xt', 1000, 1000);",
    )
    .unwrap();
}

#[tokio::test]
async fn an_old_ledger_upgrades_in_place_and_gains_the_facilitator_columns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    old_ledger(&path);
    let s = connect(&LedgerUrl::Sqlite(path.clone())).unwrap();
    assert_eq!(s.schema_version().await.unwrap(), Some(1));
    // `paycall ledger` reads an old file without migrating it.
    let rows = s.report(&ReportQuery::default()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].verified_by.clone(), rows[0].settled_by.clone()),
        (None, None)
    );
    assert_eq!(
        s.schema_version().await.unwrap(),
        Some(1),
        "a report changes nothing"
    );

    // Opened by the service: migrated in place, the row kept.
    let ledger = Ledger::new(LedgerSettings {
        url: LedgerUrl::Sqlite(path.clone()),
        instance: "i".into(),
        lease: Duration::from_secs(60),
        identifier_window: Duration::from_secs(60),
        max_reply_bytes: 1000,
        keep_rows: Duration::from_secs(86_400),
        max_attempts: 3,
    });
    let s = ledger.store().await.unwrap();
    assert_eq!(
        s.schema_version().await.unwrap(),
        Some(model::SCHEMA_VERSION)
    );
    let row = s.get("old").await.unwrap().unwrap();
    assert_eq!(row.state, State::Pending);
    assert_eq!(row.transaction.as_deref(), Some("0xt"));
    assert_eq!(row.settled_by, None, "an old row names no facilitator");
    // The new columns are written and read like the others, and kept when not named.
    let taken = s
        .take_over("old", "i", 2_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(taken.settled_by, None);
    let u = Update {
        verified_by: Some("cdp".into()),
        settled_by: Some("self-hosted".into()),
        ..Default::default()
    };
    assert!(s.update("old", "i", &u, 3_000).await.unwrap());
    let keep = Update {
        state: Some(State::Settled),
        release: true,
        ..Default::default()
    };
    assert!(s.update("old", "i", &keep, 4_000).await.unwrap());
    let row = s.get("old").await.unwrap().unwrap();
    assert_eq!(row.verified_by.as_deref(), Some("cdp"));
    assert_eq!(row.settled_by.as_deref(), Some("self-hosted"));
    let rows = s.report(&ReportQuery::default()).await.unwrap();
    assert_eq!(rows[0].settled_by.as_deref(), Some("self-hosted"));
    // Opening it again migrates nothing more.
    assert_eq!(s.migrate().await.unwrap(), model::SCHEMA_VERSION);
}

#[tokio::test]
async fn a_payment_is_claimed_once_until_its_lease_ends() {
    let (_d, s) = store();
    s.migrate().await.unwrap();
    let p = payment("k1", "/api/http", None);
    assert!(matches!(
        s.claim(&p, "a", 1_000, 60_000).await.unwrap(),
        Claim::Fresh
    ));
    // Held by a live lease: busy for everyone, the holder included.
    assert!(matches!(
        s.claim(&p, "b", 2_000, 60_000).await.unwrap(),
        Claim::Busy(_)
    ));
    // Another route, same payment: refused as a mismatch whatever the lease.
    let other = payment("k1", "/api/fetch", None);
    assert!(matches!(
        s.claim(&other, "b", 100_000, 60_000).await.unwrap(),
        Claim::Mismatch(_)
    ));
    // The lease ended (a crashed holder): taken over, attempts counted.
    match s.claim(&p, "b", 70_000, 60_000).await.unwrap() {
        Claim::Taken(row) => {
            assert_eq!(row.attempts, 2);
            assert_eq!(row.lease_owner, "b");
            assert_eq!(row.state, State::Claimed);
        }
        c => panic!("{c:?}"),
    }
    // The old holder can no longer write.
    let u = Update {
        state: Some(State::Verified),
        ..Default::default()
    };
    assert!(!s.update("k1", "a", &u, 71_000).await.unwrap());
    assert!(s.update("k1", "b", &u, 71_000).await.unwrap());
    // The upkeep's take-over: only after the lease, and it is not the buyer's attempt.
    assert!(s
        .take_over("k1", "u", 72_000, 60_000)
        .await
        .unwrap()
        .is_none());
    let row = s
        .take_over("k1", "u", 140_000, 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((row.attempts, row.lease_owner.as_str()), (2, "u"));
    assert!(s
        .take_over("k1", "b", 150_000, 60_000)
        .await
        .unwrap()
        .is_none());
    assert!(s
        .take_over("nope", "u", 500_000, 60_000)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn released_payments_are_taken_by_the_next_request_and_replies_round_trip() {
    let (_d, s) = store();
    s.migrate().await.unwrap();
    let p = payment("k2", "/api/http", Some("pid_0123456789abcdef"));
    assert!(matches!(
        s.claim(&p, "a", 1_000, 60_000).await.unwrap(),
        Claim::Fresh
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
    assert!(s.update("k2", "a", &u, 2_000).await.unwrap());
    let row = s
        .by_pid("/api/http", "pid_0123456789abcdef")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.reply.as_ref(), Some(&reply));
    assert_eq!(row.transaction.as_deref(), Some("0xt"));
    assert!(s
        .by_pid("/api/fetch", "pid_0123456789abcdef")
        .await
        .unwrap()
        .is_none());
    // Released: the same payment is taken at once by the next request.
    assert!(matches!(
        s.claim(&p, "b", 3_000, 60_000).await.unwrap(),
        Claim::Taken(_)
    ));
    // Another payment with the same id on the same route: the unique index says no.
    let q = payment("k3", "/api/http", Some("pid_0123456789abcdef"));
    assert!(matches!(
        s.claim(&q, "a", 4_000, 60_000).await.unwrap(),
        Claim::PidTaken
    ));
    // Pruning drops the reply after its window, keeps the accounting row.
    s.update(
        "k2",
        "b",
        &Update {
            release: true,
            ..Default::default()
        },
        5_000,
    )
    .await
    .unwrap();
    assert_eq!(s.prune(100_000, 0).await.unwrap(), (1, 0));
    let row = s.get("k2").await.unwrap().unwrap();
    assert!(row.reply.is_none());
    assert_eq!(row.state, State::Settled);
    assert_eq!(s.prune(100_000, 10_000).await.unwrap(), (0, 1));
    assert!(s.get("k2").await.unwrap().is_none());
}

#[tokio::test]
async fn unsettled_rows_and_reports() {
    let (_d, s) = store();
    s.migrate().await.unwrap();
    for (k, st) in [
        ("a", State::Pending),
        ("b", State::Settled),
        ("c", State::Settling),
    ] {
        s.claim(&payment(k, "/api/http", None), "o", 1_000, 10)
            .await
            .unwrap();
        s.update(
            k,
            "o",
            &Update {
                state: Some(st),
                release: true,
                ..Default::default()
            },
            1_000,
        )
        .await
        .unwrap();
    }
    let un: Vec<String> = s
        .unsettled(10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.key)
        .collect();
    assert_eq!(un.len(), 2);
    assert!(un.contains(&"a".to_string()) && un.contains(&"c".to_string()));
    let all = s.report(&ReportQuery::default()).await.unwrap();
    assert_eq!(all.len(), 3);
    let none = s
        .report(&ReportQuery {
            since_ms: 0,
            route: Some("/api/fetch".into()),
        })
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[test]
fn urls_parse_and_passwords_are_hidden() {
    let root = Path::new("/srv/paycall");
    assert_eq!(
        LedgerUrl::parse("sqlite://paycall.db", root).unwrap(),
        LedgerUrl::Sqlite(PathBuf::from("/srv/paycall/paycall.db"))
    );
    assert_eq!(
        LedgerUrl::parse("sqlite:///var/lib/p.db", root).unwrap(),
        LedgerUrl::Sqlite(PathBuf::from("/var/lib/p.db"))
    );
    let pg = LedgerUrl::parse("postgres://pay:secret@db.internal:5432/paycall", root).unwrap();
    assert!(!pg.display().contains("secret"), "{}", pg.display());
    assert!(pg.display().contains("db.internal"));
    let err = LedgerUrl::parse("mysql://u:secret@h/db", root).unwrap_err();
    assert!(!err.contains("secret"), "{err}");
    assert!(LedgerUrl::parse("sqlite://", root).is_err());
}
