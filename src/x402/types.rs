//! The few typed x402 v2 objects we *emit*: one offer (`PaymentRequirements`) and the
//! resource description. Everything we *receive* (the client's payload, facilitator
//! answers) stays `serde_json::Value` so nothing unknown is dropped on the way through.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One entry of `accepts` (x402 v2 `PaymentRequirements`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    /// `exact` for us.
    pub scheme: String,
    /// CAIP-2 network id, e.g. `eip155:8453`.
    pub network: String,
    /// Atomic units as a decimal string (see [`crate::x402::price`]).
    pub amount: String,
    /// Token contract (EVM) or mint (Solana).
    pub asset: String,
    /// Recipient address, echoed back by clients exactly as written here.
    pub pay_to: String,
    pub max_timeout_seconds: u64,
    /// EVM: EIP-712 `name`/`version`; Solana: `feePayer`. Omitted from the wire when empty.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub extra: Map<String, Value>,
}

impl Requirement {
    /// The requirement as a JSON object (what goes into `accepts` and `paymentRequirements`).
    pub fn to_value(&self) -> Value {
        // A struct of strings, a u64 and a JSON map always serialises.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// `resource` of a challenge: what the buyer is paying for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    /// Absolute URL of the paid resource.
    pub url: String,
    /// Free text; capped at [`crate::x402::challenge::MAX_DESCRIPTION_UTF16`] when emitted.
    pub description: String,
    /// MIME type of the successful response.
    pub mime_type: String,
    /// Bazaar service name (printable ASCII, ≤ 32 chars, else facilitators drop it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Bazaar tags (≤ 5, each printable ASCII ≤ 32 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
}
