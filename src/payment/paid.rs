//! What the payment stages hand each other through the exchange's slots.

use serde_json::Value;

use super::ledger::Row;
use crate::x402::types::Requirement;

/// A payment the gate accepted: verified by the facilitator, or a known payment whose money is
/// in doubt and whose kept reply may be released (`resume`).
#[derive(Debug, Clone)]
pub struct Paid {
    /// The decoded PAYMENT-SIGNATURE, verbatim.
    pub payload: Value,
    /// Our offer it matched (what the facilitator is asked to settle).
    pub offer: Requirement,
    /// The payment's identity in the ledger.
    pub key: String,
    pub payer: Option<String>,
    /// The payment-identifier id, when the client sent one.
    pub pid: Option<String>,
    /// Unix seconds after which the authorization can no longer be settled.
    pub valid_before: i64,
    pub resume: Option<Resume>,
}

/// A payment whose reply was kept while its settlement was in doubt (`settling`/`pending`).
#[derive(Debug, Clone)]
pub struct Resume {
    pub row: Row,
}

/// The bill stage's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Billed(pub bool);

/// What the settle stage made of a verified paid call (read by the metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Settled: the money moved, the answer was released.
    Charged,
    /// The bill rule said not to charge; nothing was settled.
    NotCharged,
    /// The facilitator (or the chain) says it did not settle; the answer was withheld.
    SettleFailed,
    /// Outcome unknown; the client repeats the same payment later.
    Pending,
    /// Settlement could not be asked (facilitator or ledger unreachable); nothing moved.
    NotSettled,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Charged => "charged",
            Outcome::NotCharged => "not_charged",
            Outcome::SettleFailed => "settle_failed",
            Outcome::Pending => "pending",
            Outcome::NotSettled => "not_settled",
        }
    }
}

/// The facilitator that gave this exchange's last verdict (verify, then settle): the request log
/// line's `facilitator`.
#[derive(Debug, Clone)]
pub struct FacilitatorUsed(pub std::sync::Arc<str>);

/// The settle stage's outcome for this exchange, with the offer's network and atomic amount.
#[derive(Debug, Clone)]
pub struct Settled {
    pub outcome: Outcome,
    pub network: String,
    pub amount: String,
}
