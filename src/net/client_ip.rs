//! Who is calling: the client address a per-client limit is keyed by (demo twins, the payment
//! gate's verify limit), believing X-Forwarded-For only from configured trusted proxies.

use http::HeaderMap;
use ipnet::IpNet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// The rate-limit key of a request.
///
/// The socket's IP, unless the socket is a trusted proxy: then X-Forwarded-For is read from the
/// right (the hop our proxy appended) and the first address that is not itself a trusted proxy
/// is the client. An unparsable hop stops the walk at the last address believed. IPv6 clients
/// are keyed by their /64, since one host usually owns the whole prefix.
pub fn client_key(socket: Option<SocketAddr>, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let Some(socket) = socket else {
        return IpAddr::from([0, 0, 0, 0]);
    };
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|n| n.contains(ip));
    let mut client = canonical(socket.ip());
    if !is_trusted(&client) {
        return key_of(client);
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    for hop in hops.iter().rev() {
        let Some(ip) = parse_hop(hop) else {
            break;
        };
        client = canonical(ip);
        if !is_trusted(&client) {
            break;
        }
    }
    key_of(client)
}

fn parse_hop(hop: &str) -> Option<IpAddr> {
    hop.parse::<IpAddr>()
        .ok()
        .or_else(|| hop.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

fn key_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
        }
        v4 => v4,
    }
}
