#!/usr/bin/env python3
"""How hard each recorded space is for a tuner (docs/tuning.md, "Where bayes needs many"): per
Kernel Tuner cache file, the configurations, those that ran, how many lie within 5% and 1% of
the recorded optimum, and the evaluations random sampling without replacement needs on average
to draw one of those within 5% ((configurations + 1) / (within 5% + 1)).

    python3 bench/space_difficulty.py ../shared/spaces/*.json
"""
import json
import math
import os
import sys


def times(path):
    cache = json.load(open(path))["cache"]
    ok = [v["time"] for v in cache.values()
          if isinstance(v.get("time"), (int, float)) and v["time"] > 0 and math.isfinite(v["time"])]
    return len(cache), sorted(ok)


def main(paths):
    print("| space | configurations | ran | within 5% | within 1% | random's mean to 5% |")
    print("|---|---:|---:|---:|---:|---:|")
    for p in paths:
        n, t = times(p)
        n5 = sum(1 for x in t if x <= 1.05 * t[0])
        n1 = sum(1 for x in t if x <= 1.01 * t[0])
        name = os.path.splitext(os.path.basename(p))[0]
        print(f"| {name} | {n} | {len(t)} | {n5} | {n1} | {(n + 1) / (n5 + 1):.0f} |")


if __name__ == "__main__":
    main(sys.argv[1:] or sys.exit(__doc__))
