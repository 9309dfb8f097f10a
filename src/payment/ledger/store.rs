//! The ledger's storage contract: one small trait, two backends (SQLite for one instance,
//! Postgres for several). Every method is one atomic statement or transaction on the database,
//! so two instances sharing it never both work the same payment.

use async_trait::async_trait;

use super::model::{Claim, NewPayment, Row, Update};

#[derive(Debug, Clone, thiserror::Error)]
pub enum LedgerError {
    /// The database could not be reached or refused the statement: paid calls wait (503).
    #[error("the payment ledger is unavailable: {0}")]
    Unavailable(String),
    /// The database answered with something we cannot read (a newer schema, corrupt row).
    #[error("the payment ledger holds data this version cannot read: {0}")]
    Corrupt(String),
}

/// Filter of `paycall ledger`.
#[derive(Debug, Clone, Default)]
pub struct ReportQuery {
    pub since_ms: i64,
    pub route: Option<String>,
}

#[async_trait]
pub trait Store: Send + Sync {
    /// The backend's name for messages ("sqlite", "postgres").
    fn kind(&self) -> &'static str;

    /// Applies the embedded migrations (idempotent, safe from several instances at once) and
    /// returns the schema version now in force.
    async fn migrate(&self) -> Result<i64, LedgerError>;

    /// The schema version in the database, None before the first migration.
    async fn schema_version(&self) -> Result<Option<i64>, LedgerError>;

    /// Inserts the payment if it is new, else takes it over when its lease has ended and it is
    /// bound to the same call; atomic across instances.
    async fn claim(
        &self,
        p: &NewPayment,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Claim, LedgerError>;

    /// Takes a known row whose lease has ended, without counting an attempt: the upkeep's
    /// reconciliation is not a buyer's try, and must not use up the attempts a later retry has.
    /// None when the row is held by a live lease or does not exist.
    async fn take_over(
        &self,
        key: &str,
        owner: &str,
        now_ms: i64,
        lease_ms: i64,
    ) -> Result<Option<Row>, LedgerError>;

    /// Changes a row this owner holds. Returns false when the row is not held by `owner`
    /// (its lease was taken over): nothing was changed.
    async fn update(
        &self,
        key: &str,
        owner: &str,
        u: &Update,
        now_ms: i64,
    ) -> Result<bool, LedgerError>;

    /// The row of a payment-identifier id on a route.
    async fn by_pid(&self, route: &str, pid: &str) -> Result<Option<Row>, LedgerError>;

    /// The row of a payment.
    async fn get(&self, key: &str) -> Result<Option<Row>, LedgerError>;

    /// Ends every lease held by `owner` (this instance's earlier life, after a crash).
    async fn release_owner(&self, owner: &str) -> Result<u64, LedgerError>;

    /// Rows whose money is in doubt (`settling`, `pending`), oldest first, at most `limit`.
    async fn unsettled(&self, limit: i64) -> Result<Vec<Row>, LedgerError>;

    /// Drops reply bodies whose window ended (rows in a final state) and deletes accounting
    /// rows older than `keep_rows_after_ms`. Returns (replies dropped, rows deleted).
    async fn prune(&self, now_ms: i64, keep_rows_after_ms: i64) -> Result<(u64, u64), LedgerError>;

    /// Rows for the operator's report, newest first, without reply bodies.
    async fn report(&self, q: &ReportQuery) -> Result<Vec<Row>, LedgerError>;
}

/// The columns every query reads, in the order `row_from` expects.
pub const COLS: &str = "key, route, method, input_hash, header_hash, pid, amount, asset, network, \
     pay_to, payer, request_id, state, attempts, lease_owner, lease_until, valid_before, tx, \
     error, reply_meta, reply_body, reply_expires, created_ms, updated_ms, verified_by, settled_by";

/// Same, with the body left out (reports).
pub const COLS_NO_BODY: &str = "key, route, method, input_hash, header_hash, pid, amount, asset, \
     network, pay_to, payer, request_id, state, attempts, lease_owner, lease_until, valid_before, \
     tx, error, reply_meta, NULL, reply_expires, created_ms, updated_ms, verified_by, settled_by";

/// The report's columns on a database of schema 1 (`paycall ledger` reads without migrating):
/// the facilitator columns do not exist there yet.
const COLS_NO_BODY_V1: &str = "key, route, method, input_hash, header_hash, pid, amount, asset, \
     network, pay_to, payer, request_id, state, attempts, lease_owner, lease_until, valid_before, \
     tx, error, reply_meta, NULL, reply_expires, created_ms, updated_ms, CAST(NULL AS TEXT), \
     CAST(NULL AS TEXT)";

/// The columns a report reads on a database of schema `version`.
pub fn report_cols(version: Option<i64>) -> &'static str {
    match version {
        Some(v) if v >= 2 => COLS_NO_BODY,
        _ => COLS_NO_BODY_V1,
    }
}

/// The final states: accounting rows that `prune` may delete after the horizon.
pub const FINAL_STATES: &str = "('settled','settle_failed','not_charged')";

#[cfg(test)]
mod tests {
    #[test]
    fn a_report_on_an_old_schema_reads_null_facilitators_in_the_same_places() {
        let count = |c: &str| c.split(", ").count();
        assert_eq!(count(super::report_cols(Some(1))), count(super::COLS));
        assert_eq!(count(super::report_cols(Some(2))), count(super::COLS));
        assert!(super::report_cols(Some(2)).ends_with("verified_by, settled_by"));
        assert!(!super::report_cols(Some(1)).contains("settled_by"));
        assert!(!super::report_cols(None).contains("settled_by"));
    }
}
