#!/usr/bin/env bash
# Requests/s of the 402 path (an unpaid request answered with the challenge) under wrk:
# paycall (release build) with the shipped routes.yaml on 127.0.0.1, wrk -t2 -c50 for 10 s.
# The facilitator URL points at a closed port: the 402 path must never wait on it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v wrk >/dev/null || { echo "bench-402: wrk is missing: run scripts/setup.sh" >&2; exit 1; }
PORT="${PORT:-18499}"
# BIN=path/to/paycall measures another build (e.g. the previous one) without building.
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --bin paycall
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/paycall"
fi
export PAYCALL_LISTEN="127.0.0.1:$PORT" PAYCALL_FACILITATOR_URL="http://127.0.0.1:9/" \
  PAYCALL_EVM_PAY_TO=0xdF1D7b5C056D78F5aA14138a5695f7FF6F7aCFf3 \
  PAYCALL_SOLANA_PAY_TO=FYA23SLFVpETuY13UnwTDJA9W6ipiL1sKXd6XJUhViA1 PAYCALL_LOG=warn \
  PAYCALL_ADMIN_LISTEN=127.0.0.1:0 PAYCALL_LEDGER_URL=sqlite::memory: \
  PAYCALL_UPSTREAM_SOLANA_RPC=http://127.0.0.1:9/
"$BIN" serve & pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:$PORT/status" >/dev/null 2>&1 && break; sleep 0.2; done
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/api/http?url=https://example.com/")
[ "$code" = 402 ] || { echo "bench-402: expected 402, got $code" >&2; exit 1; }
echo "== wrk -t2 -c50 -d10s GET /api/http?url=… (unpaid → 402 with the challenge)"
wrk -t2 -c50 -d10s "http://127.0.0.1:$PORT/api/http?url=https%3A%2F%2Fexample.com%2F"
