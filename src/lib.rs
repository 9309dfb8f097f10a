//! paycall: pay-per-call web and crypto-market functions for software agents, paid with x402 v2.
//!
//! Dependencies point down: server → pipeline → stages → (x402, net, doc) → config types.

pub mod audit;
pub mod browser;
pub mod config;
pub mod doc;
pub mod market;
pub mod net;
pub mod pdf;
pub mod pipeline;
pub mod search;
pub mod server;
pub mod stages;
pub mod x402;
