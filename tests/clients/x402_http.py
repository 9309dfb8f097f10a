"""The official Python x402 client (PyPI `x402`) paying one HTTP request, as a command for
paycall's Rust tests (tests/it/python_clients.rs).

    python x402_http.py --client httpx|requests --url <u> --key <0x EVM private key>
                        [--method GET|POST] [--body <json>] [--timeout 60]

`httpx` is the async `x402HttpxClient` over `x402Client`; `requests` the sync `x402_requests`
session over `x402ClientSync`. Both register the exact EVM scheme signing with an eth_account
key, exactly as the package's README shows a buyer doing it.

Prints ONE JSON line: {status, headers (lower-case names), body (JSON if it parses, else text),
paymentResponse (the decoded PAYMENT-RESPONSE, or null), payload (the PaymentPayload the client
signed, or null)}. A failure of the client itself prints {error, kind} and exits 1.
"""

import argparse
import asyncio
import base64
import json
import sys

from eth_account import Account
from x402 import x402Client, x402ClientSync
from x402.mechanisms.evm.exact import ExactEvmScheme


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--client", choices=["httpx", "requests"], required=True)
    p.add_argument("--url", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--method", default="GET", choices=["GET", "POST"])
    p.add_argument("--body")
    p.add_argument("--timeout", type=float, default=60.0)
    return p.parse_args()


def register(payer, key):
    """The exact EVM scheme for every eip155 network; the payload it signs is kept for the test."""
    payer.register("eip155:*", ExactEvmScheme(signer=Account.from_key(key)))
    signed = []
    payer.on_after_payment_creation(lambda ctx: signed.append(ctx.payment_payload))
    return signed


def report(status, headers, text, signed):
    headers = {k.lower(): v for k, v in headers.items()}
    try:
        body = json.loads(text)
    except ValueError:
        body = text
    receipt = None
    if "payment-response" in headers:
        receipt = json.loads(base64.b64decode(headers["payment-response"]))
    payload = signed[-1].model_dump(by_alias=True, exclude_none=True) if signed else None
    return {
        "status": status,
        "headers": headers,
        "body": body,
        "paymentResponse": receipt,
        "payload": payload,
    }


def request_kwargs(args):
    if args.body is None:
        return {}
    return {"content": args.body.encode(), "headers": {"content-type": "application/json"}}


async def with_httpx(args):
    from x402.http.clients.httpx import x402HttpxClient

    payer = x402Client()
    signed = register(payer, args.key)
    async with x402HttpxClient(payer, timeout=args.timeout) as client:
        r = await client.request(args.method, args.url, **request_kwargs(args))
        return report(r.status_code, r.headers, r.text, signed)


def with_requests(args):
    from x402.http.clients.requests import x402_requests

    payer = x402ClientSync()
    signed = register(payer, args.key)
    session = x402_requests(payer)
    kwargs = request_kwargs(args)
    if "content" in kwargs:
        kwargs["data"] = kwargs.pop("content")
    r = session.request(args.method, args.url, timeout=args.timeout, **kwargs)
    return report(r.status_code, r.headers, r.text, signed)


def main():
    args = parse_args()
    try:
        if args.client == "httpx":
            out = asyncio.run(with_httpx(args))
        else:
            out = with_requests(args)
    except Exception as e:  # the client's own failure: say what it was, exit 1
        print(json.dumps({"error": str(e), "kind": type(e).__name__}))
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
