#!/usr/bin/env python3
"""kforge's scan kernels (cpu backend) against the numpy and scipy code a practitioner writes,
interleaved, in one run.

Peers, float32, on inputs of the same sizes:
  numpy   the backward loop over time, vectorized across the batch (the usual numpy GAE /
          discounted-return code: one array operation per time step)
  lfilter scipy.signal.lfilter([1], [1, -gamma], r[:, ::-1])[:, ::-1]: the discounted return
          WITHOUT episode ends (lfilter has constant coefficients; it cannot express done flags
          or per-step coefficients), so it is the peer of scan.discounted_return only, on a
          simpler problem: a lower bound for what scipy can do
For each shape, `--rounds` rounds: `kforge bench PROBLEM --json` (median kernel time, SOL
fraction), then each peer (median of `--reps` calls). Each round's ratio is the peer's time over
kforge's; the table shows the median over rounds and the spread (min..max) with the load
average. CPU timings: kforge runs on all cores, numpy and scipy on one. numpy and scipy are
installed with pip into build/bench-venv when missing (never a dependency of kforge).

usage: bench/scan_vs_numpy.py [--build build] [--shapes 64x1024,4096x1024] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def ensure_packages(build):
    try:
        import numpy  # noqa: F401
        import scipy.signal  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.path.join(build, "bench-venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.executable) == os.path.realpath(py):
        sys.exit("numpy or scipy is missing from " + venv)
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([py, "-m", "pip", "install", "-q", "numpy", "scipy"])
    os.execv(py, [py] + sys.argv)


def peers(np, lfilter, problem, B, T):
    """name -> run(); float32, the code a numpy user writes. gamma, lambda as in the bench."""
    rng = np.random.default_rng(1)
    r = rng.standard_normal((B, T), dtype=np.float32)
    v = rng.standard_normal((B, T), dtype=np.float32)
    done = (rng.random((B, T)) < 1 / 16).astype(np.float32)
    boot = rng.standard_normal(B, dtype=np.float32)
    gamma, lam = np.float32(0.99), np.float32(0.95)

    def discounted():
        out = np.empty_like(r)
        g = boot.copy()
        for t in range(T - 1, -1, -1):
            g = r[:, t] + gamma * (1 - done[:, t]) * g
            out[:, t] = g
        return out

    def gae():
        out = np.empty_like(r)
        adv = np.zeros(B, np.float32)
        next_v = boot
        for t in range(T - 1, -1, -1):
            nonterminal = 1 - done[:, t]
            delta = r[:, t] + gamma * nonterminal * next_v - v[:, t]
            adv = delta + gamma * lam * nonterminal * adv
            out[:, t] = adv
            next_v = v[:, t]
        return out

    def lfilter_return():
        return lfilter([1.0], [1.0, -float(gamma)], r[:, ::-1], axis=1)[:, ::-1]

    if problem == "scan.discounted_return":
        return {"numpy": discounted, "lfilter": lfilter_return}
    if problem == "scan.gae":
        return {"numpy": gae}
    raise SystemExit("no peer for " + problem)


def kforge_bench(build, problem, B, T):
    out = subprocess.run([os.path.join(build, "kforge"), "bench", problem, "--backend", "cpu",
                          "--size", f"batch={B},time={T}", "--no-baseline", "--quick", "--json"],
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    return r["median_s"], r.get("sol_fraction", 0.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--problems", default="scan.discounted_return,scan.gae")
    ap.add_argument("--shapes", default="1x16384,64x1024,64x16384,4096x1024")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    ensure_packages(args.build)
    import numpy as np
    from scipy.signal import lfilter

    rows = []
    for problem in args.problems.split(","):
        for shape in args.shapes.split(","):
            B, T = (int(x) for x in shape.split("x"))
            run = peers(np, lfilter, problem, B, T)
            ratios = {name: [] for name in run}
            times = {name: [] for name in run}
            kf, sol = [], []
            for _ in range(args.rounds):
                t, s = kforge_bench(args.build, problem, B, T)
                kf.append(t), sol.append(s)
                for name, f in run.items():
                    f()
                    samples = []
                    for _ in range(args.reps):
                        t0 = time.perf_counter()
                        f()
                        samples.append(time.perf_counter() - t0)
                    times[name].append(statistics.median(samples))
                    ratios[name].append(times[name][-1] / t)
            load = open("/proc/loadavg").read().split()[0]
            for name in run:
                rows.append((problem, B, T, name, statistics.median(kf), statistics.median(times[name]),
                             statistics.median(ratios[name]), min(ratios[name]), max(ratios[name]),
                             statistics.median(sol), load))
            print(f"  {problem} {B}x{T} done", file=sys.stderr)
    print(f"{'problem':<22} {'batch':>5} {'time':>6} {'peer':<8} {'kforge ms':>10} {'peer ms':>10} "
          f"{'ratio':>7} {'min..max':>12} {'SOL':>5} {'load':>5}")
    for p, B, T, name, k, t, r, lo, hi, s, load in rows:
        print(f"{p:<22} {B:>5} {T:>6} {name:<8} {k * 1e3:>10.3f} {t * 1e3:>10.3f} {r:>6.1f}x "
              f"{lo:>5.1f}..{hi:<5.1f} {s:>5.2f} {load:>5}")
    print(f"({args.rounds} rounds; ratio = peer median time / kforge median time per round; kforge "
          "with default parameters on all cores, peers on one; CPU timings)")


if __name__ == "__main__":
    main()
