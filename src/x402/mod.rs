//! The x402 v2 protocol layer the payment stages call: header codec, dollar ⇄ atomic
//! prices, the 402 challenge (with the bazaar extension), matching a payment to an offer,
//! replay keys, and the facilitator client (with CDP auth). No HTTP server code here.
//!
//! Design choice: what we *emit* is typed ([`Requirement`], [`ResourceInfo`]); what we
//! *receive* (the client's `PAYMENT-SIGNATURE`, facilitator answers) stays
//! `serde_json::Value`, so the payload reaches the facilitator exactly as the client sent it
//! (a typed round trip drops fields such as `resource.serviceName`).

pub mod auth;
pub mod bazaar;
pub mod challenge;
pub mod codec;
pub mod facilitator;
pub mod facilitators;
pub mod failover;
pub mod matching;
pub mod price;
pub mod solana_ata;
pub mod solana_tx;
pub mod types;

pub use bazaar::{bazaar_extension, BazaarInput, BazaarParam, JsonType};
pub use challenge::payment_required;
pub use codec::{decode_header, decode_lenient, encode_header, Base64Variant, CodecError};
pub use facilitator::{
    ensure_crypto, FacilitatorAuth, FacilitatorClient, FacilitatorConfig, FacilitatorError, Kind,
    SettleOutcome, Supported, VerifyOutcome,
};
pub use facilitators::{Facilitators, Routed};
pub use matching::{check_payload_shape, find_offer, payload_version, payment_key};
pub use price::{atomic_to_usd, usd_to_atomic, PriceError};
pub use types::{Requirement, ResourceInfo};
