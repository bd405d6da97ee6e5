#!/usr/bin/env python3
"""`mpirun -n R kforge overlap kernel_kmeans_dist` (src/dist/kernel_kmeans_dist.cpp,
docs/kernel-kmeans.md): one kernel k-means step over ranks, 1d against 2d distribution.

1. Both distributions verified against the kernel_kmeans problem's double reference (DIST and the
   new labels, near-ties as the problem accepts them) at an odd requested shape and the
   command's own odd shapes, on 2 ranks and on 4 (a 2 x 2 grid, oversubscribed).
2. Words received per rank equal the analysis, worked out here independently from the sizes:
   1d all-gathers the other blocks' points and labels; 2d gets its grid row's and column's points,
   its grid column's labels and (Pc - 1) blocks of S partials; both 2K words from each other rank.
   At 4 ranks 2d receives fewer point and label words than 1d.
3. A column block left out of rank 0's 2d sums (--fault drop_chunk) is caught: exit 1.
4. One rank without mpirun: verified, nothing received.
Small sizes: each run takes a second or two. Asserts no timing.
"""
import argparse
import json
import math
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def overlap(args, a, ranks):
    cmd = ([a.mpirun, "--oversubscribe", "-n", str(ranks)] if ranks > 1 else []) + [a.kforge, "overlap",
                                                                                     "kernel_kmeans_dist"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        return r, None


def analysis(n, d, k, ranks, two_d):
    """Words each rank receives: [x, labels, S partials, cluster sums and sizes]."""
    size = [n * (b + 1) // ranks - n * b // ranks for b in range(ranks)]
    pr = max(a for a in range(1, math.isqrt(ranks) + 1) if ranks % a == 0) if two_d else 1
    pc = ranks // pr
    rows = (lambda q, b: b // pc == q // pc) if two_d else (lambda q, b: b == q)
    cols = (lambda q, b: b // pr == q % pc) if two_d else (lambda q, b: True)
    out = []
    for q in range(ranks):
        others = [b for b in range(ranks) if b != q]
        out.append([sum(size[b] * d for b in others if rows(q, b) or cols(q, b)),
                    sum(size[b] for b in others if cols(q, b)),
                    (pc - 1) * size[q] * k if two_d else 0,
                    2 * k * (ranks - 1)])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    for ranks, (n, d, k) in ((2, (203, 3, 5)), (4, (301, 4, 6))):
        what = f"{ranks} ranks N={n},D={d},K={k}"
        r, doc = overlap(["--size", f"N={n},D={d},K={k}", "--rounds", "1", "--trials", "1", "--json"], a, ranks)
        check(r.returncode == 0 and doc is not None, f"{what}: exit 0 with JSON ({r.returncode}: {r.stderr[-600:]})")
        if doc is None:
            continue
        check(doc["verified"] and doc["ranks"] == ranks, f"{what}: both forms verified ({doc.get('failure')})")
        if not doc["verified"]:
            continue
        check(len(doc["shapes"]) >= 4 and doc["runs_checked"] >= 2 * 2 * len(doc["shapes"]),
              f"{what}: both forms at several shapes and trials ({doc['runs_checked']} runs)")
        c = doc["counts"]
        one_d, two_d = analysis(n, d, k, ranks, False), analysis(n, d, k, ranks, True)
        check(c["per_rank"] == two_d and c["expected_per_rank"] == two_d,
              f"{what}: 2d words per rank as the analysis ({c['per_rank']} vs {two_d})")
        check(c["context"]["per_rank_1d"] == one_d, f"{what}: 1d words per rank as the analysis")
        if ranks == 4:
            check(all(t[0] + t[1] < o[0] + o[1] for t, o in zip(two_d, one_d)),
                  f"{what}: 2d receives fewer point and label words than 1d on every rank")
    r, doc = overlap(["--size", "N=120,D=2,K=4", "--rounds", "1", "--trials", "1", "--json", "--fault", "drop_chunk"],
                     a, 2)
    check(r.returncode == 1 and doc is not None and not doc["verified"] and "2d" in doc["failure"],
          f"a column block left out of the 2d sums is caught ({r.returncode}: {doc and doc.get('failure')})")
    r, doc = overlap(["--size", "N=50,D=2,K=3", "--rounds", "1", "--trials", "1", "--json"], a, 1)
    check(r.returncode == 0 and doc is not None and doc["verified"] and doc["counts"]["per_rank"] == [[0, 0, 0, 0]],
          "one rank without mpirun: verified, nothing received")
    r, _ = overlap(["--size", "K=0"], a, 1)
    check(r.returncode == 2 and "error" in r.stderr, f"K=0: exit 2 ({r.returncode}: {r.stderr[-200:]})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
