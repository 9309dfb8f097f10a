//! Document metadata: the Info dictionary first, XMP (the catalog's /Metadata stream) for
//! what Info lacks. Dates become ISO 8601.

use lopdf::{Document, Object};
use regex::Regex;
use std::sync::OnceLock;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub title: Option<String>,
    pub author: Option<String>,
    pub subject: Option<String>,
    pub keywords: Option<String>,
    pub creator: Option<String>,
    pub producer: Option<String>,
    pub creation_date: Option<String>,
    pub mod_date: Option<String>,
}

const MAX_FIELD_CHARS: usize = 1000;
const MAX_XMP_BYTES: usize = 1 << 20;

fn clean(s: String) -> Option<String> {
    let s: String = s
        .chars()
        .filter(|c| !c.is_control() || *c == ' ')
        .take(MAX_FIELD_CHARS)
        .collect();
    let s = s.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> &'a Object {
    match o {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(o),
        o => o,
    }
}

/// PDF date `D:YYYYMMDDHHmmSSOHH'mm'` → ISO 8601 (as much as the value gives).
pub fn pdf_date(raw: &str) -> Option<String> {
    let s = raw.trim();
    let s = s.strip_prefix("D:").unwrap_or(s);
    let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.len() < 4 {
        return None;
    }
    let part = |a: usize, b: usize| digits.get(a..b);
    let mut out = digits[..4].to_string();
    let fields = [
        (4, 6, "-"),
        (6, 8, "-"),
        (8, 10, "T"),
        (10, 12, ":"),
        (12, 14, ":"),
    ];
    let mut have_time = false;
    for (a, b, sep) in fields {
        match part(a, b) {
            Some(p) => {
                out.push_str(sep);
                out.push_str(p);
                if a == 8 {
                    have_time = true;
                }
            }
            None => break,
        }
    }
    if have_time && digits.len() == 12 {
        out.push_str(":00");
    }
    if have_time && digits.len() >= 12 {
        let rest = &s[digits.len()..];
        let mut tz = rest.chars();
        match tz.next() {
            Some('Z') => out.push('Z'),
            Some(sign @ ('+' | '-')) => {
                let t: String = tz.filter(|c| c.is_ascii_digit()).collect();
                if t.len() >= 2 {
                    out.push(sign);
                    out.push_str(&t[..2]);
                    out.push(':');
                    out.push_str(t.get(2..4).unwrap_or("00"));
                }
            }
            _ => {}
        }
    }
    Some(out)
}

fn xmp_text(xml: &str, tag: &str) -> Option<String> {
    static CACHE: OnceLock<Vec<(String, Regex)>> = OnceLock::new();
    let all = CACHE.get_or_init(|| {
        [
            "dc:title",
            "dc:creator",
            "dc:description",
            "pdf:Keywords",
            "xmp:CreatorTool",
            "pdf:Producer",
            "xmp:CreateDate",
            "xmp:ModifyDate",
        ]
        .iter()
        .map(|t| {
            (
                t.to_string(),
                Regex::new(&format!(
                    r#"(?s)<{t}(?:\s[^>]*)?>(.*?)</{t}>|{t}="([^"]*)""#
                ))
                .expect("static regex"),
            )
        })
        .collect()
    });
    let re = &all.iter().find(|(t, _)| t == tag)?.1;
    let caps = re.captures(xml)?;
    let inner = caps.get(1).or(caps.get(2))?.as_str();
    // rdf:Alt / rdf:Seq: take the list items' text.
    static LI: OnceLock<Regex> = OnceLock::new();
    let li = LI.get_or_init(|| {
        Regex::new(r"(?s)<rdf:li(?:\s[^>]*)?>(.*?)</rdf:li>").expect("static regex")
    });
    let items: Vec<&str> = li
        .captures_iter(inner)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    let text = if items.is_empty() {
        inner.to_string()
    } else {
        items.join("; ")
    };
    static TAGS: OnceLock<Regex> = OnceLock::new();
    let tags = TAGS.get_or_init(|| Regex::new(r"<[^>]*>").expect("static regex"));
    let text = tags.replace_all(&text, "");
    clean(
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

pub fn read(doc: &Document) -> Metadata {
    let mut m = Metadata::default();
    if let Some(info) = doc
        .trailer
        .get(b"Info")
        .ok()
        .map(|o| deref(doc, o))
        .and_then(|o| o.as_dict().ok())
    {
        let field = |k: &[u8]| {
            info.get(k)
                .ok()
                .map(|o| deref(doc, o))
                .and_then(|o| lopdf::decode_text_string(o).ok())
                .and_then(clean)
        };
        m.title = field(b"Title");
        m.author = field(b"Author");
        m.subject = field(b"Subject");
        m.keywords = field(b"Keywords");
        m.creator = field(b"Creator");
        m.producer = field(b"Producer");
        m.creation_date = field(b"CreationDate").and_then(|d| pdf_date(&d));
        m.mod_date = field(b"ModDate").and_then(|d| pdf_date(&d));
    }
    let xmp = doc
        .catalog()
        .ok()
        .and_then(|c| c.get(b"Metadata").ok())
        .map(|o| deref(doc, o))
        .and_then(|o| o.as_stream().ok())
        .and_then(|s| super::decode_stream(doc, s, MAX_XMP_BYTES).ok());
    if let Some(xml) = xmp {
        let xml = String::from_utf8_lossy(&xml);
        let fill = |slot: &mut Option<String>, tag: &str| {
            if slot.is_none() {
                *slot = xmp_text(&xml, tag);
            }
        };
        fill(&mut m.title, "dc:title");
        fill(&mut m.author, "dc:creator");
        fill(&mut m.subject, "dc:description");
        fill(&mut m.keywords, "pdf:Keywords");
        fill(&mut m.creator, "xmp:CreatorTool");
        fill(&mut m.producer, "pdf:Producer");
        fill(&mut m.creation_date, "xmp:CreateDate");
        fill(&mut m.mod_date, "xmp:ModifyDate");
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdf_dates_become_iso() {
        assert_eq!(
            pdf_date("D:20240115103000+01'00'").as_deref(),
            Some("2024-01-15T10:30:00+01:00")
        );
        assert_eq!(
            pdf_date("D:20240115103000Z").as_deref(),
            Some("2024-01-15T10:30:00Z")
        );
        assert_eq!(pdf_date("D:2024").as_deref(), Some("2024"));
        assert_eq!(pdf_date("D:202401").as_deref(), Some("2024-01"));
        assert_eq!(pdf_date("garbage"), None);
        assert_eq!(pdf_date("D:2024011510305"), Some("2024-01-15T10:30".into()));
    }

    #[test]
    fn xmp_fields() {
        let xml = r#"<x:xmpmeta><rdf:RDF><rdf:Description xmp:CreatorTool="Writer &amp; Co">
        <dc:title><rdf:Alt><rdf:li xml:lang="x-default">Über &lt;XMP&gt;</rdf:li></rdf:Alt></dc:title>
        <dc:creator><rdf:Seq><rdf:li>Ann</rdf:li><rdf:li>Bob</rdf:li></rdf:Seq></dc:creator>
        </rdf:Description></rdf:RDF></x:xmpmeta>"#;
        assert_eq!(xmp_text(xml, "dc:title").as_deref(), Some("Über <XMP>"));
        assert_eq!(xmp_text(xml, "dc:creator").as_deref(), Some("Ann; Bob"));
        assert_eq!(
            xmp_text(xml, "xmp:CreatorTool").as_deref(),
            Some("Writer & Co")
        );
        assert_eq!(xmp_text(xml, "pdf:Producer"), None);
    }
}
