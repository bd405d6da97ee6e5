#!/usr/bin/env python3
"""kernel_kmeans_dist (bench/kernel_kmeans_dist.cpp, docs/kernel-kmeans.md "Over MPI ranks").

1. Kernel k-means to convergence with 1D and 2D distributions over 2, 3 and 4 ranks (above 2
   oversubscribed), 2D on the square grid and on a 1 x P one: final labels identical to the
   one-rank run's, and the same iterations and label changes per iteration.
2. The words each rank received, counted by the program from its MPI receive counts, equal the
   closed-form analysis computed here independently (setup and per iteration).
3. A bad grid exits 2.
N = 601 (not a multiple of any rank count), K = 5: each run takes about a second.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def blocks(n, p):
    return [n * (b + 1) // p - n * b // p for b in range(p)]


def formula(n, d, k, p, two_d, pr):
    """Per rank: (setup words, words per iteration) it must receive."""
    size = blocks(n, p)
    pc = p // pr if two_d else p
    out = []
    for q in range(p):
        if two_d:
            rows = {b for b in range(p) if b // pc == q // pc}   # I_r: the grid row's blocks
            cols = {b for b in range(p) if b // pr == q % pc}    # J_c: the grid column's blocks
        else:
            rows, cols = {q}, set(range(p))
        setup = sum(size[b] for b in (rows | cols) - {q}) * d
        labels = sum(size[b] for b in cols - {q})
        partial_s = (pc - 1) * size[q] * k if two_d else 0
        out.append((setup, labels + partial_s + (2 * k + 2) * (p - 1)))
    return out


def run(prog, mpirun, ranks, args, out):
    cmd = ([mpirun, "--oversubscribe", "-n", str(ranks)] if ranks > 1 else []) + [prog] + args + ["--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    doc = None
    try:
        doc = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    return r, doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    n, d, k = 601, 3, 5
    common = ["--n", str(n), "--d", str(d), "--k", str(k), "--gamma", "0.1", "--seed", "3"]
    scratch = tempfile.mkdtemp(prefix="kernel_kmeans_dist_")
    one = os.path.join(scratch, "one.f32")
    r, ref = run(a.prog, a.mpirun, 1, common, one)
    check(r.returncode == 0 and ref is not None and ref["converged"], f"one rank converges: {r.stderr[-300:]}")
    if failures:
        return 1
    with open(one, "rb") as f:
        ref_labels = f.read()
    for ranks, dist, pr in [(2, "1d", 0), (2, "2d", 1), (3, "1d", 0), (4, "1d", 0), (4, "2d", 2), (4, "2d", 1)]:
        what = f"{ranks} ranks {dist}" + (f" grid {pr}x{ranks // pr}" if dist == "2d" else "")
        out = os.path.join(scratch, f"{ranks}{dist}{pr}.f32")
        extra = ["--dist", dist] + (["--pr", str(pr)] if dist == "2d" else [])
        r, doc = run(a.prog, a.mpirun, ranks, common + extra, out)
        check(r.returncode == 0 and doc is not None, f"{what}: runs ({r.returncode}) {r.stderr[-300:]}")
        if doc is None:
            continue
        with open(out, "rb") as f:
            check(f.read() == ref_labels, f"{what}: final labels identical to one rank's")
        check(doc["iterations"] == ref["iterations"] and doc["changes"] == ref["changes"],
              f"{what}: the same {ref['iterations']} iterations and label changes")
        want = formula(n, d, k, ranks, dist == "2d", pr)
        got = [(w["setup_words"], w["iteration_words"] // doc["iterations"]) for w in doc["words"]]
        exact = all(w["iteration_words"] % doc["iterations"] == 0 for w in doc["words"])
        check(exact and got == want, f"{what}: words per rank {got} == analysis {want}")
    r, _ = run(a.prog, a.mpirun, 2, common + ["--dist", "2d", "--pr", "3"], os.path.join(scratch, "bad.f32"))
    check(r.returncode == 2, f"a grid that does not divide the ranks exits 2 ({r.returncode})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
