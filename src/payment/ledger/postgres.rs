//! The Postgres backend: several paycall instances share one database. Claims are single
//! atomic statements (insert-if-absent, then a compare-and-set takeover of an ended lease), so
//! no transaction spans a network round trip; migrations run under an advisory lock so
//! instances starting together do not race.

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use tokio_postgres::NoTls;

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
        state TEXT NOT NULL, attempts BIGINT NOT NULL DEFAULT 1,
        lease_owner TEXT NOT NULL, lease_until BIGINT NOT NULL,
        valid_before BIGINT NOT NULL,
        tx TEXT, error TEXT,
        reply_meta TEXT, reply_body BYTEA, reply_expires BIGINT,
        created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL
    );
    CREATE UNIQUE INDEX IF NOT EXISTS payments_pid ON payments(route, pid) WHERE pid IS NOT NULL;
    CREATE INDEX IF NOT EXISTS payments_created ON payments(created_ms);
    CREATE INDEX IF NOT EXISTS payments_state ON payments(state);",
    ),
    // 2: which facilitator verified and which one the settlement was sent to (docs/ledger.md).
    (
        2,
        "ALTER TABLE payments ADD COLUMN IF NOT EXISTS verified_by TEXT,
            ADD COLUMN IF NOT EXISTS settled_by TEXT;",
    ),
];

/// Advisory lock key of the migrations ("x402" in ASCII).
const MIGRATION_LOCK: i64 = 0x7834_3032;

pub struct Postgres {
    pool: Pool,
}

impl Postgres {
    /// Builds the pool; no connection is made until the first statement.
    pub fn new(url: &str) -> Result<Postgres, LedgerError> {
        let cfg: tokio_postgres::Config = url
            .parse()
            .map_err(|e| LedgerError::Unavailable(format!("not a Postgres URL: {e}")))?;
        let mut cfg = cfg;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(std::time::Duration::from_secs(5));
        }
        let mgr = Manager::from_config(
            cfg,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(mgr)
            .max_size(16)
            .wait_timeout(Some(std::time::Duration::from_secs(5)))
            .create_timeout(Some(std::time::Duration::from_secs(5)))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| LedgerError::Unavailable(e.to_string()))?;
        Ok(Postgres { pool })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, LedgerError> {
        self.pool
            .get()
            .await
            .map_err(|e| LedgerError::Unavailable(format!("postgres: {e}")))
    }
}

fn unavailable(e: tokio_postgres::Error) -> LedgerError {
    LedgerError::Unavailable(format!("postgres: {e}"))
}

fn read_row(r: &tokio_postgres::Row) -> Row {
    let state: String = r.get(12);
    let meta: Option<String> = r.get(19);
    let body: Option<Vec<u8>> = r.get(20);
    Row {
        key: r.get(0),
        binding: Binding {
            route: r.get(1),
            method: r.get(2),
            input_hash: r.get(3),
        },
        header_hash: r.get(4),
        pid: r.get(5),
        amount: r.get(6),
        asset: r.get(7),
        network: r.get(8),
        pay_to: r.get(9),
        payer: r.get(10),
        request_id: r.get(11),
        state: State::parse(&state).unwrap_or(State::Pending),
        attempts: r.get(13),
        lease_owner: r.get(14),
        lease_until_ms: r.get(15),
        valid_before: r.get(16),
        transaction: r.get(17),
        error: r.get(18),
        reply: super::decode_reply(meta.as_deref(), body),
        reply_expires_ms: r.get(21),
        created_ms: r.get(22),
        updated_ms: r.get(23),
        verified_by: r.get(24),
        settled_by: r.get(25),
    }
}

#[async_trait]
impl Store for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    async fn migrate(&self) -> Result<i64, LedgerError> {
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(unavailable)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(unavailable)?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS ledger_meta (k TEXT PRIMARY KEY, v TEXT NOT NULL)",
        )
        .await
        .map_err(unavailable)?;
        let current: i64 = tx
            .query_opt("SELECT v FROM ledger_meta WHERE k = 'schema'", &[])
            .await
            .map_err(unavailable)?
            .and_then(|r| r.get::<_, String>(0).parse().ok())
            .unwrap_or(0);
        if current > SCHEMA_VERSION {
            return Err(LedgerError::Corrupt(format!(
                "schema version {current} is newer than this paycall's {SCHEMA_VERSION}"
            )));
        }
        for (v, sql) in MIGRATIONS {
            if *v > current {
                tx.batch_execute(sql).await.map_err(unavailable)?;
            }
        }
        tx.execute(
            "INSERT INTO ledger_meta (k, v) VALUES ('schema', $1)
             ON CONFLICT (k) DO UPDATE SET v = excluded.v",
            &[&SCHEMA_VERSION.to_string()],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(SCHEMA_VERSION)
    }

    async fn schema_version(&self) -> Result<Option<i64>, LedgerError> {
        let c = self.client().await?;
        let has: bool = c
            .query_one("SELECT to_regclass('ledger_meta') IS NOT NULL", &[])
            .await
            .map_err(unavailable)?
            .get(0);
        if !has {
            return Ok(None);
        }
        Ok(
            c.query_opt("SELECT v FROM ledger_meta WHERE k = 'schema'", &[])
                .await
                .map_err(unavailable)?
                .and_then(|r| r.get::<_, String>(0).parse().ok()),
        )
    }

    async fn claim(
        &self,
        p: &NewPayment,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claim, LedgerError> {
        let c = self.client().await?;
        let until = now_ms + lease_ms;
        let inserted = c
            .execute(
                "INSERT INTO payments (key, route, method, input_hash, header_hash, pid, amount,
                    asset, network, pay_to, payer, request_id, state, attempts, lease_owner,
                    lease_until, valid_before, created_ms, updated_ms)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'claimed', 1, $13,
                    $14, $15, $16, $16)
                 ON CONFLICT DO NOTHING",
                &[
                    &p.key,
                    &p.binding.route,
                    &p.binding.method,
                    &p.binding.input_hash,
                    &p.header_hash,
                    &p.pid,
                    &p.amount,
                    &p.asset,
                    &p.network,
                    &p.pay_to,
                    &p.payer,
                    &p.request_id,
                    &owner,
                    &until,
                    &p.valid_before,
                    &now_ms,
                ],
            )
            .await
            .map_err(unavailable)?;
        if inserted == 1 {
            return Ok(Claim::Fresh);
        }
        let taken = c
            .query_opt(
                &format!(
                    "UPDATE payments SET lease_owner = $1, lease_until = $2, request_id = $3,
                        updated_ms = $4, attempts = attempts + 1
                     WHERE key = $5 AND lease_until < $4 AND route = $6 AND method = $7
                        AND input_hash = $8
                     RETURNING {COLS}"
                ),
                &[
                    &owner,
                    &until,
                    &p.request_id,
                    &now_ms,
                    &p.key,
                    &p.binding.route,
                    &p.binding.method,
                    &p.binding.input_hash,
                ],
            )
            .await
            .map_err(unavailable)?;
        if let Some(r) = taken {
            return Ok(Claim::Taken(read_row(&r)));
        }
        // On the same connection: taking a second one from the pool while holding this one
        // deadlocks a busy pool.
        let row = c
            .query_opt(
                &format!("SELECT {COLS} FROM payments WHERE key = $1"),
                &[&p.key],
            )
            .await
            .map_err(unavailable)?
            .map(|r| read_row(&r));
        Ok(match row {
            Some(row) if row.binding != p.binding => Claim::Mismatch(row),
            Some(row) => Claim::Busy(row),
            None => Claim::PidTaken,
        })
    }

    async fn take_over(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Row>, LedgerError> {
        let c = self.client().await?;
        let until = now_ms + lease_ms;
        let row = c
            .query_opt(
                &format!(
                    "UPDATE payments SET lease_owner = $1, lease_until = $2, updated_ms = $3
                     WHERE key = $4 AND lease_until < $3
                     RETURNING {COLS}"
                ),
                &[&owner, &until, &now_ms, &key],
            )
            .await
            .map_err(unavailable)?;
        Ok(row.map(|r| read_row(&r)))
    }

    async fn update(
        &self,
        key: &str,
        owner: &str,
        u: &Update,
        now_ms: i64,
    ) -> Result<bool, LedgerError> {
        let c = self.client().await?;
        let (reply_op, meta, body, expires) = super::reply_params(u);
        let state = u.state.map(State::as_str);
        let n = c
            .execute(
                "UPDATE payments SET
                    state = COALESCE($1::TEXT, state),
                    payer = COALESCE($2::TEXT, payer),
                    tx = COALESCE($3::TEXT, tx),
                    error = COALESCE($4::TEXT, error),
                    reply_meta = CASE $5::INT8 WHEN 1 THEN $6::TEXT WHEN 2 THEN NULL ELSE reply_meta END,
                    reply_body = CASE $5::INT8 WHEN 1 THEN $7::BYTEA WHEN 2 THEN NULL ELSE reply_body END,
                    reply_expires = CASE $5::INT8 WHEN 1 THEN $8::INT8 WHEN 2 THEN NULL ELSE reply_expires END,
                    lease_until = CASE WHEN $9::BOOL THEN 0 ELSE lease_until END,
                    updated_ms = $10,
                    verified_by = COALESCE($13::TEXT, verified_by),
                    settled_by = COALESCE($14::TEXT, settled_by)
                 WHERE key = $11 AND lease_owner = $12",
                &[
                    &state,
                    &u.payer,
                    &u.transaction,
                    &u.error,
                    &reply_op,
                    &meta,
                    &body,
                    &expires,
                    &u.release,
                    &now_ms,
                    &key,
                    &owner,
                    &u.verified_by,
                    &u.settled_by,
                ],
            )
            .await
            .map_err(unavailable)?;
        Ok(n == 1)
    }

    async fn by_pid(&self, route: &str, pid: &str) -> Result<Option<Row>, LedgerError> {
        let c = self.client().await?;
        Ok(c.query_opt(
            &format!("SELECT {COLS} FROM payments WHERE route = $1 AND pid = $2"),
            &[&route, &pid],
        )
        .await
        .map_err(unavailable)?
        .map(|r| read_row(&r)))
    }

    async fn get(&self, key: &str) -> Result<Option<Row>, LedgerError> {
        let c = self.client().await?;
        Ok(c.query_opt(
            &format!("SELECT {COLS} FROM payments WHERE key = $1"),
            &[&key],
        )
        .await
        .map_err(unavailable)?
        .map(|r| read_row(&r)))
    }

    async fn release_owner(&self, owner: &str) -> Result<u64, LedgerError> {
        let c = self.client().await?;
        c.execute(
            "UPDATE payments SET lease_until = 0 WHERE lease_owner = $1 AND lease_until > 0",
            &[&owner],
        )
        .await
        .map_err(unavailable)
    }

    async fn unsettled(&self, limit: i64) -> Result<Vec<Row>, LedgerError> {
        let c = self.client().await?;
        Ok(c.query(
            &format!(
                "SELECT {COLS} FROM payments WHERE state IN ('settling','pending')
                     ORDER BY created_ms LIMIT $1"
            ),
            &[&limit],
        )
        .await
        .map_err(unavailable)?
        .iter()
        .map(read_row)
        .collect())
    }

    async fn prune(&self, now_ms: i64, keep_rows_after_ms: i64) -> Result<(u64, u64), LedgerError> {
        let c = self.client().await?;
        let replies = c
            .execute(
                &format!(
                    "UPDATE payments SET reply_meta = NULL, reply_body = NULL, reply_expires = NULL
                     WHERE reply_expires IS NOT NULL AND reply_expires < $1
                       AND state IN {FINAL_STATES}"
                ),
                &[&now_ms],
            )
            .await
            .map_err(unavailable)?;
        let rows = c
            .execute(
                &format!("DELETE FROM payments WHERE created_ms < $1 AND state IN {FINAL_STATES}"),
                &[&keep_rows_after_ms],
            )
            .await
            .map_err(unavailable)?;
        Ok((replies, rows))
    }

    async fn report(&self, q: &ReportQuery) -> Result<Vec<Row>, LedgerError> {
        let cols = report_cols(self.schema_version().await?);
        let c = self.client().await?;
        Ok(c.query(
            &format!(
                "SELECT {} FROM payments
                     WHERE created_ms >= $1 AND ($2::TEXT IS NULL OR route = $2)
                     ORDER BY created_ms DESC",
                // a bare NULL has no type in Postgres; the reader expects BYTEA
                cols.replace("NULL,", "NULL::BYTEA,")
            ),
            &[&q.since_ms, &q.route],
        )
        .await
        .map_err(unavailable)?
        .iter()
        .map(read_row)
        .collect())
    }
}
