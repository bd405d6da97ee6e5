#!/usr/bin/env python3
"""moe_dist and gnn_dist (docs/overlap.md): the overlapped form against the baseline, per problem,
rank count and link. One `mpirun -n R kforge overlap P --rounds N` per configuration: kforge
verifies both forms, then times them in turn N times (baseline, overlapped, baseline, ...), so
each round's ratio pairs two runs taken back to back. Prints per configuration the medians over
rounds of both times (min..max beside), the per-round ratio baseline / overlapped (median,
min..max), the exposed communication, the overlap efficiency, the percent of ideal, and the
exact transfer counts summed over ranks. CPU timings; more ranks than cores is oversubscribed
(said in the table).

    python3 bench/overlap_dist_apps.py [--kforge build/kforge] [--ranks 2,4] [--links 0.25,0]
        [--rounds 5] [--moe-size T=2048,H=512,F=512,E=8,K=2] [--gnn-size M=65536,N=128,NNZ=262144]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(a, problem, size, ranks, gbps):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_THREAD_TIMEOUT="1")
    cmd = [a.mpirun, "--oversubscribe", "-n", str(ranks), a.kforge, "overlap", problem, "--size", size,
           "--link-gbps", str(gbps), "--rounds", str(a.rounds), "--trials", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}")
    return json.loads(out.stdout)


def spread(v):
    return f"{statistics.median(v):.1f} ({min(v):.1f}..{max(v):.1f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--links", default="0.25,0")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--moe-size", default="T=2048,H=512,F=512,E=8,K=2")
    ap.add_argument("--gnn-size", default="M=65536,N=128,NNZ=262144")
    a = ap.parse_args()
    cores = os.cpu_count()
    print(f"# {a.rounds} rounds per configuration, {cores} cores; load average {os.getloadavg()[0]:.2f} at start")
    print("| problem | ranks | link GB/s | baseline ms (min..max) | overlapped ms (min..max) "
          "| baseline / overlapped (min..max) | exposed baseline ms | exposed overlapped ms | efficiency "
          "| % of ideal | moved (all ranks) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for problem, size in (("moe_dist", a.moe_size), ("gnn_dist", a.gnn_size)):
        for ranks in [int(x) for x in a.ranks.split(",")]:
            for gbps in [float(x) for x in a.links.split(",")]:
                d = run(a, problem, size, ranks, gbps)
                st = [t * 1e3 for t in d["serial"]["times_s"]]
                ot = [t * 1e3 for t in d["overlapped"]["times_s"]]
                ratio = [s / o for s, o in zip(st, ot)]
                c = d["counts"]
                sums = [sum(row[i] for row in c["per_rank"]) for i in range(len(c["names"]))]
                moved = ", ".join(f"{n} {v}" for n, v in zip(c["names"], sums) if n.startswith("rows"))
                label = f"{ranks}" + (" (oversubscribed)" if ranks > cores else "")
                print(f"| {problem} | {label} | {gbps:g} | {spread(st)} | {spread(ot)} | "
                      f"{statistics.median(ratio):.2f}x ({min(ratio):.2f}..{max(ratio):.2f}) | "
                      f"{d['serial']['exposed_s'] * 1e3:.1f} | {d['overlapped']['exposed_s'] * 1e3:.1f} | "
                      f"{d['overlap_efficiency']:.2f} | {d['percent_of_ideal']:.0f} | {moved} |", flush=True)
    print(f"# sizes: moe_dist {a.moe_size}; gnn_dist {a.gnn_size}; load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
