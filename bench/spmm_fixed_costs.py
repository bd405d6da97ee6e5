#!/usr/bin/env python3
"""Where the time of a short-row spmm goes, kforge against scipy.sparse: a fit of each side's
one-thread CPU time to a + b * NNZ at fixed M, K, N (rows of 1 to ~50 nonzeros), so the fixed
cost of a call and its rows (a / M per row) is measured apart from the cost of a nonzero (b).

issue 20's ">= 3x scipy" misses most at 1024 x 256 and 99% sparsity (10 nonzeros a row), where
each row's fixed work (C's row written: 1 KiB at N = 256) is a large share of the row's. For
scipy the product `a @ b` is split into its parts, each timed alone on the same matrix:
  alloc: np.zeros((M, N)), the zeroed result scipy allocates on every call;
  kernel: scipy's C++ loop (_sparsetools.csr_matvecs) into a zeroed, preallocated result;
  total: `a @ b` as a user calls it.
kforge: build/bench/sparse_run (the library spmm.cpu at its defaults, one thread, its own
matrix of the same density and seed scheme), the calling thread's CPU time.

  python3 bench/spmm_fixed_costs.py --rows 1024 --cols 256 --per-row 1,2,5,10,20,50 --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402


def cpu_median(f, reps):
    """Median of `reps` calls of f, each timed by the calling thread's CPU time (after one warm-up)."""
    f()
    t = []
    for _ in range(reps):
        t0 = time.thread_time()
        f()
        t.append(time.thread_time() - t0)
    return statistics.median(t)


def scipy_parts(m, k, n, nnz, reps, seed):
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse import _sparsetools
    a = sp.random(m, k, density=nnz / (m * k), format="csr", dtype=np.float32, random_state=seed)
    a.sort_indices()
    b = np.random.default_rng(seed).standard_normal((k, n), dtype=np.float32)
    y = np.zeros((m, n), dtype=np.float32)

    def kernel():
        _sparsetools.csr_matvecs(m, k, n, a.indptr, a.indices, a.data, b.ravel(), y.ravel())

    y[:] = 0
    kernel()
    if not np.allclose(y, a @ b, rtol=1e-4, atol=1e-4):
        raise SystemExit("csr_matvecs into a preallocated result differs from a @ b")
    return {"alloc": cpu_median(lambda: np.zeros((m, n), dtype=np.float32), reps),
            "kernel": cpu_median(kernel, reps),  # accumulates into y: the values grow, the time does not
            "total": cpu_median(lambda: a @ b, reps), "nnz": a.nnz}


def kforge(runner, m, k, n, nnz, reps, seed):
    cmd = [runner, "--problem", "spmm", "--m", str(m), "--k", str(k), "--w", str(n), "--nnz", str(nnz),
           "--reps", str(reps), "--threads", "1", "--seed", str(seed)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    return json.loads(out)["cpu_median_s"]


def fit(xs, ys):
    """Least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def main():
    bench_venv.ensure("scipy", "scipy")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1024, help="M = K")
    ap.add_argument("--cols", type=int, default=256, help="N, B's columns")
    ap.add_argument("--per-row", default="1,2,5,10,20,50", help="nonzeros a row (NNZ = M times each)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds over all sizes; per size the median over rounds")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    args = ap.parse_args()
    runner = os.path.join(args.build, "bench", "sparse_run")
    m, n = args.rows, args.cols
    per_row = [int(x) for x in args.per_row.split(",")]
    load0 = os.getloadavg()[0]
    rows = {p: {"kforge": [], "alloc": [], "kernel": [], "total": []} for p in per_row}
    for r in range(args.rounds):
        for p in per_row:
            s = scipy_parts(m, m, n, p * m, args.reps, 7 + p)
            for key in ("alloc", "kernel", "total"):
                rows[p][key].append(s[key])
            rows[p]["kforge"].append(kforge(runner, m, m, n, p * m, args.reps, 7 + p))
    med = {p: {key: statistics.median(v) for key, v in rows[p].items()} for p in per_row}
    print(f"# spmm {m} x {m} times {m} x {n}, one thread each, CPU clock; {args.rounds} rounds x {args.reps} reps, "
          f"median over rounds; load average {load0:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    print("| nonzeros a row | sparsity | kforge ms | scipy a @ b ms | scipy alloc ms | scipy kernel ms | scipy / kforge |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for p in per_row:
        q = med[p]
        ratio = [t / k for t, k in zip(rows[p]["total"], rows[p]["kforge"])]
        print(f"| {p} | {100 * (1 - p / m):.2f}% | {q['kforge'] * 1e3:.4f} | {q['total'] * 1e3:.4f} | "
              f"{q['alloc'] * 1e3:.4f} | {q['kernel'] * 1e3:.4f} | "
              f"{statistics.median(ratio):.2f}x ({min(ratio):.2f}..{max(ratio):.2f}) |")
    xs = [p * m for p in per_row]
    print("\nFit t = a + b * NNZ over the sizes above (a / M: the fixed cost a row, calls' overhead included):")
    print("| side | a (us) | a / M (ns a row) | b (ns a nonzero) |")
    print("|---|---:|---:|---:|")
    for key, name in (("kforge", "kforge spmm.cpu"), ("total", "scipy a @ b"), ("kernel", "scipy csr_matvecs alone")):
        a, b = fit(xs, [med[p][key] for p in per_row])
        print(f"| {name} | {a * 1e6:.1f} | {a / m * 1e9:.1f} | {b * 1e9:.2f} |")


if __name__ == "__main__":
    main()
