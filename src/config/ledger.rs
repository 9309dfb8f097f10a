//! The `ledger:` section: where payments are recorded and how long claims and rows live.

use super::{env_nonempty, raw, Reporter};
use crate::payment::ledger::{LedgerSettings, LedgerUrl};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

/// The `ledger:` section with PAYCALL_LEDGER_URL / PAYCALL_INSTANCE applied.
pub fn validate_ledger(
    l: &raw::Ledger,
    root: &Path,
    listen: &SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> LedgerSettings {
    let (raw_url, from_env) = match env_nonempty(env, "PAYCALL_LEDGER_URL") {
        Some(v) => (v, true),
        None => (l.url.value.clone(), false),
    };
    let url = LedgerUrl::parse(&raw_url, root).unwrap_or_else(|e| {
        r.at(
            l.url.referenced,
            format!(
                "{}: {e}",
                if from_env { "PAYCALL_LEDGER_URL" } else { "ledger.url" }
            ),
            "the default sqlite://paycall.db needs no setup; several instances share postgres://USER:PASS@HOST/DB",
        );
        LedgerUrl::Sqlite(root.join("paycall.db"))
    });
    let instance = env_nonempty(env, "PAYCALL_INSTANCE")
        .or_else(|| l.instance.clone())
        .unwrap_or_else(|| {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default();
            format!(
                "{}:{}",
                if host.is_empty() { "paycall" } else { &host },
                listen.port()
            )
        });
    if l.lease_s < 30 {
        r.unplaced(
            format!(
                "ledger.lease_s is {}: a claim must outlive a route's work and its settlement",
                l.lease_s
            ),
            "use at least 30 (default 180)",
        );
    }
    LedgerSettings {
        url,
        instance,
        lease: Duration::from_secs(l.lease_s.max(30)),
        identifier_window: Duration::from_secs(l.identifier_window_s),
        max_reply_bytes: l.max_reply_bytes as usize,
        keep_rows: Duration::from_secs(l.keep_rows_days.saturating_mul(86_400)),
        max_attempts: l.max_attempts.max(1) as i64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    fn ledger(yaml: &str) -> raw::Ledger {
        serde_saphyr::from_str(yaml).unwrap()
    }
    fn listen() -> SocketAddr {
        "127.0.0.1:8402".parse().unwrap()
    }

    #[test]
    fn a_short_lease_is_reported_and_raised() {
        let (l, errors) = reported(|r| {
            validate_ledger(
                &ledger("lease_s: 5\ninstance: a"),
                Path::new("/x"),
                &listen(),
                &|_| None,
                r,
            )
        });
        assert_eq!(l.lease, Duration::from_secs(30));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("ledger.lease_s is 5"), "{errors:?}");
    }

    #[test]
    fn the_environment_names_the_instance_and_a_bad_url_says_where_it_came_from() {
        let env = |k: &str| match k {
            "PAYCALL_INSTANCE" => Some("one".to_string()),
            "PAYCALL_LEDGER_URL" => Some("ftp://x".to_string()),
            _ => None,
        };
        let (l, errors) =
            reported(|r| validate_ledger(&ledger("{}"), Path::new("/x"), &listen(), &env, r));
        assert_eq!(l.instance, "one");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("PAYCALL_LEDGER_URL: "), "{errors:?}");
    }
}
