#!/usr/bin/env python3
"""Kernel Tuner's strategies beside kforge's, on the same recorded spaces, in one table.

Usage: bench/strategies_kerneltuner.py [--kforge BUILD/bench/strategies] [--seeds 25]
           [--budgets 20,50,100,200] [--strategies a,b] CACHE.json...

Installs kernel_tuner (pinned) into bench/.venv on first use and re-runs itself there. Each
Kernel Tuner strategy runs in its simulation mode (a cache file replayed as the device), with
strategy_options={"max_fevals": budget}. Every generator a strategy may draw from is seeded per
run: Python's, NumPy's global one (scipy's dual_annealing and differential_evolution draw from
it) and scipy's Latin hypercube sampler (bayes_opt's and diff_evo's initial samples; left alone
it draws from fresh OS entropy). Each run gets its own Searchspace: the object caches neighbours
as a strategy asks for them, so a shared one would let later runs follow earlier ones.
The search space given to Kernel Tuner is exactly the configurations recorded in the cache,
failed ones included (as kforge's replay sees it), so both pay for failures alike; Kernel
Tuner's own tune_cache() would drop the failed configurations from the space.

Metric per (space, strategy, budget): median over seeds of best time found / the recorded
optimum; and from the runs with the largest budget, the median number of evaluations until
the best came within 5% and 1% of the optimum ("-" when fewer than half the seeds got there).
The kforge numbers come from `bench/strategies --json` run with the same seeds and budgets.
"""
import argparse
import copy
import inspect
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import bench_venv

HERE = os.path.dirname(os.path.abspath(__file__))
KT_VERSION = "1.5.0"
KT_STRATEGIES = ["random_sample", "simulated_annealing", "genetic_algorithm", "greedy_ils", "mls",
                 "pso", "diff_evo", "firefly_algorithm", "dual_annealing", "bayes_opt"]
# Strategies that pace themselves by max_fevals (annealing schedules): the first 50 evaluations of
# a 200-evaluation run are not a 50-evaluation run, so these run once per budget.
SELF_PACING = {"simulated_annealing", "dual_annealing"}


def ensure_venv():
    bench_venv.ensure("kernel_tuner", f"kernel_tuner=={KT_VERSION}")


def median_or_none(values):
    finite = sorted(values)
    m = statistics.median(finite) if finite else math.inf
    return None if math.isinf(m) else m


_LATIN_HYPERCUBE = None  # scipy's own class, kept before it is replaced by seeded_latin_hypercube


def seed_latin_hypercube(seed):
    """Makes every scipy LatinHypercube built without a seed draw from one generator seeded by
    `seed` (Kernel Tuner builds them unseeded, so np.random.seed does not reach them)."""
    global _LATIN_HYPERCUBE
    import numpy as np
    from scipy.stats import qmc
    import kernel_tuner.strategies.bayes_opt as kt_bayes_opt

    if _LATIN_HYPERCUBE is None:
        _LATIN_HYPERCUBE = qmc.LatinHypercube
    original = _LATIN_HYPERCUBE
    # scipy >= 1.15 names the argument rng; older versions only know seed.
    key = "rng" if "rng" in inspect.signature(original.__init__).parameters else "seed"
    generator = np.random.default_rng(seed)

    def seeded(*args, **kwargs):
        if kwargs.get("rng") is None and kwargs.get("seed") is None:
            kwargs.pop("rng", None)
            kwargs.pop("seed", None)
            kwargs[key] = generator
        return original(*args, **kwargs)

    qmc.LatinHypercube = seeded  # searchspace.get_LHS_sample imports it at each call
    if hasattr(kt_bayes_opt, "LatinHypercube"):  # imported by name when the module loaded
        kt_bayes_opt.LatinHypercube = seeded


class Replayer:
    """One cache file, loaded once; Kernel Tuner's cache reading is memoized, and the search
    space is built once and deep-copied for each run (a fresh, unused Searchspace every time,
    without rebuilding its constraint solution)."""

    def __init__(self, path, tmpdir):
        import kernel_tuner.interface as kti
        import kernel_tuner.util as ktu
        from constraint import FunctionConstraint

        self.path = path
        self.copy = os.path.join(tmpdir, os.path.basename(path))
        shutil.copy(path, self.copy)  # Kernel Tuner may touch the file it is given
        os.chmod(self.copy, 0o644)
        self.data = ktu.read_cache(self.copy, open_cache=False)
        keys = self.data["tune_params_keys"]
        self.members = set(tuple(e[k] for k in keys) for e in self.data["cache"].values())
        times = [e["time"] for e in self.data["cache"].values() if isinstance(e.get("time"), (int, float))]
        self.optimum = min(times)
        members = self.members
        self.restriction = FunctionConstraint(lambda *values: tuple(values) in members)
        self.pristine = None  # a Searchspace no strategy has touched
        self.kti, self.ktu = kti, ktu

    def run(self, strategy, budget, seed):
        import random
        import numpy as np
        from kernel_tuner.searchspace import Searchspace

        kti, ktu, me = self.kti, self.ktu, self

        def process_cache(cachefile, kernel_options, tuning_options, runner):
            runner.dev.name = me.data["device_name"]
            return me.data["cache"]

        def searchspace(*args, **kwargs):
            # The arguments are the same for every run on this cache, so a copy of the first
            # space built is what a fresh construction would give.
            if me.pristine is None:
                me.pristine = Searchspace(*args, **kwargs)
            try:
                return copy.deepcopy(me.pristine)
            except Exception:  # something in it that cannot be copied: build it again
                return Searchspace(*args, **kwargs)

        kti.util.process_cache = process_cache
        kti.Searchspace = searchspace
        random.seed(seed)
        np.random.seed(seed)
        seed_latin_hypercube(seed)
        prob = self.data["problem_size"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            results, _ = kti.tune_kernel(
                self.data["kernel_name"], "", tuple(prob) if isinstance(prob, list) else (prob,), [],
                self.data["tune_params"], restrictions=[self.restriction], cache=self.copy,
                simulation_mode=True, strategy=strategy, strategy_options={"max_fevals": budget},
                quiet=True, verbose=False)
        # The evaluation order, first visit of each configuration only.
        seen, best, trace = set(), math.inf, []
        keys = self.data["tune_params_keys"]
        for r in results:
            if not r:
                continue
            k = tuple(r[p] for p in keys)
            if k in seen:
                continue
            seen.add(k)
            t = r.get("time")
            if isinstance(t, (int, float)) and "__error__" not in r:
                best = min(best, t)
            trace.append(best)
        trace = trace[:budget]
        ratio = trace[-1] / self.optimum if trace and not math.isinf(trace[-1]) else math.inf

        def within(f):
            return next((i + 1 for i, b in enumerate(trace) if b <= self.optimum * (1 + f)), math.inf)

        return ratio, within(0.05), within(0.01), trace


def run_kernel_tuner(caches, strategies, budgets, seeds, prefix):
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in caches:
            name = os.path.splitext(os.path.basename(path))[0]
            rep = Replayer(path, tmp)
            out[name] = {"configurations": len(rep.members), "strategies": {}}
            for s in strategies:
                t0 = time.time()
                entry = {"ratio": {}, "to5": None, "to1": None}
                # With `prefix`, one run at the largest budget per seed; a smaller budget reads the
                # best found within its first evaluations. Self-pacing strategies always run once
                # per budget.
                per_budget = not prefix or s in SELF_PACING
                for b in budgets if per_budget else [max(budgets)]:
                    runs = []
                    for seed in range(1, seeds + 1):
                        try:
                            runs.append(rep.run(s, b, seed))
                        except Exception as e:  # e.g. bayes_opt on a space smaller than its sample
                            print(f"  {name} {s} budget {b} seed {seed}: {type(e).__name__}: {e}", file=sys.stderr)
                            runs.append((math.inf, math.inf, math.inf, []))
                    for bb in ([b] if per_budget else budgets):
                        def at(trace):
                            t = trace[:bb]
                            return t[-1] / rep.optimum if t and not math.isinf(t[-1]) else math.inf
                        entry["ratio"][str(bb)] = median_or_none([at(r[3]) for r in runs])
                    if b == max(budgets):
                        entry["to5"] = median_or_none([r[1] for r in runs])
                        entry["to1"] = median_or_none([r[2] for r in runs])
                out[name]["strategies"]["kernel_tuner " + s] = entry
                print(f"  {name} {s}: {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("caches", nargs="*")
    ap.add_argument("--kforge", help="path of kforge's bench/strategies binary")
    ap.add_argument("--seeds", type=int, default=25)
    ap.add_argument("--budgets", default="20,50,100,200")
    ap.add_argument("--strategies", default=",".join(KT_STRATEGIES), help="Kernel Tuner strategies")
    ap.add_argument("--json", help="write every number here")
    ap.add_argument("--per-budget", action="store_true",
                    help="one Kernel Tuner run per budget (default: one run at the largest budget, "
                         "smaller budgets read from its first evaluations, except for the "
                         "self-pacing " + " and ".join(sorted(SELF_PACING)) + ", always per budget)")
    ap.add_argument("--table-from", nargs="*", default=[],
                    help="print the table from JSON files written by --json (this script's or "
                         "bench/strategies'), running nothing")
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    table = {}
    if args.table_from:
        for path in args.table_from:
            doc = json.load(open(path))
            spaces = doc["spaces"]
            items = spaces.items() if isinstance(spaces, dict) else ((s["space"], s) for s in spaces)
            for name, v in items:
                table.setdefault(name, {"configurations": v["configurations"], "strategies": {}})
                table[name]["strategies"].update(v["strategies"])
        print_table(table, budgets, args.seeds)
        return
    ensure_venv()
    if args.kforge:
        with tempfile.NamedTemporaryFile(suffix=".json") as f:
            subprocess.check_call([args.kforge, *args.caches, "--seeds", str(args.seeds), "--budgets", args.budgets,
                                   "--json", f.name], stdout=subprocess.DEVNULL)
            for s in json.load(open(f.name))["spaces"]:
                table[s["space"]] = {"configurations": s["configurations"], "strategies": s["strategies"]}
    kt = run_kernel_tuner(args.caches, args.strategies.split(","), budgets, args.seeds, not args.per_budget)
    for name, v in kt.items():
        table.setdefault(name, {"configurations": v["configurations"], "strategies": {}})
        table[name]["strategies"].update(v["strategies"])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"seeds": args.seeds, "budgets": budgets, "spaces": table}, f, indent=1)
    print_table(table, budgets, args.seeds)


def print_table(table, budgets, seeds):
    def num(x, fmt):
        return "-" if x is None else fmt.format(x)

    print(f"Median over {seeds} seeds; best/opt = best time found / recorded optimum at each budget; "
          f"evals to 5%/1% from the {max(budgets)}-evaluation runs (- : fewer than half the seeds got there).\n")
    print("| space | strategy | " + " | ".join(f"best/opt @{b}" for b in budgets) + " | evals to 5% | evals to 1% |")
    print("|---|---|" + "---:|" * (len(budgets) + 2))
    for name, v in table.items():
        rows = sorted(v["strategies"].items(), key=lambda kv: (kv[1]["to5"] is None, kv[1]["to5"] or 0,
                                                                kv[1]["ratio"].get(str(max(budgets))) or 9e9))
        for strat, e in rows:
            cells = [num(e["ratio"].get(str(b)), "{:.3f}") for b in budgets]
            print(f"| {name} ({v['configurations']}) | {strat} | " + " | ".join(cells) +
                  f" | {num(e['to5'], '{:.0f}')} | {num(e['to1'], '{:.0f}')} |")


if __name__ == "__main__":
    main()
