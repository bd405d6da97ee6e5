#!/usr/bin/env python3
"""Kernel k-means to convergence: kforge's kernel_kmeans step against the same algorithm on the
explicit Gram matrix built by scikit-learn, CPU timings.

Both sides run Lloyd's algorithm in the RBF kernel's feature space from the SAME data and the
SAME initial labels (written by this script from --seed), until no label changes:
  kforge   build/bench/kernel_kmeans_run: one kernel_kmeans launch per iteration, the kernel
           values recomputed tile by tile every iteration, never an N x N buffer.
  sklearn  G = sklearn.metrics.pairwise.rbf_kernel(X, gamma) (N x N, float32), then per
           iteration S = G @ onehot(labels) (BLAS), z_c = sum_{i in c} S_ic / |c|^2,
           D = diag(G) - 2 S / |c| + z, argmin. This is kernel k-means as written over
           scikit-learn (tslearn's KernelKMeans does the same on a precomputed Gram matrix).
           sklearn.cluster.KMeans fitted on the rows of G is a different algorithm (Euclidean
           k-means of the Gram rows): not compared.
Each side runs in a process of its own (peak resident memory: ru_maxrss from os.wait4); per
size the sides alternate for --rounds rounds. Time is each side's whole run after loading the
data: kforge's kernel launches, sklearn's Gram matrix plus its iterations. The final labels of
the two sides are compared (they agree unless a near-tie went the other way).

  python3 bench/kernel_kmeans_vs_sklearn.py --sizes 2000,8000,20000 --rounds 3 --threads 2
  python3 bench/kernel_kmeans_vs_sklearn.py --kernel poly --degree 3 --coef0 1 --sizes 2000,8000

--kernel poly: the polynomial kernel (gamma <x, y> + coef0)^degree, sklearn's polynomial_kernel
against kernel_kmeans with --kind 1.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402


def peer_main(args):
    import numpy as np
    from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel
    x = np.fromfile(args.x, dtype=np.float32).reshape(args.n, args.d)
    labels = np.fromfile(args.labels, dtype=np.float32).astype(np.int64)
    t0 = time.perf_counter()
    if args.kernel == "poly":
        g = polynomial_kernel(x, degree=args.degree, gamma=args.gamma, coef0=args.coef0)
    else:
        g = rbf_kernel(x, gamma=args.gamma)
    g = g.astype(np.float32, copy=False)
    diag = np.diagonal(g).copy()
    iters = 0
    for iters in range(1, args.max_iters + 1):
        onehot = np.zeros((args.n, args.k), np.float32)
        onehot[np.arange(args.n), labels] = 1
        cnt = onehot.sum(0)
        s = g @ onehot
        safe = np.maximum(cnt, 1)
        z = (s * onehot).sum(0) / safe / safe
        dist = diag[:, None] - 2 * s / safe + z
        dist[:, cnt == 0] = np.finfo(np.float32).max
        new = dist.argmin(1)
        done = np.array_equal(new, labels)
        labels = new
        if done:
            break
    secs = time.perf_counter() - t0
    labels.astype(np.float32).tofile(args.out)
    print(json.dumps({"seconds": secs, "iterations": iters, "gram_bytes": int(g.nbytes)}))


def run_child(cmd, env):
    """Runs cmd; returns (its JSON line, its peak RSS in MiB)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd[0]} failed ({os.waitstatus_to_exitcode(status)}): {out}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024.0


def spread(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g}..{max(v):.4g})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2000,8000,20000")
    ap.add_argument("--d", type=int, default=3)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--gamma", type=float, default=0.1)
    ap.add_argument("--kernel", choices=["rbf", "poly"], default="rbf")
    ap.add_argument("--degree", type=int, default=3, help="poly: the degree (1..8)")
    ap.add_argument("--coef0", type=float, default=1.0, help="poly: coef0")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-iters", type=int, default=100)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--peer", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--x", help=argparse.SUPPRESS)
    ap.add_argument("--labels", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    bench_venv.ensure("sklearn", "scikit-learn")
    if args.peer:
        return peer_main(args)
    import numpy as np
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               OPENBLAS_THREAD_TIMEOUT="4")
    runner = os.path.join(args.build, "bench", "kernel_kmeans_run")
    scratch = tempfile.mkdtemp(prefix="kernel_kmeans_bench_")
    kernel = "RBF" if args.kernel == "rbf" else f"polynomial degree={args.degree} coef0={args.coef0}"
    print(f"# kernel k-means to convergence, {kernel} gamma={args.gamma}, D={args.d}, K={args.k}, seed {args.seed}, "
          f"{args.threads} threads, {args.rounds} rounds; CPU timings; load average {os.getloadavg()[0]:.2f} at start")
    print("| N | side | iterations | time s, median (min..max) | peak RSS MiB | sklearn / kforge | labels differing |")
    print("|---|---|---|---|---|---|---|")
    for n in [int(v) for v in args.sizes.split(",")]:
        # K blobs (centres N(0, 9), points N(centre, 1)) and random initial labels, every cluster used.
        rng = np.random.default_rng(args.seed)
        centres = 3 * rng.standard_normal((args.k, args.d))
        x = (centres[rng.integers(0, args.k, n)] + rng.standard_normal((n, args.d))).astype(np.float32)
        init = rng.integers(0, args.k, n)
        init[(np.arange(args.k) * n) // args.k] = np.arange(args.k)
        xp, lp = os.path.join(scratch, f"x{n}.f32"), os.path.join(scratch, f"l{n}.f32")
        x.tofile(xp)
        init.astype(np.float32).tofile(lp)
        t = {"kforge": [], "sklearn": []}
        rss = {"kforge": [], "sklearn": []}
        iters, differ = {}, []
        for _ in range(args.rounds):
            outs = {}
            for side in t:
                outs[side] = os.path.join(scratch, f"{side}{n}.f32")
                common = ["--n", str(n), "--d", str(args.d), "--k", str(args.k), "--gamma", str(args.gamma),
                          "--x", xp, "--labels", lp, "--out", outs[side], "--max-iters", str(args.max_iters),
                          "--degree", str(args.degree), "--coef0", str(args.coef0)]
                if side == "kforge":
                    kind = ["--kind", "1" if args.kernel == "poly" else "0"]
                    res, mib = run_child([runner, "--threads", str(args.threads)] + kind + common, env)
                    t[side].append(res["kernel_s_total"])
                else:
                    res, mib = run_child([sys.executable, os.path.abspath(__file__), "--peer", "--kernel", args.kernel]
                                         + common, env)
                    t[side].append(res["seconds"])
                rss[side].append(mib)
                iters[side] = res["iterations"]
            a, b = (np.fromfile(outs[s], dtype=np.float32) for s in ("kforge", "sklearn"))
            differ.append(int((a != b).sum()))
        for side in t:
            ratio = "" if side == "kforge" else spread([s / k for s, k in zip(t["sklearn"], t["kforge"])])
            print(f"| {n} | {side} | {iters[side]} | {spread(t[side])} | {max(rss[side]):.0f} | {ratio} | "
                  f"{max(differ) if side == 'kforge' else ''} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
