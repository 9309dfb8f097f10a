//! Documents → clean markdown: main-content extraction for /api/fetch, pass-through of
//! text-like bodies, and the benchmark metric used to measure extraction quality.

pub mod batch;
pub mod charset;
mod counter;
mod credit;
mod dateline;
mod dom;
mod dom_sink;
pub mod input_bounds;
mod main_content;
pub mod markdown;
mod markdown_writer;
mod page_meta;
pub mod page_text;
pub mod parse;
pub mod score;
mod text;
mod text_regex;

pub use markdown::{html_to_markdown, markdown_to_text, passthrough, MarkdownDoc};
pub mod fields;
pub mod page;
