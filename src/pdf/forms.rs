//! Form fields (AcroForm, ISO 32000-1 12.7) as data: the name and value of each field a page's
//! widgets show, so an answer marks which of the page's text is a filled-in value (issue 15).
//! The values also stay in the page's text, placed where the form shows them (`interp`), as
//! pdftotext reads them; `fields` tells them apart.
//!
//! A widget is the field itself or one of its kids: the field's name is the partial names
//! (`/T`) of it and its ancestors joined by `.` (12.7.3.2), its type (`/FT`) and value (`/V`)
//! are inherited. A text or choice field's value is its text (a choice list's several values
//! joined by ", "); a check box's or radio button's is its state's name (`Yes`; `Off`, no value).
//! Fields without a value are left out.

use lopdf::{Dictionary, Document, Object};
use serde::Serialize;

/// Ancestors read for a field's name and inherited keys (real forms nest 2–4 deep).
const MAX_FIELD_DEPTH: usize = 32;
/// Characters kept of a field's name.
const MAX_NAME_CHARS: usize = 256;
/// Characters kept of a field's value (a multi-line text field may hold a letter).
pub const MAX_VALUE_CHARS: usize = 4000;
/// Fields listed per document.
pub const MAX_FIELDS: usize = 1000;

/// One filled-in form field as a page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    /// Fully qualified name (`address.city`); empty when no level names it.
    pub name: String,
    /// `text`, `checkbox`, `radio`, `button`, `choice` or `signature` (from /FT and /Ff).
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub value: String,
}

fn deref<'a>(doc: &'a Document, o: &'a Object) -> &'a Object {
    match o {
        Object::Reference(id) => doc.get_object(*id).unwrap_or(o),
        o => o,
    }
}

/// A text string's text, line ends as `\n`, other control characters dropped, at most `max`
/// characters.
fn text(doc: &Document, o: &Object, max: usize) -> Option<String> {
    let s = lopdf::decode_text_string(deref(doc, o)).ok()?;
    let s = s.replace("\r\n", "\n").replace('\r', "\n");
    Some(
        s.chars()
            .filter(|&c| !c.is_control() || c == '\n' || c == '\t')
            .take(max)
            .collect::<String>()
            .trim()
            .to_string(),
    )
}

/// The field a widget annotation belongs to, with its value; None for a widget of no field or
/// a field without a value.
pub fn field(doc: &Document, widget: &Dictionary) -> Option<Field> {
    let mut names: Vec<String> = Vec::new();
    let (mut ft, mut v, mut ff) = (None, None, None);
    let mut node = Some(widget);
    for _ in 0..MAX_FIELD_DEPTH {
        let Some(d) = node else { break };
        if let Some(t) = d.get(b"T").ok().and_then(|t| text(doc, t, MAX_NAME_CHARS)) {
            names.push(t);
        }
        let own = |k: &[u8]| d.get(k).ok().map(|o| deref(doc, o));
        ft = ft.or_else(|| own(b"FT"));
        v = v.or_else(|| own(b"V"));
        ff = ff.or_else(|| own(b"Ff"));
        node = d
            .get(b"Parent")
            .ok()
            .and_then(|p| deref(doc, p).as_dict().ok());
    }
    let flags = match ff {
        Some(Object::Integer(i)) => *i,
        _ => 0,
    };
    let kind = match ft.and_then(|o| o.as_name().ok())? {
        b"Tx" => "text",
        b"Ch" => "choice",
        b"Sig" => "signature",
        // 12.7.4.2.1: bit 16 a radio button, bit 17 a push button.
        b"Btn" if flags & (1 << 16) != 0 => "button",
        b"Btn" if flags & (1 << 15) != 0 => "radio",
        b"Btn" => "checkbox",
        _ => return None,
    };
    let value = match v? {
        Object::Name(n) if n.as_slice() == b"Off" => return None,
        Object::Name(n) => String::from_utf8_lossy(n)
            .chars()
            .take(MAX_VALUE_CHARS)
            .collect(),
        Object::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .take(64)
                .filter_map(|o| text(doc, o, MAX_VALUE_CHARS))
                .filter(|s| !s.is_empty())
                .collect();
            parts.join(", ").chars().take(MAX_VALUE_CHARS).collect()
        }
        // A signature's value is a dictionary: signed, but no text to give.
        Object::Dictionary(_) => return None,
        o => text(doc, o, MAX_VALUE_CHARS)?,
    };
    if value.is_empty() {
        return None;
    }
    names.reverse();
    let name: String = names
        .join(".")
        .chars()
        .take(MAX_NAME_CHARS)
        .collect::<String>();
    Some(Field { name, kind, value })
}

/// The font size a field's default appearance string (`/DA`, e.g. `/Helv 9 Tf 0 g`) sets: the
/// number before its last `Tf`; None when there is none or it is 0 (auto size).
pub fn da_font_size(da: &[u8]) -> Option<f32> {
    let s = String::from_utf8_lossy(da);
    let toks: Vec<&str> = s.split_ascii_whitespace().collect();
    let i = toks.iter().rposition(|&t| t == "Tf")?;
    let size: f32 = toks.get(i.checked_sub(1)?)?.parse().ok()?;
    (size.is_finite() && size > 0.0).then_some(size)
}

/// The default appearance string of a widget: its own or its field's (inherited), else the
/// form's.
pub fn default_appearance(doc: &Document, widget: &Dictionary) -> Option<Vec<u8>> {
    let mut node = Some(widget);
    for _ in 0..MAX_FIELD_DEPTH {
        let Some(d) = node else { break };
        if let Ok(Object::String(s, _)) = d.get(b"DA").map(|o| deref(doc, o)) {
            return Some(s.clone());
        }
        node = d
            .get(b"Parent")
            .ok()
            .and_then(|p| deref(doc, p).as_dict().ok());
    }
    let root = doc.trailer.get(b"Root").ok().map(|o| deref(doc, o))?;
    let form = root
        .as_dict()
        .ok()?
        .get(b"AcroForm")
        .ok()
        .map(|o| deref(doc, o))?;
    match form.as_dict().ok()?.get(b"DA").map(|o| deref(doc, o)) {
        Ok(Object::String(s, _)) => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{dictionary, Object, StringFormat};

    fn s(t: &str) -> Object {
        Object::String(t.as_bytes().to_vec(), StringFormat::Literal)
    }

    #[test]
    fn a_widget_names_its_field_and_inherits_type_and_value() {
        let mut doc = Document::with_version("1.7");
        let parent = doc.add_object(dictionary! { "T" => s("address"), "FT" => "Tx" });
        let city = doc.add_object(dictionary! {
            "T" => s("city"), "Parent" => parent, "V" => s("Rotterdam\r\nZuid"),
        });
        let widget = dictionary! { "Subtype" => "Widget", "Parent" => city };
        let f = field(&doc, &widget).unwrap();
        assert_eq!(f.name, "address.city");
        assert_eq!(f.kind, "text");
        assert_eq!(f.value, "Rotterdam\nZuid");
        // UTF-16 values, a check box's state, a choice list's values.
        let utf16 = Object::String(b"\xFE\xFF\x00J\x00\xF6".to_vec(), StringFormat::Literal);
        let w = dictionary! { "T" => s("n"), "FT" => "Tx", "V" => utf16 };
        assert_eq!(field(&doc, &w).unwrap().value, "Jö");
        let w = dictionary! { "T" => s("ok"), "FT" => "Btn", "V" => "Yes" };
        assert_eq!(
            field(&doc, &w).unwrap(),
            Field {
                name: "ok".into(),
                kind: "checkbox",
                value: "Yes".into()
            }
        );
        let w = dictionary! { "T" => s("r"), "FT" => "Btn", "Ff" => 1 << 15, "V" => "B" };
        assert_eq!(field(&doc, &w).unwrap().kind, "radio");
        let w = dictionary! { "T" => s("c"), "FT" => "Ch", "V" => vec![s("red"), s("blue")] };
        assert_eq!(field(&doc, &w).unwrap().value, "red, blue");
    }

    #[test]
    fn fields_without_a_value_are_left_out() {
        let doc = Document::with_version("1.7");
        for w in [
            dictionary! { "T" => s("a"), "FT" => "Tx" },
            dictionary! { "T" => s("a"), "FT" => "Tx", "V" => s("  ") },
            dictionary! { "T" => s("b"), "FT" => "Btn", "V" => "Off" },
            dictionary! { "T" => s("c"), "FT" => "Sig", "V" => dictionary! {} },
            dictionary! { "T" => s("d"), "V" => s("no type") },
            dictionary! { "Subtype" => "Widget" },
        ] {
            assert_eq!(field(&doc, &w), None, "{w:?}");
        }
    }

    #[test]
    fn the_default_appearance_tells_the_size() {
        assert_eq!(da_font_size(b"/Helv 9 Tf 0 g"), Some(9.0));
        assert_eq!(da_font_size(b"0 g /F1 10.5 Tf /F2 8 Tf"), Some(8.0));
        assert_eq!(da_font_size(b"/Helv 0 Tf 0 g"), None, "auto size");
        assert_eq!(da_font_size(b"Tf"), None);
        assert_eq!(da_font_size(b"/Helv x Tf"), None);
        let mut doc = Document::with_version("1.7");
        let parent = doc.add_object(dictionary! { "DA" => s("/Helv 7 Tf") });
        let w = dictionary! { "Parent" => parent };
        assert_eq!(default_appearance(&doc, &w), Some(b"/Helv 7 Tf".to_vec()));
    }

    #[test]
    fn a_parent_cycle_ends() {
        let mut doc = Document::with_version("1.7");
        let a = doc.new_object_id();
        let b = doc.add_object(dictionary! { "T" => s("b"), "Parent" => a });
        doc.objects.insert(
            a,
            Object::Dictionary(dictionary! { "T" => s("a"), "Parent" => b }),
        );
        let w = dictionary! { "FT" => "Tx", "V" => s("x"), "Parent" => a };
        let f = field(&doc, &w).unwrap();
        assert_eq!(f.value, "x");
        assert!(f.name.len() <= MAX_NAME_CHARS);
    }
}
