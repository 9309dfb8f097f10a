#!/usr/bin/env python3
"""Recall safety check: pages whose extracted markdown keeps little of the page's prose.

For each page, a neutral text dump (Python's html.parser, text nodes only, a break at each
block element, script/style/template/head left out) is cut into blocks; blocks of at least
MIN_PROSE characters (MIN_PROSE_CJK Chinese, Japanese or Korean ones) are the page's
"visible prose" (article, but also comments, sidebars and footers: this is a screen, not a
score). A block counts as kept when most of its
5-word shingles are in the output. Pages with an empty output or under --ratio of their
prose kept are listed, lowest first, for reading by hand.

    python3 scripts/extraction-recall-check.py --pages PAGES.tsv [--ratio 0.3]

PAGES.tsv: one `id<TAB>html path<TAB>markdown path` a line (`.gz` html unpacked). Only dev
splits and fixtures belong in it: held-out pages are scored, never read.
"""

import argparse
import gzip
import re
import sys
from html.parser import HTMLParser

MIN_PROSE = 120
# In scripts written without spaces a character says more: a block of this many is prose.
MIN_PROSE_CJK = 40
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "figcaption",
    "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li",
    "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul",
}
SKIP = {"script", "style", "noscript", "template", "head", "svg", "select", "option"}


class Neutral(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.blocks, self.cur, self.skip = [], [], 0

    def flush(self):
        text = " ".join("".join(self.cur).split())
        if text:
            self.blocks.append(text)
        self.cur = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self.skip += 1
        elif tag in BLOCKS:
            self.flush()

    def handle_endtag(self, tag):
        if tag in SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in BLOCKS:
            self.flush()

    def handle_data(self, data):
        if not self.skip:
            self.cur.append(data)


def read_html(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    return raw.decode("utf-8", "replace")


def markdown_text(md):
    md = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", md)
    md = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", md)
    md = re.sub(r"[*_`#>|]", " ", md)
    return " ".join(md.split()).lower()


def tokens(s):
    # One token per word, or per character in scripts written without spaces.
    return re.findall(r"[\u3040-\u30ff\u3400-\u9fff\u0e00-\u0e7f\u1000-\u109f]|\w+", s.lower())


def shingles(toks, n=5):
    return {tuple(toks[i : i + n]) for i in range(max(1, len(toks) - n + 1))}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", required=True)
    ap.add_argument("--ratio", type=float, default=0.3)
    args = ap.parse_args()
    rows = []
    for line in open(args.pages, encoding="utf-8"):
        if not line.strip():
            continue
        pid, html_path, md_path = line.rstrip("\n").split("\t")
        p = Neutral()
        p.feed(read_html(html_path))
        p.flush()
        prose = [
            b for b in p.blocks if len(b) >= MIN_PROSE or len(CJK.findall(b)) >= MIN_PROSE_CJK
        ]
        try:
            md = open(md_path, encoding="utf-8").read()
        except OSError:
            md = ""
        out = shingles(tokens(markdown_text(md)))
        total = sum(len(b) for b in prose)
        kept = 0
        for b in prose:
            sh = shingles(tokens(b))
            if sh and len(sh & out) * 2 >= len(sh):
                kept += len(b)
        ratio = kept / total if total else 1.0
        rows.append((ratio, pid, total, len(md.strip())))
    rows.sort()
    flagged = [r for r in rows if r[3] == 0 or r[0] < args.ratio]
    for ratio, pid, total, md_len in flagged:
        print(f"{ratio:5.2f}  prose {total:6d}  output {md_len:6d}  {pid}")
    print(f"{len(flagged)} of {len(rows)} pages flagged", file=sys.stderr)


if __name__ == "__main__":
    main()
