#!/usr/bin/env python3
"""kforge's spmm and sddmm (cpu backend, default parameters) against scipy.sparse, CPU timings.

spmm:  C = A @ B with A a scipy.sparse csr_matrix (float32) and B dense: scipy's own product
       (one thread: scipy.sparse does not thread it).
sddmm: out[p] = A[r,:] . B[c,:] at A's nonzeros: scipy has no SDDMM, so the peer is what a
       practitioner writes beside scipy.sparse: numpy gathers X[rows] and Y[cols] and einsum's
       row dot products, in chunks of 65536 nonzeros (a whole gather at 4096 rows, 70% and
       D = 256 would take gigabytes).

The kforge side runs in its own process (build/bench/sparse_run: one warm-up, then --reps timed
launches, its median) and writes its matrix and its output (--dump), so the peer runs on the
very same matrix and its result is checked against kforge's (relative Frobenius < 1e-4). Per
shape the sides run in turn for --rounds rounds (kforge at each of --kforge-threads, then
scipy), each reporting the median of --reps calls; the table gives medians with min..max over
rounds and the ratio scipy / kforge per round (> 1: kforge faster).

--clock cpu times both sides by the calling thread's CPU time instead of the wall clock: at one
thread that is each side's own work, without the time slices other processes take on a loaded
host (it still counts their cache pollution). Only with --kforge-threads 1 (the pool's caller
runs every block then; with more threads the workers' time is not counted). --kforge-param
NAME=VALUE runs kforge's kernel with a parameter other than its default.

  python3 bench/spmm_vs_scipy.py --rows 1024,4096 --cols 64,256 --sparsity 0.7,0.9,0.99 --rounds 3

--graphs Minnesota,Airfoil,Bunny,Logo runs real graphs instead: the adjacency matrices pygsp ships in
its package (a road network, a finite-element mesh, a 3-D scan's nearest neighbours, installed into
bench/.venv with pip; nothing downloaded), at every --cols.
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

CHUNK = 65536


def load(folder, name):
    """A tensor sparse_run --dump wrote: int32 pointers and indices (.i32), float32 else."""
    import numpy as np
    path = os.path.join(folder, name)
    return np.fromfile(path + ".i32", dtype=np.int32) if os.path.exists(path + ".i32") else \
        np.fromfile(path + ".f32", dtype=np.float32)


def peer(problem, folder, m, k, w, reps, timer=time.perf_counter):
    """scipy's (or numpy's) side on kforge's dumped matrix: (median seconds, relative error)."""
    import numpy as np
    import scipy.sparse as sp
    rp = load(folder, "row_ptr").astype(np.int64)
    nnz = int(rp[-1])
    ci = load(folder, "col_idx")[:nnz].astype(np.int64)
    if problem == "spmm":
        a = sp.csr_matrix((load(folder, "values")[:nnz], ci, rp), shape=(m, k))
        b = load(folder, "B").reshape(k, w)
        want = load(folder, "C").reshape(m, w)
        run = lambda: a @ b  # noqa: E731
    else:
        x, y = load(folder, "A").reshape(m, w), load(folder, "B").reshape(k, w)
        rows = np.repeat(np.arange(m), np.diff(rp))
        want = load(folder, "out")[:nnz]

        def run():
            out = np.empty(nnz, np.float32)
            for s in range(0, nnz, CHUNK):
                out[s:s + CHUNK] = np.einsum("ij,ij->i", x[rows[s:s + CHUNK]], y[ci[s:s + CHUNK]])
            return out
    secs, got = [], None
    run()  # warm-up, as kforge's side has one
    for _ in range(reps):
        t = timer()
        got = run()
        secs.append(timer() - t)
    got = np.asarray(got, dtype=np.float64)
    err = float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))
    return statistics.median(secs), err


def spread(v, unit=""):
    return f"{statistics.median(v):.4g}{unit} ({min(v):.4g}..{max(v):.4g})"


def real_graph(name, folder):
    """A real graph bundled with pygsp (read from its package data, no download) as CSR raw
    files in `folder` (int32 structure, float32 weights: sparse_run --structure): Minnesota (road network),
    Airfoil (a finite-element mesh), Bunny (nearest neighbours of a 3-D scan), Logo. Returns
    (nodes, edges)."""
    import warnings
    import numpy as np
    bench_venv.install_here("pygsp")
    from pygsp import graphs
    warnings.filterwarnings("ignore", category=FutureWarning)  # scipy on pygsp's degree matrix
    a = getattr(graphs, name)().W.tocsr().astype(np.float32)
    a.sort_indices()
    a.indptr.astype(np.int32).tofile(os.path.join(folder, "row_ptr.i32"))
    a.indices.astype(np.int32).tofile(os.path.join(folder, "col_idx.i32"))
    a.data.tofile(os.path.join(folder, "values.f32"))
    return a.shape[0], a.nnz


def compare(args, env, runner, threads, timer, key, problem, m, w, nnz, structure=None):
    """kforge (each thread count) and the peer on one shape, --rounds rounds in turn: the table
    row's cells after its first columns."""
    kf = {t: [] for t in threads}
    sol = {t: [] for t in threads}
    ratio = {t: [] for t in threads}
    peer_s = []
    with tempfile.TemporaryDirectory(prefix="kforge-scipy-") as folder:
        for r in range(args.rounds):
            for t in threads:
                cmd = [runner, "--problem", problem, "--m", str(m), "--k", str(m), "--w", str(w),
                       "--nnz", str(nnz), "--reps", str(args.reps), "--threads", str(t)]
                if structure:
                    cmd += ["--structure", structure]
                for kp in args.kforge_param:
                    cmd += ["--param", kp]
                if r == 0 and t == threads[0]:
                    cmd += ["--dump", folder]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
                res = json.loads(out.stdout.strip().splitlines()[-1])
                kf[t].append(res[key])
                sol[t].append(res["sol_fraction"])
            secs, err = peer(problem, folder, m, m, w, args.reps, timer)
            if err > 1e-4:
                raise SystemExit(f"{problem} M={m} w={w} nnz {nnz}: scipy and kforge differ (relative {err:.3g})")
            peer_s.append(secs)
            for t in threads:
                ratio[t].append(secs / kf[t][-1])
    cells = " | ".join(f"{spread([v * 1e3 for v in kf[t]])} | {spread(ratio[t], 'x')} | "
                       f"{100 * statistics.median(sol[t]):.1f}%" for t in threads)
    return f"{spread([v * 1e3 for v in peer_s])} | {cells}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", default="spmm,sddmm")
    ap.add_argument("--rows", default="1024,4096", help="M = K")
    ap.add_argument("--cols", default="64,256", help="spmm's N, sddmm's D")
    ap.add_argument("--sparsity", default="0.7,0.9,0.99")
    ap.add_argument("--graphs", default="", help="real graphs bundled with pygsp instead of the generator: "
                    "Minnesota, Airfoil, Bunny, Logo (M = K = nodes)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--kforge-threads", default="1,2", help="kforge's thread counts, one column each")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: the calling thread's CPU time on both sides (one kforge thread only)")
    ap.add_argument("--kforge-param", action="append", default=[], help="NAME=VALUE: a kernel parameter (repeatable)")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    args = ap.parse_args()
    bench_venv.ensure("scipy", "scipy")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", OPENBLAS_THREAD_TIMEOUT="4")
    runner = os.path.join(args.build, "bench", "sparse_run")
    threads = [int(t) for t in args.kforge_threads.split(",")]
    if args.clock == "cpu" and threads != [1]:
        raise SystemExit("--clock cpu times the calling thread only: use it with --kforge-threads 1")
    timer, key = (time.thread_time, "cpu_median_s") if args.clock == "cpu" else (time.perf_counter, "median_s")
    import scipy
    print(f"# kforge spmm/sddmm vs scipy {scipy.__version__} (one thread), {'pygsp graphs' if args.graphs else 'uniform pattern'}, M = K; {args.rounds} "
          f"rounds x {args.reps} reps; CPU timings ({args.clock} clock); load average {os.getloadavg()[0]:.2f} at start")
    head = " | ".join(f"kforge {t}T ms | scipy / kforge {t}T | SOL {t}T" for t in threads)
    print(f"| problem | M=K | N or D | sparsity | scipy ms | {head} |")
    print("|---|---:|---:|---:|---:|" + "---:|---|---:|" * len(threads))
    for problem in args.problems.split(","):
        if args.graphs:
            for name in args.graphs.split(","):
                with tempfile.TemporaryDirectory(prefix="kforge-graph-") as structure:
                    m, nnz = real_graph(name, structure)
                    for w in [int(v) for v in args.cols.split(",")]:
                        row = compare(args, env, runner, threads, timer, key, problem, m, w, nnz, structure)
                        print(f"| {problem} | {name} ({m} nodes, {nnz} edges) | {w} | {100 * (1 - nnz / m / m):.2f}% | {row} |",
                              flush=True)
            continue
        for m in [int(v) for v in args.rows.split(",")]:
            for w in [int(v) for v in args.cols.split(",")]:
                for s in [float(v) for v in args.sparsity.split(",")]:
                    nnz = max(1, int((1 - s) * m * m))
                    row = compare(args, env, runner, threads, timer, key, problem, m, w, nnz)
                    print(f"| {problem} | {m} | {w} | {100 * s:.0f}% | {row} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
