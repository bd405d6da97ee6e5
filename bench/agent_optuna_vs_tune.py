#!/usr/bin/env python3
"""Optuna driving `kforge agent` beside kforge's own tuner, same problem, sizes and budget.

Usage: bench/agent_optuna_vs_tune.py [--kforge build/kforge] [--size M=384,N=384,K=384]
           [--budget 30] [--seeds 3] [--threads 0] [--out bench/agent_optuna_results.md]

Installs optuna (pinned) into bench/.venv on first use and re-runs itself there; the proposer
(examples/proposers/optuna_params.py, TPE seeded) runs under that interpreter. Methods:
  agent-optuna  kforge agent --proposer 'optuna_params.py kernels/gemm/gemm_cpu.json --seed S'
  tune-bayes    kforge tune gemm --strategy bayes --tune-seed S
  tune-random   kforge tune gemm --strategy random --tune-seed S
For each seed the three run one after another, the order rotated per seed (interleaved: a load
change on the host hits every method). Every run gets its own temporary results store, so
nothing is resumed or answered from an earlier run.

Reported per method (over seeds):
  best     the winner's time re-measured at the end of the run, beside the baseline (kforge agent's
           final check; kforge tune's re-timed best): median over seeds, and min..max;
  to 5%    evaluations until the run first tried a configuration within 5% of the best one anyone
           found. A configuration's time is the median of every measurement of it in this bench
           (all runs, all methods), so one lucky timing does not set the bar. "-" when the run
           never got there; the median over seeds is given when at least half got there;
  invalid  attempts spent on configurations that break the spec's constraints (the agent's
           proposer cannot know the constraints' verdict before kforge answers; tune draws only
           valid configurations, so it never spends one);
  wall     seconds per run (compiles are cached on disk and shared, so a later run of a
           configuration compiles for free: compare wall times with care).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import bench_venv

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OPTUNA_VERSION = "5.1.0"
SPEC = os.path.join(ROOT, "kernels", "gemm", "gemm_cpu.json")
PROPOSER = os.path.join(ROOT, "examples", "proposers", "optuna_params.py")
METHODS = ["agent-optuna", "tune-bayes", "tune-random"]


def ensure_venv():
    bench_venv.ensure("optuna", f"optuna=={OPTUNA_VERSION}")


def config_key(params):
    return json.dumps(params, sort_keys=True)


def run_agent(args, seed, tmp):
    log = os.path.join(tmp, "log.jsonl")
    proposer = f"{sys.executable} {PROPOSER} {SPEC} --seed {seed} --log {log}"
    cmd = [args.kforge, "agent", "--problem", "gemm", "--size", args.size, "--threads", str(args.threads),
           "--budget", str(args.budget), "--seed", str(seed), "--proposer", proposer,
           "--db", os.path.join(tmp, "results.db"), "--out", os.path.join(tmp, "out"), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError("kforge agent failed:\n" + r.stderr[-3000:])
    summary = json.loads(r.stdout)
    show = subprocess.run([args.kforge, "db", "show", str(summary["run"]), "--json",
                           "--db", os.path.join(tmp, "results.db")], capture_output=True, text=True, check=True)
    trace = []
    for a in json.loads(show.stdout)["agent_attempts"]:
        t = a.get("median_s") if a.get("disposition") == "passed" else None
        trace.append((config_key(a["candidate"].get("params", {})), a.get("disposition"), t))
    final = None
    if summary.get("final_passed") and summary.get("final"):
        final = summary["final"].get("timing", {}).get("median_s")
    if final is None and summary.get("best"):
        final = summary["best"].get("median_s")
    return trace, final


def run_tune(args, strategy, seed, tmp):
    cmd = [args.kforge, "tune", "gemm", "--size", args.size, "--threads", str(args.threads),
           "--strategy", strategy, "--budget", str(args.budget), "--tune-seed", str(seed),
           "--db", os.path.join(tmp, "results.db"), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError("kforge tune failed:\n" + r.stderr[-3000:])
    out = json.loads(r.stdout)[0]
    trace = []
    for e in out["evaluations"]:
        t = e.get("median_s") if e.get("disposition") == "passed" else None
        trace.append((config_key(e.get("params", {})), e.get("disposition"), t))
    final = out.get("best", {}).get("median_s") if out.get("best") else None
    return trace, final


def fmt_ms(s):
    return "-" if s is None else "%.3f" % (s * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--size", default="M=384,N=384,K=384")
    ap.add_argument("--budget", type=int, default=30)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", default=os.path.join(HERE, "agent_optuna_results.md"))
    ap.add_argument("--raw", default="", help="also write every run's trace as JSON here")
    ap.add_argument("--from-raw", default="", help="make the table from a --raw file instead of running")
    ap.add_argument("--within", default="5,2", help="percent thresholds for the evaluations-to columns")
    ap.add_argument("--early", type=int, default=10, help="also report the best configuration of the first N")
    args = ap.parse_args()
    ensure_venv()
    import optuna

    runs = []  # {method, seed, trace, final, wall}
    if args.from_raw:
        with open(args.from_raw) as f:
            runs = json.load(f)
        args.seeds = max(r["seed"] for r in runs)
    for seed in range(1, 0 if args.from_raw else args.seeds + 1):
        k = (seed - 1) % len(METHODS)
        for method in METHODS[k:] + METHODS[:k]:
            tmp = tempfile.mkdtemp(prefix="kforge-optuna-bench-")
            t0 = time.time()
            try:
                if method == "agent-optuna":
                    trace, final = run_agent(args, seed, tmp)
                else:
                    trace, final = run_tune(args, method.split("-")[1], seed, tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            wall = time.time() - t0
            runs.append({"method": method, "seed": seed, "trace": trace, "final": final, "wall": wall,
                         "load": os.getloadavg()[0]})
            best = min((t for _, _, t in trace if t is not None), default=None)
            print("%-13s seed %d: %2d evaluations, best seen %s ms, final %s ms, %.0f s" % (
                method, seed, len(trace), fmt_ms(best), fmt_ms(final), wall), file=sys.stderr, flush=True)

    # A configuration's time: the median of all its measurements in this bench.
    measured = {}
    for r in runs:
        for key, _, t in r["trace"]:
            if t is not None:
                measured.setdefault(key, []).append(t)
    pooled = {k: statistics.median(v) for k, v in measured.items()}
    thresholds = [float(x) for x in args.within.split(",")]
    ref = min(pooled.values())
    ref_key = min(pooled, key=pooled.get)

    rows = []
    for method in METHODS:
        mine = [r for r in runs if r["method"] == method]
        finals = [r["final"] for r in mine if r["final"] is not None]
        cells = []
        for pct in thresholds:
            reach = []
            for r in mine:
                n = next((i + 1 for i, (key, _, t) in enumerate(r["trace"])
                          if t is not None and pooled[key] <= (1 + pct / 100) * ref), None)
                reach.append(n)
            got = sorted(n for n in reach if n is not None)
            reach_med = statistics.median(got) if len(got) * 2 >= len(reach) and got else None
            cells.append("%s (%s)" % ("-" if reach_med is None else "%g" % reach_med,
                                      ", ".join("-" if n is None else str(n) for n in reach)))
        early = []
        for r in mine:
            ts = [pooled[key] for key, _, t in r["trace"][:args.early] if t is not None]
            early.append(min(ts) / ref if ts else float("inf"))
        invalid = [sum(1 for _, d, _ in r["trace"] if d == "invalid_config") for r in mine]
        failed = [sum(1 for _, d, _ in r["trace"] if d not in ("passed", "invalid_config")) for r in mine]
        rows.append("| %s | %s | %s..%s | %s | %.3f (%.3f..%.3f) | %s | %s | %.0f |" % (
            method, fmt_ms(statistics.median(finals)) if finals else "-",
            fmt_ms(min(finals)) if finals else "-", fmt_ms(max(finals)) if finals else "-",
            " | ".join(cells), statistics.median(early), min(early), max(early),
            "/".join(str(i) for i in invalid), "/".join(str(f) for f in failed),
            statistics.median(r["wall"] for r in mine)))

    try:
        cpu = next(l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    loads = [r["load"] for r in runs if "load" in r]
    load = ", 1-minute load average %.1f..%.1f after the runs" % (min(loads), max(loads)) if loads else ""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Optuna through `kforge agent` beside `kforge tune`",
        "",
        "Generated by `bench/agent_optuna_vs_tune.py --size %s --budget %d --seeds %d --threads %d` on %s." % (
            args.size, args.budget, args.seeds, args.threads, now),
        "Machine: %s, %d cores visible, %s; optuna %s (TPE, seeded). **A noisy shared host**: the "
        "cores are shared with other sessions' builds and runs%s, so single timings swing; the methods "
        "were run interleaved (per seed, the order rotated) so load changes hit all of them." % (
            cpu, os.cpu_count(), platform.platform(), optuna.__version__, load),
        "",
        "Problem gemm (fp32, cpu) at %s, kernel gemm.cpu (7 parameters, spec constraints), budget %d "
        "evaluations per run, the default configuration first in every method. Best = the winner re-timed "
        "at the end of the run beside the baseline (median over seeds, min..max). To 5%% = evaluations "
        "until the run first tried a configuration within 5%% of the best configuration anyone found "
        "(%s ms, %s; a configuration's time is the median of all its measurements in this bench), per "
        "seed in parentheses (the same with 2%%). Best of first %d = the best configuration among the "
        "first %d evaluations, by that pooled time, over the best configuration. Invalid = attempts spent on configurations breaking the constraints, "
        "per seed; failed = other failures; wall = median seconds per run." % (
            args.size, args.budget, fmt_ms(ref), ref_key, args.early, args.early),
        "",
        "| method | best ms (median) | best ms min..max | %s | best of first %d / best (median, min..max) "
        "| invalid | failed | wall s/run |" % (" | ".join("evaluations to %g%% (per seed)" % p for p in thresholds),
                                                  args.early),
        "|---|---|---|%s---|---|---|---|" % ("---|" * len(thresholds)),
    ] + rows + [
        "",
        "Differences under about 2% are within this host's run-to-run noise (most configurations were "
        "measured once), so read the 2% column and the best times as ties unless the gap is larger.",
        "The agent's proposer cannot see the constraints' verdict before it spends an attempt "
        "(`invalid_config` costs an attempt but no compile or timing); `kforge tune` draws only valid "
        "configurations. Each agent attempt also runs the full gates (thorough verification with "
        "held-out shapes, timing beside the baseline) where tune only verifies and times the kernel; "
        "compiles are cached on disk and shared by all runs, so wall times compare loosely.",
        "A noise-free comparison on a recorded space (as bench/strategies does with `tune --replay`) is "
        "not possible here: `kforge agent` always evaluates live and has no replay of a recorded space.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(lines))
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(runs, f)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
