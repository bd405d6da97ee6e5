#!/usr/bin/env python3
"""Distributed tuning (docs/distributed.md): evaluations per minute of `mpirun -n R kforge tune`
against R, and whether R ranks evaluate what one rank evaluates.

Each round runs R = 1 (plain `kforge`, no mpirun), 2, 4 ... interleaved, in random strategy with
a fixed budget, one kernel thread per rank (--threads 1), so that every rank evaluates with the
same resources and only the number of evaluators changes. Evaluations per minute come from the
search's own wall time (the JSON's search_wall_s: no mpirun start-up, no re-verification of the
winner). Two modes:
  cold  every run starts with an empty compile cache (the machine's ceilings copied in), as a
        first tuning campaign does: each evaluation compiles its kernel;
  warm  the compiled modules are cached: each evaluation verifies and times only.
Above 2 ranks on a 2-core host the ranks are oversubscribed (mpirun --oversubscribe).
Then one run of bayes at 1 and 2 ranks, to show how far a strategy that learns from the order
of results drifts. CPU timings.

    python3 bench/dist_tune.py [--kforge build/kforge] [--rounds 3] [--ranks 1,2,4]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INSTANCE = ["gemm", "--backend", "cpu", "--size", "M=96,N=80,K=64", "--threads", "1"]


def cache_home():
    if os.environ.get("KFORGE_CACHE_DIR"):
        return os.environ["KFORGE_CACHE_DIR"]
    return os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "kforge")


def tune(a, ranks, strategy, budget, env_extra):
    cmd = [a.kforge, "tune", *INSTANCE, "--strategy", strategy, "--budget", str(budget), "--tune-seed", "3",
           "--no-db", "--json"]
    if ranks > 1:
        cmd = [a.mpirun, "-n", str(ranks), "--oversubscribe"] + cmd
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OPENBLAS_THREAD_TIMEOUT="4", **env_extra)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-2000:]}")
    doc = json.loads(p.stdout)[0]
    seen = sorted((json.dumps(e["params"], sort_keys=True), e["disposition"]) for e in doc["evaluations"])
    return {"evals": len(doc["evaluations"]), "search_s": doc["search_wall_s"], "wall_s": wall, "set": seen}


def fresh_cache(tmp):
    """An empty cache folder holding only the machine's ceilings (so none are re-measured)."""
    d = tempfile.mkdtemp(dir=tmp)
    src = os.path.join(cache_home(), "ceilings")
    if os.path.isdir(src):
        shutil.copytree(src, os.path.join(d, "ceilings"))
    return d


def fmt(xs):
    return f"{statistics.median(xs):.1f} ({min(xs):.1f}..{max(xs):.1f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--modes", default="cold,warm")
    ap.add_argument("--json", help="also write the raw figures here")
    a = ap.parse_args()
    ranks = [int(r) for r in a.ranks.split(",")]
    tmp = tempfile.mkdtemp(prefix="kforge-dist-bench-")
    raw = {"host": f"{os.cpu_count()} cores", "instance": " ".join(INSTANCE), "budget": a.budget, "runs": []}
    try:
        warm_cache = fresh_cache(tmp)
        for mode in a.modes.split(","):
            if mode == "warm":  # compile every configuration of the run once, then measure
                tune(a, 1, "random", a.budget, {"KFORGE_CACHE_DIR": warm_cache})
            for rnd in range(a.rounds):
                for r in ranks:
                    env = {"KFORGE_CACHE_DIR": fresh_cache(tmp) if mode == "cold" else warm_cache}
                    x = tune(a, r, "random", a.budget, env)
                    x.update(mode=mode, round=rnd, ranks=r, per_min=60 * x["evals"] / x["search_s"])
                    raw["runs"].append(x)
                    print(f"{mode} round {rnd} ranks {r}: {x['per_min']:.1f} evaluations/min", flush=True)
        bayes = {r: tune(a, r, "bayes", a.budget, {"KFORGE_CACHE_DIR": warm_cache})["set"] for r in (1, 2)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\n{raw['host']}; {raw['instance']}; random, budget {a.budget}; median (min..max) of {a.rounds} rounds")
    print("| mode | ranks | evaluations/min | vs 1 rank | search s | command s | same set as 1 rank |")
    print("|---|---|---|---|---|---|---|")
    for mode in a.modes.split(","):
        runs = [x for x in raw["runs"] if x["mode"] == mode]
        for r in ranks:
            mine = [x for x in runs if x["ranks"] == r]
            ratio = [x["per_min"] / y["per_min"] for x in mine for y in runs if y["ranks"] == 1 and y["round"] == x["round"]]
            same = sum(x["set"] == y["set"] for x in mine for y in runs if y["ranks"] == 1 and y["round"] == x["round"])
            print(f"| {mode} | {r}{' (oversubscribed)' if r > (os.cpu_count() or 1) else ''} | "
                  f"{fmt([x['per_min'] for x in mine])} | {fmt(ratio) if r > 1 else '1'} | "
                  f"{fmt([x['search_s'] for x in mine])} | {fmt([x['wall_s'] for x in mine])} | {same}/{len(mine)} |")
    common = len(set(bayes[1]) & set(bayes[2]))
    print(f"\nbayes, budget {a.budget}: 2 ranks share {common} of {len(bayes[1])} (configuration, disposition) pairs with 1 rank")
    if a.json:
        raw["bayes_shared"] = [common, len(bayes[1])]
        for x in raw["runs"]:
            x.pop("set")
        with open(a.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
