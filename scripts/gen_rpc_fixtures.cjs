// Generates fixtures/market/rpc/{base,eth}.json: JSON-RPC answers in real shapes, eth_call
// entries keyed by "<to>:<calldata>" encoded with viem (independent of paycall's encoder).
const v = require("viem");
const fs = require("fs");
const out = process.argv[2];
const agg = [{type:"function",name:"aggregate3",stateMutability:"payable",inputs:[{name:"calls",type:"tuple[]",components:[{name:"target",type:"address"},{name:"allowFailure",type:"bool"},{name:"callData",type:"bytes"}]}],outputs:[]}];
const erc = [{type:"function",name:"balanceOf",stateMutability:"view",inputs:[{name:"a",type:"address"}],outputs:[{type:"uint256"}]}];
const gpo = [{type:"function",name:"getL1FeeUpperBound",stateMutability:"view",inputs:[{name:"s",type:"uint256"}],outputs:[{type:"uint256"}]},{type:"function",name:"l1BaseFee",stateMutability:"view",inputs:[],outputs:[{type:"uint256"}]}];
const MC = "0xcA11bde05977b3631167028862bE2a173976CA11".toLowerCase();
const DEMO = "0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045";
const FRESH = "0x1111111111111111111111111111111111111111";
const u256 = (n) => v.encodeAbiParameters([{type:"uint256"}], [n]);
function multicall(tokens, owner, results) {
  const data = v.encodeFunctionData({abi: agg, functionName: "aggregate3", args: [tokens.map(t => ({target: t, allowFailure: true, callData: v.encodeFunctionData({abi: erc, functionName: "balanceOf", args: [owner]})}))]});
  const ret = v.encodeAbiParameters([{type:"tuple[]",components:[{type:"bool"},{type:"bytes"}]}], [results.map(r => r === null ? [false, "0x"] : [true, u256(r)])]);
  return [`${MC}:${data.toLowerCase()}`, ret];
}
function feeHistory(oldest, base, rewards) {
  return {oldestBlock: v.toHex(oldest), baseFeePerGas: base.map(b => v.toHex(b)), gasUsedRatio: rewards.map((_, i) => 0.35 + (i % 5) * 0.07), baseFeePerBlobGas: base.map(() => "0x1"), blobGasUsedRatio: rewards.map(() => 0), reward: rewards.map(r => r.map(x => v.toHex(x)))};
}
const G = 1000000000n;
// Base: ~0.005 gwei base fee, tiny priority fees
const baseFees = Array.from({length: 21}, (_, i) => 4900000n + BigInt(i) * 10000n);
const baseRewards = Array.from({length: 20}, (_, i) => [1000n + BigInt(i % 3) * 100n, 1000000n + BigInt(i % 4) * 50000n, 5000000n + BigInt(i % 5) * 1000000n]);
const baseTokens = ["0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","0xd9aAEc86B65D86f6A7B5B1b0c42FFA531710b6CA","0x50c5725949A6F0c72E6C4a641F24049A917DB0Cb","0x4200000000000000000000000000000000000006","0xcbB7C0000aB88B473b1f5aFd9ef808440eed33Bf"];
const ethTokens = ["0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48","0xdAC17F958D2ee523a2206206994597C13D831ec7","0x6B175474E89094C44Da98b954EedeAC495271d0F","0xC02aaA39b223FE8D0A0e5C4F27eAD9083C756Cc2","0x2260FAC5E5542a773Aa44fBCfeDf7C193bc2C599"];
const GPO = "0x420000000000000000000000000000000000000f";
const base = {
  eth_chainId: "0x2105",
  eth_feeHistory: feeHistory(38512340n, baseFees, baseRewards),
  eth_getBalance: {byAddress: {[FRESH.toLowerCase()]: "0x0"}, default: v.toHex(420000000000000000n)},
  eth_getTransactionCount: {byAddress: {[FRESH.toLowerCase()]: "0x0"}, default: v.toHex(57n)},
  eth_getCode: {byAddress: {[FRESH.toLowerCase()]: "0x6080604052348015600f57600080fd5b50"}, default: "0x"},
  eth_call: Object.fromEntries([
    [`${GPO}:${v.encodeFunctionData({abi: gpo, functionName: "getL1FeeUpperBound", args: [60n]})}`, u256(61234567890n)],
    [`${GPO}:${v.encodeFunctionData({abi: gpo, functionName: "getL1FeeUpperBound", args: [130n]})}`, u256(123456789012n)],
    [`${GPO}:${v.encodeFunctionData({abi: gpo, functionName: "l1BaseFee"})}`, u256(3512345678n)],
    multicall(baseTokens, DEMO, [1234560000n, null, 25500000000000000000n, 750000000000000000n, 0n]),
    multicall(baseTokens, FRESH, [0n, 0n, 0n, 0n, 0n]),
  ]),
};
const ethFees = Array.from({length: 21}, (_, i) => 8n * G + BigInt(i) * 100000000n);
const ethRewards = Array.from({length: 20}, (_, i) => [20000000n + BigInt(i % 3) * 1000000n, 100000000n + BigInt(i % 4) * 10000000n, 2n * G + BigInt(i % 5) * 100000000n]);
const eth = {
  eth_chainId: "0x1",
  eth_feeHistory: feeHistory(23861230n, ethFees, ethRewards),
  eth_getBalance: {byAddress: {[FRESH.toLowerCase()]: "0x0"}, default: v.toHex(3500000000000000000n)},
  eth_getTransactionCount: {byAddress: {[FRESH.toLowerCase()]: "0x0"}, default: v.toHex(1234n)},
  eth_getCode: {byAddress: {[FRESH.toLowerCase()]: "0x"}, default: "0x"},
  eth_call: Object.fromEntries([
    multicall(ethTokens, DEMO, [5000000000n, 0n, 0n, 1200000000000000000n, 5000000n]),
    multicall(ethTokens, FRESH, [0n, 0n, 0n, 0n, 0n]),
  ]),
};
fs.writeFileSync(`${out}/base.json`, JSON.stringify(base, null, 1));
fs.writeFileSync(`${out}/eth.json`, JSON.stringify(eth, null, 1));
