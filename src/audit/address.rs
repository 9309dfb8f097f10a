//! Address validity for the networks x402 sellers use: EVM addresses with their EIP-55 checksum
//! (keccak-256 of the lower-case hex), Solana addresses as base58 that decodes to exactly 32
//! bytes. Pure functions; the config loader and the auditors share them.

use tiny_keccak::{Hasher, Keccak};

/// What an EVM address string is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvmAddress {
    /// Mixed case that matches the EIP-55 checksum.
    Checksummed,
    /// All lower or all upper case: valid, but carries no checksum to protect against typos.
    NoChecksum,
    /// Mixed case that does not match the checksum: a typo or a hand-edited address.
    BadChecksum,
    /// Not `0x` + 40 hex digits.
    Malformed,
}

pub fn keccak256(data: &[u8]) -> [u8; 32] {
    let mut k = Keccak::v256();
    k.update(data);
    let mut out = [0u8; 32];
    k.finalize(&mut out);
    out
}

/// The EIP-55 spelling of a well-formed address (`None` when malformed).
pub fn to_checksum(addr: &str) -> Option<String> {
    let hex = addr
        .strip_prefix("0x")
        .or_else(|| addr.strip_prefix("0X"))?;
    if hex.len() != 40 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    let lower = hex.to_ascii_lowercase();
    let hash = keccak256(lower.as_bytes());
    let mut out = String::with_capacity(42);
    out.push_str("0x");
    for (i, c) in lower.chars().enumerate() {
        let nibble = (hash[i / 2] >> (if i % 2 == 0 { 4 } else { 0 })) & 0x0f;
        if c.is_ascii_alphabetic() && nibble >= 8 {
            out.push(c.to_ascii_uppercase());
        } else {
            out.push(c);
        }
    }
    Some(out)
}

pub fn classify_evm(addr: &str) -> EvmAddress {
    let Some(sum) = to_checksum(addr) else {
        return EvmAddress::Malformed;
    };
    if !addr.starts_with("0x") {
        return EvmAddress::Malformed;
    }
    let hex = &addr[2..];
    let has_lower = hex.chars().any(|c| c.is_ascii_lowercase());
    let has_upper = hex.chars().any(|c| c.is_ascii_uppercase());
    if !(has_lower && has_upper) {
        EvmAddress::NoChecksum
    } else if sum == addr {
        EvmAddress::Checksummed
    } else {
        EvmAddress::BadChecksum
    }
}

/// A usable EVM address: well formed and, when mixed case, correctly checksummed.
pub fn is_valid_evm(addr: &str) -> bool {
    matches!(
        classify_evm(addr),
        EvmAddress::Checksummed | EvmAddress::NoChecksum
    )
}

/// The 32 bytes of a Solana address (public key or mint), when it is one.
pub fn solana_bytes(addr: &str) -> Option<[u8; 32]> {
    if addr.is_empty() || addr.len() > 44 {
        return None;
    }
    let bytes = bs58::decode(addr).into_vec().ok()?;
    bytes.try_into().ok()
}

pub fn is_valid_solana(addr: &str) -> bool {
    solana_bytes(addr).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eip55_vectors() {
        // The EIP-55 specification's own examples, and Base USDC.
        for a in [
            "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
            "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
            "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
            "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
            "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
        ] {
            assert_eq!(classify_evm(a), EvmAddress::Checksummed, "{a}");
            assert_eq!(to_checksum(&a.to_lowercase()).unwrap(), a);
        }
        assert_eq!(
            classify_evm("0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"),
            EvmAddress::NoChecksum
        );
        // One letter's case flipped: the checksum catches it.
        assert_eq!(
            classify_evm(
                "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
                    .replace('C', "c")
                    .as_str()
            ),
            EvmAddress::BadChecksum
        );
        for bad in [
            "",
            "0x",
            "0x1234",
            "833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "0xZZ3589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
        ] {
            assert_eq!(classify_evm(bad), EvmAddress::Malformed, "{bad}");
        }
    }

    #[test]
    fn solana_addresses_decode_to_32_bytes() {
        for a in [
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU",
            "11111111111111111111111111111111",
            "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
            "FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1",
        ] {
            assert!(is_valid_solana(a), "{a}");
        }
        // Right alphabet and length, wrong byte count: 44 'z' is more than 32 bytes.
        assert!(!is_valid_solana(&"z".repeat(44)));
        // Looks like a key (44 base58 characters) but decodes to 33 bytes.
        assert!(!is_valid_solana(
            "nD48BViZsbav2eBRjGoU1tRJWoFeToZtXUpBqdtCBGCc"
        ));
        assert!(!is_valid_solana(&"2".repeat(32)));
        assert!(!is_valid_solana(
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt10"
        ));
        assert!(!is_valid_solana(
            "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
        ));
        assert!(!is_valid_solana(""));
    }
}
