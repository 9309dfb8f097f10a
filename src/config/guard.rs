//! The `guard:` section: what the outbound guard lets through besides public addresses, and
//! the User-Agent sent outbound.

use super::{parse_cidr, raw, GuardSettings, Reporter};
use url::Url;

/// `guard:` with PAYCALL_ALLOW_CIDRS applied (it replaces the file's list, it does not add to
/// it). The default User-Agent names the service's base URL, so sites can reach the operator.
pub fn validate_guard(
    g: raw::Guard,
    base_url: &Url,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> GuardSettings {
    let mut allow_cidrs = Vec::new();
    if let Some(v) = env("PAYCALL_ALLOW_CIDRS") {
        for part in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match parse_cidr(part) {
                Ok(n) => allow_cidrs.push(n),
                Err(e) => r.unplaced(
                    format!("PAYCALL_ALLOW_CIDRS: {e}"),
                    "use comma-separated CIDRs, e.g. 127.0.0.1/32",
                ),
            }
        }
    } else {
        for c in &g.allow_cidrs {
            match parse_cidr(&c.value) {
                Ok(n) => allow_cidrs.push(n),
                Err(e) => r.at(c.referenced, e, "write a CIDR such as 10.1.0.0/16"),
            }
        }
    }
    let mut nat64_prefixes = Vec::new();
    for c in &g.nat64_prefixes {
        match c.value.trim().parse::<ipnet::Ipv6Net>() {
            Ok(n) => match crate::net::guard::nat64_prefix_error(&n) {
                None => nat64_prefixes.push(n.trunc()),
                Some(e) => r.at(
                    c.referenced,
                    e,
                    "list the NAT64 prefix your network's translator uses, e.g. 2001:db8:64::/96",
                ),
            },
            Err(_) => r.at(
                c.referenced,
                format!("`{}` is not an IPv6 prefix", c.value),
                "write an IPv6 prefix such as 2001:db8:64::/96",
            ),
        }
    }
    GuardSettings {
        allow_cidrs,
        nat64_prefixes,
        user_agent: g
            .user_agent
            .unwrap_or_else(|| format!("paycall/{} (+{})", env!("CARGO_PKG_VERSION"), base_url)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    fn guard(yaml: &str) -> raw::Guard {
        serde_saphyr::from_str(yaml).unwrap()
    }
    fn base() -> Url {
        Url::parse("https://a.example/").unwrap()
    }

    #[test]
    fn the_environment_replaces_the_allow_list() {
        let env = |k: &str| (k == "PAYCALL_ALLOW_CIDRS").then(|| "127.0.0.1/32, bad".to_string());
        let (g, errors) =
            reported(|r| validate_guard(guard("allow_cidrs: [10.0.0.0/8]"), &base(), &env, r));
        assert_eq!(
            g.allow_cidrs,
            ["127.0.0.1/32".parse::<ipnet::IpNet>().unwrap()]
        );
        assert_eq!(
            errors,
            ["PAYCALL_ALLOW_CIDRS: `bad` is not a CIDR or IP address"]
        );
    }

    #[test]
    fn nat64_prefixes_must_be_ipv6_of_an_rfc6052_length() {
        let yaml = "nat64_prefixes: [10.0.0.0/8, '2001:db8::/33', '2001:db8:64::1/96']";
        let (g, errors) = reported(|r| validate_guard(guard(yaml), &base(), &|_| None, r));
        assert_eq!(
            g.nat64_prefixes,
            ["2001:db8:64::/96".parse::<ipnet::Ipv6Net>().unwrap()]
        );
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0], "`10.0.0.0/8` is not an IPv6 prefix");
    }

    #[test]
    fn the_default_user_agent_names_the_base_url() {
        let (g, _) = reported(|r| validate_guard(guard("{}"), &base(), &|_| None, r));
        assert!(
            g.user_agent.ends_with("(+https://a.example/)"),
            "{}",
            g.user_agent
        );
    }
}
