//! Markdown → plain text: the words a reader sees, without syntax, link URLs or image alt text.
//!
//! This is what extraction quality is scored on, and a usable plain-text rendering of any
//! markdown (ours or a passed-through `text/markdown` body). Parsing is CommonMark + GFM tables
//! and strikethrough (pulldown-cmark), so escapes, emphasis and link syntax resolve exactly the
//! way a renderer would show them. Raw HTML inside markdown is dropped, as a renderer would not
//! show it as text either.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The visible text of `md`: one line per paragraph, heading, list item, table row or code
/// line, blank lines between blocks.
pub fn markdown_to_text(md: &str) -> String {
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_TABLES);
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    let mut out = String::with_capacity(md.len());
    let mut in_image = 0usize;
    let block_break = |out: &mut String| {
        while out.ends_with([' ', '\t']) {
            out.pop();
        }
        if !out.is_empty() && !out.ends_with("\n\n") {
            out.push_str(if out.ends_with('\n') { "\n" } else { "\n\n" });
        }
    };
    for ev in Parser::new_ext(md, opts) {
        match ev {
            Event::Start(Tag::Image { .. }) => in_image += 1,
            Event::End(TagEnd::Image) => in_image = in_image.saturating_sub(1),
            _ if in_image > 0 => {}
            Event::Text(t) | Event::Code(t) => out.push_str(&t),
            Event::SoftBreak => out.push(' '),
            Event::HardBreak => out.push('\n'),
            Event::Start(Tag::TableCell) if !out.is_empty() && !out.ends_with(['\n', '\t']) => {
                out.push('\t');
            }
            Event::End(TagEnd::TableRow) | Event::End(TagEnd::TableHead) => {
                while out.ends_with('\t') {
                    out.pop();
                }
                out.push('\n');
            }
            Event::Start(
                Tag::Paragraph
                | Tag::Heading { .. }
                | Tag::CodeBlock(_)
                | Tag::BlockQuote(_)
                | Tag::Item
                | Tag::Table(_)
                | Tag::List(_),
            )
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::CodeBlock
                | TagEnd::BlockQuote(_)
                | TagEnd::Item
                | TagEnd::Table
                | TagEnd::List(_),
            )
            | Event::Rule => block_break(&mut out),
            _ => {}
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_syntax_and_urls() {
        let md = "## Heading\n\nSome **bold** [link text](https://x.example/a) and `code`.\n\n\
                  - one\n- two\n\n> quoted\n\n![alt text](https://x.example/i.png)\n\n\
                  ```rust\nlet a = 1;\nlet b = 2;\n```\n\n1\\. not a list \\*x\\*";
        assert_eq!(
            markdown_to_text(md),
            "Heading\n\nSome bold link text and code.\n\none\n\ntwo\n\nquoted\n\n\
             let a = 1;\nlet b = 2;\n\n1. not a list *x*"
        );
    }

    #[test]
    fn tables_become_tab_separated_rows() {
        let md = "| a | b |\n| --- | --- |\n| 1 | 2 |";
        assert_eq!(markdown_to_text(md), "a\tb\n1\t2");
    }

    #[test]
    fn raw_html_is_not_text() {
        assert_eq!(
            markdown_to_text("before <span>x</span> after"),
            "before x after"
        );
        assert_eq!(
            markdown_to_text("<div>\nblock html\n</div>\n\ntext"),
            "text"
        );
    }

    #[test]
    fn empty_and_garbage_do_not_panic() {
        assert_eq!(markdown_to_text(""), "");
        let _ = markdown_to_text(&"[".repeat(10_000));
        let _ = markdown_to_text(&"> ".repeat(10_000));
        let _ = markdown_to_text(&"- ".repeat(10_000));
    }
}
