#!/usr/bin/env python3
"""gnn_attention (kernels/sparse/README.md) beside its baseline, Eigen on one thread (scores edge
by edge, the softmax into the adjacency's values, then sparse x dense). Each round is one
`kforge bench gnn_attention` run, in which kforge times kernel and baseline interleaved (a, b, a,
b, ...); rounds alternate the kernel's thread counts. Prints per thread count the medians over
rounds of both times and of the per-round ratio Eigen / kforge, with min..max, and the kernel's
SOL fraction. CPU timings.

    python3 bench/gnn_attention_vs_eigen.py [--kforge build/kforge] [--rounds 3] [--threads 1,2]
        [--size M=16384,D=32,N=64,NNZ=262144]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(a, threads):
    cmd = [a.kforge, "bench", "gnn_attention", "--backend", "cpu", "--threads", str(threads), "--size", a.size, "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4"))
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stderr[-1500:]}")
    r = json.loads(out.stdout)
    r = r[0] if isinstance(r, list) else r
    return r["median_s"] * 1e3, r["baseline"]["median_s"] * 1e3, r["sol_fraction"]


def spread(v, fmt="{:.2f}"):
    return (fmt + " (" + fmt + ".." + fmt + ")").format(statistics.median(v), min(v), max(v))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--size", default="M=16384,D=32,N=64,NNZ=262144")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    runs = {t: [] for t in threads}
    load0 = os.getloadavg()[0]
    for _ in range(a.rounds):
        for t in threads:
            runs[t].append(bench(a, t))
    print(f"# gnn_attention {a.size}, uniform pattern, {a.rounds} rounds; CPU timings; load average {load0:.2f} at start")
    print("| kforge threads | kforge ms | Eigen ms (1 thread) | Eigen / kforge | kforge SOL |")
    print("|---:|---|---|---|---|")
    for t in threads:
        k = [r[0] for r in runs[t]]
        e = [r[1] for r in runs[t]]
        print(f"| {t} | {spread(k)} | {spread(e)} | {spread([r[1] / r[0] for r in runs[t]])} | "
              f"{spread([r[2] for r in runs[t]], '{:.3f}')} |")
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
