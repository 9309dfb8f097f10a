#!/usr/bin/env bash
# Runs the local x402 payment stack (anvil + test USDC + official facilitator) in the foreground
# for a human; Ctrl-C stops it and its chain. The stack's addresses are written to
# tests/e2e/.stack/state.json (and printed as one JSON line) once it is ready.
# Run scripts/setup.sh first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -d "$ROOT/tests/e2e/node_modules" ]; then
  echo "stack: tests/e2e/node_modules is missing: run scripts/setup.sh first" >&2
  exit 1
fi
exec node "$ROOT/tests/e2e/stack.mjs" --state "$ROOT/tests/e2e/.stack/state.json" "$@"
