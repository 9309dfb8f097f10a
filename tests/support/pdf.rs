//! Test support for /api/pdf: a minimal PDF writer for synthetic and hostile files, and the
//! generated corpus in fixtures/pdf (scripts/pdf-corpus.py).

use std::io::Write;
use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf")
}

pub fn fixture(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// A PDF from numbered object bodies (object i+1 = objects[i]); `trailer_extra` goes into the
/// trailer dictionary after /Root 1 0 R.
pub fn raw_pdf(objects: &[Vec<u8>], trailer_extra: &str) -> Vec<u8> {
    let mut out: Vec<u8> = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, body) in objects.iter().enumerate() {
        offsets.push(out.len());
        writeln!(out, "{} 0 obj", i + 1).unwrap();
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    write!(out, "xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).unwrap();
    for off in offsets {
        writeln!(out, "{off:010} 00000 n ").unwrap();
    }
    write!(
        out,
        "trailer\n<< /Size {} /Root 1 0 R {trailer_extra}>>\nstartxref\n{xref}\n%%EOF\n",
        objects.len() + 1
    )
    .unwrap();
    out
}

pub fn stream(data: &[u8], compress: bool) -> Vec<u8> {
    if compress {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(data).unwrap();
        let z = e.finish().unwrap();
        let mut out =
            format!("<< /Length {} /Filter /FlateDecode >>\nstream\n", z.len()).into_bytes();
        out.extend_from_slice(&z);
        out.extend_from_slice(b"\nendstream");
        out
    } else {
        let mut out = format!("<< /Length {} >>\nstream\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\nendstream");
        out
    }
}

/// A document with one Helvetica font (F1) and one page per content stream.
pub fn pages_pdf(contents: &[Vec<u8>], compress: bool) -> Vec<u8> {
    let n = contents.len();
    // 1 catalog, 2 pages, 3 font, then (page, content) pairs.
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for (i, c) in contents.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R /Resources << /Font << /F1 3 0 R >> >> >>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        objects.push(stream(c, compress));
    }
    raw_pdf(&objects, "")
}

/// Content that shows `text` at (72, y).
pub fn text_op(text: &str, y: f32) -> Vec<u8> {
    format!("BT /F1 12 Tf 72 {y} Td ({text}) Tj ET\n").into_bytes()
}

/// A page that takes long to interpret: `ops` no-op operators, then a line of text.
pub fn heavy_content(ops: usize, late_text: &str) -> Vec<u8> {
    let mut c = Vec::with_capacity(ops * 4 + 64);
    for _ in 0..ops {
        c.extend_from_slice(b"q Q\n");
    }
    c.extend_from_slice(&text_op(late_text, 700.0));
    c
}

/// Tiny deterministic PRNG for the mutation tests (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}
