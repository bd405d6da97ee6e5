#!/usr/bin/env python3
"""Variants of kforge's cpu spmm (or sddmm) kernel beside scipy.sparse, interleaved round by round.

Each variant is NAME=SPEC[:P=V,P=V]: SPEC a kernel spec JSON on disk (its source beside it), or
empty for the library kernel; P=V parameters instead of the spec's defaults. Per shape and round
every variant runs in its own process (build/bench/sparse_run, one warm-up, --reps launches, its
median), then scipy on the very same matrix (checked against the first variant's output), so a
change is compared with what it replaces under the same load. Prints per variant the median
time, the ratio scipy / variant per round as median (min..max), and the fastest launch.

--clock cpu (the default) times both sides by the calling thread's CPU time (see
spmm_vs_scipy.py); --clock wall for more than one thread.

  git show <commit>:kernels/sparse/spmm.cpp > /tmp/old/spmm.cpp   # and spmm_cpu.json beside it
  python3 bench/spmm_variants.py --rows 4096 --cols 256 old=/tmp/old/spmm_cpu.json new= nv4=:NV=4

--problem sddmm runs sddmm's kernel the same way (the peer: numpy's gather + einsum, as
spmm_vs_scipy.py; --cols is then D).
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
import spmm_vs_scipy  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problem", choices=["spmm", "sddmm"], default="spmm")
    ap.add_argument("--rows", default="4096", help="M = K")
    ap.add_argument("--cols", default="256", help="N")
    ap.add_argument("--sparsity", default="0.7,0.9,0.99")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="kforge's threads")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="cpu")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("variants", nargs="+", help="NAME=SPEC[:P=V,P=V] (SPEC empty: the library kernel)")
    args = ap.parse_args()
    if args.clock == "cpu" and args.threads != 1:
        raise SystemExit("--clock cpu times the calling thread only: use --clock wall with --threads > 1")
    bench_venv.ensure("scipy", "scipy")
    runner = os.path.join(args.build, "bench", "sparse_run")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OPENBLAS_THREAD_TIMEOUT="4")
    timer, key = (time.thread_time, "cpu_seconds") if args.clock == "cpu" else (time.perf_counter, "seconds")
    variants = []
    for v in args.variants:
        if "=" not in v:
            raise SystemExit(f"variant {v!r}: write NAME=SPEC[:P=V,...] (SPEC may be empty: NAME=)")
        name, rest = v.split("=", 1)
        spec, _, params = rest.partition(":")
        variants.append((name, spec, [p for p in params.split(",") if p]))
    print(f"# {args.problem} variants vs scipy (one thread); kforge {args.threads} thread(s), {args.clock} clock; uniform "
          f"pattern, M = K; {args.rounds} rounds x {args.reps} reps; load average {os.getloadavg()[0]:.2f} at start")
    cells = " | ".join(f"{n} ms | scipy / {n} | {n} fastest ms" for n, _, _ in variants)
    print(f"| M=K | {'N' if args.problem == 'spmm' else 'D'} | sparsity | scipy ms | {cells} |")
    print("|---:|---:|---:|---:|" + "---:|---|---:|" * len(variants))
    for m in [int(x) for x in args.rows.split(",")]:
        for w in [int(x) for x in args.cols.split(",")]:
            for s in [float(x) for x in args.sparsity.split(",")]:
                nnz = max(1, int((1 - s) * m * m))
                times = {n: [] for n, _, _ in variants}
                fastest = {n: float("inf") for n, _, _ in variants}
                peer = []
                with tempfile.TemporaryDirectory(prefix="kforge-spmm-") as folder:
                    for r in range(args.rounds):
                        for i, (name, spec, params) in enumerate(variants):
                            cmd = [runner, "--problem", args.problem, "--m", str(m), "--k", str(m), "--w", str(w), "--nnz", str(nnz),
                                   "--reps", str(args.reps), "--threads", str(args.threads)]
                            if spec:
                                cmd += ["--spec", spec]
                            for p in params:
                                cmd += ["--param", p]
                            if r == 0 and i == 0:
                                cmd += ["--dump", folder]
                            out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                            if out.returncode != 0:
                                raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
                            res = json.loads(out.stdout.strip().splitlines()[-1])
                            times[name].append(statistics.median(res[key]))
                            fastest[name] = min(fastest[name], min(res[key]))
                        secs, err = spmm_vs_scipy.peer(args.problem, folder, m, m, w, args.reps, timer)
                        if err > 1e-4:
                            raise SystemExit(f"M={m} N={w} sparsity {s}: scipy and kforge differ (relative {err:.3g})")
                        peer.append(secs)
                row = []
                for name, _, _ in variants:
                    ratio = [p / t for p, t in zip(peer, times[name])]
                    row.append(f"{spmm_vs_scipy.spread([t * 1e3 for t in times[name]])} | "
                               f"{spmm_vs_scipy.spread(ratio, 'x')} | {fastest[name] * 1e3:.4g}")
                print(f"| {m} | {w} | {100 * s:.0f}% | {spmm_vs_scipy.spread([p * 1e3 for p in peer])} | "
                      + " | ".join(row) + " |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
