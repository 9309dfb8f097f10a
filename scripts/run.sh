#!/usr/bin/env bash
# The README's run command: sets up (idempotent), starts a local payment stack (anvil chain +
# test USDC at Base's USDC address + a Solana JSON-RPC over litesvm with USDC's mint + the official
# x402 facilitator settling both), a tiny local web page, and paycall with the shipped routes.yaml
# pointed at them; makes one real paid call on Base and one on Solana; prints how to make more.
# Ctrl-C stops everything.
#
# Local-demo settings (never use them in production):
#   PAYCALL_ALLOW_CIDRS=127.0.0.1/32  lets the guard reach the demo page on loopback;
#   PAYCALL_SOLANA_PAY_TO, PAYCALL_UPSTREAM_SOLANA_RPC  the stack's Solana payTo (it has its USDC
#                                    token account) and RPC, so `paycall check` verifies it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PORT="${PAYCALL_PORT:-8402}"
SITE_PORT="${PAYCALL_SITE_PORT:-8480}"
STATE="$ROOT/tests/e2e/.stack/state.json"
say() { printf '\nrun: %s\n' "$*"; }

scripts/setup.sh
say "building paycall"
cargo build --locked --bin paycall
BIN="${CARGO_TARGET_DIR:-$ROOT/target}/debug/paycall"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

say "starting the local payment stack (anvil + test USDC + facilitator)"
rm -f "$STATE"
node tests/e2e/stack.mjs --state "$STATE" --quiet > /dev/null &
pids+=($!)
for _ in $(seq 1 120); do [ -s "$STATE" ] && break; sleep 0.5; done
[ -s "$STATE" ] || { echo "run: the payment stack did not start in 60 s" >&2; exit 1; }
json() { python3 -c "import json,sys; print(json.load(open('$STATE'))['$1'])"; }

say "serving fixtures/site on http://127.0.0.1:$SITE_PORT/"
python3 -m http.server --bind 127.0.0.1 --directory fixtures/site "$SITE_PORT" > /dev/null 2>&1 &
pids+=($!)

export PAYCALL_LISTEN="127.0.0.1:$PORT"
export PAYCALL_BASE_URL="http://127.0.0.1:$PORT"
export PAYCALL_FACILITATOR_URL="$(json facilitatorUrl)"
export PAYCALL_EVM_PAY_TO="$(json payTo)"
solana() { python3 -c "import json,sys; print(json.load(open('$STATE'))['solana']['$1'])"; }
export PAYCALL_SOLANA_PAY_TO="$(solana payTo)"
export PAYCALL_UPSTREAM_SOLANA_RPC="$(solana rpcUrl)"
export PAYCALL_ALLOW_CIDRS="127.0.0.1/32"
"$BIN" check
say "starting paycall on http://127.0.0.1:$PORT/"
"$BIN" serve &
pids+=($!)
for _ in $(seq 1 60); do curl -fsS "http://127.0.0.1:$PORT/status" > /dev/null 2>&1 && break; sleep 0.5; done

URL="http://127.0.0.1:$PORT/api/fetch?url=http://127.0.0.1:$SITE_PORT/index.html"
say "an unpaid call answers 402 with the challenge:"
curl -s -o /dev/null -w '  HTTP %{http_code}\n' "$URL"
for NET in base solana; do
say "paying it on $NET with the official x402 client (node tests/e2e/pay.mjs --network $NET):"
node tests/e2e/pay.mjs --state "$STATE" --network "$NET" --url "$URL" | python3 -c '
import json, sys
r = json.load(sys.stdin)
print("  HTTP", r.get("status"))
print("  receipt:", json.dumps(r.get("paymentResponse")))
print("  buyer USDC:", r.get("buyerBefore"), "->", r.get("buyerAfter"), " payTo USDC:", r.get("payToBefore"), "->", r.get("payToAfter"))
body = r.get("body") or {}
print("  title:", body.get("title"))
print("  content:", (body.get("content") or "")[:300].replace("\n", "\n    "))
'
done
cat <<MSG

paycall is running on http://127.0.0.1:$PORT with the shipped routes.yaml.
  catalogue:     curl http://127.0.0.1:$PORT/llms.txt
  a 402:         curl -i 'http://127.0.0.1:$PORT/api/http?url=http://127.0.0.1:$SITE_PORT/'
  pay a call:    node tests/e2e/pay.mjs --state $STATE --url 'http://127.0.0.1:$PORT/api/http?url=http://127.0.0.1:$SITE_PORT/'
  on Solana:     add --network solana
  networks:      curl http://127.0.0.1:$PORT/status   (networks: each offer's readiness)
  free demo:     curl http://127.0.0.1:$PORT/api/demo/http   (its fixed input is this service's own sample page; no internet needed)
Ctrl-C stops paycall, the page server and the chain.
MSG
wait "${pids[2]}"
