//! What can go wrong fetching a URL, as the service reports it: a stable code, an HTTP status,
//! and a sentence for the caller that says what happened without exposing internals (resolved
//! addresses of a name, socket errors with addresses, stack details).

use std::time::Duration;

use url::Url;

use super::guard::{Reason, Refusal};
use super::target::UrlRefusal;

/// Where the guard said no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockedTarget {
    /// An IP-literal host (the caller or a redirect named the address).
    Address(Refusal),
    /// `localhost` and `*.localhost`.
    LocalName(String),
    /// A DNS answer for `host` was refused. Any refused answer refuses the whole host.
    Resolved { host: String, refusal: Refusal },
}

impl BlockedTarget {
    /// The guard's reason code ("loopback", "metadata", …), or "local_name".
    pub fn reason_code(&self) -> &'static str {
        match self {
            BlockedTarget::Address(r) | BlockedTarget::Resolved { refusal: r, .. } => {
                r.reason.code()
            }
            BlockedTarget::LocalName(_) => "local_name",
        }
    }

    /// The guard's reason, when an address was judged.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            BlockedTarget::Address(r) | BlockedTarget::Resolved { refusal: r, .. } => {
                Some(r.reason)
            }
            BlockedTarget::LocalName(_) => None,
        }
    }
}

impl std::fmt::Display for BlockedTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlockedTarget::Address(r) => {
                write!(f, "{r}; only public internet addresses can be reached")
            }
            BlockedTarget::LocalName(h) => write!(
                f,
                "'{h}' names the local machine; only public internet hosts can be reached"
            ),
            // The address itself is not echoed: it would make the service a probe of private DNS.
            BlockedTarget::Resolved { host, refusal } => write!(
                f,
                "the host '{host}' resolves to {}; only public internet addresses can be reached",
                refusal.reason.class.describe()
            ),
        }
    }
}

/// A failed fetch. `status()` and `code()` are what the service answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// The URL is not a fetchable http(s) URL (the message says why).
    #[error("{0}")]
    BadUrl(String),
    /// The guard refused the target: at the first hop (`hop` 0) or at redirect number `hop`,
    /// from the URL itself or from a DNS answer.
    #[error("{}", blocked_message(reason, *hop))]
    Blocked { reason: BlockedTarget, hop: u32 },
    #[error("{0}")]
    DnsFailed(String),
    #[error("{0}")]
    Connect(String),
    /// The overall deadline (connection, redirects and body) passed.
    #[error("the upstream did not finish answering within {} ms", after.as_millis())]
    Timeout { after: Duration },
    /// `chain` lists every URL requested, the URL asked for first.
    #[error("the upstream redirected more than {max} times")]
    TooManyRedirects { chain: Vec<Url>, max: u32 },
    #[error("{}", too_large_message(*declared, *cap))]
    TooLarge { declared: Option<u64>, cap: usize },
    /// A redirect whose Location is unusable (not a URL, not http(s), userinfo…).
    #[error("the upstream sent an unusable redirect: {0}")]
    BadRedirect(String),
    /// Protocol errors, resets mid-body and other transport failures after connecting.
    #[error("{0}")]
    Upstream(String),
}

fn blocked_message(reason: &BlockedTarget, hop: u32) -> String {
    if hop == 0 {
        reason.to_string()
    } else {
        format!("redirect {hop} led to a refused target: {reason}")
    }
}

fn too_large_message(declared: Option<u64>, cap: usize) -> String {
    match declared {
        Some(d) if d > cap as u64 => {
            format!("the upstream declared a body of {d} bytes, over the limit of {cap} bytes")
        }
        _ => format!("the upstream body is over the limit of {cap} bytes"),
    }
}

impl FetchError {
    /// The HTTP status the service answers with.
    pub fn status(&self) -> u16 {
        match self {
            FetchError::BadUrl(_) | FetchError::Blocked { .. } => 400,
            FetchError::TooLarge { .. } => 413,
            FetchError::Timeout { .. } => 504,
            FetchError::DnsFailed(_)
            | FetchError::Connect(_)
            | FetchError::TooManyRedirects { .. }
            | FetchError::BadRedirect(_)
            | FetchError::Upstream(_) => 502,
        }
    }

    /// Stable snake_case error code.
    pub fn code(&self) -> &'static str {
        match self {
            FetchError::BadUrl(_) => "bad_url",
            FetchError::Blocked { .. } => "blocked_target",
            FetchError::DnsFailed(_) => "dns_failed",
            FetchError::Connect(_) => "connect_failed",
            FetchError::Timeout { .. } => "upstream_timeout",
            FetchError::TooManyRedirects { .. } => "too_many_redirects",
            FetchError::TooLarge { .. } => "upstream_too_large",
            FetchError::BadRedirect(_) => "bad_redirect",
            FetchError::Upstream(_) => "upstream_error",
        }
    }

    /// A caller's URL refused by [`super::Guard::parse_target`].
    pub fn from_url_refusal(refusal: UrlRefusal) -> Self {
        match refusal {
            UrlRefusal::Address(r) => FetchError::Blocked {
                reason: BlockedTarget::Address(r),
                hop: 0,
            },
            UrlRefusal::LocalName(h) => FetchError::Blocked {
                reason: BlockedTarget::LocalName(h),
                hop: 0,
            },
            other => FetchError::BadUrl(other.to_string()),
        }
    }

    /// A redirect target refused by the guard or the parser; `hop` counts from 1.
    pub(crate) fn from_redirect_refusal(refusal: UrlRefusal, hop: u32) -> Self {
        match refusal {
            UrlRefusal::Address(r) => FetchError::Blocked {
                reason: BlockedTarget::Address(r),
                hop,
            },
            UrlRefusal::LocalName(h) => FetchError::Blocked {
                reason: BlockedTarget::LocalName(h),
                hop,
            },
            other => FetchError::BadRedirect(format!("redirect {hop}: {other}")),
        }
    }
}

impl From<UrlRefusal> for FetchError {
    fn from(r: UrlRefusal) -> Self {
        FetchError::from_url_refusal(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::guard::{classify, Verdict};
    use std::net::IpAddr;

    fn refusal(s: &str) -> Refusal {
        let addr: IpAddr = s.parse().unwrap();
        match classify(addr) {
            Verdict::Refused(reason) => Refusal { addr, reason },
            Verdict::Public => panic!("{s} is public"),
        }
    }

    #[test]
    fn statuses_and_codes() {
        let cases: Vec<(FetchError, u16, &str)> = vec![
            (FetchError::BadUrl("x".into()), 400, "bad_url"),
            (
                FetchError::Blocked {
                    reason: BlockedTarget::LocalName("localhost".into()),
                    hop: 0,
                },
                400,
                "blocked_target",
            ),
            (FetchError::DnsFailed("x".into()), 502, "dns_failed"),
            (FetchError::Connect("x".into()), 502, "connect_failed"),
            (
                FetchError::Timeout {
                    after: Duration::from_millis(300),
                },
                504,
                "upstream_timeout",
            ),
            (
                FetchError::TooManyRedirects {
                    chain: vec![],
                    max: 3,
                },
                502,
                "too_many_redirects",
            ),
            (
                FetchError::TooLarge {
                    declared: None,
                    cap: 10,
                },
                413,
                "upstream_too_large",
            ),
            (FetchError::BadRedirect("x".into()), 502, "bad_redirect"),
            (FetchError::Upstream("x".into()), 502, "upstream_error"),
        ];
        for (e, status, code) in cases {
            assert_eq!(e.status(), status, "{e:?}");
            assert_eq!(e.code(), code, "{e:?}");
        }
    }

    #[test]
    fn messages_say_what_happened_without_resolved_addresses() {
        let e = FetchError::Blocked {
            reason: BlockedTarget::Resolved {
                host: "rebind.test".into(),
                refusal: refusal("10.1.2.3"),
            },
            hop: 2,
        };
        let m = e.to_string();
        assert_eq!(
            m,
            "redirect 2 led to a refused target: the host 'rebind.test' resolves to a private \
             network address; only public internet addresses can be reached"
        );
        assert!(!m.contains("10.1.2.3"));

        let e = FetchError::from_url_refusal(UrlRefusal::Address(refusal("169.254.169.254")));
        assert_eq!(e.code(), "blocked_target");
        assert_eq!(
            e.to_string(),
            "169.254.169.254 is a cloud metadata service address; only public internet addresses \
             can be reached"
        );
        let e = FetchError::TooLarge {
            declared: Some(5000),
            cap: 100,
        };
        assert_eq!(
            e.to_string(),
            "the upstream declared a body of 5000 bytes, over the limit of 100 bytes"
        );
        assert_eq!(
            FetchError::Timeout {
                after: Duration::from_millis(300)
            }
            .to_string(),
            "the upstream did not finish answering within 300 ms"
        );
        let e = FetchError::from_url_refusal(UrlRefusal::Scheme("ftp".into()));
        assert_eq!(e.code(), "bad_url");
        let e = FetchError::from_redirect_refusal(UrlRefusal::Scheme("ftp".into()), 1);
        assert_eq!(e.code(), "bad_redirect");
        assert_eq!(
            e.to_string(),
            "the upstream sent an unusable redirect: redirect 1: the URL scheme 'ftp' is not \
             supported; use http or https"
        );
    }

    #[test]
    fn reason_codes_of_blocked_targets() {
        assert_eq!(
            BlockedTarget::Address(refusal("::1")).reason_code(),
            "loopback"
        );
        assert_eq!(
            BlockedTarget::LocalName("localhost".into()).reason_code(),
            "local_name"
        );
    }
}
