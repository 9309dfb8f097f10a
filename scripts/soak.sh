#!/usr/bin/env bash
# Soak of the release paycall (issue 17; benches/soak.rs): 50,000 requests over 500 connections
# mixing 402s, demo twins, discovery and paid calls, then 1,000 paid calls at once to a slow
# upstream; prints errors, p50/p99 per kind and RSS before, during and after. Loopback only, a
# stub facilitator. Env: BIN=path/to/paycall to soak a given build without building; REQUESTS
# (50000), CONNECTIONS (500), SLOW (1000), WORK_MS (3000), AFTER_S (10).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# 500 client connections plus 1,000 calls in flight, and as many on paycall's side.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --bin paycall
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/paycall"
fi
cargo bench --locked --bench soak --no-run
cargo bench --locked --bench soak -- --bin "$BIN" --requests "${REQUESTS:-50000}" \
  --connections "${CONNECTIONS:-500}" --slow "${SLOW:-1000}" --work-ms "${WORK_MS:-3000}" \
  --after-s "${AFTER_S:-10}"
