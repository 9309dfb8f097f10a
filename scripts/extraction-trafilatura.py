#!/usr/bin/env python3
"""Runs trafilatura on an extraction set, for the side-by-side table in docs/doc.md.

    python3 scripts/extraction-trafilatura.py (--scrapinghub|--readability|--set) DIR \\
        [--split dev|holdout|holdout2|holdout3|holdout4|holdout5|all] --out predictions.json

Run it with a Python that has trafilatura installed (a scratch venv outside the repository:
`python3 -m venv /tmp/traf && /tmp/traf/bin/pip install trafilatura`); nothing in the project
depends on it. It reads the same pages as `cargo bench --bench extraction` (decoded as UTF-8
with replacement, as trafilatura's own loader falls back), calls
`trafilatura.extract(html, url=…, include_comments=False)` — comments are not main text in any
of the sets — writes {id: text}, and prints pages/s in-process (one thread). Score the file with
`cargo bench --bench extraction -- DIR [--readability|--set] --score-output predictions.json`.
"""

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import trafilatura


def pages(kind: str, root: Path, split: str):
    if kind == "scrapinghub":
        truth = json.loads((root / "ground-truth.json").read_text())
        for pid, t in sorted(truth.items()):
            yield pid, gzip.open(root / "html" / f"{pid}.html.gz").read(), t.get("url")
    elif kind == "readability":
        for case in sorted(p for p in root.iterdir() if (p / "expected.html").is_file()):
            if (case / "source.html").is_file():
                yield case.name, (case / "source.html").read_bytes(), "http://fakehost/test/page.html"
    else:
        manifest = json.loads((root / "manifest.json").read_text())
        for p in manifest["pages"]:
            # Pages annotated as having no clear main text are not scored (passage sets).
            if "left_out" not in p and split in ("all", p.get("split", "dev")):
                yield p["id"], (root / "html" / f"{p['id']}.html").read_bytes(), p.get("url")


def main() -> int:
    ap = argparse.ArgumentParser()
    kind = ap.add_mutually_exclusive_group(required=True)
    kind.add_argument("--scrapinghub", type=Path)
    kind.add_argument("--readability", type=Path)
    kind.add_argument("--set", type=Path)
    ap.add_argument("--split", default="dev", choices=["dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5", "all"])
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    name, root = next((k, v) for k, v in vars(args).items()
                      if k in ("scrapinghub", "readability", "set") and v)
    docs = list(pages(name, root, args.split))
    out, elapsed = {}, 0.0
    for pid, raw, url in docs:
        html = raw.decode("utf-8", errors="replace")
        t = time.perf_counter()
        text = trafilatura.extract(html, url=url, include_comments=False)
        elapsed += time.perf_counter() - t
        out[pid] = text or ""
    args.out.write_text(json.dumps(out, ensure_ascii=False))
    print(f"trafilatura {trafilatura.__version__}: {len(docs)} pages in {elapsed:.3f} s → "
          f"{len(docs) / elapsed:.1f} pages/s in-process (one thread)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
