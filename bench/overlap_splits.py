#!/usr/bin/env python3
"""The overlapped multi-rank GEMMs (docs/overlap.md) at each fixed split and at the chosen one:
`mpirun -n R kforge overlap P --chunks C` for C in 1, 2, 4, 8, 16 and 0 (chosen by the model),
per problem and emulated link, interleaved round by round. Prints per configuration the medians
over rounds of the serial and overlapped times (the overlapped time's and the per-round speedup's
min..max beside), the exposed communication, the overlap
efficiency, the percent of ideal, and the chosen split's time against the best fixed one.
CPU timings; the ranks share the host's cores, so keep R at or below the core count.

    python3 bench/overlap_splits.py [--kforge build/kforge] [--ranks 2] [--size M=1024,N=1024,K=1024]
                                    [--links 0.25,0.02] [--rounds 3]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(a, problem, chunks, gbps):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_THREAD_TIMEOUT="1")
    cmd = [a.mpirun, "-n", str(a.ranks), a.kforge, "overlap", problem, "--size", a.size, "--chunks", str(chunks),
           "--link-gbps", str(gbps), "--rounds", "1", "--trials", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-1500:]}\n{out.stderr[-1500:]}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--size", default="M=1024,N=1024,K=1024")
    ap.add_argument("--links", default="0.25,0.02")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    splits = [1, 2, 4, 8, 16, 0]
    print(f"# {a.ranks} ranks, {a.size}, {a.rounds} rounds; load average {os.getloadavg()[0]:.2f} at start")
    print("| problem | link GB/s | chunks | serial ms | overlapped ms (min..max) | serial / overlapped (min..max) "
          "| exposed serial ms | exposed overlapped ms | efficiency | % of ideal |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for problem in ("ag_gemm", "gemm_rs"):
        for gbps in [float(x) for x in a.links.split(",")]:
            docs = {c: [] for c in splits}
            for _ in range(a.rounds):
                for c in splits:
                    docs[c].append(run(a, problem, c, gbps))
            best = None
            for c in splits:
                m = lambda f: statistics.median(f(d) for d in docs[c])
                ov = m(lambda d: d["overlapped"]["time_s"]) * 1e3
                label = f"{docs[c][0]['overlapped']['chunks']} (chosen)" if c == 0 else str(c)
                if c != 0:
                    best = ov if best is None else min(best, ov)
                ovs = [d["overlapped"]["time_s"] * 1e3 for d in docs[c]]
                sp = [d["serial"]["time_s"] / d["overlapped"]["time_s"] for d in docs[c]]
                print(f"| {problem} | {gbps:g} | {label} | {m(lambda d: d['serial']['time_s']) * 1e3:.1f} | "
                      f"{ov:.1f} ({min(ovs):.1f}..{max(ovs):.1f}) | {statistics.median(sp):.2f}x ({min(sp):.2f}..{max(sp):.2f}) | "
                      f"{m(lambda d: d['serial']['exposed_s']) * 1e3:.1f} | "
                      f"{m(lambda d: d['overlapped']['exposed_s']) * 1e3:.1f} | {m(lambda d: d['overlap_efficiency']):.2f} | "
                      f"{m(lambda d: d['percent_of_ideal']):.0f} |")
            chosen = statistics.median(d["overlapped"]["time_s"] for d in docs[0]) * 1e3
            print(f"| {problem} | {gbps:g} | chosen / best fixed | | {chosen / best:.2f}x | | | | | |")
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
