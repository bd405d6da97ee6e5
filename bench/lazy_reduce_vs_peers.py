#!/usr/bin/env python3
"""lazy_reduce.gauss_sum against pykeops (CPU mode) and numpy in row chunks, CPU timings.

out_i = sum_j exp(-|x_i - y_j|^2 / s) b_j over N = M points in 3 dimensions. Each side runs in
a process of its own (kforge: build/bench/lazy_reduce_run; the peers: this script with --peer),
so its peak resident memory is that process's ru_maxrss (os.wait4). Per size, the sides run in
turn (interleaved) for --rounds rounds; each process times --reps calls (after its compile:
kforge's kernel compiled before, pykeops warmed up on 1000 points) and reports its median. The table gives medians with min..max over rounds and the ratio peer/kforge
per round. numpy holds a (CHUNK, M) block at a time, never N x M.

  python3 bench/lazy_reduce_vs_peers.py --sizes 10000,100000 --rounds 3 --threads 2
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

CHUNK = 1024


def peer_main(args):
    import numpy as np
    rng = np.random.default_rng(42)
    n, s = args.n, args.s
    x = rng.standard_normal((n, 3), dtype=np.float32)
    y = rng.standard_normal((n, 3), dtype=np.float32)
    b = rng.standard_normal((n, 1), dtype=np.float32)
    if args.peer == "pykeops":
        from pykeops.numpy import LazyTensor

        def gauss(x, y, b):
            X, Y = LazyTensor(x[:, None, :]), LazyTensor(y[None, :, :])
            return (-((X - Y) ** 2).sum(-1) / s).exp() @ b
        gauss(x[:1000], y[:1000], b[:1000])  # warm-up: pykeops compiles its kernel on the first call
        run = lambda: gauss(x, y, b)  # noqa: E731
    else:
        def run():
            out = np.empty((n, 1), np.float32)
            y2 = (y * y).sum(1)
            for i in range(0, n, CHUNK):
                xi = x[i:i + CHUNK]
                d2 = (xi * xi).sum(1)[:, None] + y2[None, :] - 2 * xi @ y.T
                out[i:i + CHUNK] = np.exp(-np.maximum(d2, 0) / s) @ b
            return out
    secs = []
    for _ in range(args.reps):
        t = time.perf_counter()
        out = run()
        secs.append(time.perf_counter() - t)
    # The first rows in double, as the kforge runner checks its own.
    xd, yd, bd = x[:4].astype(float), y.astype(float), b.astype(float)
    ref = (np.exp(-((xd[:, None, :] - yd[None]) ** 2).sum(-1) / s) @ bd)[:, 0]
    err = float(np.max(np.abs(out[:4, 0] - ref) / (np.abs(ref) + 1e-30)))
    print(json.dumps({"seconds": secs, "median_s": statistics.median(secs), "check_max_rel_err": err}))


def run_child(cmd, env):
    """Runs cmd; returns (its JSON line, its peak RSS in MiB)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {out}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss / 1024.0


def spread(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g}..{max(v):.4g})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--s", type=float, default=1.0)
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--peers", default="pykeops,numpy")
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    bench_venv.ensure("pykeops", "pykeops==2.3")
    if args.peer:
        return peer_main(args)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               OPENBLAS_THREAD_TIMEOUT="4")
    runner = os.path.join(args.build, "bench", "lazy_reduce_run")
    peers = [p for p in args.peers.split(",") if p]
    print(f"# lazy_reduce.gauss_sum, D=3, s={args.s}, {args.threads} threads, {args.rounds} rounds x "
          f"{args.reps} reps; load average {os.getloadavg()[0]:.2f} at start")
    print("| N = M | side | time s, median (min..max) | peak RSS MiB | peer / kforge | kforge SOL |")
    print("|---|---|---|---|---|---|")
    for n in [int(v) for v in args.sizes.split(",")]:
        t = {side: [] for side in ["kforge"] + peers}
        rss = {side: [] for side in t}
        sol = []
        for _ in range(args.rounds):
            for side in t:
                if side == "kforge":
                    cmd = [runner, "--n", str(n), "--d", "3", "--reps", str(args.reps), "--warmup", "0",
                           "--threads", str(args.threads), "--s", str(args.s)]
                else:
                    cmd = [sys.executable, os.path.abspath(__file__), "--peer", side, "--n", str(n),
                           "--reps", str(args.reps), "--s", str(args.s)]
                res, mib = run_child(cmd, env)
                if res["check_max_rel_err"] > 1e-3:
                    raise SystemExit(f"{side} N={n}: wrong result, relative error {res['check_max_rel_err']}")
                t[side].append(res["median_s"])
                rss[side].append(mib)
                if side == "kforge":
                    sol.append(res["sol_fraction"])
        for side in t:
            ratio = "" if side == "kforge" else spread([a / b for a, b in zip(t[side], t["kforge"])])
            print(f"| {n} | {side} | {spread(t[side])} | {max(rss[side]):.0f} | {ratio} | "
                  f"{spread(sol) if side == 'kforge' else ''} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
