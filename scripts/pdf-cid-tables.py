#!/usr/bin/env python3
"""CID → Unicode tables of Adobe's four CJK character collections, for /api/pdf's text layer.

    python3 scripts/pdf-cid-tables.py [SOURCE_DIR]

A Type0 font of the Adobe-Japan1, -GB1, -CNS1 or -Korea1 collection shown through Identity-H
with no ToUnicode (dvipdfmx writes such fonts for pLaTeX/upLaTeX documents) says which glyph
it draws only by CID; pdftotext reads them with poppler-data's cidToUnicode files. These
tables carry the same facts, taken from Adobe's cid2code.txt files (CMap resources, BSD
3-clause licence), which the pdfminer.six sdist ships in cmaprsrc/: fetched from PyPI unless
SOURCE_DIR holds the cid2code_Adobe_*.txt files.

Output src/pdf/cid/Adobe-<Ordering>.bin: for CID 0, 1, 2, … the first code point of the
Uni*-UTF32 column (0: none; see `build` for which of several), as the difference
from the previous CID's value, zigzag-encoded as a LEB128 varint, the whole zlib-compressed
(level 9). src/pdf/cid_tables.rs reads them.
"""
import glob
import os
import subprocess
import sys
import tarfile
import tempfile
import zlib

PDFMINER = "pdfminer.six==20260107"
ORDERINGS = [("Japan1", "UniJIS-UTF32"), ("GB1", "UniGB-UTF32"), ("CNS1", "UniCNS-UTF32"),
             ("Korea1", "UniKS-UTF32")]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "pdf", "cid")


def encode(values):
    out, prev = bytearray(), 0
    for v in values:
        d = v - prev
        prev = v
        z = (d << 1) ^ (d >> 63)
        while True:
            b, z = z & 0x7F, z >> 7
            out.append(b | 0x80 if z else b)
            if not z:
                break
    return zlib.compress(bytes(out), 9)


def build(src):
    for ordering, column in ORDERINGS:
        path = os.path.join(src, f"cid2code_Adobe_{ordering}.txt")
        rows = [l.rstrip("\n").split("\t") for l in open(path, encoding="latin-1")
                if not l.startswith("#")]
        col = rows[0].index(column)
        values = []
        for i, r in enumerate(rows[1:]):
            assert int(r[0]) == i, f"{path}: CIDs out of order at {r[0]}"
            # Several values: the first that is no vertical variant (`v`), but the space over
            # the no-break space (Japan1's CID 1 lists U+00A0 first; poppler reads a space).
            vals = [x for x in r[col].split(",") if x != "*"]
            plain = [x for x in vals if not x.endswith("v")] or [x.rstrip("v") for x in vals]
            cps = [int(x, 16) for x in plain]
            values.append(0x20 if {0x20, 0xA0} <= set(cps) else (cps[0] if cps else 0))
        data = encode(values)
        os.makedirs(OUT, exist_ok=True)
        with open(os.path.join(OUT, f"Adobe-{ordering}.bin"), "wb") as f:
            f.write(data)
        print(f"Adobe-{ordering}: {len(values)} CIDs, {sum(1 for v in values if v)} with text, "
              f"{len(data)} bytes")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        build(sys.argv[1])
        sys.exit(0)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:",
                        "--no-deps", "-d", tmp, PDFMINER], check=True, capture_output=True,
                       timeout=600)
        (sdist,) = glob.glob(os.path.join(tmp, "*.tar.gz"))
        with tarfile.open(sdist) as t:
            t.extractall(tmp, filter="data")
        (src,) = glob.glob(os.path.join(tmp, "*", "cmaprsrc"))
        build(src)
