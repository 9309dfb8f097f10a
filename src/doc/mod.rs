//! Documents → clean markdown: main-content extraction for /api/fetch, pass-through of
//! text-like bodies, and the benchmark metric used to measure extraction quality.

pub mod batch;
pub mod charset;
mod dom;
mod main_content;
pub mod fetch_markdown;
pub mod input_bounds;
pub mod markdown;
mod page_meta;
pub mod parse;
mod markdown_writer;
pub mod score;
mod text;

pub use markdown::{html_to_markdown, markdown_to_text, passthrough, MarkdownDoc};
pub mod fields;
pub mod page;
