//! The SQLite backend: the zero-setup default for one instance (a file next to routes.yaml,
//! WAL mode). rusqlite is synchronous: one thread of its own owns the one connection and runs
//! the calls in the order they arrive, which also serialises writers the way SQLite wants.
//! Callers wait for their answer in async land. Running each call on tokio's blocking pool
//! behind a mutex instead parked up to 512 pool threads on it when 1,000 paid calls came at
//! once (issue 17's soak: 520 threads, 167 MB at the peak and 97 MB ten seconds later, against
//! 120 MB and 43 MB with this thread), and a queue that a hot thread drains needs no hand-off
//! between calls.

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use tokio::sync::oneshot;

use super::model::{Binding, Claim, NewPayment, Row, State, Update, SCHEMA_VERSION};
use super::store::{report_cols, LedgerError, ReportQuery, Store, COLS, FINAL_STATES};

/// The schema, one step per version. A shipped step is never edited (an existing ledger has
/// already run it): a change is a new step.
pub const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE IF NOT EXISTS payments (
        key TEXT PRIMARY KEY,
        route TEXT NOT NULL, method TEXT NOT NULL, input_hash TEXT NOT NULL,
        header_hash TEXT NOT NULL, pid TEXT,
        amount TEXT NOT NULL, asset TEXT NOT NULL, network TEXT NOT NULL, pay_to TEXT NOT NULL,
        payer TEXT, request_id TEXT NOT NULL,
        state TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 1,
        lease_owner TEXT NOT NULL, lease_until INTEGER NOT NULL,
        valid_before INTEGER NOT NULL,
        tx TEXT, error TEXT,
        reply_meta TEXT, reply_body BLOB, reply_expires INTEGER,
        created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS payments_pid ON payments(route, pid) WHERE pid IS NOT NULL;
    CREATE INDEX IF NOT EXISTS payments_created ON payments(created_ms);
    CREATE INDEX IF NOT EXISTS payments_state ON payments(state);",
    ),
    // 2: which facilitator verified and which one the settlement was sent to (docs/ledger.md).
    (
        2,
        "ALTER TABLE payments ADD COLUMN verified_by TEXT;
         ALTER TABLE payments ADD COLUMN settled_by TEXT;",
    ),
];

/// The path that means "in memory" (`sqlite::memory:`).
pub const MEMORY: &str = ":memory:";

pub struct Sqlite {
    path: PathBuf,
    /// The connection's thread stops when this sender is dropped with the store.
    jobs: mpsc::Sender<Job>,
}

/// One call, run on the connection's thread; it sends its own answer.
type Job = Box<dyn FnOnce(&mut Connection) + Send>;

impl Sqlite {
    /// Opens (creating) the file in WAL mode.
    pub fn open(path: &Path) -> Result<Sqlite, LedgerError> {
        if path.as_os_str() == MEMORY {
            let conn = Connection::open_in_memory().map_err(unavailable)?;
            return Sqlite::serve(path, conn);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                LedgerError::Unavailable(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        let conn = Connection::open(path).map_err(unavailable)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(unavailable)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(unavailable)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(unavailable)?;
        Sqlite::serve(path, conn)
    }

    /// Starts the thread that owns `conn`.
    fn serve(path: &Path, mut conn: Connection) -> Result<Sqlite, LedgerError> {
        let (jobs, queue) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ledger-sqlite".to_string())
            .spawn(move || {
                for job in queue {
                    // A panicking call loses its own answer (its caller sees an error), not the
                    // ledger.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(|| job(&mut conn)));
                }
            })
            .map_err(|e| {
                LedgerError::Unavailable(format!("cannot start the ledger thread: {e}"))
            })?;
        Ok(Sqlite {
            path: path.to_path_buf(),
            jobs,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, LedgerError> + Send + 'static,
    ) -> Result<T, LedgerError> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |c| {
            let _ = answer.send(f(c));
        });
        self.jobs
            .send(job)
            .map_err(|_| LedgerError::Unavailable("the ledger thread has stopped".to_string()))?;
        answered
            .await
            .map_err(|_| LedgerError::Unavailable("ledger task failed".to_string()))?
    }
}

fn unavailable(e: rusqlite::Error) -> LedgerError {
    LedgerError::Unavailable(format!("sqlite: {e}"))
}

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    let state: String = r.get(12)?;
    let meta: Option<String> = r.get(19)?;
    let body: Option<Vec<u8>> = r.get(20)?;
    Ok(Row {
        key: r.get(0)?,
        binding: Binding {
            route: r.get(1)?,
            method: r.get(2)?,
            input_hash: r.get(3)?,
        },
        header_hash: r.get(4)?,
        pid: r.get(5)?,
        amount: r.get(6)?,
        asset: r.get(7)?,
        network: r.get(8)?,
        pay_to: r.get(9)?,
        payer: r.get(10)?,
        request_id: r.get(11)?,
        state: State::parse(&state).unwrap_or(State::Pending),
        attempts: r.get(13)?,
        lease_owner: r.get(14)?,
        lease_until_ms: r.get(15)?,
        valid_before: r.get(16)?,
        transaction: r.get(17)?,
        error: r.get(18)?,
        reply: super::decode_reply(meta.as_deref(), body),
        reply_expires_ms: r.get(21)?,
        created_ms: r.get(22)?,
        updated_ms: r.get(23)?,
        verified_by: r.get(24)?,
        settled_by: r.get(25)?,
    })
}

fn select_one(c: &Connection, key: &str) -> Result<Option<Row>, LedgerError> {
    c.query_row(
        &format!("SELECT {COLS} FROM payments WHERE key = ?1"),
        [key],
        read_row,
    )
    .optional()
    .map_err(unavailable)
}

#[async_trait]
impl Store for Sqlite {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    async fn migrate(&self) -> Result<i64, LedgerError> {
        self.with(|c| {
            // Immediate: two processes opening one old file must not both read the old version
            // and both add the new columns.
            let tx = c
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            tx.execute_batch(
                "CREATE TABLE IF NOT EXISTS ledger_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
            )
            .map_err(unavailable)?;
            let current: i64 = tx
                .query_row("SELECT v FROM ledger_meta WHERE k = 'schema'", [], |r| {
                    r.get::<_, String>(0)
                })
                .optional()
                .map_err(unavailable)?
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            if current > SCHEMA_VERSION {
                return Err(LedgerError::Corrupt(format!(
                    "schema version {current} is newer than this paycall's {SCHEMA_VERSION}"
                )));
            }
            for (v, sql) in MIGRATIONS {
                if *v > current {
                    tx.execute_batch(sql).map_err(unavailable)?;
                }
            }
            tx.execute(
                "INSERT INTO ledger_meta (k, v) VALUES ('schema', ?1)
                 ON CONFLICT(k) DO UPDATE SET v = excluded.v",
                [SCHEMA_VERSION.to_string()],
            )
            .map_err(unavailable)?;
            tx.commit().map_err(unavailable)?;
            Ok(SCHEMA_VERSION)
        })
        .await
    }

    async fn schema_version(&self) -> Result<Option<i64>, LedgerError> {
        self.with(|c| {
            let has: bool = c
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='ledger_meta'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .map_err(unavailable)?
                > 0;
            if !has {
                return Ok(None);
            }
            Ok(
                c.query_row("SELECT v FROM ledger_meta WHERE k = 'schema'", [], |r| {
                    r.get::<_, String>(0)
                })
                .optional()
                .map_err(unavailable)?
                .and_then(|v| v.parse().ok()),
            )
        })
        .await
    }

    async fn claim(
        &self,
        p: &NewPayment,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claim, LedgerError> {
        let p = p.clone();
        let owner = owner.to_string();
        self.with(move |c| {
            let tx = c
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(unavailable)?;
            let inserted = tx
                .execute(
                    "INSERT INTO payments (key, route, method, input_hash, header_hash, pid, amount,
                        asset, network, pay_to, payer, request_id, state, attempts, lease_owner,
                        lease_until, valid_before, created_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 'claimed', 1, ?13,
                        ?14, ?15, ?16, ?16)
                     ON CONFLICT DO NOTHING",
                    params![
                        p.key,
                        p.binding.route,
                        p.binding.method,
                        p.binding.input_hash,
                        p.header_hash,
                        p.pid,
                        p.amount,
                        p.asset,
                        p.network,
                        p.pay_to,
                        p.payer,
                        p.request_id,
                        owner,
                        now_ms + lease_ms,
                        p.valid_before,
                        now_ms
                    ],
                )
                .map_err(unavailable)?;
            let claim = if inserted == 1 {
                Claim::Fresh
            } else {
                let taken = tx
                    .query_row(
                        &format!(
                            "UPDATE payments SET lease_owner = ?1, lease_until = ?2, request_id = ?3,
                                updated_ms = ?4, attempts = attempts + 1
                             WHERE key = ?5 AND lease_until < ?4 AND route = ?6 AND method = ?7
                                AND input_hash = ?8
                             RETURNING {COLS}"
                        ),
                        params![
                            owner,
                            now_ms + lease_ms,
                            p.request_id,
                            now_ms,
                            p.key,
                            p.binding.route,
                            p.binding.method,
                            p.binding.input_hash
                        ],
                        read_row,
                    )
                    .optional()
                    .map_err(unavailable)?;
                match taken {
                    Some(row) => Claim::Taken(row),
                    None => match select_one(&tx, &p.key)? {
                        Some(row) if row.binding != p.binding => Claim::Mismatch(row),
                        Some(row) => Claim::Busy(row),
                        // The key is new but the insert hit the payment-identifier index.
                        None => Claim::PidTaken,
                    },
                }
            };
            tx.commit().map_err(unavailable)?;
            Ok(claim)
        })
        .await
    }

    async fn take_over(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Row>, LedgerError> {
        let (key, owner) = (key.to_string(), owner.to_string());
        self.with(move |c| {
            c.query_row(
                &format!(
                    "UPDATE payments SET lease_owner = ?1, lease_until = ?2, updated_ms = ?3
                     WHERE key = ?4 AND lease_until < ?3
                     RETURNING {COLS}"
                ),
                params![owner, now_ms + lease_ms, now_ms, key],
                read_row,
            )
            .optional()
            .map_err(unavailable)
        })
        .await
    }

    async fn update(
        &self,
        key: &str,
        owner: &str,
        u: &Update,
        now_ms: i64,
    ) -> Result<bool, LedgerError> {
        let (key, owner, u) = (key.to_string(), owner.to_string(), u.clone());
        self.with(move |c| {
            let (reply_op, meta, body, expires) = super::reply_params(&u);
            let n = c
                .execute(
                    "UPDATE payments SET
                        state = COALESCE(?1, state),
                        payer = COALESCE(?2, payer),
                        tx = COALESCE(?3, tx),
                        error = COALESCE(?4, error),
                        reply_meta = CASE ?5 WHEN 1 THEN ?6 WHEN 2 THEN NULL ELSE reply_meta END,
                        reply_body = CASE ?5 WHEN 1 THEN ?7 WHEN 2 THEN NULL ELSE reply_body END,
                        reply_expires = CASE ?5 WHEN 1 THEN ?8 WHEN 2 THEN NULL ELSE reply_expires END,
                        lease_until = CASE WHEN ?9 THEN 0 ELSE lease_until END,
                        updated_ms = ?10,
                        verified_by = COALESCE(?13, verified_by),
                        settled_by = COALESCE(?14, settled_by)
                     WHERE key = ?11 AND lease_owner = ?12",
                    params![
                        u.state.map(State::as_str),
                        u.payer,
                        u.transaction,
                        u.error,
                        reply_op,
                        meta,
                        body,
                        expires,
                        u.release,
                        now_ms,
                        key,
                        owner,
                        u.verified_by,
                        u.settled_by
                    ],
                )
                .map_err(unavailable)?;
            Ok(n == 1)
        })
        .await
    }

    async fn by_pid(&self, route: &str, pid: &str) -> Result<Option<Row>, LedgerError> {
        let (route, pid) = (route.to_string(), pid.to_string());
        self.with(move |c| {
            c.query_row(
                &format!("SELECT {COLS} FROM payments WHERE route = ?1 AND pid = ?2"),
                [route, pid],
                read_row,
            )
            .optional()
            .map_err(unavailable)
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Option<Row>, LedgerError> {
        let key = key.to_string();
        self.with(move |c| select_one(c, &key)).await
    }

    async fn release_owner(&self, owner: &str) -> Result<u64, LedgerError> {
        let owner = owner.to_string();
        self.with(move |c| {
            c.execute(
                "UPDATE payments SET lease_until = 0 WHERE lease_owner = ?1 AND lease_until > 0",
                [owner],
            )
            .map(|n| n as u64)
            .map_err(unavailable)
        })
        .await
    }

    async fn unsettled(&self, limit: i64) -> Result<Vec<Row>, LedgerError> {
        self.with(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {COLS} FROM payments WHERE state IN ('settling','pending')
                     ORDER BY created_ms LIMIT ?1"
                ))
                .map_err(unavailable)?;
            let rows = st
                .query_map([limit], read_row)
                .map_err(unavailable)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(unavailable)?;
            Ok(rows)
        })
        .await
    }

    async fn prune(&self, now_ms: i64, keep_rows_after_ms: i64) -> Result<(u64, u64), LedgerError> {
        self.with(move |c| {
            let replies = c
                .execute(
                    &format!(
                        "UPDATE payments SET reply_meta = NULL, reply_body = NULL, reply_expires = NULL
                         WHERE reply_expires IS NOT NULL AND reply_expires < ?1
                           AND state IN {FINAL_STATES}"
                    ),
                    [now_ms],
                )
                .map_err(unavailable)?;
            let rows = c
                .execute(
                    &format!(
                        "DELETE FROM payments WHERE created_ms < ?1 AND state IN {FINAL_STATES}"
                    ),
                    [keep_rows_after_ms],
                )
                .map_err(unavailable)?;
            Ok((replies as u64, rows as u64))
        })
        .await
    }

    async fn report(&self, q: &ReportQuery) -> Result<Vec<Row>, LedgerError> {
        let q = q.clone();
        let cols = report_cols(self.schema_version().await?);
        self.with(move |c| {
            let mut st = c
                .prepare(&format!(
                    "SELECT {cols} FROM payments
                     WHERE created_ms >= ?1 AND (?2 IS NULL OR route = ?2)
                     ORDER BY created_ms DESC"
                ))
                .map_err(unavailable)?;
            let rows = st
                .query_map(params![q.since_ms, q.route], read_row)
                .map_err(unavailable)?
                .collect::<Result<Vec<_>, _>>()
                .map_err(unavailable)?;
            Ok(rows)
        })
        .await
    }
}
