//! Page metadata: title, description, language, byline and publication date.
//!
//! Sources in order of trust: Open Graph / article meta tags, JSON-LD (`Article` and friends,
//! including `@graph`), plain meta tags, then the document itself (`<title>`, `<h1>`,
//! `<html lang>`, `time[datetime]`).

use super::dom::{collapse_ws, Dom};
use serde_json::Value;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Meta {
    pub title: Option<String>,
    pub description: Option<String>,
    pub language: Option<String>,
    pub byline: Option<String>,
    pub published: Option<String>,
}

/// Longest metadata value kept; anything longer is not a title or a name.
const MAX_FIELD: usize = 2000;

pub fn extract(dom: &Dom) -> Meta {
    let mut metas: Vec<(String, String)> = Vec::new(); // (lower-case key, content)
    let mut ld = Vec::new();
    let mut title_tag = None;
    let mut html_lang = None;
    let mut first_h1 = None;
    let mut rel_author = None;
    let mut time_datetime = None;
    for ix in 0..dom.nodes.len() {
        let Some(el) = dom.elem(ix) else { continue };
        match el.tag.as_str() {
            "meta" => {
                let key = el
                    .attr("property")
                    .or_else(|| el.attr("name"))
                    .or_else(|| el.attr("itemprop"))
                    .or_else(|| el.attr("http-equiv"));
                if let (Some(k), Some(c)) = (key, el.attr("content")) {
                    metas.push((k.trim().to_ascii_lowercase(), c.to_string()));
                }
            }
            "script" if el.attr("type").is_some_and(|t| t.contains("ld+json")) => {
                if let Ok(v) = serde_json::from_str::<Value>(dom.raw_text(ix).trim()) {
                    ld.push(v);
                }
            }
            "title" if title_tag.is_none() => title_tag = Some(collapse_ws(&dom.raw_text(ix))),
            "html" if html_lang.is_none() => html_lang = el.attr("lang").map(str::to_string),
            "h1" if first_h1.is_none() => first_h1 = Some(collapse_ws(&dom.raw_text(ix))),
            "a" | "link"
                if rel_author.is_none() && el.attr("rel") == Some("author") && el.tag == "a" =>
            {
                rel_author = Some(collapse_ws(&dom.raw_text(ix)));
            }
            "time" if time_datetime.is_none() => {
                time_datetime = el.attr("datetime").map(str::to_string);
            }
            _ => {}
        }
    }
    let meta = |keys: &[&str]| -> Option<String> {
        keys.iter().find_map(|k| {
            metas
                .iter()
                .find(|(mk, c)| mk == k && !c.trim().is_empty())
                .map(|(_, c)| collapse_ws(c))
        })
    };
    let article = ld.iter().find_map(find_article);

    let title = meta(&["og:title", "twitter:title"])
        .or_else(|| article.and_then(|a| ld_str(a, "headline")))
        .or_else(|| title_tag.clone().map(|t| clean_title(&t)))
        .or(first_h1);
    let description = meta(&["description", "og:description", "twitter:description"])
        .or_else(|| article.and_then(|a| ld_str(a, "description")));
    let language = html_lang
        .or_else(|| meta(&["content-language", "og:locale", "language", "dc.language"]))
        .map(|l| l.trim().replace('_', "-"))
        .filter(|l| {
            !l.is_empty()
                && l.len() <= 35
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        });
    let byline = article
        .and_then(|a| a.get("author"))
        .and_then(ld_names)
        .or_else(|| {
            meta(&[
                "author",
                "article:author",
                "dc.creator",
                "byl",
                "sailthru.author",
            ])
        })
        .filter(|a| !a.starts_with("http"))
        .or(rel_author);
    let published = meta(&[
        "article:published_time",
        "og:article:published_time",
        "datepublished",
        "publishdate",
        "pubdate",
        "date",
        "dc.date.issued",
        "dc.date",
        "sailthru.date",
    ])
    .or_else(|| article.and_then(|a| ld_str(a, "datePublished")))
    .or(time_datetime);
    let clip = |o: Option<String>| o.filter(|s| !s.is_empty() && s.len() <= MAX_FIELD);
    Meta {
        title: clip(title),
        description: clip(description),
        language: clip(language),
        byline: clip(byline),
        published: clip(published.map(|p| p.trim().to_string())),
    }
}

const ARTICLE_TYPES: &[&str] = &[
    "Article",
    "NewsArticle",
    "BlogPosting",
    "ReportageNewsArticle",
    "AnalysisNewsArticle",
    "OpinionNewsArticle",
    "ReviewNewsArticle",
    "TechArticle",
    "ScholarlyArticle",
    "Report",
    "LiveBlogPosting",
    "WebPage",
];

/// The first JSON-LD object of an article type, searched breadth-first with a bound so a
/// hostile document cannot make this slow.
fn find_article(v: &Value) -> Option<&Value> {
    let mut queue = std::collections::VecDeque::from([v]);
    let mut seen = 0;
    let mut page = None;
    while let Some(v) = queue.pop_front() {
        seen += 1;
        if seen > 1000 {
            break;
        }
        match v {
            Value::Array(a) => queue.extend(a.iter()),
            Value::Object(o) => {
                let types: Vec<&str> = match o.get("@type") {
                    Some(Value::String(s)) => vec![s.as_str()],
                    Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if types
                    .iter()
                    .any(|t| *t != "WebPage" && ARTICLE_TYPES.contains(t))
                {
                    return Some(v);
                }
                if page.is_none() && types.contains(&"WebPage") {
                    page = Some(v);
                }
                if let Some(g) = o.get("@graph") {
                    queue.push_back(g);
                }
                if let Some(m) = o.get("mainEntity") {
                    queue.push_back(m);
                }
            }
            _ => {}
        }
    }
    page
}

fn ld_str(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(collapse_ws(s)).filter(|s| !s.is_empty()),
        _ => None,
    }
}

/// `author` as a string, an object with `name`, or a list of those.
fn ld_names(v: &Value) -> Option<String> {
    let names: Vec<String> = match v {
        Value::String(s) => vec![collapse_ws(s)],
        Value::Object(_) => v
            .get("name")
            .and_then(Value::as_str)
            .map(collapse_ws)
            .into_iter()
            .collect(),
        Value::Array(a) => a.iter().take(20).filter_map(ld_names).collect(),
        _ => vec![],
    };
    let names: Vec<String> = names.into_iter().filter(|n| !n.is_empty()).collect();
    (!names.is_empty()).then(|| names.join(", "))
}

/// `<title>` usually carries the site name after a separator: keep the longest part.
fn clean_title(t: &str) -> String {
    for sep in [" | ", " - ", " – ", " — ", " :: ", " » ", " · "] {
        if t.contains(sep) {
            if let Some(best) = t.split(sep).max_by_key(|p| p.chars().count()) {
                if best.split_whitespace().count() >= 3 {
                    return best.trim().to_string();
                }
            }
        }
    }
    t.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meta_json_ld_and_fallbacks() {
        let html = r#"<html lang="en_GB"><head><title>Big News - The Site</title>
            <meta name="description" content="  What happened  ">
            <script type="application/ld+json">{"@graph":[{"@type":"WebSite"},
              {"@type":"NewsArticle","headline":"Big News Today",
               "author":[{"name":"Ann Lee"},{"name":"Bo Chan"}],
               "datePublished":"2024-01-02T03:04:05Z"}]}</script>
            </head><body><h1>Big News</h1></body></html>"#;
        let m = extract(&Dom::parse(html, &Default::default()).unwrap());
        assert_eq!(m.title.as_deref(), Some("Big News Today"));
        assert_eq!(m.description.as_deref(), Some("What happened"));
        assert_eq!(m.language.as_deref(), Some("en-GB"));
        assert_eq!(m.byline.as_deref(), Some("Ann Lee, Bo Chan"));
        assert_eq!(m.published.as_deref(), Some("2024-01-02T03:04:05Z"));
    }

    #[test]
    fn og_tags_win_and_title_is_cleaned() {
        let html = r#"<head><meta property="og:title" content="OG Title">
            <meta property="article:published_time" content="2020-05-05"></head>"#;
        let m = extract(&Dom::parse(html, &Default::default()).unwrap());
        assert_eq!(m.title.as_deref(), Some("OG Title"));
        assert_eq!(m.published.as_deref(), Some("2020-05-05"));
        let m = extract(
            &Dom::parse(
                "<title>A long article title | Site</title>",
                &Default::default(),
            )
            .unwrap(),
        );
        assert_eq!(m.title.as_deref(), Some("A long article title"));
        assert_eq!(m.language, None);
    }
}
