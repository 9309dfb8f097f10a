//! The networks and USDC deployments an x402 auditor must know:
//! CAIP-2 ids, v1 short names, testnet or not, and USDC's address/mint with its EIP-712 domain.

/// Address family of a network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Evm,
    Solana,
}

#[derive(Debug, Clone, Copy)]
pub struct Network {
    pub caip2: &'static str,
    /// The v1 short name, when v1 had one.
    pub v1: Option<&'static str>,
    pub label: &'static str,
    pub family: Family,
    pub testnet: bool,
    /// USDC on this network: (address or mint, EIP-712 name, EIP-712 version). Solana has no
    /// EIP-712 domain: name and version are empty.
    pub usdc: Option<(&'static str, &'static str, &'static str)>,
}

pub const NETWORKS: &[Network] = &[
    Network {
        caip2: "eip155:8453",
        v1: Some("base"),
        label: "Base",
        family: Family::Evm,
        testnet: false,
        usdc: Some((
            "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "USD Coin",
            "2",
        )),
    },
    Network {
        caip2: "eip155:84532",
        v1: Some("base-sepolia"),
        label: "Base Sepolia",
        family: Family::Evm,
        testnet: true,
        usdc: Some(("0x036CbD53842c5426634e7929541eC2318f3dCF7e", "USDC", "2")),
    },
    Network {
        caip2: "eip155:1",
        v1: None,
        label: "Ethereum",
        family: Family::Evm,
        testnet: false,
        usdc: Some((
            "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            "USD Coin",
            "2",
        )),
    },
    Network {
        caip2: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
        v1: Some("solana"),
        label: "Solana",
        family: Family::Solana,
        testnet: false,
        usdc: Some(("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "", "")),
    },
    Network {
        caip2: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
        v1: Some("solana-devnet"),
        label: "Solana devnet",
        family: Family::Solana,
        testnet: true,
        usdc: Some(("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", "", "")),
    },
    Network {
        caip2: "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
        v1: Some("solana-testnet"),
        label: "Solana testnet",
        family: Family::Solana,
        testnet: true,
        usdc: None,
    },
];

/// v1 names seen in the wild that have no entry above (x402 v1 network names); `true` = testnet.
pub const OTHER_V1_NAMES: &[(&str, bool)] = &[
    ("avalanche", false),
    ("avalanche-fuji", true),
    ("polygon", false),
    ("polygon-amoy", true),
    ("iotex", false),
    ("sei", false),
    ("sei-testnet", true),
    ("abstract", false),
    ("abstract-testnet", true),
    ("peaq", false),
    ("story", false),
    ("educhain", false),
    ("skale-base-sepolia", true),
];

pub fn by_caip2(id: &str) -> Option<&'static Network> {
    NETWORKS.iter().find(|n| n.caip2 == id)
}

pub fn by_v1(name: &str) -> Option<&'static Network> {
    NETWORKS.iter().find(|n| n.v1 == Some(name))
}

/// The known network for either spelling.
pub fn lookup(id: &str) -> Option<&'static Network> {
    by_caip2(id).or_else(|| by_v1(id))
}

/// Whether `id` is a syntactically valid CAIP-2 chain id (`namespace:reference`).
pub fn is_caip2(id: &str) -> bool {
    let Some((ns, reference)) = id.split_once(':') else {
        return false;
    };
    (3..=8).contains(&ns.len())
        && ns
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && (1..=32).contains(&reference.len())
        && reference
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Family of a network id by its CAIP-2 namespace or known v1 name.
pub fn family_of(id: &str) -> Option<Family> {
    if let Some(n) = lookup(id) {
        return Some(n.family);
    }
    if id.starts_with("eip155:") {
        return Some(Family::Evm);
    }
    if id.starts_with("solana:") {
        return Some(Family::Solana);
    }
    if OTHER_V1_NAMES.iter().any(|(n, _)| *n == id) {
        // Every other v1 name in the list is an EVM chain.
        return Some(Family::Evm);
    }
    None
}

/// Testnet by the known lists (and the words sellers use in chain names).
pub fn is_testnet(id: &str) -> bool {
    if let Some(n) = lookup(id) {
        return n.testnet;
    }
    if let Some((_, t)) = OTHER_V1_NAMES.iter().find(|(n, _)| *n == id) {
        return *t;
    }
    let l = id.to_ascii_lowercase();
    [
        "sepolia", "testnet", "devnet", "fuji", "amoy", "goerli", "holesky",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// The short name paycall's reports use (`base`, `solana`, …), else the id itself.
pub fn short_name(id: &str) -> String {
    lookup(id)
        .and_then(|n| n.v1.map(str::to_string))
        .unwrap_or_else(|| match id {
            "eip155:1" => "ethereum".into(),
            other => other.to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        assert_eq!(lookup("base").unwrap().caip2, "eip155:8453");
        assert_eq!(lookup("eip155:84532").unwrap().usdc.unwrap().1, "USDC");
        assert!(is_caip2("eip155:8453"));
        assert!(is_caip2("solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"));
        assert!(!is_caip2("base"));
        assert!(!is_caip2("eip155:"));
        assert!(is_testnet("base-sepolia") && is_testnet("eip155:84532") && !is_testnet("base"));
        assert!(is_testnet("avalanche-fuji") && !is_testnet("polygon"));
        assert_eq!(family_of("solana-devnet"), Some(Family::Solana));
        assert_eq!(family_of("eip155:137"), Some(Family::Evm));
        assert_eq!(short_name("eip155:8453"), "base");
        for n in NETWORKS {
            if let Some((addr, _, _)) = n.usdc {
                match n.family {
                    Family::Evm => assert!(super::super::address::is_valid_evm(addr)),
                    Family::Solana => assert!(super::super::address::is_valid_solana(addr)),
                }
            }
        }
    }
}
