//! Turning a caller's URL string into a target the service may fetch.
//!
//! The `url` crate (WHATWG parsing, the same as browsers) does the normalising: odd IPv4 spellings
//! (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`), percent-encoded and full-width hosts, IDNA,
//! backslashes as slashes. What it yields is exactly what the client will connect to, so the
//! judgement below is made on the parsed host, never on the raw string.
//!
//! Accepted: absolute `http`/`https` URLs with a host and no userinfo, at most
//! [`MAX_URL_LEN`] bytes. Any port is accepted: the guard is about *where* a connection goes, and
//! a public host on an odd port is still a public host (refusing ports would also break many
//! legitimate APIs). IP-literal hosts are judged by the guard here, because they never reach a
//! resolver; names are judged later, on every DNS answer, by the client.

use std::fmt;

use url::{Host, Url};

use super::guard::{Guard, Refusal};

/// Longest URL accepted, before and after normalisation (IDNA can lengthen a host).
pub const MAX_URL_LEN: usize = 2048;

/// Why a URL string is not a fetchable target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UrlRefusal {
    TooLong {
        len: usize,
        max: usize,
    },
    /// Not a URL at all, or a relative one (the `url` crate's words).
    Malformed(String),
    /// A scheme other than http or https.
    Scheme(String),
    /// `user:pass@host`: refused because it is a classic way to disguise the real host.
    Userinfo,
    NoHost,
    /// A name that is not a usable DNS name (empty labels, several trailing dots).
    BadHost(String),
    /// `localhost`, `*.localhost`: refused without asking DNS (RFC 6761 says they are local).
    LocalName(String),
    /// An IP-literal host the guard refused.
    Address(Refusal),
}

impl UrlRefusal {
    /// True when the URL was well formed but points somewhere the guard refuses (a 400
    /// `blocked_target` rather than a 400 `bad_url`).
    pub fn is_blocked(&self) -> bool {
        matches!(self, UrlRefusal::LocalName(_) | UrlRefusal::Address(_))
    }
}

impl fmt::Display for UrlRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlRefusal::TooLong { len, max } => {
                write!(f, "the URL is {len} bytes long; the limit is {max} bytes")
            }
            UrlRefusal::Malformed(why) => write!(
                f,
                "the URL could not be parsed ({why}); send an absolute http:// or https:// URL"
            ),
            UrlRefusal::Scheme(s) => write!(
                f,
                "the URL scheme '{s}' is not supported; use http or https"
            ),
            UrlRefusal::Userinfo => f.write_str(
                "URLs with a user name or password before the host (user@host) are not accepted",
            ),
            UrlRefusal::NoHost => f.write_str("the URL has no host"),
            UrlRefusal::BadHost(h) => write!(f, "'{h}' is not a valid host name"),
            UrlRefusal::LocalName(h) => write!(
                f,
                "'{h}' names the local machine; only public internet hosts can be reached"
            ),
            UrlRefusal::Address(r) => {
                write!(f, "{r}; only public internet addresses can be reached")
            }
        }
    }
}

impl std::error::Error for UrlRefusal {}

/// Parse and judge a target with no allowlist: only public addresses pass. Stages should call
/// [`Guard::parse_target`] so the operator's allowlist applies.
pub fn parse_target(raw: &str) -> Result<Url, UrlRefusal> {
    Guard::strict().parse_target(raw)
}

impl Guard {
    /// Parse `raw` as a fetchable target and judge IP-literal hosts with this guard.
    pub fn parse_target(&self, raw: &str) -> Result<Url, UrlRefusal> {
        if raw.len() > MAX_URL_LEN {
            return Err(UrlRefusal::TooLong {
                len: raw.len(),
                max: MAX_URL_LEN,
            });
        }
        let mut url = Url::parse(raw).map_err(|e| UrlRefusal::Malformed(e.to_string()))?;
        match url.scheme() {
            "http" | "https" => {}
            other => return Err(UrlRefusal::Scheme(other.to_owned())),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(UrlRefusal::Userinfo);
        }
        normalise_name(&mut url)?;
        self.check_url_host(&url)?;
        let len = url.as_str().len();
        if len > MAX_URL_LEN {
            return Err(UrlRefusal::TooLong {
                len,
                max: MAX_URL_LEN,
            });
        }
        Ok(url)
    }

    /// Judge an already parsed URL's host: literals by the guard, local names refused, other
    /// names left for the resolver. The client calls this at every hop.
    pub fn check_url_host(&self, url: &Url) -> Result<(), UrlRefusal> {
        match url.host() {
            None => Err(UrlRefusal::NoHost),
            Some(Host::Ipv4(a)) => self.check_ip(a.into()).map_err(UrlRefusal::Address),
            Some(Host::Ipv6(a)) => self.check_ip(a.into()).map_err(UrlRefusal::Address),
            Some(Host::Domain(name)) => {
                if name.is_empty() {
                    return Err(UrlRefusal::NoHost);
                }
                if is_local_name(name) {
                    return Err(UrlRefusal::LocalName(name.to_owned()));
                }
                Ok(())
            }
        }
    }
}

/// `example.com.` and `example.com` are the same DNS name; keep one spelling so the local-name
/// check, the resolver and the Host header all see the same thing.
fn normalise_name(url: &mut Url) -> Result<(), UrlRefusal> {
    let name = match url.host() {
        Some(Host::Domain(d)) => d.to_owned(),
        Some(_) => return Ok(()),
        None => return Err(UrlRefusal::NoHost),
    };
    let trimmed = name.strip_suffix('.').unwrap_or(&name);
    if trimmed.is_empty() || trimmed.split('.').any(str::is_empty) {
        return Err(UrlRefusal::BadHost(name));
    }
    if trimmed.len() != name.len() {
        url.set_host(Some(trimmed))
            .map_err(|_| UrlRefusal::BadHost(name.clone()))?;
    }
    Ok(())
}

fn is_local_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::guard::Class;

    fn refused(raw: &str) -> UrlRefusal {
        match parse_target(raw) {
            Ok(u) => panic!("{raw:?} should be refused, parsed as {u}"),
            Err(e) => e,
        }
    }

    fn blocked_class(raw: &str) -> Class {
        match refused(raw) {
            UrlRefusal::Address(r) => r.reason.class,
            other => panic!("{raw:?}: expected an address refusal, got {other:?}"),
        }
    }

    fn ok(raw: &str) -> Url {
        parse_target(raw).unwrap_or_else(|e| panic!("{raw:?} should parse: {e}"))
    }

    #[test]
    fn plain_public_urls() {
        assert_eq!(
            ok("https://example.com/a?b=c").as_str(),
            "https://example.com/a?b=c"
        );
        assert_eq!(ok("http://example.com:8080/").port(), Some(8080));
        assert_eq!(ok("http://8.8.8.8/").host_str(), Some("8.8.8.8"));
        assert_eq!(
            ok("http://[2606:4700:4700::1111]/").host_str(),
            Some("[2606:4700:4700::1111]")
        );
        assert_eq!(ok("HTTP://EXAMPLE.COM/").as_str(), "http://example.com/");
        // Any port is fine, including odd ones.
        assert_eq!(ok("http://example.com:22/").port(), Some(22));
        // Surrounding whitespace is trimmed by WHATWG parsing.
        assert_eq!(
            ok("  https://example.com/ ").as_str(),
            "https://example.com/"
        );
    }

    #[test]
    fn odd_ipv4_spellings_are_judged_after_normalisation() {
        for raw in [
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://0x7f.1/",
            "http://0x7f000001/",
            "http://127.1/",
            "http://127.0.1/",
            "http://017700000001/",
            "http://127.0.0.1./",
            "http://%31%32%37.0.0.1/",
            "http://１２７.０.０.１/",
        ] {
            assert_eq!(blocked_class(raw), Class::Loopback, "{raw}");
        }
        assert_eq!(blocked_class("http://0/"), Class::Unspecified);
        assert_eq!(blocked_class("http://0x0a.1/"), Class::Private);
        assert_eq!(blocked_class("http://2852039166/"), Class::Metadata); // 169.254.169.254
        assert_eq!(
            blocked_class("http://0xa9.0xfe.0xa9.0xfe/"),
            Class::Metadata
        );
        // The same tricks on a public address parse to the dotted form.
        assert_eq!(ok("http://134744072/").host_str(), Some("8.8.8.8"));
        assert_eq!(ok("http://0x8.0x8.0x8.0x8/").host_str(), Some("8.8.8.8"));
    }

    #[test]
    fn ipv6_literals() {
        assert_eq!(blocked_class("http://[::1]/"), Class::Loopback);
        assert_eq!(blocked_class("http://[::]/"), Class::Unspecified);
        assert_eq!(blocked_class("http://[::ffff:127.0.0.1]/"), Class::Loopback);
        assert_eq!(
            blocked_class("http://[::ffff:7f00:1]:8080/"),
            Class::Loopback
        );
        assert_eq!(blocked_class("http://[::ffff:a9fe:a9fe]/"), Class::Metadata);
        assert_eq!(blocked_class("http://[64:ff9b::10.0.0.1]/"), Class::Private);
        assert_eq!(blocked_class("http://[2002:7f00:1::1]/"), Class::Loopback);
        assert_eq!(blocked_class("http://[fd00:ec2::254]/"), Class::Metadata);
        assert_eq!(blocked_class("http://[fe80::1]/"), Class::LinkLocal);
        // Zone ids are not valid in WHATWG URLs: rejected as malformed before any judgement.
        for raw in [
            "http://[fe80::1%25eth0]/",
            "http://[fe80::1%eth0]/",
            "http://[::1%251]/",
        ] {
            assert!(
                matches!(
                    refused(raw),
                    UrlRefusal::Malformed(_) | UrlRefusal::Address(_)
                ),
                "{raw}"
            );
        }
    }

    #[test]
    fn local_names() {
        for raw in [
            "http://localhost/",
            "http://localhost./",
            "http://LOCALHOST:8080/",
            "http://foo.localhost/",
            "http://a.b.localhost./x",
        ] {
            assert!(matches!(refused(raw), UrlRefusal::LocalName(_)), "{raw}");
        }
        // A name that merely contains the word is a normal name.
        assert!(parse_target("http://localhost.example.com/").is_ok());
        assert!(parse_target("http://mylocalhost/").is_ok());
    }

    #[test]
    fn trailing_dot_is_normalised() {
        let u = ok("http://example.com./path");
        assert_eq!(u.host_str(), Some("example.com"));
        assert_eq!(u.as_str(), "http://example.com/path");
        assert!(matches!(
            refused("http://example.com../"),
            UrlRefusal::BadHost(_)
        ));
        assert!(matches!(refused("http://a..b/"), UrlRefusal::BadHost(_)));
        assert!(matches!(refused("http://./"), UrlRefusal::BadHost(_)));
    }

    #[test]
    fn userinfo_tricks() {
        for raw in [
            "http://user@example.com/",
            "http://user:pass@example.com/",
            "http://:pass@example.com/",
            "http://example.com@127.0.0.1/",
            "http://8.8.8.8@127.0.0.1/",
        ] {
            assert_eq!(refused(raw), UrlRefusal::Userinfo, "{raw}");
        }
        // The fragment hides nothing: the host is what precedes it.
        assert_eq!(
            blocked_class("http://127.0.0.1#@example.com/"),
            Class::Loopback
        );
        assert_eq!(
            blocked_class("http://127.0.0.1?@example.com/"),
            Class::Loopback
        );
        // Backslashes are slashes in http(s) URLs: the host is example.com, and that is what the
        // client would dial.
        let u = ok("http://example.com\\@127.0.0.1/");
        assert_eq!(u.host_str(), Some("example.com"));
        let u = ok("http:\\\\example.com\\a");
        assert_eq!(u.host_str(), Some("example.com"));
        assert_eq!(blocked_class("http:\\\\127.0.0.1\\a"), Class::Loopback);
    }

    #[test]
    fn schemes_other_than_http_s() {
        for (raw, scheme) in [
            ("ftp://example.com/", "ftp"),
            ("file:///etc/passwd", "file"),
            ("gopher://example.com:70/_x", "gopher"),
            ("data:text/plain,hi", "data"),
            ("javascript:alert(1)", "javascript"),
            ("ws://example.com/", "ws"),
            ("dict://127.0.0.1:11211/", "dict"),
        ] {
            assert_eq!(refused(raw), UrlRefusal::Scheme(scheme.into()), "{raw}");
        }
    }

    #[test]
    fn malformed_or_hostless() {
        for raw in [
            "",
            "   ",
            "example.com",
            "/relative",
            "http://",
            "http://:80/",
            "https://[::1/",
            "http://exa mple.com/",
        ] {
            let e = refused(raw);
            assert!(
                matches!(e, UrlRefusal::Malformed(_) | UrlRefusal::NoHost),
                "{raw:?}: {e:?}"
            );
        }
    }

    #[test]
    fn length_cap() {
        let host = "http://example.com/";
        let at_cap = format!("{host}{}", "a".repeat(MAX_URL_LEN - host.len()));
        assert_eq!(at_cap.len(), MAX_URL_LEN);
        assert!(parse_target(&at_cap).is_ok());
        let over = format!("{at_cap}a");
        assert_eq!(
            refused(&over),
            UrlRefusal::TooLong {
                len: MAX_URL_LEN + 1,
                max: MAX_URL_LEN
            }
        );
        // Percent-encoding during normalisation (space → %20) can lengthen a URL past the cap.
        let spaces = format!("{host}{}x", " ".repeat(MAX_URL_LEN - host.len() - 1));
        assert!(matches!(refused(&spaces), UrlRefusal::TooLong { .. }));
    }

    #[test]
    fn allowlist_applies_to_literals() {
        let g = Guard::new(vec!["127.0.0.1/32".parse().unwrap()]);
        assert!(g.parse_target("http://127.0.0.1:8080/").is_ok());
        assert!(g.parse_target("http://2130706433:8080/").is_ok());
        assert!(g.parse_target("http://[::ffff:127.0.0.1]:8080/").is_ok());
        assert!(g.parse_target("http://127.0.0.2:8080/").is_err());
        assert!(g.parse_target("http://[::1]:8080/").is_err());
        // Local names stay refused whatever the allowlist says.
        assert!(matches!(
            g.parse_target("http://localhost:8080/"),
            Err(UrlRefusal::LocalName(_))
        ));
        // The strict free function ignores allowlists.
        assert!(parse_target("http://127.0.0.1:8080/").is_err());
    }

    #[test]
    fn blocked_versus_bad() {
        assert!(refused("http://127.0.0.1/").is_blocked());
        assert!(refused("http://localhost/").is_blocked());
        assert!(!refused("ftp://example.com/").is_blocked());
        assert!(!refused("http://u@example.com/").is_blocked());
    }

    #[test]
    fn hostile_inputs_never_panic() {
        let pieces = [
            "http://",
            "https://",
            "[",
            "]",
            "::",
            "%",
            "%25",
            "@",
            "#",
            "?",
            "\\",
            "/",
            ".",
            "..",
            "0x",
            "0",
            "127",
            "255",
            "ffff",
            ":",
            "\u{0}",
            "\t",
            "\n",
            "é",
            "xn--",
            "-",
            "[::ffff:",
            "%00",
            "%2e",
            "１",
            "\u{3002}",
            "localhost",
        ];
        let mut accepted = 0u32;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let s = format!("http://{a}{b}{c}");
                    if let Ok(u) = parse_target(&s) {
                        // Whatever got through is a plain http URL with a judged host.
                        accepted += 1;
                        assert_eq!(u.scheme(), "http", "{s:?}");
                        assert!(u.username().is_empty() && u.password().is_none(), "{s:?}");
                        assert!(Guard::strict().check_url_host(&u).is_ok(), "{s:?}");
                    }
                }
            }
        }
        assert!(accepted > 0, "the corpus should contain some plain names");
    }
}
