#!/usr/bin/env python3
"""kforge's sigkernel_grad (cpu backend) against pysiglib.sig_kernel_backprop, interleaved, in one
run. CPU timings.

The gradient of sum_b GK_b k(x_b, y_b) in both paths of B pairs, k the signature kernel by the
explicit PDE scheme with dyadic refinement DYADIC. Per configuration, `--rounds` rounds; each
round runs, in turn:
  kforge              `kforge bench sigkernel_grad --backend cpu --quick --no-baseline --json
                      --threads T` (its median kernel time and SOL; the kernel runs the forward
                      PDE too, storing its grid)
  pysiglib            pysiglib.sig_kernel_backprop(GK, X, Y, dyadic_order=DYADIC,
                      left_deriv=True, right_deriv=True, n_jobs=T), k_grid not given: it solves
                      the forward PDE too, as kforge does
  pysiglib+grid       the same given the forward grid from sig_kernel(..., return_grid=True)
                      (its forward not timed: the backward sweep alone)
each peer the median of `--reps` calls, float32 in (as kforge), with OMP_NUM_THREADS = T (see
main: unpinned, pysiglib's OpenMP threads made its times swing 100x). Before timing, pysiglib is
checked to differentiate the same discrete scheme: its gradient of one short pair (the first
pair's first 6 points) against central differences of the scheme in double (sigkernel_ref,
as bench/signature_vs_peers.py has it), relative 1e-3 (float32 peer). Ratios are peer time /
kforge time per round; medians and (min..max) over rounds, with the load average.

On a loaded host a peer's call of tens of ms is preempted (its wall time counts the waits) where
kforge's sub-ms launches mostly are not, which skews the wall-time ratio toward kforge. So the
script also takes each peer call's CPU time (time.process_time: its threads' time on a core,
waits excluded) and prints "peer CPU / kforge": with --threads 1 that is one core's work per
call against kforge's one-thread kernel time, the comparison a loaded host does not skew (with
more threads the peer's CPU time sums its threads, so the column is left empty).

  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/sigkernel_grad_vs_peers.py --build build --rounds 3 --reps 3
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402
from signature_bench import kforge_bench, spread, sigkernel_ref  # noqa: E402

# B x L1 x L2 x D x DYADIC
CONFIGS = ["32x64x64x4x0", "32x64x64x4x1", "16x128x128x8x0", "64x33x100x3x2"]



def paths(np, rng, b, length, d):
    inc = rng.standard_normal((b, length - 1, d)) / math.sqrt(length)
    x = np.concatenate([np.zeros((b, 1, d)), np.cumsum(inc, axis=1)], axis=1)
    return np.ascontiguousarray(x, dtype=np.float32)



def check_same_scheme(np, pysiglib, x, y, dyadic):
    """pysiglib's gradient of one short pair against central differences of the double scheme."""
    x, y = x[:6].astype(np.float64), y[:6].astype(np.float64)
    gx, gy = pysiglib.sig_kernel_backprop(np.ones(1, dtype=np.float32), x[None].astype(np.float32),
                                          y[None].astype(np.float32), dyadic_order=dyadic, left_deriv=True,
                                          right_deriv=True)
    for path, got in ((x, gx[0]), (y, gy[0])):
        fd = np.zeros_like(path)
        for idx in np.ndindex(path.shape):
            at, h = path[idx], 1e-6
            path[idx] = at + h
            up = sigkernel_ref(np, x, y, dyadic)
            path[idx] = at - h
            down = sigkernel_ref(np, x, y, dyadic)
            path[idx] = at
            fd[idx] = (up - down) / (2 * h)
        err = np.max(np.abs(np.asarray(got, dtype=np.float64) - fd))
        if err > 1e-3 * np.max(np.abs(fd)):
            raise SystemExit(f"pysiglib's gradient is not the scheme's (max error {err:.3g}, scale {np.max(np.abs(fd)):.3g})")



def time_it(run, reps):
    """Median wall time and median CPU time (this process's threads) of `reps` calls."""
    run()  # warm-up
    secs, cpu = [], []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        run()
        secs.append(time.perf_counter() - t), cpu.append(time.process_time() - c)
    return statistics.median(secs), statistics.median(cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--configs", default=",".join(CONFIGS), help="BxL1xL2xDxDYADIC,...")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    # pysiglib's backprop runs OpenMP threads beside its n_jobs: left at one per core they
    # compete with the n_jobs workers and its calls swing 100x (2 ms to 0.4 s measured on one
    # call here). A user would pin them as we do: as many as the threads asked for.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    bench_venv.ensure("pysiglib", "pysiglib")
    import numpy as np
    import pysiglib
    print(f"# sigkernel_grad, CPU timings, {args.threads} threads each, {args.rounds} rounds x {args.reps} reps; "
          f"pysiglib {getattr(pysiglib, '__version__', '?')}; load average {os.getloadavg()[0]:.2f} at start")
    print("| sizes | side | time s, median (min..max) | peer / kforge | kforge SOL | peer CPU / kforge |")
    print("|---|---|---|---|---|---|")
    for c in args.configs.split(","):
        b, l1, l2, d, dyadic = (int(v) for v in c.split("x"))
        rng = np.random.default_rng(7)
        x, y = paths(np, rng, b, l1, d), paths(np, rng, b, l2, d)
        gk = rng.standard_normal(b).astype(np.float32)
        check_same_scheme(np, pysiglib, x[0], y[0], dyadic)
        grid = pysiglib.sig_kernel(x, y, dyadic_order=dyadic, return_grid=True, n_jobs=args.threads)
        peers = {
            "pysiglib": lambda: pysiglib.sig_kernel_backprop(gk, x, y, dyadic_order=dyadic, left_deriv=True,
                                                             right_deriv=True, n_jobs=args.threads),
            "pysiglib+grid": lambda: pysiglib.sig_kernel_backprop(gk, x, y, dyadic_order=dyadic, left_deriv=True,
                                                                  right_deriv=True, k_grid=grid, n_jobs=args.threads),
        }
        sizes = f"B={b},L1={l1},L2={l2},D={d},DYADIC={dyadic}"
        t = {n: [] for n in ["kforge"] + list(peers)}
        cpu = {n: [] for n in peers}
        sol = []
        for _ in range(args.rounds):
            kt, ks = kforge_bench(args.build, "sigkernel_grad", sizes, args.threads)
            t["kforge"].append(kt), sol.append(ks)
            for n, run in peers.items():
                wall, c = time_it(run, args.reps)
                t[n].append(wall), cpu[n].append(c)
        for n in t:
            ratio = "" if n == "kforge" else spread([p / k for p, k in zip(t[n], t["kforge"])])
            best = "" if n == "kforge" or args.threads != 1 else spread([p / k for p, k in zip(cpu[n], t["kforge"])])
            print(f"| {sizes} | {n} | {spread(t[n])} | {ratio} | {spread(sol) if n == 'kforge' else ''} | {best} |",
                  flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
