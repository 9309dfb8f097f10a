"""The official MCP Python SDK (PyPI `mcp`: ClientSession over the streamable HTTP transport)
with the official x402 package's MCP client (`x402.mcp.x402MCPSession`) paying one paycall tool,
as a command for paycall's Rust tests (tests/it/python_clients.rs).

    python x402_mcp.py --url http://127.0.0.1:N/mcp --key <0x EVM private key> --tool fetch
                       [--args '{"url": "..."}'] [--no-pay] [--timeout 60]

Lists the tools, makes one plain unpaid tools/call (what any MCP client sees), then lets
x402MCPSession call the tool again: it reads the PaymentRequired from the tool result, signs one
of its offers with the exact EVM scheme and repeats the call with the payment in
`_meta["x402/payment"]`. With --no-pay only the plain call is made.

Prints ONE JSON line: {protocolVersion, tools (tools/list), unpaid (the plain call's result),
paid (the paid call's result, or null), paymentResponse (the receipt as x402 read it, or null),
paymentMade, payload (the PaymentPayload signed, or null)}. Results are the MCP result objects as
JSON (camelCase, `_meta`). A failure of the client itself prints {error, kind} and exits 1.
"""

import argparse
import asyncio
import json
import sys
from datetime import timedelta

from eth_account import Account
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from x402 import x402Client
from x402.mcp import x402MCPSession
from x402.mechanisms.evm.exact import ExactEvmScheme


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--tool", required=True)
    p.add_argument("--args", default="{}")
    p.add_argument("--no-pay", action="store_true")
    p.add_argument("--timeout", type=float, default=60.0)
    return p.parse_args()


def as_json(result):
    if result is None:
        return None
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


async def run(args):
    payer = x402Client()
    payer.register("eip155:*", ExactEvmScheme(signer=Account.from_key(args.key)))
    signed = []
    payer.on_after_payment_creation(lambda ctx: signed.append(ctx.payment_payload))
    arguments = json.loads(args.args)
    timeout = timedelta(seconds=args.timeout)

    async with streamable_http_client(args.url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            unpaid = await session.call_tool(
                args.tool, arguments, read_timeout_seconds=timeout
            )
            paid = None
            if not args.no_pay:
                paying = x402MCPSession(session, payer)
                paid = await paying.call_tool(
                    args.tool, arguments, read_timeout_seconds=timeout
                )

    receipt = None
    if paid is not None and paid.payment_response is not None:
        pr = paid.payment_response
        receipt = pr.model_dump(by_alias=True, exclude_none=True) if hasattr(pr, "model_dump") else pr
    return {
        "protocolVersion": init.protocolVersion,
        "tools": [as_json(t) for t in tools.tools],
        "unpaid": as_json(unpaid),
        "paid": as_json(paid.raw_result) if paid is not None else None,
        "paymentResponse": receipt,
        "paymentMade": paid.payment_made if paid is not None else False,
        "payload": signed[-1].model_dump(by_alias=True, exclude_none=True) if signed else None,
    }


def main():
    args = parse_args()
    try:
        out = asyncio.run(run(args))
    except Exception as e:  # the client's own failure: say what it was, exit 1
        print(json.dumps({"error": repr(e), "kind": type(e).__name__}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
