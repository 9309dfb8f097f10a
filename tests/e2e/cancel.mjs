// Cancels a buyer's EIP-3009 authorization on the local chain, as a payer who changed their
// mind after a "settlement pending" answer would: signs USDC's CancelAuthorization with the
// buyer's key and sends it from the buyer's own account.
//   node cancel.mjs --state <stack state.json> --nonce 0x<32 bytes>
// Prints {transaction} on success; exits 1 with the reason otherwise.
import { readFileSync } from "node:fs";
import { createWalletClient, http, publicActions } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { CHAIN_ID, USDC_DOMAIN, localChain } from "./lib/chain.mjs";

const args = process.argv.slice(2);
const arg = (name) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
};
const state = JSON.parse(readFileSync(arg("state"), "utf8"));
const nonce = arg("nonce");
if (!/^0x[0-9a-fA-F]{64}$/.test(String(nonce))) {
  console.error("--nonce must be 0x + 64 hex digits");
  process.exit(1);
}
const account = privateKeyToAccount(state.buyerKey);
const client = createWalletClient({
  account,
  chain: localChain(state.rpcUrl),
  transport: http(state.rpcUrl),
  pollingInterval: 100,
}).extend(publicActions);
try {
  const signature = await client.signTypedData({
    domain: { ...USDC_DOMAIN, chainId: CHAIN_ID, verifyingContract: state.usdc },
    types: {
      CancelAuthorization: [
        { name: "authorizer", type: "address" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "CancelAuthorization",
    message: { authorizer: account.address, nonce },
  });
  const hash = await client.writeContract({
    address: state.usdc,
    abi: [
      {
        type: "function",
        name: "cancelAuthorization",
        stateMutability: "nonpayable",
        inputs: [
          { name: "authorizer", type: "address" },
          { name: "nonce", type: "bytes32" },
          { name: "signature", type: "bytes" },
        ],
        outputs: [],
      },
    ],
    functionName: "cancelAuthorization",
    args: [account.address, nonce, signature],
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  if (receipt.status !== "success") throw new Error(`cancel reverted in ${hash}`);
  console.log(JSON.stringify({ transaction: hash }));
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
}
