#!/usr/bin/env bash
# The unpaid 402 path side by side: paycall (release build, the shipped routes.yaml) and the
# official @x402/express seller (tests/e2e/seller.mjs), both against the local payment stack
# (anvil + the official facilitator, tests/e2e/stack.mjs) on 127.0.0.1, so both render their
# complete challenge (Base and, for paycall, Solana with the facilitator's feePayer). wrk -t2 -c64
# for DURATION seconds (10) per run, ROUNDS rounds (2) alternating paycall and express so that
# load from others on the machine falls on both; the best run of each is compared.
# Prints req/s and p99 of every run, then the ratio. Goal (issue 17): ≥ 10× express, p99 ≤ 1 ms.
# Then latency at a given rate: wrk's p99 at saturation is mostly queueing (with C connections
# always busy the mean latency is C / throughput, Little's law), so each server is also offered a
# fixed rate, RATE req/s (default: 10× express's best), over the same number of connections by
# scripts/rate-402.rs (open loop, latency counted from each request's due time as wrk2 does);
# it prints p50/p99/p99.9, the rate achieved and the generator's own send lag.
# Env: BIN=path/to/paycall to measure a given build without building; BASELINE=path/to/paycall
# adds another build (e.g. the previous commit's) to every round; MINIMAL=1 adds the floor: a
# std-only responder (scripts/minimal-402.rs, built with rustc) writing paycall's exact 402 bytes;
# BASELINE_CONFIG=path/to/routes.yaml serves the baseline with another config (one from before a
# key the baseline does not know); CONNECTIONS (64), DURATION (10), ROUNDS (2), RATE (10× express).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
for tool in wrk rustc node curl jq; do
  command -v "$tool" >/dev/null || { echo "bench-402: $tool is missing: run scripts/setup.sh" >&2; exit 1; }
done
[ -d tests/e2e/node_modules/@x402/express ] || { echo "bench-402: tests/e2e/node_modules is missing: run scripts/setup.sh" >&2; exit 1; }
CONNECTIONS="${CONNECTIONS:-64}" DURATION="${DURATION:-10}" ROUNDS="${ROUNDS:-2}"
if [ -z "${BIN:-}" ]; then
  cargo build --release --locked --bin paycall
  BIN="${CARGO_TARGET_DIR:-$ROOT/target}/release/paycall"
fi

WORK="$(mktemp -d -t bench-402.XXXXXX)"
pids=()
cleanup() {
  exec 3>&- 4>&- 2>/dev/null || true
  for p in "${pids[@]}" $(cat "$WORK/pids" 2>/dev/null); do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# The stack and the seller stop when their stdin closes: each reads a fifo this script holds open.
mkfifo "$WORK/stack.in" "$WORK/seller.in"
exec 3<>"$WORK/stack.in" 4<>"$WORK/seller.in"
node tests/e2e/stack.mjs --state "$WORK/state.json" --exit-on-stdin-close --quiet \
  <"$WORK/stack.in" >/dev/null 2>"$WORK/stack.err" &
pids+=($!)
for _ in $(seq 1 600); do [ -s "$WORK/state.json" ] && break; sleep 0.1; done
[ -s "$WORK/state.json" ] || { echo "bench-402: the payment stack did not start:" >&2; cat "$WORK/stack.err" >&2; exit 1; }
state() { jq -r "$1" "$WORK/state.json"; }

node tests/e2e/seller.mjs --state "$WORK/state.json" --price '$0.01' \
  <"$WORK/seller.in" >"$WORK/seller.out" 2>"$WORK/seller.err" &
pids+=($!)
for _ in $(seq 1 300); do grep -q '^{' "$WORK/seller.out" 2>/dev/null && break; sleep 0.1; done
EXPRESS="$(jq -r .url "$WORK/seller.out" 2>/dev/null || true)"
[ -n "$EXPRESS" ] || { echo "bench-402: the express seller did not start:" >&2; cat "$WORK/seller.err" >&2; exit 1; }

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
# Starts a paycall binary on a free port; prints its base URL.
start_paycall() {
  local bin="$1" config="${2:-routes.yaml}" port
  port="$(free_port)"
  PAYCALL_LISTEN="127.0.0.1:$port" PAYCALL_BASE_URL="http://127.0.0.1:$port" PAYCALL_LOG=warn \
    PAYCALL_FACILITATOR_URL="$(state .facilitatorUrl)" PAYCALL_EVM_PAY_TO="$(state .payTo)" \
    PAYCALL_SOLANA_PAY_TO="$(state .solana.payTo)" PAYCALL_UPSTREAM_SOLANA_RPC="$(state .solana.rpcUrl)" \
    PAYCALL_UPSTREAM_BASE_RPC="$(state .rpcUrl)" PAYCALL_ADMIN_LISTEN=127.0.0.1:0 \
    PAYCALL_LEDGER_URL=sqlite::memory: \
    "$bin" serve --config "$config" 2>>"$WORK/paycall.err" >/dev/null &
  echo $! >>"$WORK/pids" # (a command substitution's subshell: the pids array would not see it)
  for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$port/status" >/dev/null 2>&1 && break; sleep 0.2; done
  echo "http://127.0.0.1:$port"
}
PAYCALL="$(start_paycall "$BIN")"
B_URL=""
if [ -n "${BASELINE:-}" ]; then B_URL="$(start_paycall "$BASELINE" "${BASELINE_CONFIG:-routes.yaml}")/api/http?url=https%3A%2F%2Fexample.com%2F"; fi

P_URL="$PAYCALL/api/http?url=https%3A%2F%2Fexample.com%2F"
E_URL="$EXPRESS/paid"
M_URL=""
if [ "${MINIMAL:-0}" = 1 ]; then
  curl -s -i --raw "$P_URL" >"$WORK/402.bin"
  rustc -O --edition 2021 scripts/minimal-402.rs -o "$WORK/minimal-402"
  mport="$(free_port)"
  "$WORK/minimal-402" "$WORK/402.bin" "127.0.0.1:$mport" & echo $! >>"$WORK/pids"
  M_URL="http://127.0.0.1:$mport/api/http?url=https%3A%2F%2Fexample.com%2F"
  for _ in $(seq 1 50); do [ "$(curl -s -o /dev/null -w '%{http_code}' "$M_URL" || true)" = 402 ] && break; sleep 0.1; done
  echo "minimal $M_URL → paycall's 402, $(wc -c <"$WORK/402.bin") bytes with headers"
fi
for u in "$P_URL" "$E_URL" $B_URL; do
  code=$(curl -s -o /dev/null -w '%{http_code}' "$u")
  [ "$code" = 402 ] || { echo "bench-402: $u answered $code, not 402" >&2; cat "$WORK/paycall.err" >&2; exit 1; }
done
offers=$(curl -s "$P_URL" | jq -r '[.accepts[].network] | join(", ")')
echo "paycall $P_URL → 402 offering $offers ($(curl -s "$P_URL" | wc -c) body bytes)"
echo "express $E_URL → 402 ($(curl -s "$E_URL" | wc -c) body bytes)"
[ -z "$B_URL" ] || echo "baseline ($BASELINE) $B_URL"
echo "wrk -t2 -c$CONNECTIONS -d${DURATION}s, $ROUNDS rounds alternating (a shared machine: each round runs both)"

# One wrk run: prints "<req/s> <p99 in ms>".
run() {
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency "$1" >"$WORK/wrk.out" 2>&1
  local rps p99
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$WORK/wrk.out")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/, "", v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/, "", v)} else if (v ~ /s$/) {sub(/s$/, "", v); v=v*1000}; print v}' "$WORK/wrk.out")
  if grep -q "Socket errors" "$WORK/wrk.out"; then grep "Socket errors" "$WORK/wrk.out" >&2; fi
  echo "$rps $p99"
}

best_p=0 best_p99=0 best_e=0 best_e99=0 best_b=0 best_b99=0 best_m=0 best_m99=0
for r in $(seq 1 "$ROUNDS"); do
  if [ -n "$B_URL" ]; then
    read -r rps p99 < <(run "$B_URL")
    printf 'round %d  baseline %10.0f req/s  p99 %6.2f ms\n' "$r" "$rps" "$p99"
    if awk "BEGIN{exit !($rps > $best_b)}"; then best_b=$rps best_b99=$p99; fi
  fi
  if [ -n "$M_URL" ]; then
    read -r rps p99 < <(run "$M_URL")
    printf 'round %d  minimal  %10.0f req/s  p99 %6.2f ms\n' "$r" "$rps" "$p99"
    if awk "BEGIN{exit !($rps > $best_m)}"; then best_m=$rps best_m99=$p99; fi
  fi
  read -r rps p99 < <(run "$P_URL")
  printf 'round %d  paycall  %10.0f req/s  p99 %6.2f ms\n' "$r" "$rps" "$p99"
  if awk "BEGIN{exit !($rps > $best_p)}"; then best_p=$rps best_p99=$p99; fi
  read -r rps p99 < <(run "$E_URL")
  printf 'round %d  express  %10.0f req/s  p99 %6.2f ms\n' "$r" "$rps" "$p99"
  if awk "BEGIN{exit !($rps > $best_e)}"; then best_e=$rps best_e99=$p99; fi
done
printf 'best     paycall  %10.0f req/s  p99 %6.2f ms\n' "$best_p" "$best_p99"
printf 'best     express  %10.0f req/s  p99 %6.2f ms\n' "$best_e" "$best_e99"
[ -z "$B_URL" ] || printf 'best     baseline %10.0f req/s  p99 %6.2f ms\n' "$best_b" "$best_b99"
[ -z "$M_URL" ] || printf 'best     minimal  %10.0f req/s  p99 %6.2f ms (the floor: paycall'"'"'s bytes, no server work)\n' "$best_m" "$best_m99"
awk "BEGIN{printf \"ratio    paycall / express = %.1fx (goal >= 10x; paycall p99 goal <= 1 ms)\n\", $best_p / $best_e}"

# Latency at fixed offered rates (RATE may list several), every server, alternating as above.
RATE="${RATE:-$(awk "BEGIN{printf \"%d\", 10 * $best_e}")}"
for rate in $RATE; do
  [ "$rate" -gt 0 ] 2>/dev/null || { echo "bench-402: RATE must be whole numbers above 0, got '$RATE'" >&2; exit 1; }
done
[ "$DURATION" -gt 1 ] || { echo "bench-402: the fixed-rate phase needs DURATION > 1 (its first second is a warm-up)" >&2; exit 1; }
rustc -O --edition 2021 scripts/rate-402.rs -o "$WORK/rate-402"
echo "at a fixed rate: $RATE req/s offered over $CONNECTIONS connections for ${DURATION}s (the first second not counted)"
for rate in $RATE; do
  worst_p99=0 short=""
  for r in $(seq 1 "$ROUNDS"); do
    for pair in "paycall $P_URL" "express $E_URL" ${B_URL:+"baseline $B_URL"} ${M_URL:+"minimal $M_URL"}; do
      name=${pair%% *} url=${pair#* }
      hostport=${url#http://} hostport=${hostport%%/*} path=/${url#http://*/}
      read -r rps p50 p99 p999 max errors lag < <("$WORK/rate-402" "$hostport" "$path" "$rate" "$CONNECTIONS" "$DURATION")
      note=""; awk "BEGIN{exit !($rps < 0.97 * $rate)}" && note="  (short of the offered rate: saturated)"
      [ "$errors" = 0 ] || note="$note  ($errors errors)"
      printf 'round %d  %-8s at %6d req/s: %8.0f achieved  p50 %6.2f  p99 %6.2f  p99.9 %6.2f  max %7.2f ms  send lag p99 %5.2f ms%s\n' \
        "$r" "$name" "$rate" "$rps" "$p50" "$p99" "$p999" "$max" "$lag" "$note"
      if [ "$name" = paycall ]; then
        awk "BEGIN{exit !($p99 > $worst_p99)}" && worst_p99=$p99
        [ -z "$note" ] || short="; a round fell short or had errors"
      fi
    done
  done
  awk "BEGIN{printf \"paycall at %d req/s (%.1fx express's best): worst p99 of %d rounds %.2f ms (goal <= 1 ms)%s\n\", $rate, $rate / $best_e, $ROUNDS, $worst_p99, \"$short\"}"
done
