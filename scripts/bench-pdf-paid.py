#!/usr/bin/env python3
"""/api/pdf paid end to end against pdftotext, file by file (issue 15's time goal: <= 1x).

    python3 scripts/bench-pdf-paid.py [DIR ...]        # default fixtures/pdf/realworld/dev

`cargo bench --bench pdf` times our text layer in-process; a buyer sees more: the 402, signing,
the paid request, our fetch of the PDF, the parse, the facilitator's verify and settlement, the
answer. This runs the release paycall against the local payment stack (anvil and the official
facilitator, tests/e2e/stack.mjs), serves the PDFs from 127.0.0.1, pays one call per file with
the official client (tests/e2e/pay.mjs timed: one node process, kept-alive connections), and
times `pdftotext -l 50 FILE -` (the route reads at most 50 pages) as a separate process, the best
of RUNS runs. Prints each file's times and ratios, then the sums and medians: the paid call
against pdftotext, and the service's own `elapsedMs` against pdftotext.

Env: BIN=path/to/paycall (default: target/release/paycall, built if missing), RUNS (3),
LIMIT (files per directory, default all). Needs scripts/setup.sh's stack (node modules) and
poppler-utils; the corpus comes from `python3 scripts/pdf-realworld.py fetch`.
"""

import http.server
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("RUNS", "3"))
LIMIT = int(os.environ["LIMIT"]) if os.environ.get("LIMIT") else None


def die(msg):
    sys.exit(f"bench-pdf-paid: {msg}")


def wait_for(what, ok, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ok():
            return
        time.sleep(0.1)
    die(f"{what} did not come up within {seconds} s")


def serve_files(root):
    """A threaded static server for `root` on 127.0.0.1; returns its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=str(root), **k)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pdftotext_ms(path):
    best = None
    for _ in range(RUNS):
        t0 = time.perf_counter()
        subprocess.run(["pdftotext", "-l", "50", "-enc", "UTF-8", str(path), "-"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        ms = (time.perf_counter() - t0) * 1000
        best = ms if best is None else min(best, ms)
    return best


def main():
    dirs = [Path(a) for a in sys.argv[1:]] or [ROOT / "fixtures/pdf/realworld/dev"]
    files = []
    for d in dirs:
        found = sorted(p for p in d.iterdir() if p.suffix == ".pdf")
        if not found:
            die(f"no .pdf files in {d} (python3 scripts/pdf-realworld.py fetch)")
        files += found[:LIMIT]
    for tool in ("node", "pdftotext"):
        if not shutil.which(tool):
            die(f"{tool} is missing: run scripts/setup.sh")
    binary = Path(os.environ.get("BIN") or ROOT / "target/release/paycall")
    if not os.environ.get("BIN") and not binary.exists():
        subprocess.run(["cargo", "build", "--release", "--locked", "--bin", "paycall"], cwd=ROOT, check=True)

    work = Path(tempfile.mkdtemp(prefix="bench-pdf-paid."))
    children = []
    metrics = ""
    try:
        state_file = work / "state.json"
        # The stack stops when its stdin closes: it reads a pipe this script holds.
        stack = subprocess.Popen(
            ["node", "tests/e2e/stack.mjs", "--state", str(state_file), "--exit-on-stdin-close", "--quiet"],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=open(work / "stack.err", "w"))
        children.append(stack)
        wait_for("the payment stack", lambda: state_file.exists() and state_file.stat().st_size > 0, 60)
        state = json.loads(state_file.read_text())

        common = Path(os.path.commonpath([str(f.parent.resolve()) for f in files]))
        files_base = serve_files(common)
        port, admin_port = free_port(), free_port()
        base = f"http://127.0.0.1:{port}"
        env = dict(os.environ,
                   PAYCALL_LISTEN=f"127.0.0.1:{port}", PAYCALL_BASE_URL=base, PAYCALL_LOG="warn",
                   PAYCALL_FACILITATOR_URL=state["facilitatorUrl"], PAYCALL_EVM_PAY_TO=state["payTo"],
                   PAYCALL_SOLANA_PAY_TO=state["solana"]["payTo"],
                   PAYCALL_UPSTREAM_SOLANA_RPC=state["solana"]["rpcUrl"],
                   PAYCALL_UPSTREAM_BASE_RPC=state["rpcUrl"], PAYCALL_ADMIN_LISTEN=f"127.0.0.1:{admin_port}",
                   PAYCALL_LEDGER_URL="sqlite::memory:", PAYCALL_ALLOW_CIDRS="127.0.0.1/32")
        server = subprocess.Popen([str(binary), "serve", "--config", "routes.yaml"], cwd=ROOT, env=env,
                                  stdout=subprocess.DEVNULL, stderr=open(work / "paycall.err", "w"))
        children.append(server)

        def up():
            try:
                return urllib.request.urlopen(f"{base}/status", timeout=1).status == 200
            except Exception:
                return False

        wait_for("paycall", up, 30)

        def call_url(f):
            rel = f.resolve().relative_to(common).as_posix()
            return f"{base}/api/pdf?url=" + urllib.parse.quote(f"{files_base}/{urllib.parse.quote(rel)}", safe="")

        urls = [call_url(f) for f in files]
        # One untimed call first: connections, the facilitator's first verify, caches.
        (work / "urls").write_text("\n".join([urls[0]] + urls) + "\n")
        out = subprocess.run(["node", "tests/e2e/pay.mjs", "timed", "--state", str(state_file),
                              "--urls-file", str(work / "urls")],
                             cwd=ROOT, capture_output=True, text=True, timeout=60 * 60)
        lines = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
        if len(lines) != len(urls) + 1:
            die(f"pay.mjs answered {len(lines)} of {len(urls) + 1} calls:\n{out.stderr[-2000:]}")
        paid = lines[1:]
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5).read().decode()
    finally:
        for c in children:
            if c is stack and c.stdin:
                c.stdin.close()
            c.terminate()
        for c in children:
            try:
                c.wait(timeout=10)
            except subprocess.TimeoutExpired:
                c.kill()
        shutil.rmtree(work, ignore_errors=True)

    print(f"{'file':<48} {'status':>6} {'pdftotext':>10} {'paid call':>10} {'elapsedMs':>10} {'paid/pt':>8} {'own/pt':>7}")
    rows = []
    for f, p in zip(files, paid):
        pt = pdftotext_ms(f)
        own = p.get("elapsedMs")
        rows.append((f, p["status"], pt, p["ms"], own))
        own_s = f"{own:10.1f}" if isinstance(own, (int, float)) else f"{'-':>10}"
        own_r = f"{own / pt:7.2f}" if isinstance(own, (int, float)) else f"{'-':>7}"
        print(f"{f.name[:48]:<48} {p['status']:>6} {pt:10.1f} {p['ms']:10.1f} {own_s} {p['ms'] / pt:8.2f} {own_r}")
    ok = [r for r in rows if r[1] == 200]
    print()
    print(f"{len(rows)} files, {len(ok)} answered 200; statuses: "
          + ", ".join(f"{s}: {sum(1 for r in rows if r[1] == s)}" for s in sorted({r[1] for r in rows})))
    if ok:
        sum_pt = sum(r[2] for r in ok)
        sum_paid = sum(r[3] for r in ok)
        owns = [r for r in ok if isinstance(r[4], (int, float))]
        print(f"sum over 200s: pdftotext {sum_pt:.0f} ms, paid calls {sum_paid:.0f} ms -> {sum_paid / sum_pt:.2f}x"
              + (f"; the service's own elapsedMs {sum(r[4] for r in owns):.0f} ms -> "
                 f"{sum(r[4] for r in owns) / sum(r[2] for r in owns):.2f}x" if owns else ""))
        print(f"median per file: paid/pdftotext {statistics.median(r[3] / r[2] for r in ok):.2f}x"
              + (f", elapsedMs/pdftotext {statistics.median(r[4] / r[2] for r in owns):.2f}x" if owns else "")
              + f"; paid call median {statistics.median(r[3] for r in ok):.0f} ms, pdftotext median "
              f"{statistics.median(r[2] for r in ok):.0f} ms")
        # Where a 200's time goes, call by call, from its Server-Timing header: the
        # facilitator's verify, our work, the settle stage (the facilitator's settlement and
        # its ledger rows), what the service spent around them (the verified row, the answer),
        # and what the buyer's side adds (the 402 round trip, signing).
        phases = {"verify": [], "work": [], "settle": [], "service, other": [], "buyer's side": []}
        for p in paid:
            if p["status"] != 200 or not p.get("serverTiming"):
                continue
            dur = dict((k.strip(), float(v)) for k, v in
                       (part.split(";dur=") for part in p["serverTiming"].split(",")))
            if not {"verify", "work", "settle", "total"} <= dur.keys():
                continue
            for k in ("verify", "work", "settle"):
                phases[k].append(dur[k])
            phases["service, other"].append(dur["total"] - dur["verify"] - dur["work"] - dur["settle"])
            phases["buyer's side"].append(p["ms"] - dur["total"])
        if phases["work"]:
            print(f"a paid 200, by Server-Timing (median ms over {len(phases['work'])}): "
                  + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in phases.items()))
    # Where a paid call's time goes, from the service's own histograms (warm-up call included).
    series = {}
    for line in metrics.splitlines():
        if line.startswith("paycall_facilitator_request_seconds_") and "{" in line:
            name, value = line.rsplit(" ", 1)
            series[name] = float(value)
    parts = []
    for endpoint in ("verify", "settle"):
        total = series.get(f'paycall_facilitator_request_seconds_sum{{endpoint="{endpoint}"}}')
        count = series.get(f'paycall_facilitator_request_seconds_count{{endpoint="{endpoint}"}}')
        if total is not None and count:
            parts.append(f"{endpoint} {total / count * 1000:.1f} ms mean over {count:.0f}")
    if parts:
        print("facilitator, as paycall timed it: " + ", ".join(parts))


if __name__ == "__main__":
    main()
