// The facilitator HTTP server: the official x402 facilitator (@x402/core x402Facilitator with the
// @x402/evm exact scheme, v2 on eip155:8453 and v1 on "base", and the @x402/svm exact scheme on
// Solana mainnet's id when the stack runs its Solana leg: one /supported lists both) behind POST /verify, POST /settle
// and GET /supported, answering as coinbase's example facilitator does (200 with the verdict,
// 400 for a body without paymentPayload/paymentRequirements, 500 {error} when it throws).
//
// Test-control endpoints, for billing tests that must see what the service asked and make the
// facilitator misbehave on purpose:
//   GET  /_calls          every /verify and /settle call so far: {seq, endpoint, body, status,
//                         response, mode, at, ms} (status/response null while unanswered or when
//                         no HTTP answer was given: hang, down)
//   POST /_calls/reset    forget recorded calls
//   GET  /_mode           current fault modes
//   POST /_mode           {verify?, settle?, slowMs?} (omitted keys keep their value); see MODES below
//   POST /_mint           {to, amount} mint test USDC (atomic units) to an address
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import { x402Facilitator } from "@x402/core/facilitator";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmSchemeV1 } from "@x402/evm/exact/v1/facilitator";
import { toFacilitatorSvmSigner } from "@x402/svm";
import { ExactSvmScheme } from "@x402/svm/exact/facilitator";
import { createWalletClient, http, publicActions } from "viem";
import { nonceManager, privateKeyToAccount } from "viem/accounts";
import { NETWORK, localChain } from "./chain.mjs";

// normal: the real facilitator. down: read the request, then drop the connection with no answer.
// unavailable: HTTP 503. hang: never answer. garbage: 200 with a body that is not JSON.
// fail (settle): success:false "unexpected_settle_error", chain untouched.
// pending (settle): success:false "settlement_pending" with a made-up transaction hash, not settled.
// slow (settle): settles for real on the chain, then holds the answer for `slowMs` (POST /_mode
// {settle: "slow", slowMs}; default 5000) — a seller that dies meanwhile never hears of it.
export const MODES = {
  verify: ["normal", "down", "unavailable", "hang", "garbage"],
  settle: ["normal", "fail", "pending", "down", "unavailable", "hang", "garbage", "slow"],
};

const MAX_BODY = 1 << 20;

/**
 * Builds the official facilitator over a viem wallet client paying gas from `key`; with
 * `solana: {rpcUrl, feePayer}` (a kit signer) it also settles Solana payments, `feePayer` paying
 * the transaction fees (listed as `extra.feePayer` in /supported).
 */
export function buildFacilitator(rpcUrl, key, { solana } = {}) {
  // nonceManager: concurrent settlements from one gas payer must not pick the same nonce.
  const account = privateKeyToAccount(key, { nonceManager });
  const client = createWalletClient({
    account,
    chain: localChain(rpcUrl),
    transport: http(rpcUrl),
    pollingInterval: 100, // anvil mines at once; viem's 4 s default would slow every settle
  }).extend(publicActions);
  const signer = toFacilitatorEvmSigner(
    {
      address: account.address,
      getCode: (args) => client.getCode(args),
      readContract: (args) => client.readContract({ ...args, args: args.args || [] }),
      verifyTypedData: (args) => client.verifyTypedData(args),
      writeContract: (args) => client.writeContract({ ...args, args: args.args || [] }),
      sendTransaction: (args) => client.sendTransaction(args),
      waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
    },
    { confirmationTimeoutMs: 30_000 },
  );
  // Registered by hand rather than with registerExactEvmScheme, which would also claim v1 support
  // for every EVM network it knows while only this chain (8453, v1 name "base") exists here.
  const facilitator = new x402Facilitator()
    .register(NETWORK, new ExactEvmScheme(signer))
    .registerV1("base", new ExactEvmSchemeV1(signer));
  if (solana) {
    // { defaultRpcUrl }: a kit Rpc object passed directly is taken for a per-network map.
    const svmSigner = toFacilitatorSvmSigner(solana.feePayer, { defaultRpcUrl: solana.rpcUrl });
    facilitator.register(solana.network, new ExactSvmScheme(svmSigner));
  }
  return { facilitator, address: account.address };
}

function sendJson(res, status, value) {
  const body = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error("request body over 1 MiB"));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function parseJson(text) {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, value: text };
  }
}

/**
 * Starts the HTTP server on 127.0.0.1:0. `mint(to, amount)` backs POST /_mint.
 * Returns { url, server, close }.
 */
export async function startFacilitatorServer({ facilitator, mint, log = () => {} }) {
  const calls = [];
  let seq = 0;
  const mode = { verify: "normal", settle: "normal", slowMs: 5000 };
  const hung = new Set();

  async function protocolCall(endpoint, req, res) {
    const text = await readBody(req);
    const parsed = parseJson(text);
    const current = mode[endpoint];
    const call = {
      seq: ++seq,
      endpoint: `/${endpoint}`,
      body: parsed.value,
      status: null,
      response: null,
      mode: current,
      at: Date.now(),
      ms: null,
    };
    calls.push(call);
    const answer = (status, value) => {
      call.status = status;
      call.response = value;
      call.ms = Date.now() - call.at;
      log(`${call.endpoint} #${call.seq} -> ${status}${summary(value)}`);
      if (typeof value === "string") {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(value);
      } else {
        sendJson(res, status, value);
      }
    };

    switch (current) {
      case "down":
        log(`${call.endpoint} #${call.seq} -> connection dropped (mode down)`);
        req.socket.destroy();
        return;
      case "hang":
        log(`${call.endpoint} #${call.seq} -> left hanging (mode hang)`);
        hung.add(res);
        res.on("close", () => hung.delete(res));
        return;
      case "unavailable":
        return answer(503, { error: "facilitator unavailable (test mode)" });
      case "garbage":
        return answer(200, "<html>this is not the JSON you are looking for");
      default:
        break;
    }

    const body = parsed.ok ? parsed.value : null;
    const paymentPayload = body?.paymentPayload;
    const paymentRequirements = body?.paymentRequirements;
    if (!paymentPayload || !paymentRequirements) {
      return answer(400, { error: "Missing paymentPayload or paymentRequirements" });
    }
    if (endpoint === "settle" && (current === "fail" || current === "pending")) {
      const base = {
        success: false,
        network: paymentRequirements.network ?? NETWORK,
        payer: paymentPayload?.payload?.authorization?.from ?? "",
      };
      return answer(
        200,
        current === "fail"
          ? { ...base, errorReason: "unexpected_settle_error", transaction: "" }
          : { ...base, errorReason: "settlement_pending", transaction: `0x${randomBytes(32).toString("hex")}` },
      );
    }
    try {
      const result =
        endpoint === "verify"
          ? await facilitator.verify(paymentPayload, paymentRequirements)
          : await facilitator.settle(paymentPayload, paymentRequirements);
      if (endpoint === "settle" && current === "slow") {
        log(`${call.endpoint} #${call.seq} settled; holding the answer ${mode.slowMs} ms (mode slow)`);
        await new Promise((r) => setTimeout(r, mode.slowMs));
        if (res.destroyed) return; // the seller hung up: nothing to answer
      }
      return answer(200, result);
    } catch (error) {
      return answer(500, { error: error instanceof Error ? error.message : String(error) });
    }
  }

  async function control(method, path, req, res) {
    if (method === "GET" && path === "/_calls") return sendJson(res, 200, calls);
    if (method === "POST" && path === "/_calls/reset") {
      await readBody(req);
      calls.length = 0;
      return sendJson(res, 200, { ok: true });
    }
    if (method === "GET" && path === "/_mode") return sendJson(res, 200, mode);
    if (method === "POST" && path === "/_mode") {
      const parsed = parseJson(await readBody(req));
      const wanted = parsed.ok && parsed.value && typeof parsed.value === "object" ? parsed.value : null;
      if (!wanted) return sendJson(res, 400, { error: "body must be a JSON object {verify?, settle?}" });
      for (const key of Object.keys(wanted)) {
        if (key === "slowMs") {
          if (!Number.isInteger(wanted.slowMs) || wanted.slowMs < 0 || wanted.slowMs > 60000) {
            return sendJson(res, 400, { error: "slowMs must be an integer from 0 to 60000" });
          }
          continue;
        }
        if (!MODES[key]) return sendJson(res, 400, { error: `unknown key ${key}: use verify, settle or slowMs` });
        if (!MODES[key].includes(wanted[key])) {
          return sendJson(res, 400, { error: `${key} mode must be one of ${MODES[key].join(", ")}` });
        }
      }
      Object.assign(mode, wanted);
      log(`mode is now verify=${mode.verify} settle=${mode.settle}`);
      return sendJson(res, 200, mode);
    }
    if (method === "POST" && path === "/_mint") {
      const parsed = parseJson(await readBody(req));
      const { to, amount } = parsed.ok && parsed.value ? parsed.value : {};
      if (!/^0x[0-9a-fA-F]{40}$/.test(String(to)) || !/^[0-9]+$/.test(String(amount))) {
        return sendJson(res, 400, { error: 'body must be {"to": "0x<40 hex>", "amount": "<atomic units>"}' });
      }
      try {
        return sendJson(res, 200, { transaction: await mint(to, BigInt(amount)) });
      } catch (error) {
        return sendJson(res, 500, { error: error instanceof Error ? error.message : String(error) });
      }
    }
    return sendJson(res, 404, { error: `no route ${method} ${path}` });
  }

  const server = createServer(async (req, res) => {
    const path = new URL(req.url, "http://127.0.0.1").pathname;
    try {
      if (req.method === "GET" && path === "/supported") return sendJson(res, 200, facilitator.getSupported());
      if (req.method === "POST" && path === "/verify") return await protocolCall("verify", req, res);
      if (req.method === "POST" && path === "/settle") return await protocolCall("settle", req, res);
      return await control(req.method, path, req, res);
    } catch (error) {
      if (!res.headersSent) sendJson(res, 400, { error: error instanceof Error ? error.message : String(error) });
    }
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections?.();
      server.close();
    },
  };
}

function summary(value) {
  if (value && typeof value === "object") {
    if ("isValid" in value) return ` isValid=${value.isValid}${value.invalidReason ? ` ${value.invalidReason}` : ""}`;
    if ("success" in value) return ` success=${value.success}${value.errorReason ? ` ${value.errorReason}` : ""}`;
    if ("error" in value) return ` error=${value.error}`;
  }
  return "";
}
