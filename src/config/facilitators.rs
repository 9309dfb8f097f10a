//! `payment.facilitator` (one), `payment.facilitators` (several, in order of preference) and
//! `payment.failover` (their health rules) → [`FacilitatorSettings`] and [`FailoverSettings`].
//!
//! Kept apart from the rest of the payment section so the single form keeps its exact meaning:
//! one `facilitator` block is a list of one named `default`. PAYCALL_FACILITATOR_URL overrides
//! the URL of the single facilitator, or of the first one in the list.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_saphyr::{Location, Spanned};
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
    let auth = auth(r, env, &f, at);
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

/// The variables a CDP key pair is read from when the entry names none (every config before
/// per-facilitator keys).
pub const DEFAULT_KEY_ID_ENV: &str = "CDP_API_KEY_ID";
pub const DEFAULT_KEY_SECRET_ENV: &str = "CDP_API_KEY_SECRET";

/// Whether `name` can name an environment variable (letters, digits, `_`; not a digit first).
pub fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// One facilitator's `auth`, its CDP key pair read from the variables the entry names
/// (`api_key_id_env`, `api_key_secret_env`; CDP_API_KEY_ID / CDP_API_KEY_SECRET by default), so
/// two CDP facilitators need not share one key. `auto` with the default variables keeps its
/// meaning (both set: CDP; else no auth); `cdp`, or `auto` with variables of its own, wants
/// the key, and a missing or empty variable is an error at the line that names it (`auth`'s
/// line for a default one). A secret CDP could not sign with is an error too.
fn auth(
    r: &mut Reporter<'_>,
    env: &dyn Fn(&str) -> Option<String>,
    f: &raw::Facilitator,
    at: &str,
) -> FacilitatorAuthSetting {
    let mode = f.auth.value.as_str();
    if !matches!(mode, "none" | "auto" | "cdp") {
        r.at(
            f.auth.referenced,
            format!("unknown facilitator auth `{mode}`"),
            "use auto, cdp or none",
        );
        return FacilitatorAuthSetting::None;
    }
    // (variable, where a problem with it is reported, named in the entry)
    let var = |named: &Option<Spanned<String>>, default: &str| match named {
        Some(s) => (s.value.trim().to_string(), s.referenced, true),
        None => (default.to_string(), f.auth.referenced, false),
    };
    let id = var(&f.api_key_id_env, DEFAULT_KEY_ID_ENV);
    let secret = var(&f.api_key_secret_env, DEFAULT_KEY_SECRET_ENV);
    let mut names_ok = true;
    for (name, loc, _) in [&id, &secret] {
        if !valid_env_name(name) {
            r.at(
                *loc,
                format!("{at}: `{name}` is not an environment variable name"),
                "use letters, digits and `_`, e.g. CDP_API_KEY_ID_BACKUP",
            );
            names_ok = false;
        }
    }
    if mode == "none" || !names_ok {
        return FacilitatorAuthSetting::None;
    }
    let own_vars = id.2 || secret.2;
    let (key_id, key_secret) = match (env_nonempty(env, &id.0), env_nonempty(env, &secret.0)) {
        (Some(key_id), Some(key_secret)) => (key_id, key_secret),
        _ if mode == "auto" && !own_vars => return FacilitatorAuthSetting::None,
        (key_id, key_secret) => {
            for ((name, loc, _), value) in [(&id, &key_id), (&secret, &key_secret)] {
                if value.is_none() {
                    r.at(
                        *loc,
                        format!("{at}: auth `{mode}` needs {name}, which is not set or empty"),
                        format!("export {name}, or set auth: none"),
                    );
                }
            }
            return FacilitatorAuthSetting::None;
        }
    };
    if let Err(e) = crate::x402::auth::CdpSigner::new(&key_id, &key_secret) {
        r.at(
            secret.1,
            format!(
                "{at}: the CDP key in {} / {} cannot sign: {e}",
                id.0, secret.0
            ),
            "paste the key CDP issued (the PEM EC key or the base64 Ed25519 secret) and its id",
        );
        return FacilitatorAuthSetting::None;
    }
    FacilitatorAuthSetting::Cdp { key_id, key_secret }
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
        super::super::tests::variant(|text| {
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
            out
        })
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

    /// A CDP key secret CDP's signer accepts (base64 of an Ed25519 seed and its public key).
    fn cdp_secret(seed: u8) -> String {
        use base64::Engine;
        use ring::signature::{Ed25519KeyPair, KeyPair};
        let pair = Ed25519KeyPair::from_seed_unchecked(&[seed; 32]).unwrap();
        let mut secret = vec![seed; 32];
        secret.extend(pair.public_key().as_ref());
        base64::engine::general_purpose::STANDARD.encode(secret)
    }

    fn env_with(extra: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        let base = env(&[]);
        move |k: &str| {
            extra
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
                .or_else(|| base(k))
        }
    }

    /// The 1-based line of the first line of `path` containing `needle` after `after`.
    fn line_of(path: &Path, after: &str, needle: &str) -> u64 {
        let text = std::fs::read_to_string(path).unwrap();
        let start = text.find(after).unwrap();
        let at = start + text[start..].find(needle).unwrap();
        text[..at].matches('\n').count() as u64 + 1
    }

    const TWO_CDP: &str = "  facilitators:\n    - name: cdp\n      url: https://api.cdp.coinbase.com/platform/v2/x402\n      auth: cdp\n    - name: cdp-backup\n      url: https://backup.example.com/x402\n      auth: cdp\n      api_key_id_env: CDP_BACKUP_KEY_ID\n      api_key_secret_env: CDP_BACKUP_KEY_SECRET\n";

    #[test]
    fn each_facilitator_reads_its_own_cdp_key_and_the_default_variables_keep_working() {
        use super::FacilitatorAuthSetting::{Cdp, None as NoAuth};
        let cdp = |id: &str, seed: u8| Cdp {
            key_id: id.into(),
            key_secret: cdp_secret(seed),
        };
        let (_d, path) = with(TWO_CDP);
        let vars = env_with(vec![
            ("CDP_API_KEY_ID", "kid-main".into()),
            ("CDP_API_KEY_SECRET", cdp_secret(1)),
            ("CDP_BACKUP_KEY_ID", "kid-backup".into()),
            ("CDP_BACKUP_KEY_SECRET", cdp_secret(2)),
        ]);
        let cfg = load_with_env(&path, &vars).unwrap_or_else(|e| panic!("{e}"));
        let f = &cfg.payment.facilitators;
        assert_eq!(
            f[0].auth,
            cdp("kid-main", 1),
            "no variables named: the defaults"
        );
        assert_eq!(f[1].auth, cdp("kid-backup", 2), "its own key pair");

        // The shipped single form (auth: auto, no variables named) as before: the default
        // variables when both are set, else no auth.
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("routes.yaml");
        let cfg = load_with_env(&shipped, &vars).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.payment.facilitators[0].auth, cdp("kid-main", 1));
        let cfg = load_with_env(&shipped, &env(&[])).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.payment.facilitators[0].auth, NoAuth);
        let half = env_with(vec![("CDP_API_KEY_ID", "kid-main".into())]);
        let cfg = load_with_env(&shipped, &half).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.payment.facilitators[0].auth, NoAuth);
    }

    #[test]
    fn a_missing_or_empty_key_variable_is_an_error_at_the_line_that_names_it() {
        let (_d, path) = with(TWO_CDP);
        // The backup's own secret variable is empty; the first one's defaults are not set.
        let vars = env_with(vec![
            ("CDP_BACKUP_KEY_ID", "kid-backup".into()),
            ("CDP_BACKUP_KEY_SECRET", "  ".into()),
        ]);
        let errors = load_with_env(&path, &vars).unwrap_err().0;
        let find = |needle: &str| {
            errors
                .iter()
                .find(|e| e.message.contains(needle))
                .unwrap_or_else(|| panic!("no error naming {needle}: {errors:#?}"))
                .clone()
        };
        let e = find("needs CDP_BACKUP_KEY_SECRET");
        assert!(e.message.starts_with("payment.facilitators[1]"), "{e}");
        assert_eq!(
            e.line,
            line_of(&path, "- name: cdp-backup", "api_key_secret_env:"),
            "{e}"
        );
        assert!(e.hint.contains("export CDP_BACKUP_KEY_SECRET"), "{e}");
        assert!(
            !errors
                .iter()
                .any(|e| e.message.contains("CDP_BACKUP_KEY_ID")),
            "the id is set: {errors:#?}"
        );
        // A default variable has no line of its own: the entry's `auth` line.
        for name in ["needs CDP_API_KEY_ID", "needs CDP_API_KEY_SECRET"] {
            let e = find(name);
            assert!(e.message.starts_with("payment.facilitators[0]"), "{e}");
            assert_eq!(e.line, line_of(&path, "- name: cdp\n", "auth: cdp"), "{e}");
        }
        assert_eq!(errors.len(), 3, "{errors:#?}");

        // `auto` with variables of its own wants the key too; a bad variable name and a
        // secret CDP cannot sign with are errors.
        let block = "  facilitators:\n    - name: a\n      url: http://127.0.0.1:1/\n      auth: auto\n      api_key_id_env: A_KEY_ID\n      api_key_secret_env: A_KEY_SECRET\n    - name: b\n      url: http://127.0.0.1:2/\n      auth: cdp\n      api_key_id_env: \"B KEY\"\n    - name: c\n      url: http://127.0.0.1:3/\n      auth: cdp\n      api_key_id_env: C_KEY_ID\n      api_key_secret_env: C_KEY_SECRET\n";
        let (_d, path) = with(block);
        let vars = env_with(vec![
            ("C_KEY_ID", "kid-c".into()),
            ("C_KEY_SECRET", "not a key".into()),
        ]);
        let err = load_with_env(&path, &vars).unwrap_err().to_string();
        assert!(
            err.contains("payment.facilitators[0]: auth `auto` needs A_KEY_ID"),
            "{err}"
        );
        assert!(err.contains("needs A_KEY_SECRET"), "{err}");
        assert!(
            err.contains("`B KEY` is not an environment variable name"),
            "{err}"
        );
        assert!(
            err.contains(
                "payment.facilitators[2]: the CDP key in C_KEY_ID / C_KEY_SECRET cannot sign"
            ),
            "{err}"
        );
        assert!(
            !err.contains("not a key"),
            "a secret is never echoed: {err}"
        );
    }

    #[test]
    fn environment_variable_names() {
        assert!(super::valid_env_name("CDP_API_KEY_ID"));
        assert!(super::valid_env_name("cdp_backup_2"));
        for bad in ["", "2KEY", "A-B", "A B", "A=B"] {
            assert!(!super::valid_env_name(bad), "{bad}");
        }
    }
}
