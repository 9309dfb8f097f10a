#!/usr/bin/env node
// A second official x402 facilitator on a running stack's chain (EVM only: eip155:8453 v2 and
// "base" v1), for failover tests (tests/it/facilitator_failover.rs). Same HTTP server, trace and
// fault modes as the stack's own (lib/facilitator.mjs); its gas is paid by another dev account,
// so the two never race one nonce.
//
//   node tests/e2e/facilitator2.mjs --state <stack state file> [--account 8]
//
// Prints ONE JSON line when listening: {url, signer, pid}. Exits when stdin closes, on
// SIGTERM/SIGINT, or when killed (what the failover test does to it mid-run).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { devAccount } from "./lib/chain.mjs";
import { buildFacilitator, startFacilitatorServer } from "./lib/facilitator.mjs";

const { values: opts } = parseArgs({
  options: {
    state: { type: "string" },
    account: { type: "string", default: "8" },
  },
});
if (!opts.state) {
  process.stderr.write("usage: facilitator2.mjs --state <stack state file> [--account N]\n");
  process.exit(2);
}
const state = JSON.parse(readFileSync(opts.state, "utf8"));
const log = (msg) => process.stderr.write(`[facilitator2] ${msg}\n`);
const { facilitator, address } = buildFacilitator(state.rpcUrl, devAccount(Number(opts.account)).key);
const server = await startFacilitatorServer({
  facilitator,
  mint: async () => {
    throw new Error("mint through the stack's own facilitator");
  },
  log,
});
const stop = (why) => {
  log(`stopping: ${why}`);
  try {
    server.close();
  } catch {}
  process.exit(0);
};
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => stop(signal));
process.stdin.on("end", () => stop("stdin closed"));
process.stdin.on("error", () => stop("stdin error"));
process.stdin.resume();
process.stdout.write(`${JSON.stringify({ url: server.url, signer: address, pid: process.pid })}\n`);
log(`listening on ${server.url} (gas payer ${address})`);
