#!/usr/bin/env node
// The official MCP TypeScript SDK (@modelcontextprotocol/sdk: Client over the streamable HTTP
// transport) paying a paycall tool with x402's MCP binding, the payment signed by the official
// x402 client (@x402/core + @x402/evm), as a command for the Rust tests.
//
//   node mcp.mjs --state <file> --url http://127.0.0.1:N/mcp --tool fetch --args '{"url":"..."}'
//                [--no-pay] [--payment-json <PaymentPayload JSON>] [--timeout-ms N]
//
// Prints ONE JSON line: {tools (tools/list), unpaid (the first tools/call result), paid (the
// result of the call repeated with _meta["x402/payment"], or null with --no-pay), payload (the
// PaymentPayload sent), buyer, payTo, buyerBefore, buyerAfter, payToBefore, payToAfter}.
// With --payment-json the given payload is sent (a replay), without a first unpaid call.
// A failure of the client itself prints {error, ...} and exits 1.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { x402Client } from "@x402/core/client";
import { toClientEvmSigner } from "@x402/evm";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { createPublicClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { localChain, usdcBalance } from "./lib/chain.mjs";

const { values: opts } = parseArgs({
  options: {
    state: { type: "string" },
    url: { type: "string" },
    tool: { type: "string" },
    args: { type: "string", default: "{}" },
    "no-pay": { type: "boolean", default: false },
    "payment-json": { type: "string" },
    "timeout-ms": { type: "string", default: "60000" },
  },
});

function out(value, code = 0) {
  process.stdout.write(`${JSON.stringify(value)}\n`);
  process.exitCode = code;
}

async function main() {
  if (!opts.state || !opts.url || !opts.tool) return out({ error: "--state, --url and --tool are required" }, 1);
  const state = JSON.parse(readFileSync(opts.state, "utf8"));
  const publicClient = createPublicClient({ chain: localChain(state.rpcUrl), transport: http(state.rpcUrl) });
  const account = privateKeyToAccount(state.buyerKey);
  const payer = new x402Client();
  registerExactEvmScheme(payer, {
    signer: toClientEvmSigner(account, publicClient),
    schemeOptions: { rpcUrl: state.rpcUrl },
  });

  const timeout = Number(opts["timeout-ms"]);
  const client = new Client({ name: "paycall-e2e", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(opts.url)));
  const reqOpts = { timeout };
  const { tools } = await client.listTools(undefined, reqOpts);
  const args = JSON.parse(opts.args);
  const balances = async () =>
    Promise.all([usdcBalance(publicClient, account.address), usdcBalance(publicClient, state.payTo)]);
  const [buyerBefore, payToBefore] = await balances();

  let unpaid = null;
  let payload = null;
  if (opts["payment-json"] !== undefined) {
    payload = JSON.parse(opts["payment-json"]);
  } else {
    unpaid = await client.callTool({ name: opts.tool, arguments: args }, undefined, reqOpts);
    const pr = unpaid.structuredContent;
    if (!opts["no-pay"] && unpaid.isError && pr?.x402Version === 2 && Array.isArray(pr.accepts)) {
      payload = await payer.createPaymentPayload(pr);
    }
  }
  let paid = null;
  if (payload) {
    paid = await client.callTool(
      { name: opts.tool, arguments: args, _meta: { "x402/payment": payload } },
      undefined,
      reqOpts,
    );
  }
  await client.close();
  const [buyerAfter, payToAfter] = await balances();
  return out({
    tools,
    unpaid,
    paid,
    payload,
    buyer: account.address,
    payTo: state.payTo,
    buyerBefore,
    buyerAfter,
    payToBefore,
    payToAfter,
  });
}

main().catch((e) => out({ error: e instanceof Error ? e.message : String(e), stack: e?.stack }, 1));
