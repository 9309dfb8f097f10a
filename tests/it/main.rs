//! paycall's integration tests, one module per former `tests/X.rs` crate, linked into one test
//! binary: one link and one build of tests/support instead of one per file, and the tests of
//! every module share the test threads (`cargo test --test it MODULE::` runs one module).
//!
//! Tests that change process-wide state are separate crates beside this one: tests/audit_pay.rs
//! sets BRAVE_API_KEY (tests/it/route_unavailable.rs needs it unset), tests/guard_proxy_env.rs
//! sets the proxy variables, tests/request_log.rs installs the global log subscriber and reads
//! every line the binary logs. A module here must not set environment variables, the working
//! directory or a global subscriber other than with `try_init` (tests/it/ledger_postgres.rs).

#[path = "../support/mod.rs"]
mod support;

mod audit_bazaar_check;
mod audit_x402_check;
mod billing_documented;
mod browser_lifetime;
mod challenge_page;
mod cli_check;
mod demo;
mod discovery;
mod docs_reference;
mod engine;
mod extract_pay;
mod extract_route;
mod facilitator_failover;
mod facilitator_keepalive;
mod guard_client;
mod guard_routes;
mod hostile_concurrency;
mod http_fetch_limits;
mod http_fetch_pay;
mod input_limits;
mod ledger_crash;
mod ledger_postgres;
mod market_funding_signals;
mod market_gas_portfolio;
mod market_pay;
mod market_pulse;
mod market_yield;
mod mcp_http;
mod mcp_pay;
mod openapi_valid;
mod ops_402;
mod ops_metrics;
mod ops_reload;
mod ops_shutdown;
mod pdf_bench_pages;
mod pdf_hostile;
mod pdf_http;
mod pdf_static_file;
mod pdf_text;
mod python_clients;
mod route_unavailable;
mod rust_client;
mod screenshot_browser;
mod screenshot_demo;
mod screenshot_pay;
mod search_pay;
mod search_providers;
mod solana_pay;
mod solana_readiness;
mod stack_smoke;
mod x402_bazaar;
mod x402_facilitator;
mod x402_local_checks;
mod x402_vectors;
