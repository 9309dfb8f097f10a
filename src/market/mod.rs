//! Crypto-market domain code the market stages call: the upstream hub (named base URLs, guarded
//! client, short-lived cache), one module per data source, and the pure maths (indicators,
//! ranking, risk rules). Nothing here knows about HTTP routes or payments.

pub mod candles;
pub mod evm;
pub mod format;
pub mod funding;
pub mod gas;
pub mod hub;
pub mod indicators;
pub mod networks;
pub mod portfolio;
pub mod source;
pub mod spot;
pub mod yields;

pub use hub::{
    first_ok, num, FailKind, Fresh, Limits, MarketHub, UpstreamError, RETRY_AFTER_S,
    UPSTREAM_ERRORS,
};
pub use source::SourceParams;
