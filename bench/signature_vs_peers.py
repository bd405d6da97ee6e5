#!/usr/bin/env python3
"""kforge's signature and sigkernel (cpu backend) against pysiglib, iisignature and esig,
interleaved, in one run. CPU timings.

Per configuration, `--rounds` rounds; each round runs, in turn:
  kforge      `kforge bench PROBLEM --backend cpu --quick --no-baseline --json --threads T`
              (its median kernel time and SOL fraction; the kernel at its default parameters)
  pysiglib    pysiglib.sig(X, degree) / its signature-kernel Gram matrix (float32, T jobs)
  iisignature iisignature.sig(X, level) (signatures only; float32 in, double inside; one thread)
  esig        esig.stream2sig per path (signatures only, a Python loop; one thread)
each peer timed as the median of `--reps` calls on inputs of the same sizes (random-walk paths,
normal increments scaled by 1/sqrt(L)). A peer's first path is checked against a double
reference in numpy (Chen's identity), so a peer with another layout or truncation is caught.
Each round's ratio is peer time / kforge time; the table gives medians and (min..max) over
rounds, with the load average. Peers are pip-installed into bench/.venv (bench_venv.py), never
into kforge; a peer that does not install or import is reported and skipped.

  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/signature_vs_peers.py --build build --rounds 3
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

SIG_CONFIGS = ["128x256x4x3", "128x256x4x4", "128x256x4x5", "128x256x4x6", "32x128x8x4", "32x128x8x5"]
KER_CONFIGS = ["32x32x64x4x0", "32x32x64x4x1", "16x16x256x8x0"]



def paths(np, b, length, d, seed):
    rng = np.random.default_rng(seed)
    inc = rng.standard_normal((b, length - 1, d)) / math.sqrt(length)
    x = np.concatenate([np.zeros((b, 1, d)), np.cumsum(inc, axis=1)], axis=1)
    return np.ascontiguousarray(x, dtype=np.float32)


def signature_ref(np, x, level):
    """One path's signature in double, levels 1..level concatenated (kforge's layout)."""
    x = x.astype(np.float64)
    d = x.shape[1]
    s = [np.ones(())] + [np.zeros((d,) * k) for k in range(1, level + 1)]
    for t in range(x.shape[0] - 1):
        delta = x[t + 1] - x[t]
        e = [np.ones(())]
        for k in range(1, level + 1):
            e.append(np.multiply.outer(e[-1], delta) / k)
        s = [sum(np.multiply.outer(s[j], e[k - j]) for j in range(k + 1)) for k in range(level + 1)]
    return np.concatenate([v.ravel() for v in s[1:]])


def load_peers(wanted):
    peers = {}
    for name in wanted:
        try:
            peers[name] = __import__(name)
        except Exception as e:  # noqa: BLE001 - a peer that does not import is reported, not fatal
            print(f"# {name}: not available ({type(e).__name__}: {e})")
    return peers


def sig_peer(np, name, mod, x, level, threads):
    if name == "pysiglib":
        run = lambda: mod.sig(x, level, n_jobs=threads)  # noqa: E731 - pysiglib 4: no leading 1 by default
        first = lambda out: np.asarray(out)[0]  # noqa: E731
    elif name == "iisignature":
        run = lambda: mod.sig(x, level)  # noqa: E731
        first = lambda out: np.asarray(out)[0]  # noqa: E731
    elif name == "esig":
        run = lambda: [mod.stream2sig(p.astype(np.float64), level) for p in x]  # noqa: E731
        first = lambda out: np.asarray(out[0])[1:]  # noqa: E731
    else:
        return None
    return run, first


def ker_peer(np, name, mod, x, y, dyadic, threads):
    if name != "pysiglib":
        return None
    gram = getattr(mod, "sig_kernel_gram", None)
    if gram is None:
        return None
    return (lambda: gram(x, y, dyadic_order=dyadic, n_jobs=threads)), (lambda out: np.asarray(out))



def time_it(run, reps):
    out = run()  # warm-up (and the output to check)
    secs = []
    for _ in range(reps):
        t = time.perf_counter()
        run()
        secs.append(time.perf_counter() - t)
    return statistics.median(secs), out


def table(rows):
    print("| problem | sizes | side | time s, median (min..max) | peer / kforge | kforge SOL |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peers", default="pysiglib,iisignature,esig")
    ap.add_argument("--sig", default=",".join(SIG_CONFIGS), help="BxLxDxLEVEL,...")
    ap.add_argument("--ker", default=",".join(KER_CONFIGS), help="B1xB2xLxDxDYADIC,... (B2 paths as long as B1's)")
    ap.add_argument("--baseline", help="another build directory whose kforge runs beside (signature rows: before/after)")
    args = ap.parse_args()
    bench_venv.ensure("numpy", "numpy")
    import numpy as np
    for name in args.peers.split(","):  # each into bench/.venv; one that fails to install is skipped
        bench_venv.install_here(name)
    peers = load_peers(args.peers.split(","))
    print(f"# CPU timings, {args.threads} threads for kforge and pysiglib (iisignature and esig: one); "
          f"{args.rounds} rounds x {args.reps} reps; load average {os.getloadavg()[0]:.2f} at start")
    rows = []
    for cfg in [c for c in args.sig.split(",") if c]:
        b, length, d, level = (int(v) for v in cfg.split("x"))
        x = paths(np, b, length, d, 1)
        ref = signature_ref(np, x[0], level)
        sizes = f"B={b},L={length},D={d},LEVEL={level}"
        runs = {n: sig_peer(np, n, m, x, level, args.threads) for n, m in peers.items()}
        runs = {n: r for n, r in runs.items() if r}
        base = f"kforge@{args.baseline}" if args.baseline else None
        t = {n: [] for n in ["kforge"] + ([base] if base else []) + list(runs)}
        sol = []
        for _ in range(args.rounds):
            kt, ks = kforge_bench(args.build, "signature", sizes, args.threads)
            t["kforge"].append(kt), sol.append(ks)
            if base:  # another build's kforge, right after this one's
                t[base].append(kforge_bench(args.baseline, "signature", sizes, args.threads)[0])
            for n, (run, first) in runs.items():
                secs, out = time_it(run, args.reps)
                err = np.max(np.abs(first(out) - ref)) / np.max(np.abs(ref))
                if err > 1e-4:
                    raise SystemExit(f"{n} at {sizes}: differs from the double reference by {err:.3g} (relative)")
                t[n].append(secs)
        for n in t:
            ratio = "" if n == "kforge" else spread([p / k for p, k in zip(t[n], t["kforge"])])
            rows.append(["signature", sizes, n, spread(t[n]), ratio, spread(sol) if n == "kforge" else ""])
    for cfg in [c for c in args.ker.split(",") if c]:
        b1, b2, length, d, dyadic = (int(v) for v in cfg.split("x"))
        x, y = paths(np, b1, length, d, 2), paths(np, b2, length, d, 3)
        sizes = f"B1={b1},B2={b2},L1={length},L2={length},D={d},DYADIC={dyadic}"
        runs = {n: ker_peer(np, n, m, x, y, dyadic, args.threads) for n, m in peers.items()}
        runs = {n: r for n, r in runs.items() if r}
        t = {n: [] for n in ["kforge"] + list(runs)}
        sol = []
        for _ in range(args.rounds):
            kt, ks = kforge_bench(args.build, "sigkernel", sizes, args.threads)
            t["kforge"].append(kt), sol.append(ks)
            for n, (run, full) in runs.items():
                secs, out = time_it(run, args.reps)
                ref = sigkernel_ref(np, x[0], y[0], dyadic)
                if abs(float(full(out)[0, 0]) - ref) > 1e-3 * abs(ref):
                    raise SystemExit(f"{n} at {sizes}: k(x_0, y_0) = {float(full(out)[0, 0])}, the scheme gives {ref}")
                t[n].append(secs)
        for n in t:
            ratio = "" if n == "kforge" else spread([p / k for p, k in zip(t[n], t["kforge"])])
            rows.append(["sigkernel", sizes, n, spread(t[n]), ratio, spread(sol) if n == "kforge" else ""])
    table(rows)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
