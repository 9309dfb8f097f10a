//! paycall: pay-per-call web and crypto-market functions for software agents, paid with x402 v2.
//!
//! Dependencies point down (what `grep -rn "use crate::" src/` shows):
//! - `server` (warp, the top) builds everything: config → services → chains, and the
//!   discovery documents; `ops` and `mcp` sit beside it and read its `App`.
//! - `stages` and `payment` (the payment stages) implement the `pipeline::Stage` trait and meet
//!   only through the `pipeline::Exchange`; `pipeline` never imports them (the registry of
//!   stage names lives in `stages`, handed to the chain builder by `server`).
//! - the domain modules (`x402`, `net`, `doc`, `market`, `pdf`, `search`, `browser`, `audit`)
//!   import no module above them, and never warp.
//! - `config` holds the types every layer reads; validating them borrows a few pure checks
//!   from the domain (`audit::address`, `net::guard`, `x402::price`) and the ledger's settings
//!   type from `payment`.
//!
//! So `server` → `payment` → `pipeline`, never back: what the payment gate shares with the
//! server (the headers every answer carries) lives in `pipeline::reply_headers`, and /status
//! hands `payment::readiness` what it reads rather than the `App`.

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
