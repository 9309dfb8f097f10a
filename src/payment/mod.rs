//! The money path, in one folder: every rule about taking a payment lives here.
//!
//! - `challenge_page`: the 402 as an HTML page for a person in a browser;
//! - `gate`: the x402 door of a paid route (402 challenge, decode, match, local checks, ledger
//!   claim, facilitator verify) — the `payment_gate` stage;
//! - `local_check`: what can be judged of a payment without the facilitator (typed payloads,
//!   offer equality, validity window, EIP-712 signature recovery);
//! - `bill`: whether the finished reply is charged — the `bill` stage;
//! - `settle`: settlement, the receipt, kept replies and their release — the `settle` stage;
//! - `ledger`: every payment on record (SQLite or Postgres), claims across instances;
//! - `identifier`: the payment-identifier extension (idempotent retries);
//! - `confirm`: a settlement confirmed on chain (EIP-3009 events), the only proof besides the
//!   facilitator's success that releases a kept reply;
//! - `limits`: /verify rate limits per payer and per client;
//! - `upkeep`: reconciliation of payments in doubt, retention;
//! - `paid`: the typed payment the gate hands to bill and settle;
//! - `readiness`: whether each offered network can be paid (facilitator, Solana token account).
//!
//! The chain runner knows none of this: the three stages are registered like any other, and
//! meet through the exchange's typed slots.

pub mod bill;
pub mod challenge_page;
pub mod confirm;
pub mod gate;
pub mod identifier;
pub mod ledger;
pub mod limits;
pub mod local_check;
pub mod paid;
pub mod readiness;
pub mod settle;
pub mod timing;
pub mod upkeep;

pub use paid::{Billed, Outcome, Paid, Resume, Settled};
