// The Solana leg of the local payment stack: a Solana JSON-RPC over HTTP backed by litesvm (an
// in-process Solana VM shipping the real SPL Token, Associated Token Account, Memo and Compute
// Budget programs), with the genesis state a paid call needs:
//   - a Mint at USDC's mainnet address (6 decimals, SPL Token), so "$0.01" prices in it as the
//     official packages map dollar prices to the network's USDC;
//   - the buyer's associated token account holding 100 USDC (the buyer needs no SOL);
//   - payTo's associated token account (the official client does not create it: without one every
//     payment fails verify with invalid_exact_svm_transaction_simulation_failed);
//   - a "poor" buyer whose token account exists and holds 0 (payer without funds);
//   - the facilitator's fee payer with 10 SOL.
//
// The native binding (`litesvm-linux-x64-gnu`) is used directly rather than through the `litesvm`
// wrapper package: the wrapper lists six platform packages as optional dependencies, the registry
// here serves only linux-x64, and `npm ci` then refuses the lock file (see
// ../shared/local-chain-notes.md). The wrapper's own logic we need is a few lines below.
//
// RPC methods (what @x402/svm 2.27 and @solana/kit call, plus reads for tests and paycall's
// checks): getAccountInfo, getMultipleAccounts, getBalance, getLatestBlockhash, isBlockhashValid,
// simulateTransaction, sendTransaction, getSignatureStatuses, getTransaction (base64, with
// the meta's pre/post token balances), getSignaturesForAddress (what paycall's on-chain
// confirmation searches), getTokenAccountBalance, getTokenAccountsByOwner, getSlot, getBlockHeight,
// getMinimumBalanceForRentExemption, getHealth, getVersion, getGenesisHash, getEpochInfo.
// Test control: POST /_fund {owner, amount, at?} sets owner's USDC token account balance (atomic):
// its associated token account, or a token account of owner's at the address `at`.
import { createServer } from "node:http";
import { createRequire } from "node:module";
import {
  address,
  createKeyPairSignerFromPrivateKeyBytes,
  getAddressDecoder,
  getAddressEncoder,
  getBase58Decoder,
  getBase58Encoder,
} from "@solana/kit";
import {
  ASSOCIATED_TOKEN_PROGRAM_ADDRESS,
  TOKEN_PROGRAM_ADDRESS,
  AccountState,
  findAssociatedTokenPda,
  getMintEncoder,
  getTokenDecoder,
  getTokenEncoder,
} from "@solana-program/token";

const require = createRequire(import.meta.url);
const native = require("litesvm-linux-x64-gnu");

export const SOLANA_NETWORK = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"; // mainnet's CAIP-2 id
export const SOLANA_USDC = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const BUYER_FUNDS = 100_000_000n; // 100 USDC
const FEE_PAYER_LAMPORTS = 10_000_000_000n; // 10 SOL
const MAX_BODY = 1 << 20;

// Fixed seeds: the same addresses on every run (tests and the README can name them).
const seed = (n) => Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? n : 0x5a ^ i));
export const SOLANA_ROLES = { buyer: 1, payTo: 2, feePayer: 3, poorBuyer: 4, spare: 5 };
export const seedHex = (n) => Buffer.from(seed(n)).toString("hex");

/** A kit KeyPairSigner from a 32-byte private key seed given as 64 hex digits. */
export function solanaSignerFromHex(hex) {
  const clean = String(hex).replace(/^0x/, "");
  if (!/^[0-9a-fA-F]{64}$/.test(clean)) throw new Error("a Solana key here is 64 hex digits (a 32-byte seed)");
  return createKeyPairSignerFromPrivateKeyBytes(Uint8Array.from(Buffer.from(clean, "hex")));
}

const b58 = { enc: getBase58Encoder(), dec: getBase58Decoder() };
const addrBytes = (a) => new Uint8Array(getAddressEncoder().encode(address(a)));
const addrString = (bytes) => getAddressDecoder().decode(bytes);

export async function ata(owner, mint = SOLANA_USDC) {
  const [pda] = await findAssociatedTokenPda({
    owner: address(owner),
    mint: address(mint),
    tokenProgram: TOKEN_PROGRAM_ADDRESS,
  });
  return pda;
}

/** Native transaction error → the JSON shape of Solana's RPC (best effort: non-null = failed). */
function errJson(e) {
  if (e === null || e === undefined) return null;
  if (typeof e === "number") return { TransactionError: e };
  if (typeof e.err === "function" && typeof e.index === "number") {
    const inner = e.err();
    if (typeof inner === "number") return { InstructionError: [e.index, inner] };
    if (inner && typeof inner.code === "number") return { InstructionError: [e.index, { Custom: inner.code }] };
    return { InstructionError: [e.index, String(inner)] };
  }
  return String(e);
}

/** The first signature of a serialized transaction (compact-u16 count, then 64-byte signatures). */
function firstSignature(tx) {
  let count = 0;
  let shift = 0;
  let i = 0;
  for (;;) {
    const b = tx[i++];
    count |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  if (count < 1 || tx.length < i + 64) throw new Error("transaction has no signature");
  return tx.slice(i, i + 64);
}

/** Legacy or versioned: the message starts after the signatures; a set top bit marks a version. */
function isVersioned(tx) {
  let count = 0;
  let shift = 0;
  let i = 0;
  for (;;) {
    const b = tx[i++];
    count |= (b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
  }
  return (tx[i + count * 64] & 0x80) !== 0;
}

/** The static account keys of a serialized transaction, as base58 addresses. */
function staticKeys(tx) {
  const shortvec = (at) => {
    let value = 0;
    let shift = 0;
    for (;;) {
      const b = tx[at.i++];
      value |= (b & 0x7f) << shift;
      if (!(b & 0x80)) return value;
      shift += 7;
    }
  };
  const at = { i: 0 };
  const sigs = shortvec(at);
  at.i += sigs * 64;
  if (tx[at.i] & 0x80) at.i += 1; // version byte
  at.i += 3; // header
  const n = shortvec(at);
  const keys = [];
  for (let k = 0; k < n; k++) keys.push(addrString(tx.slice(at.i + 32 * k, at.i + 32 * (k + 1))));
  return keys;
}

export async function startSolana({ log = () => {} } = {}) {
  const svm = new native.LiteSvm();
  // The signatures we saw land (or fail): signature → {slot, err, blockTime, tx (base64),
  // keys, pre, post} for getSignatureStatuses, getTransaction and getSignaturesForAddress.
  const landed = new Map();
  let slot = 1n;
  const context = () => ({ slot: Number(slot), apiVersion: "2.2.0" });

  const signers = {};
  for (const [role, n] of Object.entries(SOLANA_ROLES)) signers[role] = await createKeyPairSignerFromPrivateKeyBytes(seed(n));
  const rent = (len) => svm.minimumBalanceForRentExemption(BigInt(len));

  // The USDC mint: no mint authority needed (balances are written directly), 6 decimals.
  const mintData = new Uint8Array(
    getMintEncoder().encode({
      mintAuthority: null,
      supply: 1_000_000_000_000n,
      decimals: 6,
      isInitialized: true,
      freezeAuthority: null,
    }),
  );
  svm.setAccount(
    addrBytes(SOLANA_USDC),
    new native.Account(rent(mintData.length), mintData, addrBytes(TOKEN_PROGRAM_ADDRESS), false, 0n),
  );
  // Every token account written here, for an honest getTokenAccountsByOwner.
  const tokenAccounts = new Set();
  async function setTokenAccount(owner, amount, at = null) {
    const data = new Uint8Array(
      getTokenEncoder().encode({
        mint: address(SOLANA_USDC),
        owner: address(owner),
        amount,
        delegate: null,
        state: AccountState.Initialized,
        isNative: null,
        delegatedAmount: 0n,
        closeAuthority: null,
      }),
    );
    at = at ?? (await ata(owner));
    svm.setAccount(addrBytes(at), new native.Account(rent(data.length), data, addrBytes(TOKEN_PROGRAM_ADDRESS), false, 0n));
    tokenAccounts.add(at);
    return at;
  }
  await setTokenAccount(signers.buyer.address, BUYER_FUNDS);
  await setTokenAccount(signers.payTo.address, 0n);
  await setTokenAccount(signers.poorBuyer.address, 0n);
  svm.setAccount(
    addrBytes(signers.feePayer.address),
    new native.Account(FEE_PAYER_LAMPORTS, new Uint8Array(0), addrBytes("11111111111111111111111111111111"), false, 0n),
  );

  const accountJson = (acc, encoding) => {
    if (!acc) return null;
    const data = Buffer.from(acc.data());
    return {
      data: encoding === "base58" ? b58.dec.decode(data) : [data.toString("base64"), "base64"],
      executable: acc.executable(),
      lamports: Number(acc.lamports()),
      owner: addrString(acc.owner()),
      rentEpoch: 0,
      space: data.length,
    };
  };
  const tokenAmount = (at) => {
    const acc = svm.getAccount(addrBytes(at));
    if (!acc || addrString(acc.owner()) !== TOKEN_PROGRAM_ADDRESS) return null;
    return getTokenDecoder().decode(acc.data()).amount;
  };
  // The meta's token balances: every static key that is a token account, as a real node lists them.
  const tokenBalances = (keys) =>
    keys.flatMap((k, accountIndex) => {
      const acc = svm.getAccount(addrBytes(k));
      // A token account is 165 bytes; the mint (82) belongs to the same program.
      if (!acc || addrString(acc.owner()) !== TOKEN_PROGRAM_ADDRESS || acc.data().length !== 165) return [];
      const t = getTokenDecoder().decode(acc.data());
      return [{ accountIndex, mint: t.mint, owner: t.owner, programId: TOKEN_PROGRAM_ADDRESS, uiTokenAmount: uiAmount(t.amount) }];
    });
  const uiAmount = (amount) => ({
    amount: amount.toString(),
    decimals: 6,
    uiAmount: Number(amount) / 1e6,
    uiAmountString: (Number(amount) / 1e6).toString(),
  });
  const txBytes = (params) => {
    const [encoded, opts = {}] = params;
    return opts.encoding === "base64"
      ? new Uint8Array(Buffer.from(encoded, "base64"))
      : new Uint8Array(b58.enc.encode(encoded));
  };
  const runTx = (tx, simulate, sigVerify) => {
    // JavaScript is single-threaded: toggling signature checks around one call is safe.
    const before = svm.getSigverify();
    svm.setSigverify(sigVerify);
    try {
      if (simulate) return isVersioned(tx) ? svm.simulateVersionedTransaction(tx) : svm.simulateLegacyTransaction(tx);
      return isVersioned(tx) ? svm.sendVersionedTransaction(tx) : svm.sendLegacyTransaction(tx);
    } finally {
      svm.setSigverify(before);
    }
  };
  const rpcError = (code, message) => Object.assign(new Error(message), { rpcCode: code });

  const methods = {
    getHealth: () => "ok",
    getVersion: () => ({ "solana-core": "2.2.0-litesvm", "feature-set": 0 }),
    getGenesisHash: () => "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d",
    getSlot: () => Number(slot),
    getBlockHeight: () => Number(slot),
    getEpochInfo: () => ({ absoluteSlot: Number(slot), blockHeight: Number(slot), epoch: 0, slotIndex: Number(slot), slotsInEpoch: 432000 }),
    getMinimumBalanceForRentExemption: ([len]) => Number(rent(len)),
    getLatestBlockhash: () => ({ context: context(), value: { blockhash: svm.latestBlockhash(), lastValidBlockHeight: Number(slot) + 150 } }),
    isBlockhashValid: ([hash]) => ({ context: context(), value: hash === svm.latestBlockhash() }),
    getBalance: ([a]) => ({ context: context(), value: Number(svm.getBalance(addrBytes(a)) ?? 0n) }),
    getAccountInfo: ([a, opts = {}]) => ({ context: context(), value: accountJson(svm.getAccount(addrBytes(a)), opts.encoding) }),
    getMultipleAccounts: ([list, opts = {}]) => ({
      context: context(),
      value: list.map((a) => accountJson(svm.getAccount(addrBytes(a)), opts.encoding)),
    }),
    getTokenAccountBalance: ([a]) => {
      const amount = tokenAmount(a);
      if (amount === null) throw rpcError(-32602, `Invalid param: not a Token account ${a}`);
      return { context: context(), value: uiAmount(amount) };
    },
    getTokenAccountsByOwner: ([owner, filter = {}, opts = {}]) => {
      // Every token account written here whose owner and mint match, ATA or not, as a node does.
      if (filter.programId && filter.programId !== TOKEN_PROGRAM_ADDRESS) return { context: context(), value: [] };
      const value = [...tokenAccounts].flatMap((at) => {
        const acc = svm.getAccount(addrBytes(at));
        if (!acc) return [];
        const t = getTokenDecoder().decode(acc.data());
        if (t.owner !== owner || (filter.mint && t.mint !== filter.mint)) return [];
        return [{ pubkey: at, account: accountJson(acc, opts.encoding) }];
      });
      return { context: context(), value };
    },
    simulateTransaction: ([encoded, opts = {}]) => {
      const tx = txBytes([encoded, opts]);
      const r = runTx(tx, true, opts.sigVerify === true);
      const failed = typeof r.err === "function";
      const meta = r.meta();
      if (failed) log(`simulateTransaction failed: ${JSON.stringify(errJson(r.err()))} ${meta.logs().join(" | ")}`);
      return {
        context: context(),
        value: {
          err: failed ? errJson(r.err()) : null,
          logs: meta.logs(),
          accounts: null,
          unitsConsumed: Number(meta.computeUnitsConsumed()),
          returnData: null,
          innerInstructions: opts.innerInstructions ? [] : null,
        },
      };
    },
    sendTransaction: ([encoded, opts = {}]) => {
      const tx = txBytes([encoded, opts]);
      const signature = b58.dec.decode(firstSignature(tx));
      if (landed.has(signature)) throw rpcError(-32002, "Transaction simulation failed: This transaction has already been processed");
      const keys = staticKeys(tx);
      const pre = tokenBalances(keys);
      const r = runTx(tx, false, true);
      const failed = typeof r.err === "function";
      slot += 1n;
      const record = { slot, blockTime: Math.floor(Date.now() / 1000), tx: Buffer.from(tx).toString("base64"), keys, pre, post: tokenBalances(keys) };
      if (failed) {
        // A real node would refuse it at preflight or land it as failed; record the failure either way.
        const err = errJson(r.err());
        log(`sendTransaction ${signature.slice(0, 12)}… failed: ${JSON.stringify(err)}`);
        if (!opts.skipPreflight) throw rpcError(-32002, `Transaction simulation failed: ${JSON.stringify(err)}`);
        landed.set(signature, { ...record, err });
      } else {
        landed.set(signature, { ...record, err: null });
        log(`sendTransaction ${signature.slice(0, 12)}… landed in slot ${slot}`);
      }
      svm.expireBlockhash(); // a new blockhash per "block", as a real chain moves on
      return signature;
    },
    getSignatureStatuses: ([sigs]) => ({
      context: context(),
      value: sigs.map((s) => {
        const l = landed.get(s);
        return l
          ? { slot: Number(l.slot), confirmations: null, err: l.err, status: l.err ? { Err: l.err } : { Ok: null }, confirmationStatus: "finalized" }
          : null;
      }),
    }),
    getTransaction: ([s, opts = {}]) => {
      const l = landed.get(s);
      if (!l) return null;
      const transaction = opts.encoding === "base64" ? [l.tx, "base64"] : b58.dec.decode(Buffer.from(l.tx, "base64"));
      return {
        slot: Number(l.slot),
        blockTime: l.blockTime,
        version: isVersioned(Buffer.from(l.tx, "base64")) ? 0 : "legacy",
        meta: { err: l.err, status: l.err ? { Err: l.err } : { Ok: null }, fee: 5000, preTokenBalances: l.pre, postTokenBalances: l.post },
        transaction,
      };
    },
    // Newest first, as a real node answers; `limit` (default 1000), `before` honoured.
    getSignaturesForAddress: ([a, opts = {}]) => {
      const limit = Math.min(opts.limit ?? 1000, 1000);
      let list = [...landed.entries()].filter(([, l]) => l.keys.includes(a)).reverse();
      if (opts.before) {
        const at = list.findIndex(([sig]) => sig === opts.before);
        list = at < 0 ? [] : list.slice(at + 1);
      }
      return list.slice(0, limit).map(([signature, l]) => ({
        signature,
        slot: Number(l.slot),
        err: l.err,
        memo: null,
        blockTime: l.blockTime,
        confirmationStatus: "finalized",
      }));
    },
  };

  async function handle(call) {
    const id = call?.id ?? null;
    const fn = methods[call?.method];
    if (!fn) return { jsonrpc: "2.0", id, error: { code: -32601, message: `Method not found: ${call?.method}` } };
    try {
      return { jsonrpc: "2.0", id, result: await fn(call.params ?? []) };
    } catch (e) {
      return { jsonrpc: "2.0", id, error: { code: e.rpcCode ?? -32603, message: e.message ?? String(e) } };
    }
  }

  const server = createServer((req, res) => {
    const chunks = [];
    let size = 0;
    req.on("data", (c) => {
      size += c.length;
      if (size > MAX_BODY) req.destroy();
      else chunks.push(c);
    });
    req.on("end", async () => {
      const send = (status, value) => {
        const body = JSON.stringify(value, (_, v) => (typeof v === "bigint" ? Number(v) : v));
        res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
      };
      let body;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        return send(200, { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
      }
      const path = new URL(req.url, "http://127.0.0.1").pathname;
      if (req.method === "POST" && path === "/_fund") {
        try {
          // `at`: a token account of `owner` at another address than its associated one.
          const at = await setTokenAccount(body.owner, BigInt(body.amount), body.at ?? null);
          return send(200, { tokenAccount: at });
        } catch (e) {
          return send(400, { error: String(e.message ?? e) });
        }
      }
      if (req.method !== "POST") return send(405, { error: "JSON-RPC over POST" });
      if (Array.isArray(body)) return send(200, await Promise.all(body.map(handle)));
      return send(200, await handle(body));
    });
  });
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;

  // Refuse to report ready unless the programs a payment needs are really there.
  for (const program of [TOKEN_PROGRAM_ADDRESS, ASSOCIATED_TOKEN_PROGRAM_ADDRESS]) {
    const acc = svm.getAccount(addrBytes(program));
    if (!acc || !acc.executable()) throw new Error(`litesvm has no executable ${program}`);
  }
  if (tokenAmount(await ata(signers.buyer.address)) !== BUYER_FUNDS) throw new Error("Solana buyer is not funded");

  return {
    url,
    feePayer: signers.feePayer,
    state: {
      rpcUrl: url,
      network: SOLANA_NETWORK,
      usdc: SOLANA_USDC,
      payTo: signers.payTo.address,
      payToTokenAccount: await ata(signers.payTo.address),
      buyer: signers.buyer.address,
      buyerKey: seedHex(SOLANA_ROLES.buyer),
      buyerTokenAccount: await ata(signers.buyer.address),
      poorBuyer: signers.poorBuyer.address,
      poorBuyerKey: seedHex(SOLANA_ROLES.poorBuyer),
      // No token account at all: a payTo an operator forgot to set up.
      spare: signers.spare.address,
      spareKey: seedHex(SOLANA_ROLES.spare),
      feePayer: signers.feePayer.address,
    },
    close() {
      server.closeAllConnections?.();
      server.close();
    },
  };
}
