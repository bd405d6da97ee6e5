#!/usr/bin/env python3
"""`mpirun -n R kforge overlap moe_dist|gnn_dist` (src/dist/moe_dist.cpp, gnn_dist.cpp,
docs/overlap.md).

1. Both problems, both forms (baseline and overlapped), verified against the single-rank double
   reference (moe_grouped_gemm's, gnn_aggregate's) at an odd requested shape and the command's
   own odd shapes, with 2 ranks and with 3 (oversubscribed), an emulated link and MPI's own.
2. Exact counts: moe_dist sends one row per routed pair whose expert is on another rank (never
   all pairs) and gets one back; gnn_dist fetches each distinct remote row once (never whole
   partitions). kforge checks them against the routing / graph in every verified run; here the
   reported counts are checked for consistency with the sizes.
3. A dropped batch / piece in the overlapped form is caught: exit 1, the failure names it.
4. One rank without mpirun; bad sizes exit 2.
Small sizes: each run takes a second or two. Asserts no timing.
"""
import argparse
import json
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def overlap(args, kforge, mpirun, ranks):
    cmd = ([mpirun, "--oversubscribe", "-n", str(ranks)] if ranks > 1 else []) + [kforge, "overlap"] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    try:
        return r, json.loads(r.stdout)
    except ValueError:
        return r, None


def sizes_of(arg):
    return {k: int(v) for k, v in (kv.split("=") for kv in arg.split(","))}


def check_moe_counts(doc, s, ranks, what):
    c = doc["counts"]
    names = c["names"]
    got = [dict(zip(names, row)) for row in c["per_rank"]]
    check(c["per_rank"] == c["expected_per_rank"], f"{what}: counts equal the routing's ({c['per_rank']})")
    pairs = c["context"]["routed_pairs_per_rank"]
    check(sum(pairs) == s["T"] * s["K"] and len(got) == ranks, f"{what}: routed pairs = T*K over {ranks} ranks")
    sent = sum(g["rows_sent"] for g in got)
    check(0 < sent < s["T"] * s["K"], f"{what}: some but not all pairs leave their rank ({sent} of {s['T'] * s['K']})")
    check(all(g["rows_sent"] <= p for g, p in zip(got, pairs)), f"{what}: no rank sends more rows than its pairs")
    check(sum(g["rows_returned"] for g in got) == sent, f"{what}: every sent row comes back once")
    check(all(g["bytes_sent"] == g["rows_sent"] * (8 + 4 * s["H"]) and g["bytes_returned"] == g["rows_returned"] * 4 * s["F"]
              for g in got), f"{what}: bytes = rows x row size")


def check_gnn_counts(doc, s, ranks, what):
    c = doc["counts"]
    got = [dict(zip(c["names"], row)) for row in c["per_rank"]]
    check(c["per_rank"] == c["expected_per_rank"], f"{what}: counts equal the graph's ({c['per_rank']})")
    whole, edges = c["context"]["remote_partition_rows_per_rank"], c["context"]["remote_edges_per_rank"]
    check(all(0 < g["rows_fetched"] < w for g, w in zip(got, whole)),
          f"{what}: each rank fetches some remote rows, never whole partitions ({got} vs {whole})")
    check(all(g["rows_fetched"] <= e for g, e in zip(got, edges)) and sum(g["rows_fetched"] for g in got) < sum(edges),
          f"{what}: a row named by several edges is fetched once")
    check(all(g["bytes_fetched"] == g["rows_fetched"] * 4 * s["N"] for g in got), f"{what}: bytes = rows x N x 4")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", required=True)
    ap.add_argument("--mpirun", default="mpirun")
    a = ap.parse_args()
    cases = [("moe_dist", 2, "T=101,H=33,F=17,E=5,K=2", ["--chunks", "3"]),
             ("moe_dist", 3, "T=50,H=16,F=12,E=4,K=2", ["--link-gbps", "0"]),
             ("gnn_dist", 2, "M=301,N=9,NNZ=600", ["--chunks", "3"]),
             ("gnn_dist", 3, "M=97,N=4,NNZ=200", ["--link-gbps", "0"])]
    for problem, ranks, size, extra in cases:
        what = f"{problem} on {ranks} ranks {size} {' '.join(extra)}"
        r, doc = overlap([problem, "--size", size, "--rounds", "1", "--trials", "1", "--json"] + extra,
                         a.kforge, a.mpirun, ranks)
        check(r.returncode == 0 and doc is not None, f"{what}: exit 0 with JSON ({r.returncode}: {r.stderr[-600:]})")
        if doc is None:
            continue
        check(doc["verified"] and doc["ranks"] == ranks, f"{what}: verified on {ranks} ranks ({doc.get('failure')})")
        if not doc["verified"]:  # nothing timed, no counts reported
            continue
        check(len(doc["shapes"]) >= 4 and doc["runs_checked"] >= 2 * 3 * len(doc["shapes"]),
              f"{what}: both forms at several shapes and trials ({doc['runs_checked']} runs)")
        check(doc["serial"]["time_s"] > 0 and doc["overlapped"]["time_s"] > 0, f"{what}: both forms timed")
        (check_moe_counts if problem == "moe_dist" else check_gnn_counts)(doc, sizes_of(size), ranks, what)
    for problem, size in (("moe_dist", "T=40,H=8,F=6,E=4,K=2"), ("gnn_dist", "M=60,N=3,NNZ=400")):
        r, doc = overlap([problem, "--size", size, "--chunks", "2", "--rounds", "1", "--trials", "1", "--json",
                          "--fault", "drop_chunk"], a.kforge, a.mpirun, 2)
        check(r.returncode == 1 and doc is not None and not doc["verified"] and "overlapped" in doc["failure"],
              f"{problem}: a dropped batch is caught ({r.returncode}: {doc and doc.get('failure')})")
    r, doc = overlap(["moe_dist", "--size", "T=9,H=4,F=3,E=3,K=2", "--rounds", "1", "--trials", "1", "--json"],
                     a.kforge, a.mpirun, 1)
    check(r.returncode == 0 and doc is not None and doc["verified"] and doc["counts"]["per_rank"] == [[0, 0, 0, 0]],
          "moe_dist on one rank without mpirun: verified, nothing sent")
    for bad in (["moe_dist", "--size", "Q=3"], ["moe_dist", "--size", "K=3"], ["gnn_dist", "--size", "M=0"]):
        r, _ = overlap(bad, a.kforge, a.mpirun, 1)
        check(r.returncode == 2 and "error" in r.stderr, f"{' '.join(bad)}: exit 2 ({r.returncode}: {r.stderr[-200:]})")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
