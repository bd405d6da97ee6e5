#!/usr/bin/env python3
"""kforge's sigkernel_gram_grad (cpu backend) against pysiglib.sig_kernel_gram_backprop,
interleaved, in one run. CPU timings.

The gradient of sum_{a,b} G_ab k(x_a, y_b) in every point of two batches X (B1,L1,D) and
Y (B2,L2,D), k the signature kernel by the explicit PDE scheme with dyadic refinement DYADIC (the
backward pass of the Gram matrix that `sigkernel` and pysiglib.sig_kernel_gram compute). Per
configuration, `--rounds` rounds; each round runs, in turn:
  kforge      `kforge bench sigkernel_gram_grad --backend cpu --quick --no-baseline --json
              --threads T` (its median kernel time and SOL; the kernel solves each pair's forward
              PDE too, once per side: kernels/signature/README.md, "Gram form")
  kforge paired  (--paired) `kforge bench sigkernel_grad` on the B1 B2 pairs (x_a, y_b) as a
              batch of paired problems (B = B1 B2, VW=8, VB=2 as the Gram kernel's default):
              each pair's PDE solved once, the cost the Gram kernel's second solve is measured
              against (it does not sum over the pairs; a user would still have to)
  pysiglib    pysiglib.sig_kernel_gram_backprop(G, X, Y, dyadic_order=DYADIC, left_deriv=True,
              right_deriv=True, n_jobs=T), k_grid not given: it solves the forward PDE too
each peer call the median of `--reps` calls, float32 in (as kforge), with OMP_NUM_THREADS = T (as
bench/sigkernel_grad_vs_peers.py: unpinned OpenMP threads made pysiglib's times swing 100x).
Before timing, pysiglib's Gram gradient of a small case (the first 2 x 3 paths' first 5 points)
is checked against central differences of sum G_ab k(x_a, y_b) with the scheme in double
(sigkernel_ref), relative 1e-3 (float32 peer): both sides differentiate the same discrete
kernel. Ratios are peer time / kforge time per round; medians and (min..max) over rounds, with
the load average. "peer CPU / kforge" (with --threads 1 only): the peer's process CPU time per
call against kforge's one-thread kernel time, which preemption on a loaded host does not skew.

  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/sigkernel_gram_grad_vs_peers.py --build build --rounds 3 --reps 3 [--paired]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402
from signature_bench import kforge_bench, spread, sigkernel_ref  # noqa: E402
from sigkernel_grad_vs_peers import paths, time_it  # noqa: E402

# B1 x B2 x L1 x L2 x D x DYADIC
CONFIGS = ["32x32x64x64x4x0", "32x32x32x32x4x1", "16x24x96x80x8x0", "64x16x17x26x3x2"]


def check_same_scheme(np, pysiglib, x, y, dyadic):
    """pysiglib's Gram gradient of a small case against central differences of the double scheme."""
    x, y = x[:2, :5].astype(np.float64), y[:3, :5].astype(np.float64)
    g = np.random.default_rng(3).standard_normal((2, 3))
    gx, gy = pysiglib.sig_kernel_gram_backprop(g.astype(np.float32), x.astype(np.float32), y.astype(np.float32),
                                               dyadic_order=dyadic, left_deriv=True, right_deriv=True)

    def loss():
        return sum(g[a, b] * sigkernel_ref(np, x[a], y[b], dyadic) for a in range(2) for b in range(3))

    for batch, got in ((x, gx), (y, gy)):
        fd = np.zeros_like(batch)
        for idx in np.ndindex(batch.shape):
            at, h = batch[idx], 1e-6
            batch[idx] = at + h
            up = loss()
            batch[idx] = at - h
            down = loss()
            batch[idx] = at
            fd[idx] = (up - down) / (2 * h)
        err = np.max(np.abs(np.asarray(got, dtype=np.float64) - fd))
        if err > 1e-3 * np.max(np.abs(fd)):
            raise SystemExit(f"pysiglib's Gram gradient is not the scheme's (max error {err:.3g}, scale {np.max(np.abs(fd)):.3g})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--configs", default=",".join(CONFIGS), help="B1xB2xL1xL2xDxDYADIC,...")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--paired", action="store_true", help="also time kforge's paired kernel on the B1 B2 pairs")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    bench_venv.ensure("pysiglib", "pysiglib")
    import numpy as np
    import pysiglib
    print(f"# sigkernel_gram_grad, CPU timings, {args.threads} threads each, {args.rounds} rounds x {args.reps} reps; "
          f"pysiglib {getattr(pysiglib, '__version__', '?')}; load average {os.getloadavg()[0]:.2f} at start")
    print("| sizes | side | time s, median (min..max) | peer / kforge | kforge SOL | peer CPU / kforge |")
    print("|---|---|---|---|---|---|")
    for c in args.configs.split(","):
        b1, b2, l1, l2, d, dyadic = (int(v) for v in c.split("x"))
        rng = np.random.default_rng(7)
        x, y = paths(np, rng, b1, l1, d), paths(np, rng, b2, l2, d)
        g = rng.standard_normal((b1, b2)).astype(np.float32)
        check_same_scheme(np, pysiglib, x, y, dyadic)
        peers = {
            "pysiglib": lambda: pysiglib.sig_kernel_gram_backprop(g, x, y, dyadic_order=dyadic, left_deriv=True,
                                                                  right_deriv=True, n_jobs=args.threads),
        }
        sizes = f"B1={b1},B2={b2},L1={l1},L2={l2},D={d},DYADIC={dyadic}"
        mine = ["kforge"] + (["kforge paired"] if args.paired else [])
        t = {n: [] for n in mine + list(peers)}
        cpu = {n: [] for n in peers}
        sol = []
        for _ in range(args.rounds):
            kt, ks = kforge_bench(args.build, "sigkernel_gram_grad", sizes, args.threads)
            t["kforge"].append(kt), sol.append(ks)
            if args.paired:
                pt, _ = kforge_bench(args.build, "sigkernel_grad", f"B={b1 * b2},L1={l1},L2={l2},D={d},DYADIC={dyadic}",
                                     args.threads, "VW=8,VB=2")
                t["kforge paired"].append(pt)
            for n, run in peers.items():
                wall, cp = time_it(run, args.reps)
                t[n].append(wall), cpu[n].append(cp)
        for n in t:
            ratio = "" if n == "kforge" else spread([p / k for p, k in zip(t[n], t["kforge"])])
            best = "" if n in mine or args.threads != 1 else spread([p / k for p, k in zip(cpu[n], t["kforge"])])
            print(f"| {sizes} | {n} | {spread(t[n])} | {ratio} | {spread(sol) if n == 'kforge' else ''} | {best} |",
                  flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
