//! Bytes → text for every document we read (/api/fetch, /api/extract, /api/search pages,
//! `paycall markdown`), in the order browsers use (the WHATWG encoding sniffing algorithm,
//! simplified): a byte-order mark; the Content-Type charset; a `<meta charset>` or
//! `<meta http-equiv=content-type>` in the first 1024 bytes (HTML only); UTF-8 when the bytes
//! are valid UTF-8; otherwise chardetng's guess from the bytes. A document is never decoded
//! lossily as UTF-8 when it is not UTF-8: that turned legacy-encoded pages into U+FFFD.
//!
//! One departure from browsers: a declared legacy encoding (header or meta) gives way to UTF-8
//! when the bytes are valid UTF-8 *and* hold non-ASCII characters. Sites that moved to UTF-8
//! and kept their old `<meta charset=gb2312>` (or a server default of ISO-8859-1) are common;
//! a text really in GBK, Shift_JIS or windows-1252 is practically never valid multi-byte UTF-8,
//! so the bytes are the better witness, and the reader gets the right characters instead of
//! mojibake.

use encoding_rs::{Encoding, UTF_8};

/// The encoding a document's bytes are in (see the module doc for the order).
pub fn sniff(content_type: &str, body: &[u8], html: bool) -> &'static Encoding {
    if let Some((enc, _)) = Encoding::for_bom(body) {
        return enc;
    }
    let declared = charset_param(content_type)
        .and_then(|l| Encoding::for_label(l.as_bytes()))
        .or_else(|| {
            html.then(|| meta_charset(&body[..body.len().min(1024)]))
                .flatten()
        });
    if let Some(enc) = declared {
        let utf16 = enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE;
        if enc != UTF_8 && !utf16 && !body.is_ascii() && std::str::from_utf8(body).is_ok() {
            return UTF_8;
        }
        return enc;
    }
    if std::str::from_utf8(body).is_ok() {
        return UTF_8;
    }
    // We never run a page's scripts, so ISO-2022-JP may be guessed; UTF-8 was ruled out above.
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Allow);
    detector.feed(body, true);
    detector.guess(None, chardetng::Utf8Detection::Deny)
}

/// Decodes `body` (a BOM is removed).
pub fn decode(content_type: &str, body: &[u8], html: bool) -> String {
    let enc = sniff(content_type, body, html);
    enc.decode(body).0.into_owned()
}

/// `charset=` of a Content-Type value.
fn charset_param(content_type: &str) -> Option<String> {
    content_type.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches(['"', '\'']).trim().to_string())
    })
}

/// The charset a `<meta>` declares in the head bytes. A declared UTF-16 means UTF-8 (a page
/// that reached this point has no UTF-16 BOM, so it cannot be UTF-16), as in browsers.
fn meta_charset(head: &[u8]) -> Option<&'static Encoding> {
    let text: String = head
        .iter()
        .map(|&b| b.to_ascii_lowercase() as char)
        .collect();
    let mut from = 0;
    while let Some(at) = text[from..].find("<meta") {
        let start = from + at;
        let end = text[start..]
            .find('>')
            .map(|e| start + e)
            .unwrap_or(text.len());
        let tag = &text[start..end];
        from = end.max(start + 5);
        let Some(pos) = tag.find("charset") else {
            continue;
        };
        let rest = tag[pos + 7..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start().trim_start_matches(['"', '\'']);
        let label: String = rest
            .chars()
            .take_while(|c| !matches!(c, '"' | '\'' | ';' | ' ' | '/' | '>'))
            .collect();
        if let Some(enc) = Encoding::for_label(label.trim().as_bytes()) {
            return Some(
                if enc == encoding_rs::UTF_16LE || enc == encoding_rs::UTF_16BE {
                    UTF_8
                } else {
                    enc
                },
            );
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_bom_header_meta_utf8_then_detection() {
        let latin1 = b"<p>caf\xe9 cr\xe8me br\xfbl\xe9e, d\xe9j\xe0 vu, na\xefve fa\xe7ade</p>";
        // BOM wins over everything.
        assert_eq!(
            sniff("text/html; charset=iso-8859-1", b"\xef\xbb\xbfx", true),
            UTF_8
        );
        // The header's charset.
        assert_eq!(
            decode("text/html; charset=ISO-8859-1", latin1, true),
            "<p>café crème brûlée, déjà vu, naïve façade</p>"
        );
        // A meta in the head, either form.
        let meta = [
            &b"<html><head><meta charset=\"windows-1252\"></head>"[..],
            latin1,
        ]
        .concat();
        assert!(decode("text/html", &meta, true).contains("crème"));
        let equiv = [
            &b"<meta http-equiv=\"Content-Type\" content=\"text/html; charset=windows-1251\">"[..],
            b"\xcf\xf0\xe8\xe2\xe5\xf2",
        ]
        .concat();
        assert!(decode("text/html", &equiv, true).contains("Привет"));
        // Valid UTF-8 is UTF-8; not valid and undeclared: detected, never U+FFFD.
        assert_eq!(decode("", "naïve".as_bytes(), true), "naïve");
        let guessed = decode("", latin1, true);
        assert!(!guessed.contains('\u{FFFD}'), "{guessed}");
        assert!(guessed.contains("crème"), "{guessed}");
        // Shift_JIS without any declaration.
        let (sjis, _, _) =
            encoding_rs::SHIFT_JIS.encode("日本語のテキストです。これは記事の本文です。");
        let text = decode("", &sjis, true);
        assert!(text.contains("日本語"), "{text}");
        // A meta claiming UTF-16 on a page without a BOM is read as UTF-8.
        assert_eq!(sniff("", b"<meta charset=utf-16>caf\xc3\xa9", true), UTF_8);
        // A legacy declaration over bytes that are valid, non-ASCII UTF-8: the bytes win.
        let migrated = "<meta charset=\"gb2312\"><p>谷歌在2014年收购的公司</p>";
        assert_eq!(decode("text/html", migrated.as_bytes(), true), migrated);
        assert_eq!(
            decode("text/html; charset=iso-8859-1", "déjà vu".as_bytes(), true),
            "déjà vu"
        );
        // …but an ASCII body keeps the declared encoding (nothing to tell them apart).
        assert_eq!(
            sniff("text/html; charset=windows-1252", b"plain", true),
            encoding_rs::WINDOWS_1252
        );
        // Meta is not consulted for non-HTML.
        assert_eq!(
            sniff("text/plain", b"<meta charset=koi8-r>abc", false),
            UTF_8
        );
    }
}
