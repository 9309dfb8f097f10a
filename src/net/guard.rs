//! The outbound guard: the one pure decision on whether an address may be dialled.
//!
//! [`classify`] is the whole security verdict (in the manner of Stripe's smokescreen): it knows the
//! IANA special-purpose registries for IPv4 and IPv6, cloud metadata addresses, and the IPv6 forms
//! that carry an IPv4 address inside them. [`Guard`] adds the operator's allowlist on top. Nothing
//! else in the service decides whether an address may be reached; the resolver, the HTTP client and
//! the browser proxy all ask the guard.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Why an address class is refused. The code is stable (logs, metrics, error bodies).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// 0.0.0.0 and `::` — on Linux dialling these reaches the local host.
    Unspecified,
    /// 0.0.0.0/8 other than 0.0.0.0 itself.
    ThisNetwork,
    Loopback,
    /// RFC 1918 private ranges.
    Private,
    LinkLocal,
    /// 100.64.0.0/10, shared address space behind carrier-grade NAT.
    Cgnat,
    Multicast,
    Broadcast,
    Documentation,
    Benchmarking,
    /// Reserved or deprecated space that no public host lives in.
    Reserved,
    /// Cloud instance metadata and platform services (IMDS and friends).
    Metadata,
    /// fc00::/7.
    UniqueLocal,
    /// fec0::/10 (deprecated, still routed by some stacks).
    SiteLocal,
    /// 100::/64, discard-only.
    Discard,
    /// 192.0.0.0/24 and 2001::/23: IETF protocol assignments that are not globally reachable.
    ProtocolAssignment,
    /// 64:ff9b:1::/48, the local-use NAT64 prefix: not globally reachable.
    LocalNat64,
}

impl Class {
    /// Stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            Class::Unspecified => "unspecified",
            Class::ThisNetwork => "this_network",
            Class::Loopback => "loopback",
            Class::Private => "private",
            Class::LinkLocal => "link_local",
            Class::Cgnat => "cgnat",
            Class::Multicast => "multicast",
            Class::Broadcast => "broadcast",
            Class::Documentation => "documentation",
            Class::Benchmarking => "benchmarking",
            Class::Reserved => "reserved",
            Class::Metadata => "metadata",
            Class::UniqueLocal => "unique_local",
            Class::SiteLocal => "site_local",
            Class::Discard => "discard",
            Class::ProtocolAssignment => "protocol_assignment",
            Class::LocalNat64 => "local_nat64",
        }
    }

    /// Words for a human message: "a loopback address".
    pub fn describe(self) -> &'static str {
        match self {
            Class::Unspecified => "an unspecified (0.0.0.0 or ::) address",
            Class::ThisNetwork => "a 'this network' address",
            Class::Loopback => "a loopback address",
            Class::Private => "a private network address",
            Class::LinkLocal => "a link-local address",
            Class::Cgnat => "a carrier-grade NAT (shared) address",
            Class::Multicast => "a multicast address",
            Class::Broadcast => "the broadcast address",
            Class::Documentation => "a documentation-only address",
            Class::Benchmarking => "a benchmarking-only address",
            Class::Reserved => "a reserved address",
            Class::Metadata => "a cloud metadata service address",
            Class::UniqueLocal => "a unique-local (private IPv6) address",
            Class::SiteLocal => "a site-local IPv6 address",
            Class::Discard => "a discard-only IPv6 address",
            Class::ProtocolAssignment => "an address reserved for IETF protocols",
            Class::LocalNat64 => "a local-use NAT64 address",
        }
    }
}

/// The IPv6 forms that carry an IPv4 address which [`classify`] unwraps and judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Embedding {
    /// `::ffff:a.b.c.d` — the kernel dials the IPv4 address itself.
    Ipv4Mapped,
    /// `::a.b.c.d` (deprecated).
    Ipv4Compatible,
    /// `64:ff9b::/96`, the well-known NAT64 prefix.
    Nat64,
    /// `64:ff9b:1::/48` with the IPv4 address in the last 32 bits.
    LocalNat64,
    /// `2002::/16`, 6to4.
    SixToFour,
    /// `2001::/32` Teredo: the client address (bitwise NOT of the last 32 bits).
    TeredoClient,
    /// `2001::/32` Teredo: the server address (bits 32..64).
    TeredoServer,
    /// A NAT64 prefix of the operator's own network (`guard.nat64_prefixes`), the IPv4 address
    /// where RFC 6052 puts it for the prefix's length.
    OperatorNat64,
}

impl Embedding {
    pub fn code(self) -> &'static str {
        match self {
            Embedding::Ipv4Mapped => "ipv4_mapped",
            Embedding::Ipv4Compatible => "ipv4_compatible",
            Embedding::Nat64 => "nat64",
            Embedding::LocalNat64 => "local_nat64",
            Embedding::SixToFour => "6to4",
            Embedding::TeredoClient => "teredo_client",
            Embedding::TeredoServer => "teredo_server",
            Embedding::OperatorNat64 => "operator_nat64",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Embedding::Ipv4Mapped => "an IPv4-mapped IPv6 address",
            Embedding::Ipv4Compatible => "an IPv4-compatible IPv6 address",
            Embedding::Nat64 => "a NAT64 address",
            Embedding::LocalNat64 => "a local-use NAT64 address",
            Embedding::SixToFour => "a 6to4 address",
            Embedding::TeredoClient => "a Teredo address (client part)",
            Embedding::TeredoServer => "a Teredo address (server part)",
            Embedding::OperatorNat64 => "an address of the network's NAT64 prefix",
        }
    }
}

/// An IPv4 address found inside an IPv6 one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Embedded {
    pub form: Embedding,
    pub v4: Ipv4Addr,
}

/// Why an address is refused: its class, and the IPv6 wrapping it was found in, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Reason {
    pub class: Class,
    pub embedded: Option<Embedded>,
}

impl Reason {
    fn plain(class: Class) -> Self {
        Reason {
            class,
            embedded: None,
        }
    }

    /// The stable code of the class ("loopback", "metadata", …), whatever the wrapping.
    pub fn code(&self) -> &'static str {
        self.class.code()
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.class.describe())?;
        if let Some(e) = self.embedded {
            write!(f, " ({} inside {})", e.v4, e.form.describe())?;
        }
        Ok(())
    }
}

/// The verdict on one address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    Public,
    Refused(Reason),
}

impl Verdict {
    pub fn is_public(&self) -> bool {
        matches!(self, Verdict::Public)
    }
}

/// `None` in a table row marks a globally reachable exception inside a refused block.
type Row4 = (Ipv4Net, Option<Class>);
type Row6 = (Ipv6Net, Option<Class>);

const fn v4(a: u8, b: u8, c: u8, d: u8, len: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), len)
}

/// First matching row wins, so specific rows come before the blocks that contain them.
/// Sources: IANA IPv4 Special-Purpose Address Registry, RFC 5771 (multicast), RFC 1112 (240/4),
/// and the metadata endpoints of the large clouds.
const V4_TABLE: &[Row4] = &[
    // Metadata first so the reason says what the address really is.
    (v4(169, 254, 169, 0, 24), Some(Class::Metadata)), // AWS/GCP/Azure/OpenStack IMDS, AWS DNS/NTP
    (v4(169, 254, 170, 0, 24), Some(Class::Metadata)), // AWS ECS task and EKS pod identity
    (v4(169, 254, 0, 23, 32), Some(Class::Metadata)),  // Tencent Cloud
    (v4(100, 100, 100, 200, 32), Some(Class::Metadata)), // Alibaba Cloud
    (v4(192, 0, 0, 192, 32), Some(Class::Metadata)),   // Oracle Cloud
    (v4(168, 63, 129, 16, 32), Some(Class::Metadata)), // Azure WireServer: a public address!
    (v4(0, 0, 0, 0, 32), Some(Class::Unspecified)),
    (v4(0, 0, 0, 0, 8), Some(Class::ThisNetwork)),
    (v4(10, 0, 0, 0, 8), Some(Class::Private)),
    (v4(100, 64, 0, 0, 10), Some(Class::Cgnat)),
    (v4(127, 0, 0, 0, 8), Some(Class::Loopback)),
    (v4(169, 254, 0, 0, 16), Some(Class::LinkLocal)),
    (v4(172, 16, 0, 0, 12), Some(Class::Private)),
    (v4(192, 0, 0, 9, 32), None),  // PCP anycast: globally reachable
    (v4(192, 0, 0, 10, 32), None), // TURN anycast: globally reachable
    (v4(192, 0, 0, 0, 24), Some(Class::ProtocolAssignment)),
    (v4(192, 0, 2, 0, 24), Some(Class::Documentation)),
    (v4(192, 88, 99, 0, 24), Some(Class::Reserved)), // deprecated 6to4 relay anycast
    (v4(192, 168, 0, 0, 16), Some(Class::Private)),
    (v4(198, 18, 0, 0, 15), Some(Class::Benchmarking)),
    (v4(198, 51, 100, 0, 24), Some(Class::Documentation)),
    (v4(203, 0, 113, 0, 24), Some(Class::Documentation)),
    (v4(224, 0, 0, 0, 4), Some(Class::Multicast)),
    (v4(255, 255, 255, 255, 32), Some(Class::Broadcast)),
    (v4(240, 0, 0, 0, 4), Some(Class::Reserved)),
];

#[allow(clippy::too_many_arguments)]
const fn v6(a: u16, b: u16, c: u16, d: u16, e: u16, f: u16, g: u16, h: u16, len: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), len)
}

/// Rows for addresses that are not one of the IPv4-carrying forms (those are handled first).
/// Source: IANA IPv6 Special-Purpose Address Registry and IPv6 Address Space registry.
const V6_TABLE: &[Row6] = &[
    (
        v6(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0, 32),
        Some(Class::Metadata),
    ), // AWS IMDS, DNS, NTP
    (
        v6(0xfd20, 0xce, 0, 0, 0, 0, 0, 0x254, 128),
        Some(Class::Metadata),
    ), // GCP metadata
    (v6(0x100, 0, 0, 0, 0, 0, 0, 0, 64), Some(Class::Discard)),
    (v6(0x100, 0, 0, 1, 0, 0, 0, 0, 64), Some(Class::Reserved)), // dummy IPv6 prefix
    (v6(0x2001, 0x1, 0, 0, 0, 0, 0, 1, 128), None),              // PCP anycast
    (v6(0x2001, 0x1, 0, 0, 0, 0, 0, 2, 128), None),              // TURN anycast
    (v6(0x2001, 0x1, 0, 0, 0, 0, 0, 3, 128), None),              // DNS-SD SRP anycast
    (v6(0x2001, 0x3, 0, 0, 0, 0, 0, 0, 32), None),               // AMT
    (v6(0x2001, 0x4, 0x112, 0, 0, 0, 0, 0, 48), None),           // AS112-v6
    (v6(0x2001, 0x20, 0, 0, 0, 0, 0, 0, 28), None),              // ORCHIDv2
    (v6(0x2001, 0x30, 0, 0, 0, 0, 0, 0, 28), None),              // drone remote ID
    (
        v6(0x2001, 0x2, 0, 0, 0, 0, 0, 0, 48),
        Some(Class::Benchmarking),
    ),
    (
        v6(0x2001, 0x10, 0, 0, 0, 0, 0, 0, 28),
        Some(Class::Reserved),
    ), // ORCHID (deprecated)
    (
        v6(0x2001, 0, 0, 0, 0, 0, 0, 0, 23),
        Some(Class::ProtocolAssignment),
    ),
    (
        v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0, 32),
        Some(Class::Documentation),
    ),
    (
        v6(0x3fff, 0, 0, 0, 0, 0, 0, 0, 20),
        Some(Class::Documentation),
    ),
    (v6(0x5f00, 0, 0, 0, 0, 0, 0, 0, 16), Some(Class::Reserved)), // SRv6 SIDs
    (v6(0xfc00, 0, 0, 0, 0, 0, 0, 0, 7), Some(Class::UniqueLocal)),
    (v6(0xfe80, 0, 0, 0, 0, 0, 0, 0, 10), Some(Class::LinkLocal)),
    (v6(0xfec0, 0, 0, 0, 0, 0, 0, 0, 10), Some(Class::SiteLocal)),
    (v6(0xff00, 0, 0, 0, 0, 0, 0, 0, 8), Some(Class::Multicast)),
];

/// 2000::/3 is the only IPv6 block IANA hands out as global unicast; everything else outside the
/// special rows above is reserved.
const GLOBAL_UNICAST: Ipv6Net = v6(0x2000, 0, 0, 0, 0, 0, 0, 0, 3);

/// The security decision: may this address be dialled?
pub fn classify(ip: IpAddr) -> Verdict {
    classify_with(ip, &[])
}

/// [`classify`] on a network whose NAT64 translator also listens on `nat64` prefixes of its
/// own (`guard.nat64_prefixes`): an address under one of them reaches the IPv4 address it
/// carries, so that address is what is judged, exactly as for the well-known `64:ff9b::/96`.
/// Without this, a private IPv4 target wrapped in the operator's prefix would be judged by the
/// prefix alone (often public space), and one in a unique-local prefix refused for the wrong
/// reason. Prefixes are RFC 6052 ones (see [`nat64_prefix_error`]).
pub fn classify_with(ip: IpAddr, nat64: &[Ipv6Net]) -> Verdict {
    match ip {
        IpAddr::V4(a) => match classify_v4(a) {
            None => Verdict::Public,
            Some(class) => Verdict::Refused(Reason::plain(class)),
        },
        IpAddr::V6(a) => {
            if let Some(v4) = nat64.iter().find_map(|p| nat64_embedded(a, p)) {
                if !a.is_loopback() && !a.is_unspecified() {
                    return judge_embedded(Embedding::OperatorNat64, v4);
                }
            }
            classify_v6(a)
        }
    }
}

/// Prefix lengths RFC 6052 §2.2 defines an address format for.
pub const NAT64_PREFIX_LENGTHS: [u8; 6] = [32, 40, 48, 56, 64, 96];

/// Why `net` cannot be a NAT64 prefix, if so: an RFC 6052 length, and not a block that already
/// means something else to the guard (IPv4-mapped/-compatible space, loopback, multicast).
pub fn nat64_prefix_error(net: &Ipv6Net) -> Option<String> {
    if !NAT64_PREFIX_LENGTHS.contains(&net.prefix_len()) {
        return Some(format!(
            "{net}: a NAT64 prefix is /32, /40, /48, /56, /64 or /96 (RFC 6052)"
        ));
    }
    let reserved = [
        v6(0, 0, 0, 0, 0, 0, 0, 0, 96),      // IPv4-compatible, ::, ::1
        v6(0, 0, 0, 0, 0, 0xffff, 0, 0, 96), // IPv4-mapped
        v6(0xff00, 0, 0, 0, 0, 0, 0, 0, 8),  // multicast
    ];
    if reserved
        .iter()
        .any(|r| r.contains(&net.network()) || net.contains(&r.network()))
    {
        return Some(format!("{net} overlaps addresses that are not NAT64"));
    }
    None
}

/// The IPv4 address an address under NAT64 prefix `prefix` carries (RFC 6052 §2.2: after the
/// prefix, skipping bits 64..72, which are zero), or None when `ip` is not under it or the
/// length has no defined format.
pub fn nat64_embedded(ip: Ipv6Addr, prefix: &Ipv6Net) -> Option<Ipv4Addr> {
    if !prefix.contains(&ip) || !NAT64_PREFIX_LENGTHS.contains(&prefix.prefix_len()) {
        return None;
    }
    let b = ip.octets();
    let start = usize::from(prefix.prefix_len() / 8);
    let v4: Vec<u8> = (start..16)
        .filter(|&i| i != 8)
        .take(4)
        .map(|i| b[i])
        .collect();
    Some(Ipv4Addr::new(v4[0], v4[1], v4[2], v4[3]))
}

fn classify_v4(ip: Ipv4Addr) -> Option<Class> {
    V4_TABLE
        .iter()
        .find(|(net, _)| net.contains(&ip))
        .and_then(|(_, class)| *class)
}

fn judge_embedded(form: Embedding, v4: Ipv4Addr) -> Verdict {
    match classify_v4(v4) {
        None => Verdict::Public,
        Some(class) => Verdict::Refused(Reason {
            class,
            embedded: Some(Embedded { form, v4 }),
        }),
    }
}

fn classify_v6(ip: Ipv6Addr) -> Verdict {
    let n = u128::from(ip);
    let low32 = Ipv4Addr::from(n as u32);
    let prefix = |net: Ipv6Net| net.contains(&ip);

    if ip.is_unspecified() {
        return Verdict::Refused(Reason::plain(Class::Unspecified));
    }
    if ip.is_loopback() {
        return Verdict::Refused(Reason::plain(Class::Loopback));
    }
    if prefix(v6(0, 0, 0, 0, 0, 0xffff, 0, 0, 96)) {
        return judge_embedded(Embedding::Ipv4Mapped, low32);
    }
    if prefix(v6(0, 0, 0, 0, 0, 0, 0, 0, 96)) {
        return judge_embedded(Embedding::Ipv4Compatible, low32);
    }
    if prefix(v6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0, 96)) {
        return judge_embedded(Embedding::Nat64, low32);
    }
    if prefix(v6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0, 48)) {
        // Where the IPv4 address sits depends on a local prefix length we cannot know, and IANA
        // lists the block as not globally reachable: refused either way. The embedded reason is
        // reported when the usual /96 reading finds a refused IPv4 address.
        return match judge_embedded(Embedding::LocalNat64, low32) {
            refused @ Verdict::Refused(_) => refused,
            Verdict::Public => Verdict::Refused(Reason::plain(Class::LocalNat64)),
        };
    }
    if prefix(v6(0x2002, 0, 0, 0, 0, 0, 0, 0, 16)) {
        return judge_embedded(Embedding::SixToFour, Ipv4Addr::from((n >> 80) as u32));
    }
    if prefix(v6(0x2001, 0, 0, 0, 0, 0, 0, 0, 32)) {
        // Teredo: packets end at the client's mapped address and are relayed via the server; a
        // genuine Teredo address has both public, so both must be.
        let client = Ipv4Addr::from(!(n as u32));
        let server = Ipv4Addr::from((n >> 64) as u32);
        return match judge_embedded(Embedding::TeredoClient, client) {
            Verdict::Public => judge_embedded(Embedding::TeredoServer, server),
            refused => refused,
        };
    }
    if let Some((_, class)) = V6_TABLE.iter().find(|(net, _)| net.contains(&ip)) {
        return match class {
            None => Verdict::Public,
            Some(class) => Verdict::Refused(Reason::plain(*class)),
        };
    }
    if !GLOBAL_UNICAST.contains(&ip) {
        return Verdict::Refused(Reason::plain(Class::Reserved));
    }
    Verdict::Public
}

/// The guard said no to this address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Refusal {
    pub addr: IpAddr,
    pub reason: Reason,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is {}", self.addr, self.reason)
    }
}

/// The verdict plus the operator's allowlist (empty by default; tests allow `127.0.0.1/32`).
///
/// Allowlist matching: an address is allowed when it lies in an allowlisted CIDR, or when it is
/// IPv4-mapped (`::ffff:a.b.c.d`) and its IPv4 address lies in one, because the kernel dials a
/// mapped address as that very IPv4 address: it is the same destination. Allowlist entries written
/// as mapped IPv6 (`::ffff:127.0.0.1/128`) are likewise stored as their IPv4 network. No other
/// IPv6 wrapping inherits an IPv4 allowlist entry: a NAT64, 6to4 or Teredo address is delivered
/// through a translator or relay, a different path the operator did not list. An address admitted
/// by the allowlist skips [`classify`] entirely, metadata included: the allowlist is the
/// operator's explicit word.
///
/// The operator's NAT64 prefixes (`guard.nat64_prefixes`, empty by default) are unwrapped by
/// [`classify_with`] like the well-known one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guard {
    allow: Vec<IpNet>,
    nat64: Vec<Ipv6Net>,
}

impl Guard {
    pub fn new(allow_cidrs: Vec<IpNet>) -> Self {
        let allow = allow_cidrs.into_iter().map(canonical_net).collect();
        Guard {
            allow,
            nat64: Vec::new(),
        }
    }

    /// This guard on a network with these NAT64 prefixes of its own (checked by the config
    /// loader with [`nat64_prefix_error`]; a prefix without an RFC 6052 format is ignored).
    pub fn with_nat64(mut self, prefixes: Vec<Ipv6Net>) -> Self {
        self.nat64 = prefixes.into_iter().map(|p| p.trunc()).collect();
        self
    }

    /// A guard with no allowlist: only public addresses pass.
    pub fn strict() -> Self {
        Guard::default()
    }

    /// The allowlist as stored (networks truncated, mapped IPv6 entries turned into IPv4).
    pub fn allowlist(&self) -> &[IpNet] {
        &self.allow
    }

    pub fn is_allowlisted(&self, ip: IpAddr) -> bool {
        let canonical = ip.to_canonical();
        self.allow
            .iter()
            .any(|net| net.contains(&ip) || net.contains(&canonical))
    }

    /// May this address be dialled?
    pub fn check_ip(&self, ip: IpAddr) -> Result<(), Refusal> {
        if self.is_allowlisted(ip) {
            return Ok(());
        }
        match classify_with(ip, &self.nat64) {
            Verdict::Public => Ok(()),
            Verdict::Refused(reason) => Err(Refusal { addr: ip, reason }),
        }
    }
}

/// `::ffff:a.b.c.d/n` (n ≥ 96) → `a.b.c.d/(n-96)`; every network truncated to its base.
fn canonical_net(net: IpNet) -> IpNet {
    if let IpNet::V6(n6) = net {
        if n6.prefix_len() >= 96 {
            if let Some(a) = n6.network().to_ipv4_mapped() {
                if let Ok(n4) = Ipv4Net::new(a, n6.prefix_len() - 96) {
                    return IpNet::V4(n4.trunc());
                }
            }
        }
    }
    net.trunc()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse()
            .unwrap_or_else(|e| panic!("bad test address {s}: {e}"))
    }

    fn refused_as(s: &str) -> Reason {
        match classify(ip(s)) {
            Verdict::Refused(r) => r,
            Verdict::Public => panic!("{s} should be refused"),
        }
    }

    fn assert_class(s: &str, class: Class) {
        let r = refused_as(s);
        assert_eq!(r.class, class, "{s}: got {r}");
    }

    fn assert_public(s: &str) {
        assert_eq!(classify(ip(s)), Verdict::Public, "{s} should be public");
    }

    #[test]
    fn public_v4_and_v6() {
        for s in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.216.34",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "191.255.255.255",
            "192.0.0.9",
            "192.0.0.10",
            "192.0.1.1",
            "192.31.196.1",
            "192.52.193.1",
            "192.167.255.255",
            "192.169.0.0",
            "192.175.48.1",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "2620:4f:8000::1",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:30::1",
        ] {
            assert_public(s);
        }
    }

    #[test]
    fn v4_special_ranges() {
        let cases = [
            ("0.0.0.0", Class::Unspecified),
            ("0.1.2.3", Class::ThisNetwork),
            ("0.255.255.255", Class::ThisNetwork),
            ("10.0.0.1", Class::Private),
            ("10.255.255.255", Class::Private),
            ("100.64.0.0", Class::Cgnat),
            ("100.127.255.255", Class::Cgnat),
            ("127.0.0.1", Class::Loopback),
            ("127.0.0.2", Class::Loopback),
            ("127.255.255.254", Class::Loopback),
            ("169.254.0.1", Class::LinkLocal),
            ("169.254.255.255", Class::LinkLocal),
            ("172.16.0.1", Class::Private),
            ("172.31.255.255", Class::Private),
            ("192.0.0.1", Class::ProtocolAssignment),
            ("192.0.0.8", Class::ProtocolAssignment),
            ("192.0.0.170", Class::ProtocolAssignment),
            ("192.0.2.1", Class::Documentation),
            ("192.88.99.1", Class::Reserved),
            ("192.168.0.1", Class::Private),
            ("192.168.255.255", Class::Private),
            ("198.18.0.1", Class::Benchmarking),
            ("198.19.255.255", Class::Benchmarking),
            ("198.51.100.7", Class::Documentation),
            ("203.0.113.9", Class::Documentation),
            ("224.0.0.1", Class::Multicast),
            ("239.255.255.250", Class::Multicast),
            ("240.0.0.1", Class::Reserved),
            ("254.255.255.255", Class::Reserved),
            ("255.255.255.255", Class::Broadcast),
        ];
        for (s, class) in cases {
            assert_class(s, class);
        }
    }

    #[test]
    fn metadata_addresses() {
        for s in [
            "169.254.169.254",
            "169.254.169.123",
            "169.254.169.253",
            "169.254.170.2",
            "169.254.170.23",
            "169.254.0.23",
            "100.100.100.200",
            "192.0.0.192",
            "168.63.129.16",
            "fd00:ec2::254",
            "fd00:ec2::23",
            "fd20:ce::254",
        ] {
            assert_class(s, Class::Metadata);
        }
        // Neighbours of the public Azure address stay public.
        assert_public("168.63.129.15");
        assert_public("168.63.129.17");
    }

    #[test]
    fn v6_special_ranges() {
        let cases = [
            ("::", Class::Unspecified),
            ("::1", Class::Loopback),
            ("100::1", Class::Discard),
            ("100:0:0:1::1", Class::Reserved),
            ("2001:2::1", Class::Benchmarking),
            ("2001:10::1", Class::Reserved),
            ("2001:100::1", Class::ProtocolAssignment),
            ("2001:1::4", Class::ProtocolAssignment),
            ("2001:db8::1", Class::Documentation),
            ("3fff::1", Class::Documentation),
            ("3fff:fff::1", Class::Documentation),
            ("5f00::1", Class::Reserved),
            ("fc00::1", Class::UniqueLocal),
            ("fd12:3456::1", Class::UniqueLocal),
            ("fe80::1", Class::LinkLocal),
            ("febf::1", Class::LinkLocal),
            ("fec0::1", Class::SiteLocal),
            ("ff02::1", Class::Multicast),
            ("ff0e::1", Class::Multicast),
            // Outside 2000::/3: nothing public lives there.
            ("4000::1", Class::Reserved),
            ("e000::1", Class::Reserved),
            ("1::1", Class::Reserved),
            // SIIT IPv4-translated ::ffff:0:a.b.c.d is not the mapped form.
            ("::ffff:0:808:808", Class::Reserved),
        ];
        for (s, class) in cases {
            assert_class(s, class);
        }
    }

    fn assert_embedded(s: &str, form: Embedding, v4: &str, class: Class) {
        let r = refused_as(s);
        assert_eq!(r.class, class, "{s}: {r}");
        assert_eq!(
            r.embedded,
            Some(Embedded {
                form,
                v4: v4.parse().unwrap()
            }),
            "{s}"
        );
    }

    #[test]
    fn ipv4_mapped_and_compatible() {
        assert_embedded(
            "::ffff:127.0.0.1",
            Embedding::Ipv4Mapped,
            "127.0.0.1",
            Class::Loopback,
        );
        assert_embedded(
            "::ffff:7f00:2",
            Embedding::Ipv4Mapped,
            "127.0.0.2",
            Class::Loopback,
        );
        assert_embedded(
            "::ffff:169.254.169.254",
            Embedding::Ipv4Mapped,
            "169.254.169.254",
            Class::Metadata,
        );
        assert_embedded(
            "::ffff:10.1.2.3",
            Embedding::Ipv4Mapped,
            "10.1.2.3",
            Class::Private,
        );
        assert_embedded(
            "::ffff:0.0.0.0",
            Embedding::Ipv4Mapped,
            "0.0.0.0",
            Class::Unspecified,
        );
        assert_public("::ffff:8.8.8.8");
        assert_embedded(
            "::127.0.0.1",
            Embedding::Ipv4Compatible,
            "127.0.0.1",
            Class::Loopback,
        );
        assert_embedded(
            "::192.168.1.1",
            Embedding::Ipv4Compatible,
            "192.168.1.1",
            Class::Private,
        );
        assert_embedded(
            "::0.0.0.2",
            Embedding::Ipv4Compatible,
            "0.0.0.2",
            Class::ThisNetwork,
        );
        assert_public("::8.8.8.8");
    }

    fn net6(s: &str) -> Ipv6Net {
        s.parse().unwrap()
    }

    #[test]
    fn rfc6052_formats_put_the_ipv4_address_where_the_rfc_says() {
        // RFC 6052 §2.4, the table of examples: 192.0.2.33 in each prefix length.
        for (prefix, addr) in [
            ("2001:db8::/32", "2001:db8:c000:221::"),
            ("2001:db8:100::/40", "2001:db8:1c0:2:21::"),
            ("2001:db8:122::/48", "2001:db8:122:c000:2:2100::"),
            ("2001:db8:122:300::/56", "2001:db8:122:3c0:0:221::"),
            ("2001:db8:122:344::/64", "2001:db8:122:344:c0:2:2100:0"),
            ("2001:db8:122:344::/96", "2001:db8:122:344::192.0.2.33"),
        ] {
            let ip: Ipv6Addr = addr.parse().unwrap();
            assert_eq!(
                nat64_embedded(ip, &net6(prefix)),
                Some(Ipv4Addr::new(192, 0, 2, 33)),
                "{prefix}"
            );
        }
        let outside: Ipv6Addr = "2001:db9::1".parse().unwrap();
        assert_eq!(nat64_embedded(outside, &net6("2001:db8::/32")), None);
        let ip: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(
            nat64_embedded(ip, &net6("2001:db8::/33")),
            None,
            "no format"
        );
    }

    #[test]
    fn operator_nat64_prefixes_are_unwrapped_and_judged() {
        let prefixes = [net6("2a00:1450:4001:100::/96"), net6("fd64::/64")];
        let judge = |s: &str| classify_with(ip(s), &prefixes);
        // A public prefix carrying a private or metadata address: refused for what it carries.
        for (s, v4, class) in [
            ("2a00:1450:4001:100::10.0.0.1", "10.0.0.1", Class::Private),
            (
                "2a00:1450:4001:100::127.0.0.1",
                "127.0.0.1",
                Class::Loopback,
            ),
            (
                "2a00:1450:4001:100::169.254.169.254",
                "169.254.169.254",
                Class::Metadata,
            ),
            // fd64::/64 carries 192.168.1.1 in bits 72..104
            ("fd64::c0:a801:100:0", "192.168.1.1", Class::Private),
        ] {
            match judge(s) {
                Verdict::Refused(r) => {
                    assert_eq!(r.class, class, "{s}");
                    let e = r.embedded.expect("embedded");
                    assert_eq!(e.form, Embedding::OperatorNat64, "{s}");
                    assert_eq!(e.v4, v4.parse::<Ipv4Addr>().unwrap(), "{s}");
                }
                Verdict::Public => panic!("{s} should be refused"),
            }
        }
        // ... and a public IPv4 address through it is public, even in a unique-local prefix.
        assert_eq!(judge("2a00:1450:4001:100::8.8.8.8"), Verdict::Public);
        assert_eq!(judge("fd64::8:808:800:0"), Verdict::Public);
        // Without the operator's word the same addresses are judged as plain IPv6.
        assert_eq!(
            classify(ip("2a00:1450:4001:100::10.0.0.1")),
            Verdict::Public
        );
        assert_class("fd64::8:808:800:0", Class::UniqueLocal);
        // The well-known forms are unchanged.
        assert!(!judge("64:ff9b::10.0.0.1").is_public());
        assert!(!judge("::1").is_public());
        // The Guard carries them.
        let g = Guard::strict().with_nat64(prefixes.to_vec());
        assert!(g.check_ip(ip("2a00:1450:4001:100::a00:1")).is_err());
        assert!(g.check_ip(ip("2a00:1450:4001:100::808:808")).is_ok());
    }

    #[test]
    fn nat64_prefixes_must_have_an_rfc6052_format() {
        assert_eq!(nat64_prefix_error(&net6("2001:db8:64::/96")), None);
        assert_eq!(nat64_prefix_error(&net6("fd00:64::/48")), None);
        assert!(nat64_prefix_error(&net6("2001:db8::/33")).is_some());
        assert!(nat64_prefix_error(&net6("::/96")).is_some());
        assert!(nat64_prefix_error(&net6("::ffff:0:0/96")).is_some());
        assert!(nat64_prefix_error(&net6("ff00::/32")).is_some());
    }

    #[test]
    fn nat64() {
        assert_embedded(
            "64:ff9b::127.0.0.1",
            Embedding::Nat64,
            "127.0.0.1",
            Class::Loopback,
        );
        assert_embedded(
            "64:ff9b::a00:1",
            Embedding::Nat64,
            "10.0.0.1",
            Class::Private,
        );
        assert_embedded(
            "64:ff9b::169.254.169.254",
            Embedding::Nat64,
            "169.254.169.254",
            Class::Metadata,
        );
        assert_public("64:ff9b::8.8.8.8");
        // Local-use prefix: refused whatever it carries, with the embedded reason when refused.
        assert_embedded(
            "64:ff9b:1::127.0.0.1",
            Embedding::LocalNat64,
            "127.0.0.1",
            Class::Loopback,
        );
        assert_embedded(
            "64:ff9b:1:abcd::10.0.0.1",
            Embedding::LocalNat64,
            "10.0.0.1",
            Class::Private,
        );
        assert_class("64:ff9b:1::8.8.8.8", Class::LocalNat64);
        assert_eq!(refused_as("64:ff9b:1::8.8.8.8").embedded, None);
    }

    #[test]
    fn six_to_four() {
        // 2002:AABB:CCDD::/48 carries AA.BB.CC.DD.
        assert_embedded(
            "2002:a00:1::1",
            Embedding::SixToFour,
            "10.0.0.1",
            Class::Private,
        );
        assert_embedded(
            "2002:7f00:1::",
            Embedding::SixToFour,
            "127.0.0.1",
            Class::Loopback,
        );
        assert_embedded(
            "2002:a9fe:a9fe::1",
            Embedding::SixToFour,
            "169.254.169.254",
            Class::Metadata,
        );
        assert_public("2002:808:808::1");
        assert_public("2002:808:808:ffff:ffff:ffff:ffff:ffff");
    }

    #[test]
    fn teredo() {
        // Server 65.54.227.120 (public), client = NOT of last 32 bits.
        // Client 127.0.0.1 → NOT = 0x80ff_fffe → last groups 80ff:fffe.
        assert_embedded(
            "2001:0:4136:e378:8000:63bf:80ff:fffe",
            Embedding::TeredoClient,
            "127.0.0.1",
            Class::Loopback,
        );
        // Client 10.0.0.1 → NOT = 0xf5ff_fffe.
        assert_embedded(
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            Embedding::TeredoClient,
            "10.0.0.1",
            Class::Private,
        );
        // Client 8.8.8.8 → NOT = 0xf7f7_f7f7, public server → public.
        assert_public("2001:0:4136:e378:8000:63bf:f7f7:f7f7");
        // Public client but a private server part.
        assert_embedded(
            "2001:0:c0a8:101:8000:63bf:f7f7:f7f7",
            Embedding::TeredoServer,
            "192.168.1.1",
            Class::Private,
        );
        // The raw last 32 bits reading 127.0.0.1 means client 128.255.255.254: public.
        assert_public("2001:0:4136:e378:8000:63bf:7f00:1");
    }

    #[test]
    fn reason_codes_and_messages() {
        let r = refused_as("64:ff9b::127.0.0.1");
        assert_eq!(r.code(), "loopback");
        assert_eq!(
            r.to_string(),
            "a loopback address (127.0.0.1 inside a NAT64 address)"
        );
        assert_eq!(refused_as("169.254.169.254").code(), "metadata");
        assert_eq!(refused_as("100.64.1.1").code(), "cgnat");
        assert_eq!(refused_as("fd00::1").code(), "unique_local");
    }

    #[test]
    fn guard_without_allowlist_is_classify() {
        let g = Guard::strict();
        assert!(g.check_ip(ip("8.8.8.8")).is_ok());
        let refusal = g.check_ip(ip("127.0.0.1")).unwrap_err();
        assert_eq!(refusal.addr, ip("127.0.0.1"));
        assert_eq!(refusal.reason.class, Class::Loopback);
        assert_eq!(refusal.to_string(), "127.0.0.1 is a loopback address");
    }

    #[test]
    fn allowlist_admits_exactly_what_it_lists() {
        let g = Guard::new(vec!["127.0.0.1/32".parse().unwrap()]);
        assert!(g.check_ip(ip("127.0.0.1")).is_ok());
        assert!(g.check_ip(ip("8.8.8.8")).is_ok());
        assert!(g.check_ip(ip("127.0.0.2")).is_err());
        assert!(g.check_ip(ip("::1")).is_err());
        // Mapped form: the same socket destination, so the same decision.
        assert!(g.check_ip(ip("::ffff:127.0.0.1")).is_ok());
        assert!(g.check_ip(ip("::ffff:127.0.0.2")).is_err());
        // Translated or tunnelled forms travel elsewhere: not covered by the IPv4 entry.
        assert!(g.check_ip(ip("::127.0.0.1")).is_err());
        assert!(g.check_ip(ip("64:ff9b::127.0.0.1")).is_err());
        assert!(g.check_ip(ip("2002:7f00:1::1")).is_err());
        assert!(g
            .check_ip(ip("2001:0:4136:e378:8000:63bf:80ff:fffe"))
            .is_err());
    }

    #[test]
    fn allowlist_entries_are_canonicalised() {
        let g = Guard::new(vec![
            "::ffff:10.0.0.0/104".parse().unwrap(),
            "192.168.1.7/24".parse().unwrap(),
            "fd00::/8".parse().unwrap(),
        ]);
        assert_eq!(
            g.allowlist(),
            &[
                "10.0.0.0/8".parse::<IpNet>().unwrap(),
                "192.168.1.0/24".parse().unwrap(),
                "fd00::/8".parse().unwrap()
            ]
        );
        assert!(g.check_ip(ip("10.9.8.7")).is_ok());
        assert!(g.check_ip(ip("::ffff:10.9.8.7")).is_ok());
        assert!(g.check_ip(ip("192.168.1.200")).is_ok());
        assert!(g.check_ip(ip("192.168.2.1")).is_err());
        assert!(g.check_ip(ip("fd00::5")).is_ok());
        assert!(
            g.check_ip(ip("fd00:ec2::254")).is_ok(),
            "the operator listed it"
        );
        assert!(g.check_ip(ip("fe80::1")).is_err());
    }

    /// Every address of a few dense samples gets a verdict without panicking, and the IPv4
    /// verdict of an address equals the verdict of its mapped form.
    #[test]
    fn mapped_form_agrees_with_ipv4_everywhere_sampled() {
        let mut x: u32 = 0x1234_5678;
        for _ in 0..200_000 {
            // xorshift: deterministic, covers the whole space
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            let a = Ipv4Addr::from(x);
            let plain = classify(IpAddr::V4(a));
            let mapped = classify(IpAddr::V6(a.to_ipv6_mapped()));
            assert_eq!(plain.is_public(), mapped.is_public(), "{a}");
            let nat64 = classify(IpAddr::V6(Ipv6Addr::from(
                (0x64_ff9b_u128 << 96) | x as u128,
            )));
            assert_eq!(plain.is_public(), nat64.is_public(), "{a}");
        }
    }
}
