//! `payment.facilitator` (one), `payment.facilitators` (several, in order of preference) and
//! `payment.failover` (their health rules) → [`FacilitatorSettings`] and [`FailoverSettings`].
//!
//! Kept apart from the rest of the payment section so the single form keeps its exact meaning:
//! one `facilitator` block is a list of one named `default`. PAYCALL_FACILITATOR_URL overrides
//! the URL of the single facilitator, or of the first one in the list.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_saphyr::Location;
use url::Url;

use super::{
    env_nonempty, parse_http_url, raw, FacilitatorAuthSetting, FacilitatorSettings, Reporter,
};

/// The name of the facilitator of the single form (`payment.facilitator`).
pub const DEFAULT_NAME: &str = "default";

/// `payment.failover`: the circuit breaker and health checks of the facilitators.
#[derive(Debug, Clone, PartialEq)]
pub struct FailoverSettings {
    /// Consecutive failures that open a facilitator's breaker.
    pub failures: u32,
    /// How long an open breaker keeps a facilitator out before one trial call.
    pub cooldown: Duration,
    /// Interval of the background `GET /supported` checks (only with several facilitators).
    pub check_interval: Duration,
    /// A facilitator whose verify latency average is above this is tried after faster ones.
    pub slow: Duration,
}

impl Default for FailoverSettings {
    fn default() -> Self {
        FailoverSettings {
            failures: 3,
            cooldown: Duration::from_secs(30),
            check_interval: Duration::from_secs(10),
            slow: Duration::from_secs(3),
        }
    }
}

/// Whether `name` is usable as a facilitator name (a metrics label, a log field).
pub fn valid_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
}

/// The facilitators (never empty: a placeholder after an error) and the failover rules.
pub(super) fn validate(
    r: &mut Reporter<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    single: Option<raw::Facilitator>,
    list: Option<Vec<raw::NamedFacilitator>>,
    failover: Option<raw::Failover>,
    placeholder: &Url,
) -> (Vec<FacilitatorSettings>, FailoverSettings) {
    let entries: Vec<(String, Location, raw::Facilitator, String)> = match (single, list) {
        (Some(f), Some(list)) => {
            let loc = list
                .first()
                .map(|e| e.name.referenced)
                .unwrap_or(Location::UNKNOWN);
            r.at(
                loc,
                "payment.facilitator and payment.facilitators are both set",
                "keep one: `facilitator` for one facilitator, or `facilitators`, a list of named facilitator blocks in order of preference",
            );
            vec![(
                DEFAULT_NAME.to_string(),
                f.url.referenced,
                f,
                "payment.facilitator".into(),
            )]
        }
        (Some(f), None) => {
            vec![(
                DEFAULT_NAME.to_string(),
                f.url.referenced,
                f,
                "payment.facilitator".into(),
            )]
        }
        (None, Some(list)) => {
            if list.is_empty() {
                r.unplaced(
                    "payment.facilitators is empty",
                    "list at least one facilitator (name, url, auth)",
                );
            }
            let mut seen = BTreeSet::new();
            list.into_iter()
                .enumerate()
                .map(|(i, e)| {
                    let (name, f) = e.split();
                    if !valid_name(&name.value) {
                        r.at(
                            name.referenced,
                            format!("facilitator name `{}` is not usable", name.value),
                            "use 1-32 characters of a-z, 0-9, `_` or `-` (it is a log field and a metrics label)",
                        );
                    } else if !seen.insert(name.value.clone()) {
                        r.at(
                            name.referenced,
                            format!("facilitator name `{}` is used twice", name.value),
                            "give each facilitator its own name",
                        );
                    }
                    (
                        name.value,
                        name.referenced,
                        f,
                        format!("payment.facilitators[{i}]"),
                    )
                })
                .collect()
        }
        (None, None) => {
            r.unplaced("payment.facilitator is missing",
                "set payment.facilitator.url (e.g. https://api.cdp.coinbase.com/platform/v2/x402), or list several under payment.facilitators",
            );
            Vec::new()
        }
    };
    let mut out = Vec::with_capacity(entries.len().max(1));
    for (i, (name, _loc, f, at)) in entries.into_iter().enumerate() {
        out.push(one(r, env, name, f, &at, i == 0, placeholder));
    }
    if out.is_empty() {
        out.push(FacilitatorSettings {
            name: DEFAULT_NAME.into(),
            url: placeholder.clone(),
            verify_timeout: Duration::from_secs(10),
            settle_timeout: Duration::from_secs(30),
            supported_ttl: Duration::from_secs(600),
            pool_idle_timeout: Duration::from_secs(4),
            auth: FacilitatorAuthSetting::None,
        });
    }
    (out, failover_settings(r, failover))
}

fn one(
    r: &mut Reporter<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    name: String,
    f: raw::Facilitator,
    at: &str,
    first: bool,
    placeholder: &Url,
) -> FacilitatorSettings {
    let env_url = if first {
        env_nonempty(env, "PAYCALL_FACILITATOR_URL")
    } else {
        None
    };
    let url = match env_url {
        Some(v) => parse_http_url(&v).unwrap_or_else(|e| {
            r.at(f.url.referenced, format!("PAYCALL_FACILITATOR_URL: {e}"), "set it to the facilitator's base URL");
            placeholder.clone()
        }),
        None => parse_http_url(&f.url.value).unwrap_or_else(|e| {
            r.at(f.url.referenced, format!("{at}.url: {e}"), "use the facilitator's base URL, e.g. https://api.cdp.coinbase.com/platform/v2/x402");
            placeholder.clone()
        }),
    };
    let key_id = env_nonempty(env, "CDP_API_KEY_ID");
    let key_secret = env_nonempty(env, "CDP_API_KEY_SECRET");
    let auth = match f.auth.value.as_str() {
        "none" => FacilitatorAuthSetting::None,
        "auto" | "cdp" => match (key_id, key_secret) {
            (Some(key_id), Some(key_secret)) => FacilitatorAuthSetting::Cdp { key_id, key_secret },
            _ if f.auth.value == "cdp" => {
                r.at(
                    f.auth.referenced,
                    "auth is `cdp` but CDP_API_KEY_ID / CDP_API_KEY_SECRET are not set",
                    "export both variables, or set auth: auto",
                );
                FacilitatorAuthSetting::None
            }
            _ => FacilitatorAuthSetting::None,
        },
        other => {
            r.at(
                f.auth.referenced,
                format!("unknown facilitator auth `{other}`"),
                "use auto, cdp or none",
            );
            FacilitatorAuthSetting::None
        }
    };
    if f.pool_idle_timeout_ms > 60_000 {
        r.unplaced(
            format!("{at}.pool_idle_timeout_ms must be at most 60000"),
            "keep it below the facilitator's keep-alive (Node's is 5 s); the default is 4000",
        );
    }
    FacilitatorSettings {
        name,
        url,
        verify_timeout: Duration::from_millis(f.verify_timeout_ms),
        settle_timeout: Duration::from_millis(f.settle_timeout_ms),
        supported_ttl: Duration::from_secs(f.supported_ttl_s),
        pool_idle_timeout: Duration::from_millis(f.pool_idle_timeout_ms),
        auth,
    }
}

fn failover_settings(r: &mut Reporter<'_>, raw: Option<raw::Failover>) -> FailoverSettings {
    let Some(f) = raw else {
        return FailoverSettings::default();
    };
    if !(1..=100).contains(&f.failures) {
        r.unplaced(
            "payment.failover.failures must be between 1 and 100",
            "the default 3 opens a facilitator's breaker after three failures in a row",
        );
    }
    if !(1..=3600).contains(&f.cooldown_s) {
        r.unplaced(
            "payment.failover.cooldown_s must be between 1 and 3600",
            "the default is 30",
        );
    }
    if !(1..=3600).contains(&f.check_interval_s) {
        r.unplaced(
            "payment.failover.check_interval_s must be between 1 and 3600",
            "the default is 10",
        );
    }
    FailoverSettings {
        failures: f.failures.clamp(1, 100),
        cooldown: Duration::from_secs(f.cooldown_s.clamp(1, 3600)),
        check_interval: Duration::from_secs(f.check_interval_s.clamp(1, 3600)),
        slow: Duration::from_millis(f.slow_ms.max(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::load_with_env;
    use std::path::{Path, PathBuf};

    const EVM: &str = "0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3";
    const SOL: &str = "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1";
    const SINGLE: &str = "  facilitator:\n    url: https://api.cdp.coinbase.com/platform/v2/x402   # PAYCALL_FACILITATOR_URL\n";

    /// The shipped config with its `facilitator:` block's first lines replaced by `block`.
    fn with(block: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::create_dir(dir.path().join("pipelines")).unwrap();
        for e in std::fs::read_dir(root.join("pipelines")).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(
                &p,
                dir.path().join("pipelines").join(p.file_name().unwrap()),
            )
            .unwrap();
        }
        let text = std::fs::read_to_string(root.join("routes.yaml")).unwrap();
        assert!(
            text.contains(SINGLE),
            "the shipped routes.yaml changed its facilitator block"
        );
        // Drop the single block (its indented lines) and put `block` in its place.
        let mut out = String::new();
        let mut skipping = false;
        for line in text.lines() {
            if line == "  facilitator:" {
                skipping = true;
                out.push_str(block);
                continue;
            }
            if skipping && line.starts_with("    ") {
                continue;
            }
            skipping = false;
            out.push_str(line);
            out.push('\n');
        }
        let path = dir.path().join("routes.yaml");
        std::fs::write(&path, out).unwrap();
        (dir, path)
    }

    fn env(extra: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| {
            [("PAYCALL_EVM_PAY_TO", EVM), ("PAYCALL_SOLANA_PAY_TO", SOL)]
                .iter()
                .chain(extra.iter())
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    const TWO: &str = "  facilitators:\n    - name: cdp\n      url: https://api.cdp.coinbase.com/platform/v2/x402\n      auth: auto\n    - name: self-hosted\n      url: http://127.0.0.1:4021/\n      auth: none\n      settle_timeout_ms: 20000\n  failover: { failures: 2, cooldown_s: 5 }\n";

    #[test]
    fn the_single_form_is_a_list_of_one_named_default() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
        let cfg = load_with_env(&root, &env(&[])).unwrap();
        assert_eq!(cfg.payment.facilitators.len(), 1);
        assert_eq!(cfg.payment.facilitators[0].name, "default");
        assert_eq!(cfg.payment.facilitator.url, cfg.payment.facilitators[0].url);
        assert_eq!(cfg.payment.failover, super::FailoverSettings::default());
    }

    #[test]
    fn a_list_in_order_with_its_own_settings_and_the_env_url_for_the_first() {
        let (_d, path) = with(TWO);
        let cfg = load_with_env(&path, &env(&[])).unwrap_or_else(|e| panic!("{e}"));
        let f = &cfg.payment.facilitators;
        assert_eq!(f.len(), 2);
        assert_eq!(
            (f[0].name.as_str(), f[1].name.as_str()),
            ("cdp", "self-hosted")
        );
        assert_eq!(f[1].settle_timeout.as_millis(), 20_000);
        assert_eq!(
            f[0].settle_timeout.as_millis(),
            30_000,
            "defaults as for the single form"
        );
        assert_eq!(
            cfg.payment.facilitator.name, "cdp",
            "`facilitator` is the first"
        );
        assert_eq!(cfg.payment.failover.failures, 2);
        assert_eq!(cfg.payment.failover.cooldown.as_secs(), 5);

        let cfg = load_with_env(
            &path,
            &env(&[("PAYCALL_FACILITATOR_URL", "http://127.0.0.1:9/")]),
        )
        .unwrap();
        assert_eq!(
            cfg.payment.facilitators[0].url.as_str(),
            "http://127.0.0.1:9/"
        );
        assert_eq!(
            cfg.payment.facilitators[1].url.as_str(),
            "http://127.0.0.1:4021/"
        );
    }

    #[test]
    fn both_forms_duplicate_or_bad_names_and_an_empty_list_are_errors() {
        let both = format!("{SINGLE}{TWO}");
        let (_d, path) = with(&both);
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(
            err.contains("payment.facilitator and payment.facilitators are both set"),
            "{err}"
        );

        let dup = "  facilitators:\n    - { name: a, url: http://127.0.0.1:1/ }\n    - { name: a, url: http://127.0.0.1:2/ }\n";
        let (_d, path) = with(dup);
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("`a` is used twice"), "{err}");

        let bad = "  facilitators:\n    - { name: \"Bad Name\", url: http://127.0.0.1:1/ }\n";
        let (_d, path) = with(bad);
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("`Bad Name` is not usable"), "{err}");

        let (_d, path) = with("  facilitators: []\n");
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("payment.facilitators is empty"), "{err}");

        let (_d, path) = with("");
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("payment.facilitator is missing"), "{err}");

        let (_d, path) = with(
            "  facilitators:\n    - { name: a, url: \"ftp://x\" }\n  failover: { failures: 0 }\n",
        );
        let err = load_with_env(&path, &env(&[])).unwrap_err().to_string();
        assert!(err.contains("payment.facilitators[0].url"), "{err}");
        assert!(err.contains("payment.failover.failures"), "{err}");
    }
}
