#!/usr/bin/env python3
"""kforge's signature_grad (cpu backend) against pysiglib.sig_backprop and iisignature.sigbackprop,
interleaved, in one run. CPU timings.

The gradient of <GS, sig(X)> in the paths X (B,L,D), GS the upstream gradient on levels 1..LEVEL.
Per configuration, `--rounds` rounds; each round runs, in turn:
  kforge      `kforge bench signature_grad --backend cpu --quick --no-baseline --json --threads T`
              (its median kernel time and SOL; the kernel runs the forward pass too: its backward
              pass starts from the whole path's signature, recomputing the prefixes)
  pysiglib    pysiglib.sig_backprop(X, sig, GS, LEVEL, n_jobs=T) (it is given the signature, so
              its forward pass is not timed)
  iisignature iisignature.sigbackprop(GS, X, LEVEL) (it computes what it needs; one thread)
each peer the median of `--reps` calls on random-walk paths (float64 in, as both peers compute
in double). pysiglib's first path is checked against iisignature's (relative 1e-6). Ratios are
peer time / kforge time per round; medians and (min..max) over rounds, with the load average.

  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/signature_grad_vs_peers.py --build build --rounds 3 --reps 3

--baseline DIR adds a row "kforge@DIR": another build's kforge (e.g. one made before a change),
run in the same rounds right after this build's, its ratio baseline time / kforge time.
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402
from signature_bench import kforge_bench, spread  # noqa: E402

CONFIGS = ["32x128x4x3", "32x128x4x4", "32x128x4x5", "16x64x8x4"]




def time_it(run, reps):
    out = run()  # warm-up, and the output to check
    secs = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        secs.append(time.perf_counter() - t)
    return statistics.median(secs), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--configs", default=",".join(CONFIGS), help="BxLxDxLEVEL,...")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--baseline", help="another build directory whose kforge runs beside (a before/after row)")
    args = ap.parse_args()
    bench_venv.ensure("pysiglib", "pysiglib")
    if not bench_venv.install_here("iisignature"):
        raise SystemExit("iisignature could not be installed into bench/.venv")
    import iisignature
    import numpy as np
    import pysiglib
    print(f"# signature_grad, CPU timings, {args.threads} threads (iisignature: one), {args.rounds} rounds x "
          f"{args.reps} reps; load average {os.getloadavg()[0]:.2f} at start")
    print("| sizes | side | time s, median (min..max) | peer / kforge | kforge SOL |")
    print("|---|---|---|---|---|")
    for c in args.configs.split(","):
        b, length, d, level = (int(v) for v in c.split("x"))
        rng = np.random.default_rng(7)
        inc = rng.standard_normal((b, length - 1, d)) / math.sqrt(length)
        x = np.ascontiguousarray(np.concatenate([np.zeros((b, 1, d)), np.cumsum(inc, axis=1)], axis=1))
        sig = pysiglib.sig(x, level)
        gs = rng.standard_normal(sig.shape)
        peers = {
            "pysiglib": lambda: pysiglib.sig_backprop(x, sig, gs, level, n_jobs=args.threads),
            "iisignature": lambda: iisignature.sigbackprop(gs, x, level),
        }
        sizes = f"B={b},L={length},D={d},LEVEL={level}"
        base = f"kforge@{args.baseline}" if args.baseline else None
        t = {n: [] for n in ["kforge"] + ([base] if base else []) + list(peers)}
        sol = []
        for _ in range(args.rounds):
            kt, ks = kforge_bench(args.build, "signature_grad", sizes, args.threads)
            t["kforge"].append(kt), sol.append(ks)
            if base:
                t[base].append(kforge_bench(args.baseline, "signature_grad", sizes, args.threads)[0])
            outs = {}
            for n, run in peers.items():
                sec, outs[n] = time_it(run, args.reps)
                t[n].append(sec)
            g1, g2 = np.asarray(outs["pysiglib"])[0], np.asarray(outs["iisignature"])[0]
            if np.max(np.abs(g1 - g2)) > 1e-6 * np.max(np.abs(g2)):
                raise SystemExit(f"{sizes}: pysiglib and iisignature disagree ({np.max(np.abs(g1 - g2))})")
        for n in t:
            ratio = "" if n == "kforge" else spread([p / k for p, k in zip(t[n], t["kforge"])])
            print(f"| {sizes} | {n} | {spread(t[n])} | {ratio} | {spread(sol) if n == 'kforge' else ''} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
