#!/usr/bin/env bash
# Memory after a burst, per allocator (issue 19): builds the release paycall once per allocator
# (glibc's malloc, jemalloc, mimalloc), then for each runs benches/memory.rs, which prints idle,
# peak (BURST paid /api/http calls in flight at once, each held WORK_MS by a slow upstream,
# stub facilitator) and AFTER_S-seconds-after RSS, and the 402 path's req/s under wrk.
# Loopback only. Env: BURST (1000), WORK_MS (3000), AFTER_S (10), WRK_S (10),
# ALLOCATORS ("glibc jemalloc mimalloc"), SKIP_BUILD=1 to reuse the binaries of a previous run.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v wrk >/dev/null || { echo "bench-memory: wrk is missing: run scripts/setup.sh" >&2; exit 1; }
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
OUT="$TARGET/bench-memory"
mkdir -p "$OUT"
ALLOCATORS="${ALLOCATORS:-glibc jemalloc mimalloc}"
features() {
  case "$1" in
    glibc) echo "--no-default-features" ;;
    jemalloc) echo "--no-default-features --features jemalloc" ;;
    mimalloc) echo "--no-default-features --features mimalloc" ;;
    *) echo "bench-memory: unknown allocator $1" >&2; exit 2 ;;
  esac
}
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  for a in $ALLOCATORS; do
    # shellcheck disable=SC2046
    cargo build --release --locked --bin paycall $(features "$a")
    cp "$TARGET/release/paycall" "$OUT/paycall-$a"
  done
fi
# The runner itself (default features; it only drives the binaries above).
cargo bench --locked --bench memory --no-run
for a in $ALLOCATORS; do
  cargo bench --locked --bench memory -- --bin "$OUT/paycall-$a" --label "$a" \
    --burst "${BURST:-1000}" --work-ms "${WORK_MS:-3000}" --after-s "${AFTER_S:-10}" --wrk-s "${WRK_S:-10}" \
    | grep -E '^[a-z]+ +idle'
done
