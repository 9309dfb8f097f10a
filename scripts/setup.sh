#!/usr/bin/env bash
# Installs what paycall's tests and the README's run command need on a Debian machine, and does
# nothing when it is all there already (safe to run before every build, as .ci/run does):
#   - Debian packages: nodejs + npm (only when node is missing), chromium, chromium-driver
#     (screenshots), poppler-utils + poppler-data (PDF checks; the PDF
#     bench's reference reads CJK text only with poppler-data), wrk (load benchmarks), ca-certificates,
#     libsqlite3-dev + pkg-config (the ledger's SQLite), postgresql (the ledger tests start a
#     throwaway cluster with its server binaries; no cluster is created or started here)
#   - the e2e payment stack's node packages: `npm ci --ignore-scripts` in tests/e2e when
#     node_modules is missing or older than package-lock.json
#   - the stack's test contracts, compiled once into tests/e2e/.stack/build
#   - tests/.venv: a Python venv with tests/requirements.txt (the OpenAPI validator, the
#     official Python x402 client), reinstalled when requirements.txt is newer than the venv
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
E2E="$ROOT/tests/e2e"
say() { printf 'setup: %s\n' "$*"; }

# ---- Debian packages ----
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
if ! command -v node >/dev/null 2>&1; then
  missing+=(nodejs npm)
elif ! command -v npm >/dev/null 2>&1; then
  missing+=(npm)
fi
for pkg in chromium chromium-driver poppler-utils poppler-data wrk ca-certificates libsqlite3-dev pkg-config postgresql python3-venv; do
  installed "$pkg" || missing+=("$pkg")
done

if ((${#missing[@]} > 0)); then
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      SUDO=(sudo)
    else
      say "need Debian packages ${missing[*]} but I am not root and there is no sudo: install them as root" >&2
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  say "installing Debian packages: ${missing[*]}"
  "${SUDO[@]}" apt-get update -q
  # A large install once failed half-way here (a mirror hiccup): retry once after a fresh update.
  if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"; then
    say "apt-get install failed; updating the package lists and retrying once"
    "${SUDO[@]}" apt-get update -q
    "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
  fi
else
  say "Debian packages already installed"
fi

# ---- e2e node packages ----
cd "$E2E"
if [ ! -d node_modules ] || [ ! -f node_modules/.package-lock.json ] \
  || [ package-lock.json -nt node_modules/.package-lock.json ] \
  || [ package.json -nt node_modules/.package-lock.json ]; then
  say "npm ci --ignore-scripts in tests/e2e (node $(node --version), npm $(npm --version))"
  start=$(date +%s)
  # --ignore-scripts: nothing needs an install script (anvil ships as a plain binary) and a
  # script that downloads would fail offline anyway.
  npm ci --ignore-scripts --no-audit --no-fund
  say "npm ci took $(($(date +%s) - start)) s"
else
  say "tests/e2e/node_modules is up to date"
fi
[ -x node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil ] \
  || { say "anvil binary missing after npm ci: tests/e2e/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil" >&2; exit 1; }

# ---- test contracts ----
node compile.mjs

# ---- Python test packages ----
VENV="$ROOT/tests/.venv"
REQS="$ROOT/tests/requirements.txt"
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/.installed" ] || [ "$REQS" -nt "$VENV/.installed" ]; then
  say "installing tests/requirements.txt into tests/.venv"
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$REQS"
  touch "$VENV/.installed"
else
  say "tests/.venv is up to date"
fi
say "done"
