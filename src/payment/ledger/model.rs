//! What the ledger stores: one row per payment, its state machine, and the kept reply.
//!
//! States (docs/ledger.md has the diagram):
//! `claimed` (an instance holds the payment) → `verified` (the facilitator said valid) →
//! `settling` (the reply is kept and /settle was asked) → `settled` | `settle_failed` |
//! `pending` (broadcast or unknown: confirmed later on chain); or `verified` → `not_charged`
//! (the call failed; the authorization is unspent and may be retried, a bounded number of times).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Claimed,
    Verified,
    Settling,
    Settled,
    SettleFailed,
    NotCharged,
    Pending,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Claimed => "claimed",
            State::Verified => "verified",
            State::Settling => "settling",
            State::Settled => "settled",
            State::SettleFailed => "settle_failed",
            State::NotCharged => "not_charged",
            State::Pending => "pending",
        }
    }

    pub fn parse(s: &str) -> Option<State> {
        Some(match s {
            "claimed" => State::Claimed,
            "verified" => State::Verified,
            "settling" => State::Settling,
            "settled" => State::Settled,
            "settle_failed" => State::SettleFailed,
            "not_charged" => State::NotCharged,
            "pending" => State::Pending,
            _ => return None,
        })
    }

    /// Money may have moved (or is moving) for this payment: its kept reply belongs to the
    /// payer and no new work may be done for it.
    pub fn money_in_motion(self) -> bool {
        matches!(self, State::Settling | State::Settled | State::Pending)
    }
}

/// What a payment is bound to: the call it paid for. A payment (and its kept reply) is never
/// served for another route, method or input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub route: String,
    pub method: String,
    /// Hex SHA-256 of the validated input (canonical JSON).
    pub input_hash: String,
}

/// A payment as the gate first sees it (before the facilitator).
#[derive(Debug, Clone)]
pub struct NewPayment {
    /// The payment's identity: EVM `network|from|nonce`, Solana `network|tx signature`.
    pub key: String,
    pub binding: Binding,
    /// Hex SHA-256 of the exact PAYMENT-SIGNATURE header value: a kept reply is released only
    /// to the same header.
    pub header_hash: String,
    /// The payment-identifier extension's id, when the client sent one.
    pub pid: Option<String>,
    pub amount: String,
    pub asset: String,
    pub network: String,
    pub pay_to: String,
    /// The payer named in the payload (EVM `from`), before the facilitator confirms it.
    pub payer: Option<String>,
    pub request_id: String,
    /// Unix seconds after which the authorization can no longer be settled (EVM validBefore;
    /// for Solana, arrival + maxTimeoutSeconds).
    pub valid_before: i64,
}

/// A finished reply kept for a retry: exactly what was (or will be) sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeptReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    #[serde(skip)]
    pub body: Vec<u8>,
}

/// One ledger row.
#[derive(Debug, Clone)]
pub struct Row {
    pub key: String,
    pub binding: Binding,
    pub header_hash: String,
    pub pid: Option<String>,
    pub amount: String,
    pub asset: String,
    pub network: String,
    pub pay_to: String,
    pub payer: Option<String>,
    pub request_id: String,
    pub state: State,
    pub attempts: i64,
    pub lease_owner: String,
    pub lease_until_ms: i64,
    pub valid_before: i64,
    pub transaction: Option<String>,
    pub error: Option<String>,
    pub reply: Option<KeptReply>,
    pub reply_expires_ms: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// The configured name of the facilitator whose verify verdict let the work run.
    pub verified_by: Option<String>,
    /// The configured name of the facilitator the settlement was sent to, written before it is
    /// sent: a settlement whose outcome is unknown is resolved with this one and no other
    /// (docs/ledger.md). None on rows older than schema 2.
    pub settled_by: Option<String>,
}

/// What a claim found.
#[derive(Debug, Clone)]
pub enum Claim {
    /// A new payment: this instance holds it (state `claimed`, attempt 1).
    Fresh,
    /// A known payment whose lease had ended (or was released): this instance now holds it;
    /// the row is as it was before the takeover, with `attempts` already counting this one.
    Taken(Row),
    /// Held by a live lease (another request, here or on another instance).
    Busy(Row),
    /// The same payment presented for another route, method or input.
    Mismatch(Row),
    /// A new payment whose payment-identifier id is already used by another payment on this
    /// route (the database's unique index decided, so a race between instances is caught).
    PidTaken,
}

/// A state change made by the instance that holds the lease.
#[derive(Debug, Clone, Default)]
pub struct Update {
    pub state: Option<State>,
    pub payer: Option<String>,
    pub transaction: Option<String>,
    pub error: Option<String>,
    pub verified_by: Option<String>,
    pub settled_by: Option<String>,
    /// Keep this reply until `reply_expires_ms`.
    pub reply: Option<(KeptReply, i64)>,
    /// Drop the kept reply (a failed settlement: nothing may be released).
    pub drop_reply: bool,
    /// End the lease: the payment may be taken by the next request.
    pub release: bool,
}

/// Current schema version; migrations in `migrations` bring a database to it.
pub const SCHEMA_VERSION: i64 = 2;

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
