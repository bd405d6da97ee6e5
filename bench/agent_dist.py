#!/usr/bin/env python3
"""`kforge agent` batches over MPI ranks (docs/distributed.md, "The agent over ranks"): the time
to answer one batch of N candidates with 1 rank against 2 ranks, and whether the answers are the
same.

Each round runs, interleaved:
  1 rank     `mpirun -n 1 kforge agent --parallel N`: rank 0 evaluates the batch one candidate
             at a time (each in its own kforge-worker, as every agent candidate is);
  2 ranks    `mpirun -n 2 kforge agent --parallel N`: the batch split over the two ranks, each
             rank taking the next candidate as it finishes one;
  no mpirun  plain `kforge agent --parallel N` for reference: all N workers at once, as today.
Every run evaluates with --threads 1. The proposer is this script (--as-proposer): it sends the
N candidates as one batch and times from its last candidate sent to the N-th feedback read,
which leaves out start-up, the baseline measurement and the final re-check of the best. Every
run gets a fresh store and an empty compile cache (cold: each candidate compiles, as an agent's
new sources do). The verdicts (disposition and failing check per candidate) of every run are
compared with the first 1-rank run's. CPU timings.

    python3 bench/agent_dist.py [--kforge build/kforge] [--rounds 3] [--json raw.json]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples", "proposers", "gemm")
INSTANCE = ["--problem", "gemm", "--size", "M=96,N=80,K=64", "--threads", "1", "--no-index-width",
            "--min-time", "0.05", "--max-time", "0.3"]
# Eight candidates of uneven cost: three loop orders at several tile heights, and one wrong.
CANDIDATES = [("naive.cpp", {"BM": 8}), ("naive.cpp", {"BM": 16}), ("naive.cpp", {"BM": 32}),
              ("row_axpy.cpp", {"BM": 8}), ("row_axpy.cpp", {"BM": 16}), ("row_axpy.cpp", {"BM": 32}),
              ("tiled_fixed.cpp", {"BM": 16, "BN": 16}), ("tiled_tail_bug.cpp", {"BM": 16, "BN": 16})]


def as_proposer(timing_path):
    """The proposer side: one batch of every candidate, timed to its last feedback."""
    task = json.loads(sys.stdin.readline())
    n = task["batch"]
    for i, (src, params) in enumerate(CANDIDATES[:n]):
        with open(os.path.join(EXAMPLES, src)) as f:
            source = f.read()
        sys.stdout.write(json.dumps({"type": "candidate", "source": source, "grid": ["ceil_div(M,BM)"],
                                     "params": params, "note": f"{src} {params}"}) + "\n")
    sys.stdout.flush()
    t0 = time.monotonic()
    feedback = [json.loads(sys.stdin.readline()) for _ in range(n)]
    elapsed = time.monotonic() - t0
    verdicts = [(f["candidate_hash"], f["disposition"], (f.get("failure") or {}).get("check")) for f in feedback]
    with open(timing_path, "w") as f:
        json.dump({"answer_s": elapsed, "verdicts": verdicts, "order": [f["batch_index"] for f in feedback]}, f)
    sys.stdin.readline()  # done
    return 0


def cache_home():
    if os.environ.get("KFORGE_CACHE_DIR"):
        return os.environ["KFORGE_CACHE_DIR"]
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kforge")


def fresh_cache(tmp):
    """An empty cache folder holding only the machine's ceilings (so none are re-measured)."""
    d = tempfile.mkdtemp(dir=tmp)
    src = os.path.join(cache_home(), "ceilings")
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(d, "ceilings"))
    return d


def agent(a, tmp, mode, n):
    run = tempfile.mkdtemp(dir=tmp)
    timing = os.path.join(run, "timing.json")
    cmd = [a.kforge, "agent", *INSTANCE, "--budget", str(n), "--parallel", str(n), "--proposer",
           f"python3 {os.path.abspath(__file__)} --as-proposer {timing}", "--db", os.path.join(run, "r.db"),
           "--out", os.path.join(run, "out"), "--json"]
    if mode != "plain":
        cmd = [a.mpirun, "-n", str(mode), "--oversubscribe"] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_THREAD_TIMEOUT="4", KFORGE_CACHE_DIR=fresh_cache(tmp))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode not in (0, 1):
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    with open(timing) as f:
        t = json.load(f)
    t["ranks"] = json.loads(p.stdout)["ranks"]
    return t


def fmt(xs, digits=2):
    return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}..{max(xs):.{digits}f})"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--as-proposer":
        return as_proposer(sys.argv[2])
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=len(CANDIDATES))
    ap.add_argument("--json", help="also write the raw figures here")
    a = ap.parse_args()
    modes = [1, 2, "plain"]
    tmp = tempfile.mkdtemp(prefix="kforge-agent-dist-bench-")
    runs, ref = [], None
    try:
        for rnd in range(a.rounds):
            for m in modes:
                t = agent(a, tmp, m, a.batch)
                ref = ref or t["verdicts"]
                t.update(round=rnd, mode=str(m), same=t["verdicts"] == ref, in_order=t["order"] == list(range(a.batch)))
                runs.append(t)
                print(f"round {rnd + 1} {m}: {t['answer_s']:.2f} s, same verdicts: {t['same']}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\nbatch of {a.batch} candidates, {' '.join(INSTANCE)}; {os.cpu_count()} cores; CPU timings\n")
    print("| run | time to answer the batch, s | vs 1 rank | verdicts as 1 rank | in batch order |")
    print("|---|---|---|---|---|")
    one = {r["round"]: r["answer_s"] for r in runs if r["mode"] == "1"}
    for m, label in ((1, "1 rank (mpirun -n 1)"), (2, "2 ranks (mpirun -n 2)"), ("plain", "no mpirun, all at once")):
        rs = [r for r in runs if r["mode"] == str(m)]
        print(f"| {label} | {fmt([r['answer_s'] for r in rs])} | {fmt([one[r['round']] / r['answer_s'] for r in rs])}x "
              f"| {sum(r['same'] for r in rs)}/{len(rs)} | {sum(r['in_order'] for r in rs)}/{len(rs)} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"instance": INSTANCE, "batch": a.batch, "runs": runs}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
