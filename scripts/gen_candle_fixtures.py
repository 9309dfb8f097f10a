#!/usr/bin/env python3
"""Writes fixtures/market/coinbase_exchange/products/<id>/candles.json: 300 hourly candles in
Coinbase Exchange's real shape ([time, low, high, open, close, volume], newest first). The
values are a seeded random walk ending near the stats fixtures' last prices, not market data."""
import json, random, os

END = 1795456800  # 2026-11-23T18:00:00Z, the newest candle's open time
LAST = {"BTC-USD": 97012.35, "ETH-USD": 3421.70, "SOL-USD": 241.33}
root = os.path.join(os.path.dirname(__file__), "..", "fixtures", "market", "coinbase_exchange", "products")
for i, (product, last) in enumerate(LAST.items()):
    rng = random.Random(42 + i)
    closes = [last]
    for _ in range(299):
        closes.append(closes[-1] / (1 + rng.gauss(0.0004, 0.006)))
    closes.reverse()  # oldest first
    rows = []
    prev = closes[0]
    for k, c in enumerate(closes):
        o = prev
        hi = max(o, c) * (1 + abs(rng.gauss(0, 0.002)))
        lo = min(o, c) * (1 - abs(rng.gauss(0, 0.002)))
        vol = abs(rng.gauss(300, 80)) * (100000 / last) ** 0.5
        t = END - (299 - k) * 3600
        nd = 2 if last > 1000 else 3
        rows.append([t, round(lo, nd), round(hi, nd), round(o, nd), round(c, nd), round(vol, 8)])
        prev = c
    rows.reverse()  # newest first, as Coinbase answers
    with open(os.path.join(root, product, "candles.json"), "w") as f:
        json.dump(rows, f, separators=(",", ":"))
