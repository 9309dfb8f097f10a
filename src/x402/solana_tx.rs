//! One reader for serialized Solana transactions (legacy and v0), for everything that looks
//! inside an x402 Solana payment: the local checks (shape, fee payer), the ledger's identity (the
//! SHA-256 of the message, which a re-encoding of the same transaction cannot change) and the
//! on-chain confirmation (the token transfer it makes, its blockhash).
//!
//! Layout: `shortvec(n) || n × 64-byte signatures || message`, the message being
//! `[0x80|version] || header(3) || shortvec(k) || k × 32-byte keys || blockhash(32) ||
//! shortvec(i) || instructions || [v0: address lookup tables]`. Parsing is pure and bounded by
//! the input: every length is checked before it is used.

use ring::digest;

/// The SPL Token program.
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// The SPL Token-2022 program.
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

/// One instruction, by index into the account keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction<'a> {
    pub program: u8,
    pub accounts: &'a [u8],
    pub data: &'a [u8],
}

/// A parsed transaction; slices borrow the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction<'a> {
    /// The signature slots, 64 bytes each (a partly signed transaction has zeroed ones).
    pub signatures: Vec<&'a [u8]>,
    /// The signed message: what the ledger hashes and what a landed transaction must repeat.
    pub message: &'a [u8],
    /// Legacy (`None`) or the version number.
    pub version: Option<u8>,
    pub required_signers: u8,
    /// The static account keys (v0 lookups are not resolved here).
    pub account_keys: Vec<[u8; 32]>,
    pub blockhash: [u8; 32],
    pub instructions: Vec<Instruction<'a>>,
    /// Accounts named through v0 address lookup tables.
    pub looked_up: usize,
}

/// The token movement an x402 `exact` Solana payment makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenTransfer {
    pub program: [u8; 32],
    pub source: [u8; 32],
    /// Named by `TransferChecked` only.
    pub mint: Option<[u8; 32]>,
    pub destination: [u8; 32],
    pub authority: [u8; 32],
    pub amount: u64,
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], &'static str> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or(what)?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn byte(&mut self, what: &'static str) -> Result<u8, &'static str> {
        Ok(self.take(1, what)?[0])
    }

    fn key(&mut self, what: &'static str) -> Result<[u8; 32], &'static str> {
        self.take(32, what)?.try_into().map_err(|_| what)
    }

    /// Solana's compact-u16: 1 to 3 bytes, 7 bits each.
    fn shortvec(&mut self, what: &'static str) -> Result<usize, &'static str> {
        let mut value = 0usize;
        for i in 0..3 {
            let b = self.byte(what)?;
            value |= ((b & 0x7f) as usize) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(what)
    }
}

/// Parses a legacy or v0 transaction to its last byte; the error says what is wrong.
pub fn parse(bytes: &[u8]) -> Result<Transaction<'_>, &'static str> {
    let mut r = Reader { bytes, at: 0 };
    let count = r.shortvec("truncated signature count")?;
    if count == 0 {
        return Err("no signature slots");
    }
    let mut signatures = Vec::with_capacity(count.min(16));
    for _ in 0..count {
        signatures.push(r.take(64, "truncated signatures")?);
    }
    let message_start = r.at;
    let first = r.byte("no message")?;
    let (version, required) = if first & 0x80 != 0 {
        let v = first & 0x7f;
        if v != 0 {
            return Err("unknown message version");
        }
        (Some(v), r.byte("truncated message header")?)
    } else {
        (None, first)
    };
    r.take(2, "truncated message header")?;
    let keys = r.shortvec("truncated account count")?;
    if keys == 0 {
        return Err("no accounts");
    }
    if required as usize != count || count > keys {
        return Err("signature slots do not match the required signers");
    }
    let mut account_keys = Vec::with_capacity(keys.min(64));
    for _ in 0..keys {
        account_keys.push(r.key("truncated accounts")?);
    }
    let blockhash = r.key("truncated blockhash")?;
    let n = r.shortvec("truncated instruction count")?;
    let mut instructions = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        let program = r.byte("truncated instruction")?;
        let accounts = r.shortvec("truncated instruction accounts")?;
        let accounts = r.take(accounts, "truncated instruction accounts")?;
        let data = r.shortvec("truncated instruction data")?;
        let data = r.take(data, "truncated instruction data")?;
        instructions.push(Instruction {
            program,
            accounts,
            data,
        });
    }
    let mut looked_up = 0usize;
    if version.is_some() {
        let tables = r.shortvec("truncated lookup tables")?;
        for _ in 0..tables {
            r.take(32, "truncated lookup table")?;
            for _ in 0..2 {
                let n = r.shortvec("truncated lookup table")?;
                r.take(n, "truncated lookup table")?;
                looked_up += n;
            }
        }
    }
    if r.at != bytes.len() {
        return Err("bytes after the message");
    }
    let max_index = instructions
        .iter()
        .flat_map(|i| std::iter::once(i.program).chain(i.accounts.iter().copied()))
        .max();
    if max_index.is_some_and(|m| m as usize >= keys + looked_up) {
        return Err("an instruction names an account that does not exist");
    }
    Ok(Transaction {
        signatures,
        message: &bytes[message_start..],
        version,
        required_signers: required,
        account_keys,
        blockhash,
        instructions,
        looked_up,
    })
}

/// SHA-256 of a message: a Solana payment's identity in the ledger.
pub fn message_hash(message: &[u8]) -> [u8; 32] {
    let d = digest::digest(&digest::SHA256, message);
    d.as_ref().try_into().expect("SHA-256 is 32 bytes")
}

impl Transaction<'_> {
    fn key(&self, index: u8) -> Option<[u8; 32]> {
        self.account_keys.get(index as usize).copied()
    }

    /// The one SPL token transfer (`TransferChecked`, or plain `Transfer`) of the Token or
    /// Token-2022 program whose accounts are all static keys; None when there is none or more
    /// than one (an x402 `exact` payment makes exactly one).
    pub fn token_transfer(&self) -> Option<TokenTransfer> {
        let programs = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM].map(|p| {
            let mut out = [0u8; 32];
            bs58::decode(p).onto(&mut out).ok();
            out
        });
        let mut found = None;
        for ins in &self.instructions {
            let Some(program) = self.key(ins.program) else {
                continue;
            };
            if !programs.contains(&program) {
                continue;
            }
            let a = |i: usize| ins.accounts.get(i).and_then(|&k| self.key(k));
            let amount = |d: &[u8]| d.get(1..9)?.try_into().ok().map(u64::from_le_bytes);
            let transfer = match ins.data.first() {
                // TransferChecked: source, mint, destination, authority; amount, decimals.
                Some(12) if ins.data.len() == 10 => TokenTransfer {
                    program,
                    source: a(0)?,
                    mint: Some(a(1)?),
                    destination: a(2)?,
                    authority: a(3)?,
                    amount: amount(ins.data)?,
                },
                // Transfer: source, destination, authority; amount.
                Some(3) if ins.data.len() == 9 => TokenTransfer {
                    program,
                    source: a(0)?,
                    mint: None,
                    destination: a(1)?,
                    authority: a(2)?,
                    amount: amount(ins.data)?,
                },
                _ => continue,
            };
            if found.replace(transfer).is_some() {
                return None;
            }
        }
        found
    }
}

/// Base58 of 32- or 64-byte values (addresses, signatures, blockhashes).
pub fn base58(bytes: &[u8]) -> String {
    bs58::encode(bytes).into_string()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn shortvec(n: usize, out: &mut Vec<u8>) {
        let mut v = n;
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn program(name: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        bs58::decode(name).onto(&mut out).unwrap();
        out
    }

    /// A v0 transaction shaped like the official x402 client's: fee payer first (unsigned
    /// slot), the payer's signature second, compute budget, a TransferChecked, a memo.
    pub fn sample(amount: u64) -> Vec<u8> {
        let keys: Vec<[u8; 32]> = vec![
            [1; 32],                // 0 fee payer
            [2; 32],                // 1 authority (payer)
            [3; 32],                // 2 source token account
            [4; 32],                // 3 destination token account
            [5; 32],                // 4 mint
            program(TOKEN_PROGRAM), // 5
            [7; 32],                // 6 compute budget stand-in
        ];
        let mut m = vec![0x80, 2, 0, 3];
        shortvec(keys.len(), &mut m);
        for k in &keys {
            m.extend_from_slice(k);
        }
        m.extend_from_slice(&[9; 32]); // blockhash
        shortvec(2, &mut m);
        // compute budget: program 6, no accounts, 5 bytes
        m.extend_from_slice(&[6, 0, 5, 2, 0, 0, 0, 0]);
        // TransferChecked: program 5, accounts [2,4,3,1], data 12 || amount || decimals
        m.extend_from_slice(&[5, 4, 2, 4, 3, 1, 10, 12]);
        m.extend_from_slice(&amount.to_le_bytes());
        m.push(6);
        m.push(0); // no lookup tables
        let mut tx = vec![2];
        tx.extend_from_slice(&[0; 64]);
        tx.extend_from_slice(&[8; 64]);
        tx.extend_from_slice(&m);
        tx
    }

    #[test]
    fn reads_the_transfer_and_the_message() {
        let bytes = sample(10_000);
        let tx = parse(&bytes).unwrap();
        assert_eq!(tx.version, Some(0));
        assert_eq!(tx.signatures.len(), 2);
        assert_eq!(tx.account_keys[0], [1; 32]);
        assert_eq!(tx.blockhash, [9; 32]);
        assert_eq!(tx.message, &bytes[1 + 128..]);
        let t = tx.token_transfer().unwrap();
        assert_eq!(t.amount, 10_000);
        assert_eq!(t.authority, [2; 32]);
        assert_eq!(t.destination, [4; 32]);
        assert_eq!(t.mint, Some([5; 32]));
        assert_eq!(t.program, program(TOKEN_PROGRAM));
    }

    #[test]
    fn the_hash_ignores_the_signatures() {
        let a = sample(10_000);
        let mut b = a.clone();
        b[1] = 0xff; // a fee payer signature filled in
        let (ta, tb) = (parse(&a).unwrap(), parse(&b).unwrap());
        assert_eq!(message_hash(ta.message), message_hash(tb.message));
        assert_ne!(
            message_hash(ta.message),
            message_hash(parse(&sample(10_001)).unwrap().message)
        );
    }

    #[test]
    fn refuses_what_is_not_a_transaction() {
        let good = sample(1);
        for cut in [0, 1, 64, 129, 140, good.len() - 1] {
            assert!(parse(&good[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(parse(&extra).unwrap_err(), "bytes after the message");
        let mut bad_index = good.clone();
        let at = bad_index.len() - 1 - 1 - 8 - 1 - 1 - 4; // the first account of the transfer
        bad_index[at] = 40;
        assert!(parse(&bad_index).is_err());
    }

    #[test]
    fn two_transfers_are_not_one_payment() {
        let bytes = sample(5);
        let tx = parse(&bytes).unwrap();
        let mut twice = tx.clone();
        twice.instructions.push(tx.instructions[1].clone());
        assert_eq!(twice.token_transfer(), None);
    }
}
