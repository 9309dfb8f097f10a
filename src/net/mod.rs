//! Outbound networking: the guard (a pure verdict on an address), URL targets, the DNS seam and
//! the guarded HTTP client. Everything the service sends to the outside goes through here.
//!
//! Still to come here (DESIGN §5): the guarded forward proxy for the headless browser.

pub mod client;
pub mod error;
pub mod guard;
pub mod resolve;
pub mod target;

pub use client::{
    install_crypto_provider, ClientBuildError, FetchRequest, FetchResponse, GuardedClient, OverCap,
};
pub use error::{BlockedTarget, FetchError};
pub use guard::{classify, Class, Embedded, Embedding, Guard, Reason, Refusal, Verdict};
pub use resolve::{Resolver, StaticResolver, SystemResolver};
pub use target::{parse_target, UrlRefusal, MAX_URL_LEN};
