#!/usr/bin/env bash
# The README's test command: installs what the tests need (idempotent), then runs every test.
# Tests start their own local servers (upstreams, anvil chain, x402 facilitator) on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== cargo test (all tests; the local payment stack is started by the tests themselves)"
cargo test --locked --no-fail-fast "$@"
