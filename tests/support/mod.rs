//! The one test support of paycall's integration tests and benches, included the same way by
//! every test crate: `#[path = "../support/mod.rs"] mod support;` in tests/it/main.rs (whose
//! modules, the former tests/*.rs, `use crate::support;`), `mod support;` in the few tests/*.rs
//! that change process-wide state and so stay crates of their own, and
//! `#[path = "../tests/support/mod.rs"] mod support;` in a bench.
//!
//! - the server under test: [`server`] (in-process, 127.0.0.1:0), [`binary`] (the real binary
//!   as a child process), [`shipped`] (paycall on the shipped routes against the stack),
//!   [`clients`] (running the official clients);
//! - the payment stack: [`stack`] (anvil + the official facilitator + the Solana mock),
//!   [`eip3009`] (in-process EVM signing);
//! - upstreams and canaries: [`upstream`], [`guard`] (scripted raw HTTP, counting canaries),
//!   [`pages`], [`extract`], [`market`], [`search`], [`audit_zoo`], [`postgres`];
//! - documents: [`pdf`], [`hostile`];
//! - [`logs`]: the process's JSON log lines, captured once;
//! - [`net`]: bind 127.0.0.1:0 and serve; [`bench`]: the benches' stub facilitator, slow upstream,
//!   arguments and RSS.
//!
//! Each test crate and bench uses only part of this, so unused code is expected here.
#![allow(dead_code)]

pub mod audit_zoo;
pub mod bench;
pub mod binary;
pub mod clients;
pub mod eip3009;
pub mod extract;
pub mod guard;
pub mod hostile;
pub mod logs;
pub mod market;
pub mod net;
pub mod pages;
pub mod pdf;
pub mod postgres;
pub mod search;
pub mod server;
pub mod shipped;
pub mod stack;
pub mod upstream;
