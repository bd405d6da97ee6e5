#!/usr/bin/env python3
"""The cost of thorough verification per family (docs/verification.md, "Cost"): the wall time
of `kforge verify FAMILY --backend cpu` (thorough, default sizes) with a kforge binary built
before a change and one after it, interleaved round by round. Prints per family the median
seconds of each with min..max over rounds and the median ratio after/before. CPU timings,
including compilation from the warm kernel cache.

    python3 bench/verify_cost.py --before /path/to/old/kforge [--kforge build/kforge] [--rounds 3]
                                 [--families gemm,conv2d,attention]
"""
import argparse
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wall(kforge, family):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    t0 = time.perf_counter()
    r = subprocess.run([kforge, "verify", family, "--backend", "cpu", "--json"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{kforge} verify {family} exited {r.returncode}: {r.stdout[-500:]} {r.stderr[-500:]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build/kforge"))
    ap.add_argument("--before", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--families", default="gemm,conv2d,attention")
    a = ap.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| family | before s (min..max) | after s (min..max) | after / before (min..max) |")
    print("|---|---|---|---|")
    for family in a.families.split(","):
        wall(a.kforge, family)  # warm the kernel cache for both (the same sources)
        wall(a.before, family)
        before, after = [], []
        for _ in range(a.rounds):
            before.append(wall(a.before, family))
            after.append(wall(a.kforge, family))
        ratios = [x / y for x, y in zip(after, before)]
        f = lambda v: f"{statistics.median(v):.2f} ({min(v):.2f}..{max(v):.2f})"
        print(f"| {family} | {f(before)} | {f(after)} | {f(ratios)} |", flush=True)


if __name__ == "__main__":
    main()
