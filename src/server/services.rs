//! The shared runtime services stages use, built once from the config.

use std::sync::Arc;

use crate::config::Config;
use crate::pipeline::Services;

/// Builds the services. No network I/O happens here (so `paycall check` can call it).
pub fn build(config: &Config) -> Services {
    Services::builder().with(Arc::new(config.clone())).build()
}

/// Stops what needs stopping (browser pools, …) when the server shuts down.
pub async fn shutdown(_services: &Services) {}
