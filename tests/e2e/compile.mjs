#!/usr/bin/env node
// Compiles contracts/*.sol into the .stack/build cache (a no-op when already cached), so the first
// stack started by the tests does not pay solc's few seconds; scripts/setup.sh runs it.
import { loadContracts } from "./lib/contracts.mjs";

const started = Date.now();
const contracts = await loadContracts();
const sizes = Object.entries(contracts).map(([name, c]) => `${name} ${(c.runtime.length - 2) / 2} B`);
process.stdout.write(`setup: contracts ready (${sizes.join(", ")}) in ${Date.now() - started} ms\n`);
