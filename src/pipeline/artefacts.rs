//! Artefacts that several stages hand each other through the Exchange's slots.

use http::Method;
use url::Url;

use crate::net::FetchResponse;

/// What the fetch stage got: the upstream answer and how it was asked for.
pub struct Fetched {
    pub requested: Url,
    pub method: Method,
    pub response: FetchResponse,
}
