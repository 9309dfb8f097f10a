#!/usr/bin/env node
// Local x402 payment stack for paycall's end-to-end tests and the README's run command:
// anvil (chain id 8453) + the test USDC at Base's USDC address + Multicall3 + the official
// facilitator over HTTP (see lib/facilitator.mjs for its endpoints and fault modes), and a Solana
// leg (lib/solana.mjs: a Solana JSON-RPC over litesvm with USDC's mainnet mint, a funded buyer,
// payTo with its token account and the facilitator's fee payer) settled by the same facilitator.
//
//   node tests/e2e/stack.mjs [--state <file>] [--exit-on-stdin-close] [--quiet]
//
// When ready it prints ONE JSON line on stdout and (with --state) writes the same JSON to the
// file, atomically: {rpcUrl, facilitatorUrl, chainId, network, usdc, multicall3, payTo, buyer,
// buyerKey, facilitatorSigner, admin, spareAccounts, pids, solana: {rpcUrl, network, usdc, payTo,
// payToTokenAccount, buyer, buyerKey, buyerTokenAccount, poorBuyer, poorBuyerKey, spare, spareKey,
// feePayer}} (Solana keys are 32-byte seeds in hex). It stops anvil on SIGTERM/SIGINT/
// SIGHUP, on its parent's death, and with --exit-on-stdin-close when stdin closes (how a Rust
// test that drops its handle takes the stack down). Logs go to stderr.
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createPublicClient, createWalletClient, hashDomain, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startAnvil, rpc } from "./lib/anvil.mjs";
import {
  CHAIN_ID,
  MULTICALL3_ADDRESS,
  NETWORK,
  ROLES,
  SPARE_ACCOUNTS,
  USDC_ABI,
  USDC_ADDRESS,
  USDC_DOMAIN,
  devAccount,
  localChain,
} from "./lib/chain.mjs";
import { loadContracts } from "./lib/contracts.mjs";
import { buildFacilitator, startFacilitatorServer } from "./lib/facilitator.mjs";
import { startSolana } from "./lib/solana.mjs";

const BUYER_FUNDS = 100_000_000n; // 100 USDC

const { values: opts } = parseArgs({
  options: {
    state: { type: "string" },
    "exit-on-stdin-close": { type: "boolean", default: false },
    quiet: { type: "boolean", default: false },
  },
});
const started = Date.now();
const log = (msg) => {
  if (!opts.quiet) process.stderr.write(`[stack +${((Date.now() - started) / 1000).toFixed(2)}s] ${msg}\n`);
};

let anvil = null;
let facilitatorServer = null;
let solana = null;
const statePath = opts.state ? resolve(opts.state) : null;

function shutdown(code, why) {
  if (why) log(`stopping: ${why}`);
  try {
    facilitatorServer?.close();
  } catch {}
  try {
    solana?.close();
  } catch {}
  anvil?.stop();
  if (statePath) rmSync(statePath, { force: true });
  process.exit(code);
}
// Last resort if something calls process.exit elsewhere: never leave anvil behind.
process.on("exit", () => {
  if (anvil) {
    try {
      process.kill(anvil.pid, "SIGTERM");
    } catch {}
  }
});
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => shutdown(0, signal));
process.on("uncaughtException", (e) => {
  process.stderr.write(`[stack] fatal: ${e.stack || e}\n`);
  shutdown(1);
});
if (opts["exit-on-stdin-close"]) {
  process.stdin.on("end", () => shutdown(0, "stdin closed"));
  process.stdin.on("error", () => shutdown(0, "stdin error"));
  process.stdin.resume();
}
// Parent death without a signal to us (e.g. SIGKILL of the parent): we get re-parented.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) shutdown(0, "parent process went away");
}, 1000).unref();

async function placeContracts(rpcUrl) {
  const contracts = await loadContracts();
  log("contracts compiled (or loaded from .stack/build cache)");
  await rpc(rpcUrl, "anvil_setCode", [USDC_ADDRESS, contracts.TestUSDC.runtime]);
  await rpc(rpcUrl, "anvil_setCode", [MULTICALL3_ADDRESS, contracts.Multicall3.runtime]);
}

async function main() {
  anvil = await startAnvil();
  log(`anvil ${anvil.url} (pid ${anvil.pid})`);
  anvil.guard.once("exit", () => {
    anvil = null;
    shutdown(1, "anvil exited unexpectedly");
  });
  const rpcUrl = anvil.url;
  await placeContracts(rpcUrl);

  const chain = localChain(rpcUrl);
  const publicClient = createPublicClient({ chain, transport: http(rpcUrl), pollingInterval: 100 });
  const admin = devAccount(ROLES.admin);
  const adminClient = createWalletClient({
    account: privateKeyToAccount(admin.key),
    chain,
    transport: http(rpcUrl),
    pollingInterval: 100,
  });
  // Serialised so that /_mint calls never race the admin's nonce.
  let adminQueue = Promise.resolve();
  const adminWrite = (functionName, args) => {
    const run = adminQueue.then(async () => {
      const hash = await adminClient.writeContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName, args });
      const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 30_000 });
      if (receipt.status !== "success") throw new Error(`${functionName} reverted (tx ${hash})`);
      return hash;
    });
    adminQueue = run.catch(() => {});
    return run;
  };

  const buyer = devAccount(ROLES.buyer);
  const payTo = devAccount(ROLES.payTo).address;
  await adminWrite("initialize", [admin.address]);
  await adminWrite("mint", [buyer.address, BUYER_FUNDS]);

  // Refuse to report ready unless the token really looks like USDC to the official packages.
  const read = (functionName, args = []) =>
    publicClient.readContract({ address: USDC_ADDRESS, abi: USDC_ABI, functionName, args });
  const [name, version, decimals, separator, balance] = await Promise.all([
    read("name"),
    read("version"),
    read("decimals"),
    read("DOMAIN_SEPARATOR"),
    read("balanceOf", [buyer.address]),
  ]);
  const expectedSeparator = hashDomain({
    domain: { ...USDC_DOMAIN, chainId: CHAIN_ID, verifyingContract: USDC_ADDRESS },
    types: {
      EIP712Domain: [
        { name: "name", type: "string" },
        { name: "version", type: "string" },
        { name: "chainId", type: "uint256" },
        { name: "verifyingContract", type: "address" },
      ],
    },
  });
  if (name !== USDC_DOMAIN.name || version !== USDC_DOMAIN.version || decimals !== 6) {
    throw new Error(`test token reports ${name}/${version}/${decimals}, expected USD Coin/2/6`);
  }
  if (separator !== expectedSeparator) throw new Error("test token's EIP-712 domain separator is wrong");
  if (balance !== BUYER_FUNDS) throw new Error(`buyer holds ${balance}, expected ${BUYER_FUNDS}`);
  log(`test USDC at ${USDC_ADDRESS}; buyer ${buyer.address} holds 100 USDC; payTo ${payTo}`);

  solana = await startSolana({ log: (msg) => log(`solana ${msg}`) });
  log(`solana rpc ${solana.url}: USDC mint ${solana.state.usdc}; buyer ${solana.state.buyer} holds 100 USDC; payTo ${solana.state.payTo} (token account ${solana.state.payToTokenAccount}); fee payer ${solana.state.feePayer}`);

  const { facilitator, address: facilitatorSigner } = buildFacilitator(rpcUrl, devAccount(ROLES.facilitator).key, {
    solana: { rpcUrl: solana.url, network: solana.state.network, feePayer: solana.feePayer },
  });
  facilitatorServer = await startFacilitatorServer({
    facilitator,
    mint: (to, amount) => adminWrite("mint", [to, amount]),
    log: (msg) => log(`facilitator ${msg}`),
  });
  log(`facilitator ${facilitatorServer.url} (gas payer ${facilitatorSigner})`);

  const state = {
    rpcUrl,
    facilitatorUrl: facilitatorServer.url,
    chainId: CHAIN_ID,
    network: NETWORK,
    usdc: USDC_ADDRESS,
    multicall3: MULTICALL3_ADDRESS,
    payTo,
    buyer: buyer.address,
    buyerKey: buyer.key,
    facilitatorSigner,
    admin: admin.address,
    spareAccounts: SPARE_ACCOUNTS.map((i) => devAccount(i)),
    pids: { stack: process.pid, anvil: anvil.pid, anvilGuard: anvil.guard.pid },
    solana: solana.state,
  };
  const json = JSON.stringify(state);
  if (statePath) {
    mkdirSync(dirname(statePath), { recursive: true });
    const tmp = `${statePath}.${process.pid}.tmp`;
    writeFileSync(tmp, `${json}\n`);
    renameSync(tmp, statePath);
    log(`state written to ${statePath}`);
  }
  process.stdout.write(`${json}\n`);
  log(`ready in ${((Date.now() - started) / 1000).toFixed(2)} s`);
}

main().catch((e) => {
  process.stderr.write(`[stack] failed to start: ${e.stack || e}\n`);
  shutdown(1);
});
