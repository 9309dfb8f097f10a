// Fixed facts about the local chain every e2e script shares: addresses, dev accounts, the viem
// chain definition and the few ABI fragments the scripts call. One place, so stack.mjs, pay.mjs
// and seller.mjs cannot drift apart.
import { defineChain, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

export const CHAIN_ID = 8453;
export const NETWORK = "eip155:8453";
// Base mainnet's USDC and the canonical Multicall3: the official packages only know these, so the
// test token and multicall are placed exactly there.
export const USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11";
export const USDC_DECIMALS = 6;
export const USDC_DOMAIN = { name: "USD Coin", version: "2" };

// anvil's default dev mnemonic: the keys are public knowledge and hold value on no real chain.
const DEV_MNEMONIC = "test test test test test test test test test test test junk";

/** Dev account `index` of the default mnemonic as { address, key }. */
export function devAccount(index) {
  const account = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index });
  return { address: account.address, key: toHex(account.getHdKey().privateKey) };
}

// Roles are fixed so that logs and tests read the same addresses every run.
export const ROLES = {
  admin: 0, // minter of the test token; sends the set-up transactions
  facilitator: 1, // gas payer of settlements (separate from admin so nonces never race)
  buyer: 2, // funded with test USDC; pays in pay.mjs
  payTo: 3, // receives payments; its key is never needed
};
// Accounts 4..9 have ETH but no USDC: tests that need a broke or second buyer use them.
export const SPARE_ACCOUNTS = [4, 5, 6, 7, 8, 9];

/** viem chain for the local anvil. Plain (not viem's `base`): no OP-stack fee oracle lookups. */
export function localChain(rpcUrl) {
  return defineChain({
    id: CHAIN_ID,
    name: "paycall-local-8453",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

export const USDC_ABI = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "account", type: "address" }],
    outputs: [{ type: "uint256" }],
  },
  { type: "function", name: "name", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "decimals", stateMutability: "view", inputs: [], outputs: [{ type: "uint8" }] },
  {
    type: "function",
    name: "DOMAIN_SEPARATOR",
    stateMutability: "view",
    inputs: [],
    outputs: [{ type: "bytes32" }],
  },
  {
    type: "function",
    name: "initialize",
    stateMutability: "nonpayable",
    inputs: [{ name: "minter_", type: "address" }],
    outputs: [],
  },
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    outputs: [],
  },
];

/** On-chain USDC balance of `address` in atomic units, as a decimal string. */
export async function usdcBalance(publicClient, address) {
  const value = await publicClient.readContract({
    address: USDC_ADDRESS,
    abi: USDC_ABI,
    functionName: "balanceOf",
    args: [address],
  });
  return value.toString();
}
