//! The associated token account (ATA) of a Solana owner for a mint: the one account the official
//! x402 clients pay into. Knowing its exact address lets startup check that payTo can receive
//! (the clients never create it), rather than accepting any token account the owner happens to
//! hold for the mint.
//!
//! A program-derived address is `sha256(seeds… || [bump] || program || "ProgramDerivedAddress")`
//! for the highest bump (255 down to 0) whose hash is *not* a point on ed25519 (so no private key
//! can sign for it). The seeds of an ATA are `owner, token program, mint`.

use curve25519_dalek::edwards::CompressedEdwardsY;
use ring::digest;

/// The Associated Token Account program.
pub const ASSOCIATED_TOKEN_PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

fn key(b58: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    (bs58::decode(b58).onto(&mut out).ok()? == 32).then_some(out)
}

/// `find_program_address`: the first off-curve hash from bump 255 down, with its bump.
pub fn find_program_address(seeds: &[&[u8]], program: &[u8; 32]) -> Option<([u8; 32], u8)> {
    for bump in (0..=255u8).rev() {
        let mut ctx = digest::Context::new(&digest::SHA256);
        for s in seeds {
            ctx.update(s);
        }
        ctx.update(&[bump]);
        ctx.update(program);
        ctx.update(b"ProgramDerivedAddress");
        let hash: [u8; 32] = ctx.finish().as_ref().try_into().ok()?;
        if CompressedEdwardsY(hash).decompress().is_none() {
            return Some((hash, bump));
        }
    }
    None
}

/// The ATA of `owner` for `mint` under `token_program` (all base58), as base58; None when an
/// input is not a 32-byte base58 key.
pub fn associated_token_address(owner: &str, mint: &str, token_program: &str) -> Option<String> {
    let (owner, mint, program) = (key(owner)?, key(mint)?, key(token_program)?);
    let ata_program = key(ASSOCIATED_TOKEN_PROGRAM)?;
    let (address, _) = find_program_address(&[&owner, &program, &mint], &ata_program)?;
    Some(bs58::encode(address).into_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x402::solana_tx::TOKEN_PROGRAM;

    const USDC: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";

    // Vectors from @solana-program/token's findAssociatedTokenPda (the official client's).
    #[test]
    fn matches_the_official_derivation() {
        for (owner, ata) in [
            (
                "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM",
                "FGETo8T8wMcN2wCjav8VK6eh3dLk63evNDPxzLSJra8B", // bump 254: 255 is on the curve
            ),
            (
                "11111111111111111111111111111111",
                "HJt8Tjdsc9ms9i4WCZEzhzr4oyf3ANcdzXrNdLPFqm3M",
            ),
            (USDC, "7Sa6JgAHBKWiEkqW3tJu3umYtSDxcouhRurwQeN1589X"),
        ] {
            assert_eq!(
                associated_token_address(owner, USDC, TOKEN_PROGRAM).as_deref(),
                Some(ata),
                "{owner}"
            );
        }
    }

    #[test]
    fn refuses_what_is_not_a_key() {
        assert_eq!(associated_token_address("0xabc", USDC, TOKEN_PROGRAM), None);
        assert_eq!(associated_token_address("", USDC, TOKEN_PROGRAM), None);
    }
}
