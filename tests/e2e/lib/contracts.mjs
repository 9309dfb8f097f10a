// Compiles contracts/*.sol with solc-js (offline, in-process) and returns their runtime bytecode.
//
// Why a cache: compiling costs about 3 s of CPU here, and every Rust test that starts a stack
// would pay it. Results are kept under .stack/build/ keyed by a hash of the sources, the solc
// version and the settings, so a source edit recompiles by itself and nothing is committed.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, readdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const E2E_DIR = join(HERE, "..");
const CONTRACTS_DIR = join(E2E_DIR, "contracts");
const CACHE_DIR = join(E2E_DIR, ".stack", "build");

const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  // Cancun opcodes run on every anvil hardfork from cancun on; newer defaults buy nothing here.
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.deployedBytecode.object"] } },
};

function solcVersion() {
  const require = createRequire(import.meta.url);
  return require("solc/package.json").version;
}

/**
 * Returns { TestUSDC: { abi, runtime }, Multicall3: { abi, runtime } } (runtime is 0x-hex).
 * Throws with solc's messages when a contract does not compile.
 */
export async function loadContracts() {
  const sources = {};
  for (const file of readdirSync(CONTRACTS_DIR).filter((f) => f.endsWith(".sol")).sort()) {
    sources[file] = { content: readFileSync(join(CONTRACTS_DIR, file), "utf8") };
  }
  const key = createHash("sha256")
    .update(JSON.stringify({ solc: solcVersion(), settings: SETTINGS, sources }))
    .digest("hex")
    .slice(0, 16);
  const cacheFile = join(CACHE_DIR, `contracts-${key}.json`);
  try {
    return JSON.parse(readFileSync(cacheFile, "utf8"));
  } catch {
    // not cached yet (or unreadable): compile below
  }

  const { default: solc } = await import("solc");
  const output = JSON.parse(solc.compile(JSON.stringify({ language: "Solidity", sources, settings: SETTINGS })));
  const errors = (output.errors || []).filter((e) => e.severity === "error");
  if (errors.length > 0) {
    throw new Error(`solc failed:\n${errors.map((e) => e.formattedMessage).join("\n")}`);
  }
  const result = {};
  for (const [file, name] of [
    ["TestUSDC.sol", "TestUSDC"],
    ["Multicall3.sol", "Multicall3"],
  ]) {
    const contract = output.contracts?.[file]?.[name];
    if (!contract || !contract.evm.deployedBytecode.object) {
      throw new Error(`solc produced no runtime code for ${file}:${name}`);
    }
    result[name] = { abi: contract.abi, runtime: `0x${contract.evm.deployedBytecode.object}` };
  }

  // Write then rename: several stacks may start at once and must never read a half-written file.
  mkdirSync(CACHE_DIR, { recursive: true });
  const tmp = `${cacheFile}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(result));
  renameSync(tmp, cacheFile);
  return result;
}
