#!/usr/bin/env python3
"""The cost of thorough verification per library family, two kforge builds side by side
(docs/verification.md, "Cost"): `kforge verify PROBLEM --thorough --backend cpu` with the
library's cpu kernel, the two builds interleaved, several rounds. Prints per problem the median
wall time of each build with min..max over rounds and the median ratio. CPU timings, wall time of
the whole command (compilation cached after the first round, which is dropped).

    python3 bench/verify_cost.py --before /path/to/old/kforge --after build/kforge \\
        [--rounds 3] [--problems gemm,softmax] [--size gemm=M=256,N=256,K=256]
"""
import argparse
import os
import statistics
import subprocess
import time


def wall(kforge, problem, sizes):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    cmd = [kforge, "verify", problem, "--thorough", "--backend", "cpu", "--json"]
    if sizes:
        cmd += ["--size", sizes]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    t = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--problems", default="gemm")
    ap.add_argument("--size", action="append", default=[], help="PROBLEM=SIZES, e.g. gemm=M=256,N=256,K=256")
    a = ap.parse_args()
    sizes = dict(s.split("=", 1) for s in a.size)
    problems = a.problems.split(",")
    times = {(p, b): [] for p in problems for b in ("before", "after")}
    for p in problems:  # warm-up round: compiles and caches every kernel, not counted
        for b in ("before", "after"):
            wall(getattr(a, b), p, sizes.get(p, ""))
    for r in range(a.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        for p in problems:
            for b in order:
                times[(p, b)].append(wall(getattr(a, b), p, sizes.get(p, "")))
    print(f"| problem | sizes | before s (min..max) | after s (min..max) | after/before |")
    print("|---|---|---|---|---|")
    for p in problems:
        bt, at = times[(p, "before")], times[(p, "after")]
        ratios = [x / y for x, y in zip(at, bt)]
        print(f"| {p} | {sizes.get(p, 'default')} | {statistics.median(bt):.2f} ({min(bt):.2f}..{max(bt):.2f}) | "
              f"{statistics.median(at):.2f} ({min(at):.2f}..{max(at):.2f}) | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}..{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
