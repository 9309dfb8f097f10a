//! Local checks of a payment before any facilitator call: one pure [`check`] of the decoded
//! `PAYMENT-SIGNATURE`, the offer it matched and the time, giving a typed [`CheckedPayment`] or a
//! [`Refusal`] with a stable code and the field it is about.
//!
//! Why: a facilitator call costs the operator (a metered facilitator's quota, a round trip per
//! hostile request), and the official facilitator answers HTTP 500 to payloads it cannot parse
//! (`value` missing, `signature: []`), which a seller would otherwise pass on as "facilitator
//! trouble, retry later" for a payment that can never be valid.
//!
//! What is checked, per payload form paycall accepts on an `exact` offer:
//! * **EVM, EIP-3009** (`payload.authorization` + `payload.signature`): addresses `0x` + 40 hex
//!   (mixed case only with a correct EIP-55 checksum), amounts and times as decimal uint256
//!   strings, nonce 32 bytes of hex, signature hex of at least 65 bytes; `to` = the offer's
//!   payTo, `value` = its amount, `validAfter` ≤ now, `validBefore` ≥ now + the work's time;
//!   a 65-byte signature must recover (EIP-712 `TransferWithAuthorization` under the offer's
//!   `extra.name`/`version`, chain id and asset) to `from`. Longer signatures (smart wallets,
//!   EIP-1271/6492) are left to the facilitator.
//! * **EVM, Permit2** (`payload.permit2Authorization`): the same rules for `from`, `nonce`
//!   (uint256), `deadline`, `permitted.token` = asset, `permitted.amount` = amount, `spender` =
//!   the x402 Permit2 proxy, `witness.to` = payTo, `witness.validAfter`; a 65-byte signature
//!   recovers under the Permit2 domain (`PermitWitnessTransferFrom` with the x402 witness).
//! * **Solana** (`payload.transaction`): standard base64 of at most 1,232 bytes (a Solana
//!   packet) that parses as a legacy or v0 transaction to its last byte, with one signature
//!   slot per required signer and the offer's `extra.feePayer` as the fee payer.
//!
//! Two kinds of refusal (docs/payment-checks.md): a payload that is not well formed is a
//! [`RefusalKind::Malformed`] (the gate answers 400 `invalid_payment`, like an undecodable
//! header); a well-formed payment that does not pay this offer now is
//! [`RefusalKind::Invalid`] with the facilitators' own reason code (the gate answers the 402
//! with that reason, exactly what the facilitator's refusal would have produced).
//!
//! Typed wire crates (x402-types, x402-chain-eip155) were considered: their EVM payload types
//! come with alloy-primitives, alloy-sol-types, serde_with and rust_decimal, and a serde error
//! does not give a stable field name to answer with; the few structs here do.

use base64::Engine;
use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
use serde_json::Value;

use crate::audit::address::{classify_evm, keccak256, solana_bytes, EvmAddress};
use crate::x402::types::Requirement;

/// Canonical Permit2 contract (same address on every EVM chain).
pub const PERMIT2_ADDRESS: &str = "0x000000000022D473030F116dDEE9F6B43aC78BA3";
/// x402ExactPermit2Proxy, the only spender an x402 Permit2 payment may name.
pub const EXACT_PERMIT2_PROXY: &str = "0x402085c248EeA27D92E8b30b2C58ed07f9E20001";
/// The facilitators' own margin: they refuse a `validBefore` closer than this to now.
pub const FACILITATOR_MARGIN_S: u64 = 6;
/// Largest serialized Solana transaction (the network's packet size).
pub const MAX_SOLANA_TX_BYTES: usize = 1232;
/// Largest signature we forward (smart-wallet signatures with EIP-6492 wrappers are a few KB).
pub const MAX_SIGNATURE_BYTES: usize = 8 * 1024;

/// Which answer a refusal calls for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// Not a well-formed payload of the scheme: 400 `invalid_payment`.
    Malformed,
    /// Well formed, but it does not pay this offer now: 402 with the reason.
    Invalid,
}

/// Why a payment is refused before any facilitator call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub kind: RefusalKind,
    /// Stable machine code: for malformed payloads one of `missing`, `wrong_type`,
    /// `not_uint256`, `bad_address`, `bad_checksum`, `bad_hex`, `bad_length`, `too_large`,
    /// `bad_base64`, `bad_transaction`, `unknown_payload`; for invalid ones the facilitators'
    /// reason code (`invalid_exact_evm_payload_recipient_mismatch`, …).
    pub code: &'static str,
    /// Path of the field in the decoded header, e.g. `payload.authorization.value`.
    pub field: &'static str,
    /// One sentence for the buyer, naming the field.
    pub message: String,
}

impl Refusal {
    fn malformed(code: &'static str, field: &'static str, what: impl std::fmt::Display) -> Self {
        Refusal {
            kind: RefusalKind::Malformed,
            code,
            field,
            message: format!("`{field}` {what}"),
        }
    }

    fn invalid(code: &'static str, field: &'static str, what: impl std::fmt::Display) -> Self {
        Refusal {
            kind: RefusalKind::Invalid,
            code,
            field,
            message: format!("`{field}` {what}"),
        }
    }

    /// HTTP status the gate answers with.
    pub fn status(&self) -> u16 {
        match self.kind {
            RefusalKind::Malformed => 400,
            RefusalKind::Invalid => 402,
        }
    }

    /// True when only the time window failed (a payment that was fine when first presented).
    pub fn is_window(&self) -> bool {
        matches!(
            self.code,
            "invalid_exact_evm_payload_authorization_valid_before"
                | "invalid_exact_evm_payload_authorization_valid_after"
                | "permit2_deadline_expired"
                | "permit2_not_yet_valid"
        )
    }
}

/// A uint256 as 32 big-endian bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct U256(pub [u8; 32]);

impl U256 {
    /// Parses a canonical-enough decimal string: ASCII digits only, at most 78 of them, below
    /// 2^256. Leading zeros are accepted (the value is what is signed).
    pub fn from_decimal(s: &str) -> Option<U256> {
        if s.is_empty() || s.len() > 78 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let mut out = [0u8; 32];
        for d in s.bytes() {
            let mut carry = (d - b'0') as u32;
            for byte in out.iter_mut().rev() {
                let v = *byte as u32 * 10 + carry;
                *byte = v as u8;
                carry = v >> 8;
            }
            if carry != 0 {
                return None;
            }
        }
        Some(U256(out))
    }

    pub fn from_u64(v: u64) -> U256 {
        let mut out = [0u8; 32];
        out[24..].copy_from_slice(&v.to_be_bytes());
        U256(out)
    }

    /// The value, or `u64::MAX` when it does not fit (times far in the future).
    pub fn saturating_u64(&self) -> u64 {
        if self.0[..24].iter().any(|b| *b != 0) {
            return u64::MAX;
        }
        u64::from_be_bytes(self.0[24..].try_into().unwrap_or([0xff; 8]))
    }
}

/// What the signature check concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureCheck {
    /// 65-byte ECDSA signature that recovers to the payer.
    Recovered,
    /// Longer than 65 bytes (a smart-wallet signature), or the offer lacks the EIP-712 domain
    /// name/version: the facilitator judges it.
    LeftToFacilitator,
}

/// An EIP-3009 `transferWithAuthorization` payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Eip3009 {
    pub from: [u8; 20],
    pub to: [u8; 20],
    pub value: U256,
    pub valid_after: U256,
    pub valid_before: U256,
    pub nonce: [u8; 32],
    pub signature: Vec<u8>,
    pub signature_check: SignatureCheck,
}

/// A Permit2 `permitWitnessTransferFrom` payment through the x402 proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permit2 {
    pub from: [u8; 20],
    pub token: [u8; 20],
    pub amount: U256,
    pub spender: [u8; 20],
    pub nonce: U256,
    pub deadline: U256,
    pub to: [u8; 20],
    pub valid_after: U256,
    pub signature: Vec<u8>,
    pub signature_check: SignatureCheck,
}

/// A partially signed Solana transaction that parses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolanaTx {
    /// Signature slots (the fee payer's is empty until the facilitator signs).
    pub signatures: usize,
    pub fee_payer: [u8; 32],
    /// Serialized size in bytes.
    pub size: usize,
    /// Legacy (`None`) or the version number.
    pub version: Option<u8>,
}

/// A payment that passed every local check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckedPayment {
    Eip3009(Eip3009),
    Permit2(Permit2),
    Solana(SolanaTx),
}

impl CheckedPayment {
    /// The EVM payer as lower-case `0x` hex (Solana: the payer is known from the facilitator).
    pub fn payer(&self) -> Option<String> {
        match self {
            CheckedPayment::Eip3009(a) => Some(hex0x(&a.from)),
            CheckedPayment::Permit2(p) => Some(hex0x(&p.from)),
            CheckedPayment::Solana(_) => None,
        }
    }

    /// Unix seconds after which the payment can no longer settle, when the payload says.
    pub fn valid_before(&self) -> Option<u64> {
        match self {
            CheckedPayment::Eip3009(a) => Some(a.valid_before.saturating_u64()),
            CheckedPayment::Permit2(p) => Some(p.deadline.saturating_u64()),
            CheckedPayment::Solana(_) => None,
        }
    }
}

/// How long a payment must stay valid from now for its work and settlement: half the offer's
/// `maxTimeoutSeconds`, at least the facilitators' 6 s margin and at most 30 s. Clients sign
/// `validBefore = now + maxTimeoutSeconds`, so honest payments pass with room to spare.
pub fn work_window(offer: &Requirement) -> u64 {
    (offer.max_timeout_seconds / 2).clamp(FACILITATOR_MARGIN_S, 30)
}

/// Checks the decoded payload against the offer it matched, at unix time `now`, requiring
/// the payment to stay valid for `work_s` more seconds.
pub fn check(
    payload: &Value,
    offer: &Requirement,
    now: u64,
    work_s: u64,
) -> Result<CheckedPayment, Refusal> {
    if offer.scheme != "exact" {
        return Err(Refusal::invalid(
            "unsupported_scheme",
            "accepted.scheme",
            format!("is {:?}; this service only takes `exact`", offer.scheme),
        ));
    }
    check_accepted(payload.get("accepted"), offer)?;
    let inner = match payload.get("payload") {
        Some(Value::Object(_)) => &payload["payload"],
        Some(_) => {
            return Err(Refusal::malformed(
                "wrong_type",
                "payload",
                "must be an object",
            ))
        }
        None => return Err(Refusal::malformed("missing", "payload", "is missing")),
    };
    if offer.network.starts_with("eip155:") {
        if inner.get("permit2Authorization").is_some() && inner.get("authorization").is_none() {
            check_permit2(inner, offer, now, work_s).map(CheckedPayment::Permit2)
        } else {
            check_eip3009(inner, offer, now, work_s).map(CheckedPayment::Eip3009)
        }
    } else if offer.network.starts_with("solana:") {
        check_solana(inner, offer).map(CheckedPayment::Solana)
    } else {
        Err(Refusal::invalid(
            "invalid_network",
            "accepted.network",
            format!("{:?} is not a network this service checks", offer.network),
        ))
    }
}

/// The echoed offer: scheme, network, amount, asset and payTo equal ours (the matcher found
/// it; repeated so this module stands alone).
fn check_accepted(accepted: Option<&Value>, offer: &Requirement) -> Result<(), Refusal> {
    let Some(Value::Object(a)) = accepted else {
        return Err(Refusal::malformed(
            "missing",
            "accepted",
            "must be the offer you chose from the 402's accepts",
        ));
    };
    let evm = offer.network.starts_with("eip155:");
    let s = |k: &str| a.get(k).and_then(Value::as_str);
    if s("network") != Some(offer.network.as_str()) {
        return Err(Refusal::invalid(
            "invalid_network",
            "accepted.network",
            format!("is not this offer's network {}", offer.network),
        ));
    }
    if !s("asset").is_some_and(|x| same_address(evm, x, &offer.asset)) {
        return Err(Refusal::invalid(
            "asset_mismatch",
            "accepted.asset",
            format!("is not this offer's asset {}", offer.asset),
        ));
    }
    if !s("payTo").is_some_and(|x| same_address(evm, x, &offer.pay_to)) {
        return Err(Refusal::invalid(
            "recipient_mismatch",
            "accepted.payTo",
            format!("is not this offer's payTo {}", offer.pay_to),
        ));
    }
    if s("amount") != Some(offer.amount.as_str()) {
        return Err(Refusal::invalid(
            "amount_mismatch",
            "accepted.amount",
            format!("is not this offer's amount {}", offer.amount),
        ));
    }
    Ok(())
}

fn same_address(evm: bool, a: &str, b: &str) -> bool {
    if evm {
        a.eq_ignore_ascii_case(b)
    } else {
        a == b
    }
}

/// An EIP-3009 payment judged against the offer: recipient, amount, validity window, and the
/// signature recovered when the offer names its EIP-712 domain.
fn check_eip3009(
    inner: &Value,
    offer: &Requirement,
    now: u64,
    work_s: u64,
) -> Result<Eip3009, Refusal> {
    let mut p = eip3009_fields(inner)?;
    let (pay_to, amount, asset, chain_id) = offer_terms(offer)?;
    if p.to != pay_to {
        return Err(Refusal::invalid(
            "invalid_exact_evm_payload_recipient_mismatch",
            "payload.authorization.to",
            format!("is not this offer's payTo {}", offer.pay_to),
        ));
    }
    if p.value != amount {
        return Err(Refusal::invalid(
            "invalid_exact_evm_payload_authorization_value_mismatch",
            "payload.authorization.value",
            format!("is not this offer's amount {}", offer.amount),
        ));
    }
    check_window(
        p.valid_after,
        p.valid_before,
        now,
        work_s,
        (
            "payload.authorization.validAfter",
            "payload.authorization.validBefore",
        ),
        (
            "invalid_exact_evm_payload_authorization_valid_after",
            "invalid_exact_evm_payload_authorization_valid_before",
        ),
    )?;
    let domain = match (
        offer.extra.get("name").and_then(Value::as_str),
        offer.extra.get("version").and_then(Value::as_str),
    ) {
        (Some(name), Some(version)) => Some(Domain {
            name,
            version: Some(version),
            chain_id,
            verifying_contract: asset,
        }),
        _ => None,
    };
    if let (Some(domain), 65) = (domain, p.signature.len()) {
        let digest = eip3009_digest(
            &domain,
            &p.from,
            &p.to,
            &p.value,
            &p.valid_after,
            &p.valid_before,
            &p.nonce,
        );
        p.signature_check = expect_signer(
            &digest,
            &p.signature,
            &p.from,
            "invalid_exact_evm_payload_signature",
        )?;
    }
    Ok(p)
}

/// The fields of an EIP-3009 payload, typed (malformed → the field named); the signature is
/// not judged yet.
fn eip3009_fields(inner: &Value) -> Result<Eip3009, Refusal> {
    let auth = match inner.get("authorization") {
        Some(v @ Value::Object(_)) => v,
        Some(_) => {
            return Err(Refusal::malformed(
                "wrong_type",
                "payload.authorization",
                "must be an object",
            ))
        }
        None => {
            return Err(Refusal::malformed(
                "unknown_payload",
                "payload.authorization",
                "is missing: an `exact` EVM payment carries an EIP-3009 `authorization` or a Permit2 `permit2Authorization`",
            ))
        }
    };
    Ok(Eip3009 {
        signature: signature_field(inner.get("signature"), "payload.signature")?,
        from: address_field(auth.get("from"), "payload.authorization.from")?,
        to: address_field(auth.get("to"), "payload.authorization.to")?,
        value: uint_field(auth.get("value"), "payload.authorization.value")?,
        valid_after: uint_field(auth.get("validAfter"), "payload.authorization.validAfter")?,
        valid_before: uint_field(auth.get("validBefore"), "payload.authorization.validBefore")?,
        nonce: bytes32_field(auth.get("nonce"), "payload.authorization.nonce")?,
        signature_check: SignatureCheck::LeftToFacilitator,
    })
}

/// A Permit2 payment judged against the offer: the x402 proxy as spender, recipient, token,
/// amount, validity window, and the signature recovered.
fn check_permit2(
    inner: &Value,
    offer: &Requirement,
    now: u64,
    work_s: u64,
) -> Result<Permit2, Refusal> {
    let mut p = permit2_fields(inner)?;
    let (pay_to, offer_amount, asset, chain_id) = offer_terms(offer)?;
    if p.spender != parse_address(EXACT_PERMIT2_PROXY).unwrap_or_default() {
        return Err(Refusal::invalid(
            "invalid_permit2_spender",
            "payload.permit2Authorization.spender",
            format!("must be the x402 Permit2 proxy {EXACT_PERMIT2_PROXY}"),
        ));
    }
    if p.to != pay_to {
        return Err(Refusal::invalid(
            "invalid_permit2_recipient_mismatch",
            "payload.permit2Authorization.witness.to",
            format!("is not this offer's payTo {}", offer.pay_to),
        ));
    }
    if p.token != asset {
        return Err(Refusal::invalid(
            "permit2_token_mismatch",
            "payload.permit2Authorization.permitted.token",
            format!("is not this offer's asset {}", offer.asset),
        ));
    }
    if p.amount != offer_amount {
        return Err(Refusal::invalid(
            "permit2_amount_mismatch",
            "payload.permit2Authorization.permitted.amount",
            format!("is not this offer's amount {}", offer.amount),
        ));
    }
    check_window(
        p.valid_after,
        p.deadline,
        now,
        work_s,
        (
            "payload.permit2Authorization.witness.validAfter",
            "payload.permit2Authorization.deadline",
        ),
        ("permit2_not_yet_valid", "permit2_deadline_expired"),
    )?;
    if p.signature.len() == 65 {
        let digest = permit2_digest(
            chain_id,
            &p.token,
            &p.amount,
            &p.spender,
            &p.nonce,
            &p.deadline,
            &p.to,
            &p.valid_after,
        );
        p.signature_check =
            expect_signer(&digest, &p.signature, &p.from, "invalid_permit2_signature")?;
    }
    Ok(p)
}

/// The fields of a Permit2 payload, typed (malformed → the field named), in the order they
/// are judged; the signature is not judged yet.
fn permit2_fields(inner: &Value) -> Result<Permit2, Refusal> {
    let auth = match inner.get("permit2Authorization") {
        Some(v @ Value::Object(_)) => v,
        _ => {
            return Err(Refusal::malformed(
                "wrong_type",
                "payload.permit2Authorization",
                "must be an object",
            ))
        }
    };
    let signature = signature_field(inner.get("signature"), "payload.signature")?;
    let from = address_field(auth.get("from"), "payload.permit2Authorization.from")?;
    let permitted = object_field(
        auth.get("permitted"),
        "payload.permit2Authorization.permitted",
    )?;
    let token = address_field(
        permitted.get("token"),
        "payload.permit2Authorization.permitted.token",
    )?;
    let amount = uint_field(
        permitted.get("amount"),
        "payload.permit2Authorization.permitted.amount",
    )?;
    let spender = address_field(auth.get("spender"), "payload.permit2Authorization.spender")?;
    let nonce = uint_field(auth.get("nonce"), "payload.permit2Authorization.nonce")?;
    let deadline = uint_field(
        auth.get("deadline"),
        "payload.permit2Authorization.deadline",
    )?;
    let witness = object_field(auth.get("witness"), "payload.permit2Authorization.witness")?;
    let to = address_field(witness.get("to"), "payload.permit2Authorization.witness.to")?;
    let valid_after = uint_field(
        witness.get("validAfter"),
        "payload.permit2Authorization.witness.validAfter",
    )?;
    Ok(Permit2 {
        from,
        token,
        amount,
        spender,
        nonce,
        deadline,
        to,
        valid_after,
        signature,
        signature_check: SignatureCheck::LeftToFacilitator,
    })
}

/// payTo, amount, asset and chain id of an EVM offer. Our own offers always parse; a
/// misconfigured one refuses rather than forwards.
fn offer_terms(offer: &Requirement) -> Result<([u8; 20], U256, [u8; 20], U256), Refusal> {
    let bad = || {
        Refusal::invalid(
            "invalid_payment_requirements",
            "accepted",
            "names an offer this service cannot check (its payTo, amount, asset or network is not EVM-shaped)",
        )
    };
    let pay_to = parse_address(&offer.pay_to).ok_or_else(bad)?;
    let asset = parse_address(&offer.asset).ok_or_else(bad)?;
    let amount = U256::from_decimal(&offer.amount).ok_or_else(bad)?;
    let chain_id = offer
        .network
        .strip_prefix("eip155:")
        .and_then(U256::from_decimal)
        .ok_or_else(bad)?;
    Ok((pay_to, amount, asset, chain_id))
}

fn check_window(
    after: U256,
    before: U256,
    now: u64,
    work_s: u64,
    fields: (&'static str, &'static str),
    codes: (&'static str, &'static str),
) -> Result<(), Refusal> {
    if after.saturating_u64() > now {
        return Err(Refusal::invalid(
            codes.0,
            fields.0,
            format!(
                "is in the future (now is {now}): the payment is not valid yet; sign with a validAfter at or before now"
            ),
        ));
    }
    let need = now.saturating_add(work_s.max(FACILITATOR_MARGIN_S));
    if before.saturating_u64() < need {
        return Err(Refusal::invalid(
            codes.1,
            fields.1,
            format!(
                "ends before {need} (now + {work_s} s for the work and its settlement): sign a new payment"
            ),
        ));
    }
    Ok(())
}

fn expect_signer(
    digest: &[u8; 32],
    signature: &[u8],
    from: &[u8; 20],
    code: &'static str,
) -> Result<SignatureCheck, Refusal> {
    match recover_signer(digest, signature) {
        Some(who) if &who == from => Ok(SignatureCheck::Recovered),
        Some(who) => Err(Refusal::invalid(
            code,
            "payload.signature",
            format!(
                "was made by {} for this offer's EIP-712 message, not by the payer {}",
                hex0x(&who),
                hex0x(from)
            ),
        )),
        None => Err(Refusal::invalid(
            code,
            "payload.signature",
            "is not a valid secp256k1 signature (r, s in range with a low s, v 27 or 28)",
        )),
    }
}

// ---- field readers -------------------------------------------------------------------------

fn present<'a>(v: Option<&'a Value>, field: &'static str) -> Result<&'a Value, Refusal> {
    match v {
        None | Some(Value::Null) => Err(Refusal::malformed("missing", field, "is missing")),
        Some(v) => Ok(v),
    }
}

fn string_field<'a>(
    v: Option<&'a Value>,
    field: &'static str,
    what: &str,
) -> Result<&'a str, Refusal> {
    match present(v, field)? {
        Value::String(s) => Ok(s),
        other => Err(Refusal::malformed(
            "wrong_type",
            field,
            format!("must be a string ({what}), not {}", json_type(other)),
        )),
    }
}

fn object_field<'a>(
    v: Option<&'a Value>,
    field: &'static str,
) -> Result<&'a serde_json::Map<String, Value>, Refusal> {
    match present(v, field)? {
        Value::Object(m) => Ok(m),
        other => Err(Refusal::malformed(
            "wrong_type",
            field,
            format!("must be an object, not {}", json_type(other)),
        )),
    }
}

fn address_field(v: Option<&Value>, field: &'static str) -> Result<[u8; 20], Refusal> {
    let s = string_field(v, field, "a 0x address")?;
    match classify_evm(s) {
        EvmAddress::Malformed => Err(Refusal::malformed(
            "bad_address",
            field,
            "must be 0x followed by 40 hex digits",
        )),
        EvmAddress::BadChecksum => Err(Refusal::malformed(
            "bad_checksum",
            field,
            "has mixed case that does not match its EIP-55 checksum",
        )),
        _ => parse_address(s).ok_or_else(|| {
            Refusal::malformed("bad_address", field, "must be 0x followed by 40 hex digits")
        }),
    }
}

fn uint_field(v: Option<&Value>, field: &'static str) -> Result<U256, Refusal> {
    let s = string_field(v, field, "a decimal uint256")?;
    U256::from_decimal(s).ok_or_else(|| {
        Refusal::malformed(
            "not_uint256",
            field,
            "must be a decimal integer string from 0 to 2^256 - 1 (digits only)",
        )
    })
}

fn bytes32_field(v: Option<&Value>, field: &'static str) -> Result<[u8; 32], Refusal> {
    let s = string_field(v, field, "0x + 64 hex digits")?;
    let bytes = parse_hex(s)
        .ok_or_else(|| Refusal::malformed("bad_hex", field, "must be 0x followed by hex digits"))?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        Refusal::malformed(
            "bad_length",
            field,
            format!("must be 32 bytes, not {}", b.len()),
        )
    })
}

fn signature_field(v: Option<&Value>, field: &'static str) -> Result<Vec<u8>, Refusal> {
    let s = string_field(v, field, "0x hex")?;
    if s.len() > 2 + 2 * MAX_SIGNATURE_BYTES {
        return Err(Refusal::malformed(
            "too_large",
            field,
            format!("is longer than {MAX_SIGNATURE_BYTES} bytes"),
        ));
    }
    let bytes = parse_hex(s)
        .ok_or_else(|| Refusal::malformed("bad_hex", field, "must be 0x followed by hex digits"))?;
    if bytes.len() < 65 {
        return Err(Refusal::malformed(
            "bad_length",
            field,
            format!(
                "is {} bytes; an ECDSA signature is 65 (r, s, v)",
                bytes.len()
            ),
        ));
    }
    Ok(bytes)
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `0x` + an even number of hex digits (at least one byte).
fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let h = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    if h.is_empty() || h.len() % 2 != 0 {
        return None;
    }
    let nib = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    h.as_bytes()
        .chunks(2)
        .map(|p| Some(nib(p[0])? << 4 | nib(p[1])?))
        .collect()
}

fn parse_address(s: &str) -> Option<[u8; 20]> {
    parse_hex(s)?.try_into().ok()
}

fn hex0x(bytes: &[u8]) -> String {
    format!("0x{}", crate::x402::matching::hex(bytes))
}

// ---- EIP-712 -------------------------------------------------------------------------------

/// An EIP-712 domain with the fields x402's tokens use (`version` absent for Permit2).
#[derive(Debug, Clone, Copy)]
pub struct Domain<'a> {
    pub name: &'a str,
    pub version: Option<&'a str>,
    pub chain_id: U256,
    pub verifying_contract: [u8; 20],
}

impl Domain<'_> {
    pub fn separator(&self) -> [u8; 32] {
        let mut enc = Vec::with_capacity(5 * 32);
        match self.version {
            Some(v) => {
                enc.extend(keccak256(b"EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"));
                enc.extend(keccak256(self.name.as_bytes()));
                enc.extend(keccak256(v.as_bytes()));
            }
            None => {
                enc.extend(keccak256(
                    b"EIP712Domain(string name,uint256 chainId,address verifyingContract)",
                ));
                enc.extend(keccak256(self.name.as_bytes()));
            }
        }
        enc.extend(self.chain_id.0);
        enc.extend(word_address(&self.verifying_contract));
        keccak256(&enc)
    }
}

fn word_address(a: &[u8; 20]) -> [u8; 32] {
    let mut w = [0u8; 32];
    w[12..].copy_from_slice(a);
    w
}

fn typed_digest(domain_separator: &[u8; 32], struct_hash: &[u8; 32]) -> [u8; 32] {
    let mut enc = Vec::with_capacity(66);
    enc.extend([0x19, 0x01]);
    enc.extend(domain_separator);
    enc.extend(struct_hash);
    keccak256(&enc)
}

/// The EIP-712 digest a `TransferWithAuthorization` signature covers.
pub fn eip3009_digest(
    domain: &Domain<'_>,
    from: &[u8; 20],
    to: &[u8; 20],
    value: &U256,
    valid_after: &U256,
    valid_before: &U256,
    nonce: &[u8; 32],
) -> [u8; 32] {
    let mut enc = Vec::with_capacity(7 * 32);
    enc.extend(keccak256(b"TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"));
    enc.extend(word_address(from));
    enc.extend(word_address(to));
    enc.extend(value.0);
    enc.extend(valid_after.0);
    enc.extend(valid_before.0);
    enc.extend(nonce);
    typed_digest(&domain.separator(), &keccak256(&enc))
}

/// The EIP-712 digest an x402 Permit2 `PermitWitnessTransferFrom` signature covers.
#[allow(clippy::too_many_arguments)]
pub fn permit2_digest(
    chain_id: U256,
    token: &[u8; 20],
    amount: &U256,
    spender: &[u8; 20],
    nonce: &U256,
    deadline: &U256,
    to: &[u8; 20],
    valid_after: &U256,
) -> [u8; 32] {
    let domain = Domain {
        name: "Permit2",
        version: None,
        chain_id,
        verifying_contract: parse_address(PERMIT2_ADDRESS).unwrap_or_default(),
    };
    let mut permitted = Vec::with_capacity(3 * 32);
    permitted.extend(keccak256(b"TokenPermissions(address token,uint256 amount)"));
    permitted.extend(word_address(token));
    permitted.extend(amount.0);
    let mut witness = Vec::with_capacity(3 * 32);
    witness.extend(keccak256(b"Witness(address to,uint256 validAfter)"));
    witness.extend(word_address(to));
    witness.extend(valid_after.0);
    let mut enc = Vec::with_capacity(6 * 32);
    enc.extend(keccak256(b"PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,uint256 validAfter)"));
    enc.extend(keccak256(&permitted));
    enc.extend(word_address(spender));
    enc.extend(nonce.0);
    enc.extend(deadline.0);
    enc.extend(keccak256(&witness));
    typed_digest(&domain.separator(), &keccak256(&enc))
}

/// The address whose key made a 65-byte `r ‖ s ‖ v` signature of `digest`. High-s signatures
/// are refused (token contracts refuse them on chain too).
pub fn recover_signer(digest: &[u8; 32], signature: &[u8]) -> Option<[u8; 20]> {
    if signature.len() != 65 {
        return None;
    }
    let v = match signature[64] {
        27 | 28 => signature[64] - 27,
        0 | 1 => signature[64],
        _ => return None,
    };
    let sig = Signature::from_slice(&signature[..64]).ok()?;
    if sig.normalize_s().is_some() {
        return None;
    }
    let key = VerifyingKey::recover_from_prehash(digest, &sig, RecoveryId::from_byte(v)?).ok()?;
    let point = key.to_encoded_point(false);
    let hash = keccak256(&point.as_bytes()[1..]);
    hash[12..].try_into().ok()
}

// ---- Solana --------------------------------------------------------------------------------

fn check_solana(inner: &Value, offer: &Requirement) -> Result<SolanaTx, Refusal> {
    const FIELD: &str = "payload.transaction";
    let s = string_field(inner.get("transaction"), FIELD, "base64")?;
    let max_b64 = MAX_SOLANA_TX_BYTES.div_ceil(3) * 4;
    if s.len() > max_b64 {
        return Err(Refusal::malformed(
            "too_large",
            FIELD,
            format!("is longer than a Solana transaction can be ({MAX_SOLANA_TX_BYTES} bytes)"),
        ));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|_| Refusal::malformed("bad_base64", FIELD, "is not standard padded base64"))?;
    if bytes.len() > MAX_SOLANA_TX_BYTES {
        return Err(Refusal::malformed(
            "too_large",
            FIELD,
            format!("is longer than a Solana transaction can be ({MAX_SOLANA_TX_BYTES} bytes)"),
        ));
    }
    let tx = parse_solana_tx(&bytes).map_err(|why| {
        Refusal::malformed(
            "bad_transaction",
            FIELD,
            format!("is not a serialized Solana transaction: {why}"),
        )
    })?;
    let fee_payer = offer
        .extra
        .get("feePayer")
        .and_then(Value::as_str)
        .and_then(solana_bytes);
    if let Some(expected) = fee_payer {
        if tx.fee_payer != expected {
            return Err(Refusal::invalid(
                "invalid_exact_svm_payload_fee_payer_mismatch",
                FIELD,
                "does not name this offer's extra.feePayer as its fee payer (first account)",
            ));
        }
    }
    Ok(tx)
}

/// The local checks' view of a transaction: shape and fee payer (the shared reader parses).
fn parse_solana_tx(bytes: &[u8]) -> Result<SolanaTx, &'static str> {
    let tx = crate::x402::solana_tx::parse(bytes)?;
    Ok(SolanaTx {
        signatures: tx.signatures.len(),
        fee_payer: tx.account_keys[0],
        size: bytes.len(),
        version: tx.version,
    })
}

#[cfg(test)]
mod tests;
