//! The payment ledger: every paid call on record, in SQLite (one instance) or Postgres
//! (several). The gate claims a payment here before any facilitator call; settle records the
//! outcome and keeps the reply where a retry needs it. docs/ledger.md has the state machine and
//! the retention rules.

pub mod model;
pub mod postgres;
pub mod report;
pub mod sqlite;
pub mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use model::{now_ms, Binding, Claim, KeptReply, NewPayment, Row, State, Update};
pub use store::{LedgerError, ReportQuery, Store};

/// Where the ledger lives, parsed from `ledger.url` / PAYCALL_LEDGER_URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerUrl {
    Sqlite(PathBuf),
    Postgres(String),
}

impl LedgerUrl {
    /// `sqlite://PATH` (relative to `root`, the folder of routes.yaml; `sqlite:///abs` is
    /// absolute) or `postgres://…` / `postgresql://…`.
    pub fn parse(raw: &str, root: &Path) -> Result<LedgerUrl, String> {
        let raw = raw.trim();
        // In memory, for tests and throwaway runs only: nothing survives a restart.
        if raw == "sqlite::memory:" {
            return Ok(LedgerUrl::Sqlite(PathBuf::from(sqlite::MEMORY)));
        }
        if let Some(rest) = raw.strip_prefix("sqlite://") {
            if rest.is_empty() {
                return Err("sqlite:// needs a file path, e.g. sqlite://paycall.db".into());
            }
            let p = Path::new(rest);
            return Ok(LedgerUrl::Sqlite(if p.is_absolute() {
                p.to_path_buf()
            } else {
                root.join(p)
            }));
        }
        if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
            raw.parse::<tokio_postgres::Config>()
                .map_err(|e| format!("not a valid Postgres URL: {e}"))?;
            return Ok(LedgerUrl::Postgres(raw.to_string()));
        }
        Err(format!(
            "`{}` is not a ledger URL: use sqlite://PATH or postgres://USER@HOST/DB",
            redact(raw)
        ))
    }

    /// For messages and logs: the password is never shown.
    pub fn display(&self) -> String {
        match self {
            LedgerUrl::Sqlite(p) if p.as_os_str() == sqlite::MEMORY => "sqlite::memory:".into(),
            LedgerUrl::Sqlite(p) => format!("sqlite://{}", p.display()),
            LedgerUrl::Postgres(u) => redact(u),
        }
    }
}

/// Replaces the password of a URL with `***`.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        Ok(u) => u.to_string(),
        Err(_) => url
            .split_once('@')
            .map(|(_, host)| format!("***@{host}"))
            .unwrap_or_else(|| url.to_string()),
    }
}

/// The ledger's settings (routes.yaml `ledger:`).
#[derive(Debug, Clone)]
pub struct LedgerSettings {
    pub url: LedgerUrl,
    /// This instance's name in leases: a restarted instance takes back its own claims at once.
    pub instance: String,
    /// How long a claim holds a payment (longer than any route's work plus settlement).
    pub lease: Duration,
    /// How long a reply is kept for a payment-identifier retry.
    pub identifier_window: Duration,
    /// Replies larger than this are not kept (the row still is): see docs/ledger.md.
    pub max_reply_bytes: usize,
    /// Accounting rows are deleted after this long.
    pub keep_rows: Duration,
    /// Attempts of work per payment whose outcome was not charged.
    pub max_attempts: i64,
}

/// The ledger service: a store opened on first use (or at startup by `open`).
pub struct Ledger {
    pub settings: LedgerSettings,
    store: tokio::sync::OnceCell<Arc<dyn Store>>,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ledger({})", self.settings.url.display())
    }
}

impl Ledger {
    pub fn new(settings: LedgerSettings) -> Ledger {
        Ledger {
            settings,
            store: tokio::sync::OnceCell::new(),
        }
    }

    /// The store, opened, migrated and with this instance's stale leases released. A failure
    /// is not cached: the next call tries again (a database back after an outage).
    pub async fn store(&self) -> Result<Arc<dyn Store>, LedgerError> {
        self.store
            .get_or_try_init(|| async {
                let store = connect(&self.settings.url)?;
                store.migrate().await?;
                let released = store.release_owner(&self.settings.instance).await?;
                if released > 0 {
                    tracing::warn!(
                        released,
                        instance = %self.settings.instance,
                        "took back payments this instance held when it last stopped"
                    );
                }
                Ok::<_, LedgerError>(store)
            })
            .await
            .cloned()
    }

    /// Opens the store now (startup): an error names the URL, password hidden.
    pub async fn open(&self) -> Result<Arc<dyn Store>, String> {
        self.store()
            .await
            .map_err(|e| format!("ledger {}: {e}", self.settings.url.display()))
    }

    pub fn owner(&self) -> &str {
        &self.settings.instance
    }
}

/// A store for a URL without migrating (for `paycall check`, which must not create anything).
pub fn connect(url: &LedgerUrl) -> Result<Arc<dyn Store>, LedgerError> {
    Ok(match url {
        LedgerUrl::Sqlite(p) => Arc::new(sqlite::Sqlite::open(p)?),
        LedgerUrl::Postgres(u) => Arc::new(postgres::Postgres::new(u)?),
    })
}

/// The reply columns of an `Update`: (op: 0 keep, 1 set, 2 drop; meta JSON; body; expiry).
pub(crate) fn reply_params(u: &Update) -> (i64, Option<String>, Option<Vec<u8>>, Option<i64>) {
    match (&u.reply, u.drop_reply) {
        (Some((r, expires)), _) => (
            1,
            serde_json::to_string(r).ok(),
            Some(r.body.clone()),
            Some(*expires),
        ),
        (None, true) => (2, None, None, None),
        (None, false) => (0, None, None, None),
    }
}

pub(crate) fn decode_reply(meta: Option<&str>, body: Option<Vec<u8>>) -> Option<KeptReply> {
    let mut r: KeptReply = serde_json::from_str(meta?).ok()?;
    r.body = body.unwrap_or_default();
    Some(r)
}

#[cfg(test)]
mod tests;
