#!/usr/bin/env node
// A tiny seller built with the official server middleware (@x402/express), used to prove the
// stack and pay.mjs before paycall itself takes part, and as a reference to compare paycall with.
//
//   node seller.mjs --state <file> [--price '$0.005']
//
// Serves GET and POST /paid on 127.0.0.1:<free port>, priced in the stack's test USDC and paid to
// the stack's payTo, settled through the stack's facilitator; GET /free is not priced.
// Prints ONE JSON line {url, port, price} on stdout when listening. Exits when stdin closes.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import express from "express";
import { NETWORK } from "./lib/chain.mjs";

const { values: opts } = parseArgs({
  options: { state: { type: "string" }, price: { type: "string", default: "$0.005" } },
});
if (!opts.state) {
  process.stderr.write("seller: --state <file> is required\n");
  process.exit(2);
}
const state = JSON.parse(readFileSync(opts.state, "utf8"));

const offer = {
  accepts: { scheme: "exact", price: opts.price, network: NETWORK, payTo: state.payTo },
  description: "e2e test resource",
  mimeType: "application/json",
};
const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: state.facilitatorUrl })).register(
  NETWORK,
  new ExactEvmScheme(),
);

const app = express();
app.use(express.json());
app.use(paymentMiddleware({ "GET /paid": offer, "POST /paid": offer }, resourceServer));
app.get("/paid", (_req, res) => res.json({ paid: true, method: "GET" }));
app.post("/paid", (req, res) => res.json({ paid: true, method: "POST", echo: req.body ?? null }));
app.get("/free", (_req, res) => res.json({ free: true }));

const server = app.listen(0, "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${port}`, port, price: opts.price })}\n`);
});
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(signal, () => process.exit(0));
