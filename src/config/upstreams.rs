//! The `upstreams:` section: named base URLs of the services routes call.

use super::{env_nonempty, parse_http_url, Reporter};
use serde_saphyr::Spanned;
use std::collections::BTreeMap;
use url::Url;

/// `upstreams:` with each PAYCALL_UPSTREAM_<NAME> applied (tests point them at local servers).
pub fn validate_upstreams(
    upstreams: &BTreeMap<String, Spanned<String>>,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> BTreeMap<String, Url> {
    let mut out = BTreeMap::new();
    for (name, u) in upstreams {
        let key = env_key(name);
        let value = env_nonempty(env, &key).unwrap_or_else(|| u.value.clone());
        match parse_http_url(&value) {
            Ok(url) => {
                out.insert(name.clone(), url);
            }
            Err(e) => r.at(
                u.referenced,
                format!("upstreams.{name}: {e}"),
                format!("use an absolute URL ({key} overrides)"),
            ),
        }
    }
    out
}

/// `base_rpc` → PAYCALL_UPSTREAM_BASE_RPC; `-` and `.` cannot stand in a variable's name.
fn env_key(name: &str) -> String {
    format!(
        "PAYCALL_UPSTREAM_{}",
        name.to_ascii_uppercase().replace(['-', '.'], "_")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    #[test]
    fn names_become_variable_names() {
        assert_eq!(
            env_key("cdp-discovery.v2"),
            "PAYCALL_UPSTREAM_CDP_DISCOVERY_V2"
        );
    }

    #[test]
    fn the_environment_overrides_and_bad_urls_are_named() {
        let raw: BTreeMap<String, Spanned<String>> =
            serde_saphyr::from_str("a: https://a.example/\nb: nope\n").unwrap();
        let env = |k: &str| (k == "PAYCALL_UPSTREAM_A").then(|| "http://127.0.0.1:1/".to_string());
        let (out, errors) = reported(|r| validate_upstreams(&raw, &env, r));
        assert_eq!(out["a"].as_str(), "http://127.0.0.1:1/");
        assert!(!out.contains_key("b"));
        assert_eq!(
            errors,
            ["upstreams.b: `nope` is not a URL: relative URL without a base"]
        );
    }
}
