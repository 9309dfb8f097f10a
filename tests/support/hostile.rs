//! Issue 21's hostile documents, generated (small on disk: nothing here is stored but the
//! minimal lopdf file, see scripts/gen_hostile.py). Shared by tests/hostile_*.rs and
//! benches/hostile.rs.

use std::io::Write;

/// A PDF from numbered object bodies (object i+1 = objects[i]), /Root 1 0 R.
pub fn raw_pdf(objects: &[Vec<u8>]) -> Vec<u8> {
    super::pdf::raw_pdf(objects, "")
}

pub fn stream(data: &[u8], compress: bool) -> Vec<u8> {
    let (body, filter) = if compress {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        (e.finish().unwrap(), " /Filter /FlateDecode")
    } else {
        (data.to_vec(), "")
    };
    let mut out = format!("<< /Length {}{filter} >>\nstream\n", body.len()).into_bytes();
    out.extend_from_slice(&body);
    out.extend_from_slice(b"\nendstream");
    out
}

/// A one-page PDF showing `Hello` in a Helvetica whose ToUnicode CMap is `cmap`.
pub fn cmap_pdf(cmap: &str) -> Vec<u8> {
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".to_vec(),
        stream(b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET", false),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>".to_vec(),
        stream(cmap.as_bytes(), false),
    ])
}

/// The CMap of issue 21: one `bfrange` over every four-byte code.
pub const FULL_RANGE_CMAP: &str = "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /Hostile def\n1 begincodespacerange\n<00000000> <FFFFFFFF>\nendcodespacerange\n1 beginbfrange\n<00000000> <FFFFFFFF> <0041>\nendbfrange\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n";

/// 100,000 ranges of 65,536 four-byte codes each.
pub fn many_ranges_cmap() -> String {
    let mut s = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /Hostile def\n100 beginbfrange\n",
    );
    for i in 0..100_000u64 {
        let lo = i << 16;
        s.push_str(&format!("<{:08X}> <{:08X}> <0041>\n", lo, lo + 0xFFFF));
    }
    s.push_str("endbfrange\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    s
}

/// A page that draws one flate-compressed form XObject `draws` times. The form is `bytes` of
/// no-op operators followed by one line of text (so every draw must be interpreted to its end),
/// or, with `text_heavy`, `bytes` of distinct text lines.
pub fn redrawn_form_pdf(bytes: usize, draws: usize, text_heavy: bool) -> Vec<u8> {
    let mut form = Vec::with_capacity(bytes + 64);
    if text_heavy {
        let mut i = 0usize;
        while form.len() < bytes {
            let y = 780 - (i % 700) as i64;
            writeln!(form, "BT /F1 10 Tf 20 {y} Td (line {i} of the form) Tj ET").unwrap();
            i += 1;
        }
    } else {
        while form.len() < bytes {
            form.extend_from_slice(b"q Q\n");
        }
        form.extend_from_slice(b"BT /F1 12 Tf 72 700 Td (form text) Tj ET\n");
    }
    let mut page = Vec::new();
    for _ in 0..draws {
        page.extend_from_slice(b"/Fm1 Do\n");
    }
    let mut form_obj = format!(
        "<< /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Length {} /Filter /FlateDecode >>\nstream\n",
        0
    )
    .into_bytes();
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(&form).unwrap();
    let z = e.finish().unwrap();
    form_obj = String::from_utf8(form_obj)
        .unwrap()
        .replace("/Length 0", &format!("/Length {}", z.len()))
        .into_bytes();
    form_obj.extend_from_slice(&z);
    form_obj.extend_from_slice(b"\nendstream");
    raw_pdf(&[
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_vec(),
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> /XObject << /Fm1 6 0 R >> >> >>".to_vec(),
        stream(&page, false),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_vec(),
        form_obj,
    ])
}

/// Objects 1 and 2: the catalog and the page tree of `kids` (references "N 0 R").
fn catalog_and_pages(kids: &[String]) -> Vec<Vec<u8>> {
    vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            kids.join(" "),
            kids.len()
        )
        .into_bytes(),
    ]
}

/// `pages` pages, each one flate stream of `bytes` of distinct text lines.
pub fn many_text_pages_pdf(pages: usize, bytes: usize) -> Vec<u8> {
    let mut content = Vec::with_capacity(bytes + 64);
    let mut i = 0usize;
    while content.len() < bytes {
        let y = 780 - (i % 700) as i64;
        writeln!(content, "BT /F1 10 Tf 20 {y} Td (line {i}) Tj ET").unwrap();
        i += 1;
    }
    let z = stream(&content, true);
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + i)).collect();
    let mut objects = catalog_and_pages(&kids);
    objects.push(
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    );
    let content_id = 4 + pages;
    for _ in 0..pages {
        objects.push(format!("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_id} 0 R /Resources << /Font << /F1 3 0 R >> >> >>").into_bytes());
    }
    objects.push(z);
    raw_pdf(&objects)
}

/// The x402 challenge of issue 21: a 402 whose `accepts` holds `n` empty entries.
pub fn many_offers_challenge(n: usize) -> String {
    let accepts = vec!["{}"; n].join(",");
    format!(
        r#"{{"x402Version":2,"resource":{{"url":"https://example.com/x"}},"accepts":[{accepts}]}}"#
    )
}

/// A page whose script allocates until it dies.
pub const MEMORY_EATER: &str = "<!doctype html><title>eater</title><body>eating<script>\
const keep = []; function eat() { for (let i = 0; i < 200; i++) { keep.push(new Array(1 << 20).fill(i)); } setTimeout(eat, 0); } eat();\
</script></body>";

/// `pages` pages, each its own flate stream of `bytes` of no-op operators and no text: every
/// page must be inflated and interpreted to its end, and nothing is ever found. Past the
/// document's content budget it is refused (422 pdf_too_complex), before it `pdf_no_text`.
pub fn blank_pages_pdf(pages: usize, bytes: usize) -> Vec<u8> {
    let mut content = Vec::with_capacity(bytes + 4);
    while content.len() < bytes {
        content.extend_from_slice(b"q Q\n");
    }
    let z = stream(&content, true);
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 3 + 2 * i)).collect();
    let mut objects = catalog_and_pages(&kids);
    for i in 0..pages {
        // Each page has its own copy of the stream: nothing is shared or decoded once.
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R >>",
                4 + 2 * i
            )
            .into_bytes(),
        );
        objects.push(z.clone());
    }
    raw_pdf(&objects)
}
