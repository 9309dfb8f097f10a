//! x402 v2 protocol layer (placeholder until the x402 branch lands).
pub mod price;
