//! What a fetch got, as stages hand it to each other through the exchange: the upstream
//! answer and how it was asked for, and the limits the route's fetch applies.

use http::Method;
use url::Url;

use super::FetchResponse;

/// The upstream answer and how it was asked for.
pub struct Fetched {
    pub requested: Url,
    pub method: Method,
    pub response: FetchResponse,
}

/// The caps a route's fetch applies, for answers that describe them (/api/http's
/// `methodology`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    pub max_bytes: usize,
    pub timeout_ms: u64,
    pub max_redirects: u32,
}
