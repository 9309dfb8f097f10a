//! Outbound networking: the guard (a pure verdict on an address), URL targets, the DNS seam and
//! the guarded HTTP client. Everything the service sends to the outside goes through here.
//!
//! `proxy` is the guarded forward proxy the headless browser sends every request through.

pub mod client;
pub mod client_ip;
pub mod error;
pub mod fetched;
pub mod guard;
pub mod proxy;
pub mod request_headers;
pub mod resolve;
pub mod target;

pub use client::{
    install_crypto_provider, ClientBuildError, FetchRequest, FetchResponse, GuardedClient, OverCap,
};
pub use error::{BlockedTarget, FetchError};
pub use fetched::{FetchLimits, Fetched};
pub use guard::{classify, Class, Embedded, Embedding, Guard, Reason, Refusal, Verdict};
pub use resolve::{Resolver, StaticResolver, SystemResolver};
pub use target::{parse_target, UrlRefusal, MAX_URL_LEN};
