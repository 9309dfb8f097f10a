//! The DNS seam: production asks the system resolver, tests inject a static map so that names can
//! resolve to chosen addresses (private answers, rebinding) without any real DNS.
//!
//! A resolver only answers; it never judges. The guarded client judges every answer.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;

use futures_util::future::BoxFuture;

/// Name → addresses.
pub trait Resolver: Send + Sync + 'static {
    /// All addresses for `host` (a DNS name, never an IP literal, no port). An unknown name is an
    /// error; an empty list is treated by the client as a failure too.
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>>;
}

/// The operating system's resolver (getaddrinfo on a blocking thread, via tokio).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolver for SystemResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let host = host.to_owned();
        Box::pin(async move {
            let mut ips: Vec<IpAddr> = Vec::new();
            for sa in tokio::net::lookup_host((host.as_str(), 0)).await? {
                if !ips.contains(&sa.ip()) {
                    ips.push(sa.ip());
                }
            }
            Ok(ips)
        })
    }
}

/// Fixed answers for tests: names resolve to exactly the addresses given; unknown names fail as
/// NXDOMAIN would. Names are matched case-insensitively and without a trailing dot.
#[derive(Debug, Clone, Default)]
pub struct StaticResolver {
    map: HashMap<String, Vec<IpAddr>>,
}

impl StaticResolver {
    pub fn new() -> Self {
        StaticResolver::default()
    }

    /// Builder form of [`StaticResolver::insert`].
    pub fn with(mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) -> Self {
        self.insert(name, addrs);
        self
    }

    pub fn insert(&mut self, name: &str, addrs: impl IntoIterator<Item = IpAddr>) {
        self.map.insert(key(name), addrs.into_iter().collect());
    }
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl Resolver for StaticResolver {
    fn lookup(&self, host: &str) -> BoxFuture<'static, io::Result<Vec<IpAddr>>> {
        let answer = self.map.get(&key(host)).cloned().ok_or_else(|| {
            io::Error::new(io::ErrorKind::NotFound, format!("no such host: {host}"))
        });
        Box::pin(async move { answer })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn static_resolver_answers_what_it_was_given() {
        let r = StaticResolver::new()
            .with(
                "rebind.test",
                ["8.8.8.8".parse().unwrap(), "127.0.0.1".parse().unwrap()],
            )
            .with("Empty.Test.", []);
        let got = r.lookup("REBIND.test.").await.unwrap();
        assert_eq!(
            got,
            vec![
                "8.8.8.8".parse::<IpAddr>().unwrap(),
                "127.0.0.1".parse().unwrap()
            ]
        );
        assert_eq!(r.lookup("empty.test").await.unwrap(), Vec::<IpAddr>::new());
        let err = r.lookup("unknown.test").await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    #[tokio::test]
    async fn system_resolver_reads_the_hosts_file() {
        // "localhost" is answered from /etc/hosts: no packet leaves the machine.
        let res = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            SystemResolver.lookup("localhost"),
        )
        .await
        .expect("a hosts-file lookup should finish well within 30 s")
        .expect("localhost should resolve");
        assert!(!res.is_empty());
        assert!(res.iter().all(|ip| ip.is_loopback()), "{res:?}");
    }
}
