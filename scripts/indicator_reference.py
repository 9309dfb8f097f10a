#!/usr/bin/env python3
"""Independent reference for src/market/indicators.rs tests (plain Python floats).

Written from the textbook definitions, not from the Rust code:
- RSI (Wilder, 14): first average gain/loss = mean of the first 14 changes, then
  avg = (prev * 13 + current) / 14.
- EMA(n): alpha = 2/(n+1), the first value is the SMA of the first n inputs.
- MACD(12,26,9): EMA12 - EMA26 (from the 26th close), signal = EMA9 of that, histogram = diff.
- Bollinger(20, 2): SMA20 +/- 2 * population standard deviation of the last 20 closes.
Usage: python3 scripts/indicator_reference.py  (prints the values the Rust tests pin)
       python3 scripts/indicator_reference.py <coinbase candles.json>  (indicators of a fixture)
"""
import math

CLOSES = [44.34, 44.09, 44.15, 43.61, 44.33, 44.83, 45.10, 45.42, 45.84, 46.08, 45.89, 46.03,
          45.61, 46.28, 46.28, 46.00, 46.03, 46.41, 46.22, 45.64, 46.21, 46.25, 45.71, 46.45,
          45.78, 45.35, 44.03, 44.18, 44.22, 44.57, 43.42, 42.66, 43.13]

# A longer wave for MACD (needs 34 closes) and Bollinger: 100 + 10 sin(i / 5) + 0.3 i, i = 0..59.
WAVE = [100 + 10 * math.sin(i / 5) + 0.3 * i for i in range(60)]


def rsi(closes, n=14):
    deltas = [b - a for a, b in zip(closes, closes[1:])]
    gains = [d if d > 0 else 0.0 for d in deltas]
    losses = [-d if d < 0 else 0.0 for d in deltas]
    ag = sum(gains[:n]) / n
    al = sum(losses[:n]) / n
    out = [100 - 100 / (1 + ag / al)]
    for g, l in zip(gains[n:], losses[n:]):
        ag = (ag * (n - 1) + g) / n
        al = (al * (n - 1) + l) / n
        out.append(100 - 100 / (1 + ag / al))
    return out


def ema(xs, n):
    out = [None] * len(xs)
    a = 2 / (n + 1)
    out[n - 1] = sum(xs[:n]) / n
    for i in range(n, len(xs)):
        out[i] = a * xs[i] + (1 - a) * out[i - 1]
    return out


def macd(closes):
    e12, e26 = ema(closes, 12), ema(closes, 26)
    line = [e12[i] - e26[i] for i in range(25, len(closes))]
    sig = ema(line, 9)
    return line[-1], sig[-1], line[-1] - sig[-1]


def boll(closes, n=20, k=2.0):
    w = closes[-n:]
    m = sum(w) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in w) / n)
    up, lo = m + k * sd, m - k * sd
    return up, m, lo, (closes[-1] - lo) / (up - lo), (up - lo) / m


if __name__ == "__main__":
    import sys, json
    if len(sys.argv) > 1:
        rows = json.load(open(sys.argv[1]))
        closes = [r[4] for r in sorted(rows, key=lambda r: r[0])]
        print("rsi14", round(rsi(closes)[-1], 2))
        print("macd", *[round(x, 6) for x in macd(closes)])
        print("bollinger", *[round(x, 6) for x in boll(closes)[:3]], round(boll(closes)[3], 4))
        sys.exit(0)
    r = rsi(CLOSES)
    print("RSI first, second, last:", repr(r[0]), repr(r[1]), repr(r[-1]))
    print("RSI last of WAVE:", repr(rsi(WAVE)[-1]))
    print("MACD line, signal, hist of WAVE:", *map(repr, macd(WAVE)))
    print("Bollinger upper, middle, lower, %B, bandwidth of WAVE:", *map(repr, boll(WAVE)))
