//! doc
pub mod markdown;
