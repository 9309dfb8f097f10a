//! The `service:` section: public origin, listeners, trusted proxies.

use super::{env_nonempty, parse_cidr, parse_http_url, raw, Reporter, ServiceSettings};
use std::net::SocketAddr;
use std::time::Duration;
use url::Url;

/// `service:` with PAYCALL_BASE_URL, PAYCALL_BACKUP_URL, PAYCALL_LISTEN and
/// PAYCALL_ADMIN_LISTEN applied. A bad value is reported and a stand-in kept, so the sections
/// after this one are still checked.
pub fn validate_service(
    s: raw::Service,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> ServiceSettings {
    let base_url = base_url(&s, env, r);
    let backup_url = match env_nonempty(env, "PAYCALL_BACKUP_URL") {
        // An unusable override is dropped silently: the backup is advertised, never required.
        Some(v) => parse_http_url(&v).ok(),
        None => s.backup_url.as_ref().and_then(|b| {
            parse_http_url(&b.value)
                .map_err(|e| {
                    r.at(
                        b.referenced,
                        format!("service.backup_url: {e}"),
                        "use an absolute https URL or remove the key",
                    )
                })
                .ok()
        }),
    };
    let listen_raw = env_nonempty(env, "PAYCALL_LISTEN").unwrap_or_else(|| s.listen.value.clone());
    let listen = listen_raw.parse::<SocketAddr>().unwrap_or_else(|_| {
        r.at(
            s.listen.referenced,
            format!("listen address `{listen_raw}` is not host:port"),
            "write an IP and port, e.g. 127.0.0.1:8402 (PAYCALL_LISTEN overrides)",
        );
        "127.0.0.1:8402".parse().expect("static addr")
    });
    let admin_listen = admin_listen(&s, listen, env, r);
    let mut trusted_proxies = Vec::new();
    for p in &s.trusted_proxies {
        match parse_cidr(&p.value) {
            Ok(n) => trusted_proxies.push(n),
            Err(e) => r.at(p.referenced, e, "write a CIDR such as 10.0.0.0/8 or an IP"),
        }
    }
    let header_read_timeout = header_read_timeout(&s, r);
    ServiceSettings {
        name: s.name,
        version: s.version,
        description: s.description,
        base_url,
        backup_url,
        listen,
        admin_listen,
        trusted_proxies,
        shutdown_grace: Duration::from_secs(s.shutdown_grace_s),
        header_read_timeout,
    }
}

/// A connection that never finishes its request head holds a task and a socket: the wait is
/// bounded, and never 0 (that would mean no bound at all to hyper).
fn header_read_timeout(s: &raw::Service, r: &mut Reporter<'_>) -> Duration {
    let t = &s.header_read_timeout_s;
    if !(1..=600).contains(&t.value) {
        r.at(
            t.referenced,
            format!("service.header_read_timeout_s is {}", t.value),
            "give 1 to 600 seconds (default 30): the time a client may take to send a request head",
        );
        return Duration::from_secs(30);
    }
    Duration::from_secs(t.value)
}

/// Resource URLs are built from the base URL, so it must be a bare origin.
fn base_url(s: &raw::Service, env: &dyn Fn(&str) -> Option<String>, r: &mut Reporter<'_>) -> Url {
    let placeholder = || Url::parse("http://invalid.invalid/").expect("static URL");
    let base_url = match env_nonempty(env, "PAYCALL_BASE_URL") {
        Some(v) => parse_http_url(&v).unwrap_or_else(|e| {
            r.at(
                s.base_url.referenced,
                format!("PAYCALL_BASE_URL: {e}"),
                "set it to e.g. https://paycall.example.com",
            );
            placeholder()
        }),
        None => parse_http_url(&s.base_url.value).unwrap_or_else(|e| {
            r.at(
                s.base_url.referenced,
                format!("service.base_url: {e}"),
                "use the public https origin, e.g. https://paycall.example.com",
            );
            placeholder()
        }),
    };
    if base_url.path() != "/" || base_url.query().is_some() {
        r.at(
            s.base_url.referenced,
            "service.base_url must be an origin without a path",
            "drop the path: routes add their own",
        );
    }
    base_url
}

/// The admin listener shows revenue (/metrics), so it may not share the public address.
fn admin_listen(
    s: &raw::Service,
    listen: SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
    r: &mut Reporter<'_>,
) -> Option<SocketAddr> {
    let admin_raw =
        env_nonempty(env, "PAYCALL_ADMIN_LISTEN").unwrap_or_else(|| s.admin_listen.value.clone());
    if admin_raw.trim() == "off" {
        return None;
    }
    match admin_raw.parse::<SocketAddr>() {
        Ok(a) if a == listen && a.port() != 0 => {
            r.at(
                s.admin_listen.referenced,
                format!("admin_listen `{admin_raw}` is the public listen address"),
                "give the admin listener its own port (default 127.0.0.1:9402): /metrics shows revenue",
            );
            None
        }
        Ok(a) => Some(a),
        Err(_) => {
            r.at(
                s.admin_listen.referenced,
                format!("admin listen address `{admin_raw}` is not host:port"),
                "write an IP and port, e.g. 127.0.0.1:9402, or `off` (PAYCALL_ADMIN_LISTEN overrides)",
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::error::reported;

    fn service(yaml: &str) -> raw::Service {
        serde_saphyr::from_str(&format!("name: t\nbase_url: https://a.example\n{yaml}")).unwrap()
    }
    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_base_url_with_a_path_is_refused() {
        let s: raw::Service =
            serde_saphyr::from_str("name: t\nbase_url: https://a.example/x").unwrap();
        let (_, errors) = reported(|r| validate_service(s, &no_env, r));
        assert_eq!(
            errors,
            ["service.base_url must be an origin without a path"]
        );
    }

    #[test]
    fn the_environment_overrides_the_base_url() {
        let env = |k: &str| (k == "PAYCALL_BASE_URL").then(|| "https://b.example".to_string());
        let (s, errors) = reported(|r| validate_service(service(""), &env, r));
        assert!(errors.is_empty());
        assert_eq!(s.base_url.as_str(), "https://b.example/");
    }

    #[test]
    fn the_admin_listener_may_not_be_the_public_one() {
        let yaml = "listen: 127.0.0.1:8402\nadmin_listen: 127.0.0.1:8402";
        let (s, errors) = reported(|r| validate_service(service(yaml), &no_env, r));
        assert_eq!(s.admin_listen, None);
        assert_eq!(
            errors,
            ["admin_listen `127.0.0.1:8402` is the public listen address"]
        );
    }

    #[test]
    fn admin_listen_off_means_none_and_bad_proxies_are_named() {
        let yaml = "admin_listen: \"off\"\ntrusted_proxies: [10.0.0.0/8, nope]";
        let (s, errors) = reported(|r| validate_service(service(yaml), &no_env, r));
        assert_eq!(s.admin_listen, None);
        assert_eq!(s.trusted_proxies.len(), 1);
        assert_eq!(errors, ["`nope` is not a CIDR or IP address"]);
    }

    #[test]
    fn the_header_read_timeout_is_bounded_and_defaults_to_hyper_s() {
        let (s, errors) = reported(|r| validate_service(service(""), &no_env, r));
        assert!(errors.is_empty());
        assert_eq!(s.header_read_timeout, Duration::from_secs(30));
        let (s, errors) =
            reported(|r| validate_service(service("header_read_timeout_s: 5"), &no_env, r));
        assert!(errors.is_empty());
        assert_eq!(s.header_read_timeout, Duration::from_secs(5));
        for bad in [0, 601] {
            let yaml = format!("header_read_timeout_s: {bad}");
            let (_, errors) = reported(|r| validate_service(service(&yaml), &no_env, r));
            assert_eq!(errors, [format!("service.header_read_timeout_s is {bad}")]);
        }
    }
}
