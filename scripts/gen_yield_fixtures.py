#!/usr/bin/env python3
"""Writes fixtures/market/defillama_yields/pools.json: DefiLlama /pools in its real shape
({status, data: [pool…]} with every field the API sends). A few pools are hand-set to exercise
the ranking (a reward spike, an outlier, pools below the 10M floor, no 30-day history); the
rest are seeded random values, not market data."""
import json, os, random

rng = random.Random(7)
projects = [("lido", "Ethereum", "STETH", False, "no", "single"), ("aave-v3", "Ethereum", "USDC", True, "no", "single"),
            ("aave-v3", "Base", "USDC", True, "no", "single"), ("compound-v3", "Base", "USDC", True, "no", "single"),
            ("morpho-blue", "Ethereum", "WETH", False, "no", "single"), ("uniswap-v3", "Ethereum", "USDC-WETH", False, "yes", "multi"),
            ("aerodrome-v1", "Base", "USDC-AERO", False, "yes", "multi"), ("curve-dex", "Ethereum", "DAI-USDC-USDT", True, "no", "multi"),
            ("rocket-pool", "Ethereum", "RETH", False, "no", "single"), ("jito-liquid-staking", "Solana", "JITOSOL", False, "no", "single"),
            ("kamino-lend", "Solana", "USDC", True, "no", "single"), ("pendle", "Arbitrum", "SUSDE", True, "no", "single"),
            ("ethena-usde", "Ethereum", "SUSDE", True, "no", "single"), ("spark", "Ethereum", "DAI", True, "no", "single"),
            ("gmx-v2-perps", "Arbitrum", "WETH-USDC", False, "yes", "multi"), ("moonwell-lending", "Base", "WETH", False, "no", "single")]

def pool(i, project, chain, symbol, stable, il, exposure, tvl, apy_base, apy_reward, mean30, outlier=False, predictions=True):
    apy = (apy_base or 0) + (apy_reward or 0)
    return {
        "chain": chain, "project": project, "symbol": symbol, "tvlUsd": tvl,
        "apyBase": apy_base, "apyReward": apy_reward, "apy": round(apy, 5),
        "rewardTokens": ["0x940181a94a35a4569e4529a3cdfb74e38fd98631"] if apy_reward else None,
        "pool": f"{i:08x}-{rng.randrange(16**4):04x}-4{rng.randrange(16**3):03x}-a{rng.randrange(16**3):03x}-{rng.randrange(16**12):012x}",
        "apyPct1D": round(rng.gauss(0, 0.3), 5), "apyPct7D": round(rng.gauss(0, 0.8), 5), "apyPct30D": round(rng.gauss(0, 1.5), 5),
        "stablecoin": stable, "ilRisk": il, "exposure": exposure,
        "predictions": {"predictedClass": rng.choice(["Stable/Up", "Down"]), "predictedProbability": rng.randrange(51, 95), "binnedConfidence": rng.randrange(1, 4)} if predictions else {"predictedClass": None, "predictedProbability": None, "binnedConfidence": None},
        "poolMeta": None, "mu": round(mean30 or apy, 5), "sigma": round(abs(rng.gauss(0.1, 0.05)), 5), "count": rng.randrange(30, 1000),
        "outlier": outlier, "underlyingTokens": ["0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48"], "il7d": None, "apyBase7d": None,
        "apyMean30d": mean30, "volumeUsd1d": None, "volumeUsd7d": None, "apyBaseInception": None,
    }

data = []
i = 1
for k in range(40):
    project, chain, symbol, stable, il, exp = projects[k % len(projects)]
    tvl = round(10 ** rng.uniform(6.5, 10.2), 2)
    base = round(abs(rng.gauss(4, 2.5)), 5)
    reward = round(abs(rng.gauss(1.5, 2)), 5) if rng.random() < 0.3 else None
    mean30 = round((base + (reward or 0)) * rng.uniform(0.8, 1.15), 5)
    data.append(pool(i, project, chain, symbol, stable, il, exp, tvl, base, reward, mean30)); i += 1
# Hand-set cases
data.append(pool(i, "spike-farm", "Base", "USDC-SPIKE", True, "yes", "multi", 12_500_000.0, 1.2, 310.0, 5.1)); i += 1      # one-day reward spike
data.append(pool(i, "odd-vault", "Ethereum", "ODD", False, "no", "single", 80_000_000.0, 45.0, None, 44.0, outlier=True)); i += 1  # outlier
data.append(pool(i, "fresh-lend", "Base", "USDC", True, "no", "single", 30_000_000.0, 7.5, 6.0, None, predictions=False)); i += 1  # no 30d history
data.append(pool(i, "tiny-pool", "Base", "USDC", True, "no", "single", 9_999_999.0, 25.0, None, 25.0)); i += 1           # below the floor
data.append(pool(i, "huge-apy", "Arbitrum", "MEME-WETH", False, "yes", "multi", 15_000_000.0, 2500.0, None, 2400.0)); i += 1  # implausible
out = os.path.join(os.path.dirname(__file__), "..", "fixtures", "market", "defillama_yields", "pools.json")
json.dump({"status": "success", "data": data}, open(out, "w"), separators=(",", ":"))
