#!/usr/bin/env node
// The official x402 client (@x402/fetch over an x402Client with the EVM or the Solana exact
// scheme) as a command, so Rust tests can pay the service exactly as a real buyer would.
//
//   node pay.mjs --state <file> --url <u> [--method GET|POST] [--body <json>] [--header 'k: v']...
//                [--network base|solana] [--key <buyer key>] [--timeout-ms N]
//       --network picks the scheme the client registers, so it pays that network's offer:
//       base (default; --key 0x<EVM private key>) or solana (@x402/svm; --key <64 hex digits, a
//       32-byte seed>; balances are the owners' USDC associated token accounts on the stack's
//       Solana RPC)
//       pays and prints ONE JSON line: {status, headers (lower-case), body (parsed JSON if it
//       parses, else text), paymentResponse (decoded PAYMENT-RESPONSE or null), buyer, payTo,
//       buyerBefore, buyerAfter, payToBefore, payToAfter (on-chain USDC, atomic, strings)}
//   ... --sign-only
//       one unpaid request; from its 402 builds the PAYMENT-SIGNATURE with the official client and
//       prints {status, paymentRequired (decoded), paymentRequiredRaw, paymentSignature (raw
//       header value), payload (decoded)} WITHOUT sending it
//   ... --payment-signature <raw>
//       sends the request once with that PAYMENT-SIGNATURE (a replay); prints the pay output
//   node pay.mjs balance --state <file> [--network solana] --address <a>   prints {address, balance}
//   node pay.mjs timed --state <file> --urls-file <f> [--network ...] [--key ...]
//       pays each URL of the file (one a line) in turn, in one process (so a bench times the
//       calls, not node starting), and prints a JSON line per URL: {url, status, ms (the whole
//       paid call as the buyer sees it: 402, signing, paid request, body read), elapsedMs (the
//       service's own, from the body), serverTiming (the answer's Server-Timing header: verify,
//       work, settle, total), error?}
//
// A failure of the client itself (no 402, refused offer, timeout) prints {error, ...} and exits 1.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ExactSvmScheme } from "@x402/svm/exact/client";
import { localChain, usdcBalance } from "./lib/chain.mjs";
import { ata, solanaSignerFromHex } from "./lib/solana.mjs";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    state: { type: "string" },
    url: { type: "string" },
    method: { type: "string", default: "GET" },
    body: { type: "string" },
    header: { type: "string", multiple: true, default: [] },
    key: { type: "string" },
    network: { type: "string", default: "base" },
    address: { type: "string" },
    "sign-only": { type: "boolean", default: false },
    "payment-signature": { type: "string" },
    "timeout-ms": { type: "string", default: "60000" },
    "urls-file": { type: "string" },
  },
});

function out(value, code = 0) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
  process.exitCode = code;
}

function fail(message, extra = {}) {
  out({ error: message, ...extra }, 1);
}

function requestInit() {
  const headers = {};
  for (const h of opts.header) {
    const i = h.indexOf(":");
    if (i <= 0) throw new Error(`--header must look like 'name: value', got ${JSON.stringify(h)}`);
    headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
  }
  const init = { method: opts.method.toUpperCase(), headers };
  if (opts.body !== undefined) {
    init.body = opts.body;
    if (!Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
      headers["content-type"] = "application/json";
    }
  }
  return init;
}

function withTimeout(init) {
  return { ...init, signal: AbortSignal.timeout(Number(opts["timeout-ms"])) };
}

async function readResponse(res) {
  const text = await res.text();
  let body = text;
  try {
    body = JSON.parse(text);
  } catch {}
  const headers = {};
  res.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  let paymentResponse = null;
  const raw = res.headers.get("payment-response");
  if (raw) {
    try {
      paymentResponse = decodePaymentResponseHeader(raw);
    } catch (e) {
      paymentResponse = { undecodable: raw, error: String(e) };
    }
  }
  return { status: res.status, headers, body, paymentResponse };
}

/** USDC (atomic, string) of `owner`'s associated token account on the stack's Solana RPC; "0" without one. */
async function solanaUsdcBalance(rpcUrl, owner) {
  const tokenAccount = await ata(owner);
  const res = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "getTokenAccountBalance", params: [tokenAccount] }),
    signal: AbortSignal.timeout(10_000),
  });
  const v = await res.json();
  if (v.error) return "0"; // no token account: holds nothing
  return String(v.result.value.amount);
}

/** The buyer, payTo, balance reader and client scheme of the chosen network. */
async function networkSide(state, client) {
  if (opts.network === "solana") {
    const sol = state.solana;
    if (!sol) throw new Error("this stack has no Solana leg (state.solana missing)");
    const signer = await solanaSignerFromHex(opts.key ?? sol.buyerKey);
    // Registered for Solana mainnet's id only, with the stack's RPC for the client's reads.
    client?.register(sol.network, new ExactSvmScheme(signer, { rpcUrl: sol.rpcUrl }));
    return { buyer: signer.address, payTo: sol.payTo, balance: (a) => solanaUsdcBalance(sol.rpcUrl, a) };
  }
  if (opts.network !== "base") throw new Error(`--network must be base or solana, got ${opts.network}`);
  const publicClient = createPublicClient({ chain: localChain(state.rpcUrl), transport: http(state.rpcUrl) });
  const account = privateKeyToAccount(opts.key ?? state.buyerKey);
  if (client) {
    registerExactEvmScheme(client, {
      signer: toClientEvmSigner(account, publicClient),
      schemeOptions: { rpcUrl: state.rpcUrl }, // any chain read the client makes stays on the local chain
    });
  }
  return { buyer: account.address, payTo: state.payTo, balance: (a) => usdcBalance(publicClient, a) };
}

async function main() {
  if (!opts.state) return fail("--state <file> is required (the stack's state file)");
  const state = JSON.parse(readFileSync(opts.state, "utf8"));

  if (positionals[0] === "balance") {
    if (!opts.address) return fail("balance needs --address <address>");
    const side = await networkSide(state, null);
    return out({ address: opts.address, balance: await side.balance(opts.address) });
  }
  if (positionals[0] === "timed") return timed(state);
  if (positionals.length > 0) return fail(`unknown subcommand ${positionals[0]}`);
  if (!opts.url) return fail("--url is required");

  const client = new x402Client();
  const side = await networkSide(state, client);
  const init = requestInit();

  if (opts["sign-only"]) {
    const res = await fetch(opts.url, withTimeout(init));
    const first = await readResponse(res);
    if (res.status !== 402) return fail(`expected a 402 challenge, got ${res.status}`, first);
    const httpClient = new x402HTTPClient(client);
    const paymentRequired = httpClient.getPaymentRequiredResponse((n) => res.headers.get(n), first.body);
    const payload = await httpClient.createPaymentPayload(paymentRequired);
    const signatureHeaders = httpClient.encodePaymentSignatureHeader(payload);
    const paymentSignature = signatureHeaders["PAYMENT-SIGNATURE"] ?? Object.values(signatureHeaders)[0];
    return out({
      status: res.status,
      paymentRequired,
      paymentRequiredRaw: res.headers.get("payment-required"),
      paymentSignature,
      payload,
    });
  }

  const balances = async () => Promise.all([side.balance(side.buyer), side.balance(side.payTo)]);
  const [buyerBefore, payToBefore] = await balances();
  let res;
  if (opts["payment-signature"] !== undefined) {
    init.headers["PAYMENT-SIGNATURE"] = opts["payment-signature"];
    res = await fetch(opts.url, withTimeout(init));
  } else {
    res = await wrapFetchWithPayment(fetch, client)(opts.url, withTimeout(init));
  }
  const result = await readResponse(res);
  const [buyerAfter, payToAfter] = await balances();
  return out({
    ...result,
    buyer: side.buyer,
    payTo: side.payTo,
    buyerBefore,
    buyerAfter,
    payToBefore,
    payToAfter,
  });
}

async function timed(state) {
  if (!opts["urls-file"]) return fail("timed needs --urls-file <file>");
  const urls = readFileSync(opts["urls-file"], "utf8").split("\n").map((l) => l.trim()).filter(Boolean);
  const client = new x402Client();
  await networkSide(state, client);
  const payFetch = wrapFetchWithPayment(fetch, client);
  for (const url of urls) {
    const t0 = performance.now();
    try {
      const { status, body, headers } = await readResponse(await payFetch(url, withTimeout(requestInit())));
      const ms = performance.now() - t0;
      const elapsedMs = body?.elapsedMs ?? null;
      const serverTiming = headers["server-timing"] ?? null;
      process.stdout.write(`${JSON.stringify({ url, status, ms, elapsedMs, serverTiming })}\n`);
    } catch (e) {
      const ms = performance.now() - t0;
      process.stdout.write(`${JSON.stringify({ url, status: 0, ms, elapsedMs: null, error: String(e) })}\n`);
    }
  }
}

main().catch((e) => fail(e instanceof Error ? e.message : String(e), { stack: e?.stack }));
