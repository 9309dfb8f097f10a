//! Placeholder until the doc branch lands.
pub struct MarkdownDoc {
    pub title: Option<String>,
    pub description: Option<String>,
    pub language: Option<String>,
    pub markdown: String,
}
pub fn html_to_markdown(html: &str, _base: Option<&url::Url>) -> MarkdownDoc {
    MarkdownDoc {
        title: None,
        description: None,
        language: None,
        markdown: html.to_string(),
    }
}
pub fn passthrough(_ct: &str, body: &str) -> Option<String> {
    Some(body.to_string())
}
