// Starts the anvil binary from the @foundry-rs/anvil-linux-amd64 npm package on 127.0.0.1.
//
// Why the shell guard: anvil has no "die with my parent" option. It is started by a tiny sh whose
// stdin is a pipe from this node process; when node goes away for any reason (even SIGKILL) the
// pipe closes, `read` returns and the guard kills anvil. A test that loses its stack never leaves
// a chain running.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CHAIN_ID } from "./chain.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
export const ANVIL_BIN = join(HERE, "..", "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil");

const GUARD = [
  'bin="$1"; shift',
  "exec 3<&0", // keep node's pipe: background jobs get /dev/null as stdin otherwise
  '"$bin" "$@" </dev/null >/dev/null & a=$!',
  'echo "$a"',
  // watcher: node gone (pipe closed) -> stop anvil
  "(read _ <&3 || true; kill $a 2>/dev/null) & w=$!",
  "trap 'kill $a 2>/dev/null' TERM INT HUP",
  // anvil gone (crash, port taken, killed) -> stop the watcher and exit, so node notices at once
  "wait $a; code=$?",
  "kill $w 2>/dev/null",
  "exit $code",
].join("\n");

/** A free TCP port on 127.0.0.1 (the OS picks; tiny race before anvil binds it, retried below). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function rpc(url, method, params = []) {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(2000),
  });
  const json = await res.json();
  if (json.error) throw new Error(`${method}: ${json.error.message}`);
  return json.result;
}

function startOnce(port) {
  return new Promise((resolve, reject) => {
    const args = ["--chain-id", String(CHAIN_ID), "--host", "127.0.0.1", "--port", String(port), "--quiet"];
    const guard = spawn("sh", ["-c", GUARD, "anvil-guard", ANVIL_BIN, ...args], {
      stdio: ["pipe", "pipe", "inherit"],
    });
    let out = "";
    let settled = false;
    const fail = (why) => {
      if (!settled) {
        settled = true;
        reject(new Error(why));
      }
    };
    guard.once("error", (e) => fail(`cannot run sh for anvil: ${e.message}`));
    guard.once("exit", (code) => fail(`anvil exited early (code ${code}); see its stderr above`));
    guard.stdout.on("data", async (chunk) => {
      out += chunk;
      if (settled || !out.includes("\n")) return;
      const pid = Number.parseInt(out, 10);
      const url = `http://127.0.0.1:${port}`;
      const deadline = Date.now() + 20_000;
      while (!settled && Date.now() < deadline) {
        try {
          const id = await rpc(url, "eth_chainId");
          if (Number(id) !== CHAIN_ID) throw new Error(`anvil reports chain id ${id}`);
          settled = true;
          guard.removeAllListeners("exit");
          resolve({ url, port, pid, guard });
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
      fail(`anvil on port ${port} did not answer eth_chainId within 20 s`);
    });
  });
}

/** Starts anvil (chain id 8453) on a free loopback port. Returns { url, port, pid, guard, stop }. */
export async function startAnvil() {
  if (!existsSync(ANVIL_BIN)) {
    throw new Error(`anvil binary missing at ${ANVIL_BIN}: run scripts/setup.sh`);
  }
  let lastError;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const anvil = await startOnce(await freePort());
      anvil.stop = () => {
        try {
          process.kill(anvil.pid, "SIGTERM");
        } catch {}
        try {
          anvil.guard.stdin.end();
        } catch {}
      };
      return anvil;
    } catch (e) {
      lastError = e;
    }
  }
  throw lastError;
}

export { rpc };
