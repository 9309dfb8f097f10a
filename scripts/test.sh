#!/usr/bin/env bash
# The README's test command: installs what the tests need (idempotent), then runs every test.
# Tests start their own local servers (upstreams, anvil chain, x402 facilitator) on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Test threads stay cargo's default, one per core (no RUST_TEST_THREADS here): the integration
# tests are one binary (tests/it), so its tests share those threads; most wait on local servers,
# but each also starts CPU-hungry children (anvil and the node facilitator per payment test,
# chromium, postgres, the real binary), and ~40 assertions in 20 files bound a duration. More
# threads than cores would run those bounds under load they were not written for: make such a
# bound load-independent first, then measure a higher count.
echo "== cargo test (all tests; the local payment stack is started by the tests themselves)"
cargo test --locked --no-fail-fast "$@"
