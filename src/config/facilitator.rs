//! The `payment.facilitator:` section: where /verify, /settle and /supported are asked, how long
//! to wait, and how to authenticate.

use super::{
    env_nonempty, parse_http_url, raw, FacilitatorAuthSetting, FacilitatorSettings, Reporter,
};
use std::time::Duration;
use url::Url;

/// `payment.facilitator:` with PAYCALL_FACILITATOR_URL and the CDP_API_KEY_* pair applied.
pub fn validate_facilitator(
    f: &raw::Facilitator,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> FacilitatorSettings {
    let url = match env_nonempty(env, "PAYCALL_FACILITATOR_URL") {
        Some(v) => parse_http_url(&v).unwrap_or_else(|e| {
            r.at(f.url.referenced, format!("PAYCALL_FACILITATOR_URL: {e}"), "set it to the facilitator's base URL");
            placeholder()
        }),
        None => parse_http_url(&f.url.value).unwrap_or_else(|e| {
            r.at(f.url.referenced, format!("payment.facilitator.url: {e}"), "use the facilitator's base URL, e.g. https://api.cdp.coinbase.com/platform/v2/x402");
            placeholder()
        }),
    };
    let auth = auth(f, env, r);
    if f.pool_idle_timeout_ms > 60_000 {
        r.unplaced(
            "payment.facilitator.pool_idle_timeout_ms must be at most 60000",
            "keep it below the facilitator's keep-alive (Node's is 5 s); the default is 4000",
        );
    }
    FacilitatorSettings {
        url,
        verify_timeout: Duration::from_millis(f.verify_timeout_ms),
        settle_timeout: Duration::from_millis(f.settle_timeout_ms),
        supported_ttl: Duration::from_secs(f.supported_ttl_s),
        pool_idle_timeout: Duration::from_millis(f.pool_idle_timeout_ms),
        auth,
    }
}

/// Kept when the URL is unusable, so the rest of the file is still checked.
fn placeholder() -> Url {
    Url::parse("http://invalid.invalid/").expect("static URL")
}

/// `auto` signs with CDP keys when both are set; `cdp` insists on them.
fn auth(
    f: &raw::Facilitator,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> FacilitatorAuthSetting {
    let key_id = env_nonempty(env, "CDP_API_KEY_ID");
    let key_secret = env_nonempty(env, "CDP_API_KEY_SECRET");
    match f.auth.value.as_str() {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    fn facilitator(yaml: &str) -> raw::Facilitator {
        serde_saphyr::from_str(&format!("url: https://f.example/x402\n{yaml}")).unwrap()
    }
    fn keys(k: &str) -> Option<String> {
        matches!(k, "CDP_API_KEY_ID" | "CDP_API_KEY_SECRET").then(|| format!("{k}-value"))
    }
    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn auto_signs_only_when_both_keys_are_set() {
        let (with, errors) = reported(|r| validate_facilitator(&facilitator(""), &keys, r));
        assert!(errors.is_empty());
        assert!(matches!(with.auth, FacilitatorAuthSetting::Cdp { .. }));
        let (without, errors) = reported(|r| validate_facilitator(&facilitator(""), &no_env, r));
        assert!(errors.is_empty());
        assert_eq!(without.auth, FacilitatorAuthSetting::None);
    }

    #[test]
    fn cdp_without_keys_and_unknown_auth_are_errors() {
        let (_, errors) = reported(|r| validate_facilitator(&facilitator("auth: cdp"), &no_env, r));
        assert_eq!(
            errors,
            ["auth is `cdp` but CDP_API_KEY_ID / CDP_API_KEY_SECRET are not set"]
        );
        let (_, errors) = reported(|r| validate_facilitator(&facilitator("auth: jwt"), &no_env, r));
        assert_eq!(errors, ["unknown facilitator auth `jwt`"]);
    }

    #[test]
    fn the_environment_overrides_the_url_and_idle_connections_are_capped() {
        let env = |k: &str| (k == "PAYCALL_FACILITATOR_URL").then(|| "http://127.0.0.1:9/".into());
        let (f, errors) = reported(|r| {
            validate_facilitator(&facilitator("pool_idle_timeout_ms: 60001"), &env, r)
        });
        assert_eq!(f.url.as_str(), "http://127.0.0.1:9/");
        assert_eq!(
            errors,
            ["payment.facilitator.pool_idle_timeout_ms must be at most 60000"]
        );
    }
}
