//! How often one payer, and one client address, may make us ask the facilitator to verify.
//!
//! A not-charged outcome leaves the authorization unspent, and a payer can sign as many
//! authorizations as it likes: every /verify is a facilitator call (a metered facilitator's
//! quota is the operator's money). Beyond the per-payment attempt cap (the ledger's), these
//! limits bound the rate per payer (`from`) and per client address (X-Forwarded-For believed only
//! from `service.trusted_proxies`). Over a limit → 429 `verify_rate_limited` with Retry-After,
//! before any facilitator call. Per instance, in memory.

use governor::clock::Clock;
use governor::{DefaultKeyedRateLimiter, Quota};
use std::net::IpAddr;
use std::num::NonZeroU32;

pub struct VerifyLimiter {
    payer: Option<DefaultKeyedRateLimiter<String>>,
    client: Option<DefaultKeyedRateLimiter<IpAddr>>,
}

impl std::fmt::Debug for VerifyLimiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("VerifyLimiter")
    }
}

/// Which limit a request hit, and how many seconds until it may try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    pub by: &'static str,
    pub retry_after_s: u64,
}

fn limiter<K: std::hash::Hash + Eq + Clone>(per_minute: u32) -> Option<DefaultKeyedRateLimiter<K>> {
    // 0 turns a limit off; the burst is a whole minute's worth.
    NonZeroU32::new(per_minute)
        .map(|n| DefaultKeyedRateLimiter::keyed(Quota::per_minute(n).allow_burst(n)))
}

impl VerifyLimiter {
    pub fn new(per_payer_per_minute: u32, per_client_per_minute: u32) -> VerifyLimiter {
        VerifyLimiter {
            payer: limiter(per_payer_per_minute),
            client: limiter(per_client_per_minute),
        }
    }

    /// One /verify for this payer from this client, or the limit it hit.
    pub fn check(&self, payer: Option<&str>, client: IpAddr) -> Result<(), Limited> {
        if let Some(l) = &self.client {
            if let Err(nu) = l.check_key(&client) {
                return Err(Limited {
                    by: "client",
                    retry_after_s: nu.wait_time_from(l.clock().now()).as_secs().max(1),
                });
            }
        }
        if let (Some(l), Some(p)) = (&self.payer, payer) {
            if let Err(nu) = l.check_key(&p.to_ascii_lowercase()) {
                return Err(Limited {
                    by: "payer",
                    retry_after_s: nu.wait_time_from(l.clock().now()).as_secs().max(1),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payers_and_clients_are_limited_apart_and_zero_is_off() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let l = VerifyLimiter::new(2, 3);
        assert!(l.check(Some("0xA"), ip("1.1.1.1")).is_ok());
        assert!(l.check(Some("0xa"), ip("2.2.2.2")).is_ok());
        let hit = l.check(Some("0xA"), ip("3.3.3.3")).unwrap_err();
        assert_eq!(hit.by, "payer");
        assert!(hit.retry_after_s >= 1);
        assert!(l.check(Some("0xB"), ip("1.1.1.1")).is_ok());
        assert!(l.check(Some("0xC"), ip("1.1.1.1")).is_ok());
        assert_eq!(
            l.check(Some("0xD"), ip("1.1.1.1")).unwrap_err().by,
            "client"
        );
        let off = VerifyLimiter::new(0, 0);
        for _ in 0..100 {
            assert!(off.check(Some("0xA"), ip("1.1.1.1")).is_ok());
        }
    }
}
