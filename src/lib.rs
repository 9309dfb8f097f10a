//! paycall: pay-per-call web and crypto-market functions for software agents, paid with x402 v2.
//!
//! Dependencies point down: server → pipeline → stages → (x402, net, doc) → config types.

// A stage's early answer is an `Err(Reply)` (status, headers, JSON body): built once per refused
// request on a cold path, so boxing it everywhere would buy nothing but noise. The payment state
// lives once per exchange, for the same reason.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

pub mod audit;
pub mod browser;
pub mod config;
pub mod doc;
pub mod market;
pub mod mcp;
pub mod net;
pub mod ops;
pub mod payment;
pub mod pdf;
pub mod pipeline;
pub mod search;
pub mod server;
pub mod stages;
pub mod x402;
