#!/usr/bin/env python3
"""Writes the stored part of issue 21's hostile corpus into fixtures/hostile/.

Only small files are stored; the big hostile documents (the adoption-agency page, redrawn
forms, 100,000-offer challenges, the memory-eating page) are generated at test time by
tests/support/hostile.rs, which the tests and benches/hostile.rs share.

- lopdf-cmap-range.pdf: the minimal file that shows lopdf's ToUnicode path walking every code
  of a range (lopdf 0.47 `ToUnicodeCMap::from_sections` builds a reverse map code by code: one
  `<00000000> <FFFFFFFF>` bfrange = 2^32 steps, 30 s and 1.7 GB before it was killed), for a
  report to lopdf's authors. Reproduce with lopdf alone:
      lopdf::Document::load(path)?.extract_text(&[1])   (reaches get_font_encoding → ToUnicode)
  tests/it/pdf_hostile.rs checks the stored bytes equal what tests/support/hostile.rs generates.
"""
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "fixtures", "hostile")

FULL_RANGE_CMAP = (
    "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /Hostile def\n1 begincodespacerange\n"
    "<00000000> <FFFFFFFF>\nendcodespacerange\n1 beginbfrange\n<00000000> <FFFFFFFF> <0041>\n"
    "endbfrange\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
)


def stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n" % len(data) + data + b"\nendstream"


def raw_pdf(objects):
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % (i + 1)
        out += body
        out += b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def cmap_pdf(cmap: str) -> bytes:
    return raw_pdf([
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        stream(b"BT /F1 12 Tf 72 700 Td (Hello) Tj ET"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 6 0 R >>",
        stream(cmap.encode()),
    ])


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "lopdf-cmap-range.pdf"), "wb") as f:
        f.write(cmap_pdf(FULL_RANGE_CMAP))


if __name__ == "__main__":
    main()
