#!/usr/bin/env python3
"""A proposer for `kforge agent` driven by a search library: Optuna over a kernel's parameters.

Usage:
  kforge agent --problem gemm --size M=384,N=384,K=384 --budget 30 \\
    --proposer 'python3 examples/proposers/optuna_params.py kernels/gemm/gemm_cpu.json --seed 1'

SPEC is a library kernel spec (kernels/*/*.json) with its source beside it. Its `params` lists are
the search space; every candidate sends the spec's source, the spec itself (`spec`: space,
constraints, grid, block) and one configuration (`params`), so kforge checks the constraints
and an invalid configuration comes back as disposition `invalid_config` without a compile.

Optuna's ask/tell interface drives the search (TPE sampler, seeded with --seed). Each parameter
is suggested as an index into its ordered list of values, so the sampler sees tile sizes as
ordered. The objective is the timed median of the feedback (`timing.median_s`, minimized). A
configuration that did not pass is a failed trial; an invalid one is a pruned trial (TPE ranks
pruned trials below every complete one, so it learns to avoid the invalid region). The spec's
default configuration is enqueued first (as `kforge tune` starts from it; --no-default skips it).
A configuration the sampler proposes again is answered from this script's own memory and not
sent: every attempt kforge spends is a new configuration.

--sampler random: a fallback with the same ask/tell shape built on Python's `random` (seeded),
no Optuna needed (CI uses it). Optuna is imported only for --sampler tpe (the default).
--log FILE appends every message received, one per line. The run ends when kforge says so
(`next_batch` 0); --max-trials N sends `stop` after N attempts.
"""
import argparse
import json
import os
import random
import sys


class RandomTrial:
    def __init__(self, rng, number):
        self.rng = rng
        self.number = number
        self.params = {}

    def suggest_int(self, name, low, high):
        self.params[name] = self.rng.randint(low, high)
        return self.params[name]


class RandomStudy:
    """Uniform draws with Optuna's ask/tell shape: ask() gives a trial, tell() records it."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.queue = []
        self.count = 0

    def enqueue_trial(self, params):
        self.queue.append(dict(params))

    def ask(self):
        t = RandomTrial(self.rng, self.count)
        self.count += 1
        if self.queue:
            fixed = self.queue.pop(0)
            t.suggest_int = lambda name, low, high: t.params.setdefault(name, fixed[name])
        return t

    def tell(self, trial, value=None, state=None):
        pass


def make_study(sampler, seed):
    if sampler == "random":
        return RandomStudy(seed), None
    try:
        import optuna
    except ImportError:
        sys.stderr.write("optuna_params.py: optuna is not installed (pip install optuna), "
                         "or use --sampler random\n")
        sys.exit(2)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    return study, optuna.trial.TrialState


def main(argv):
    ap = argparse.ArgumentParser(description="Optuna proposer for kforge agent", add_help=True)
    ap.add_argument("spec", help="a library kernel spec JSON (its source beside it)")
    ap.add_argument("--sampler", choices=["tpe", "random"], default="tpe")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--log", help="append every message received to this file")
    ap.add_argument("--no-default", action="store_true", help="do not enqueue the spec's defaults first")
    ap.add_argument("--max-trials", type=int, default=0, help="send stop after this many attempts (0: kforge's budget)")
    args = ap.parse_args(argv)

    with open(args.spec) as f:
        spec = json.load(f)
    with open(os.path.join(os.path.dirname(os.path.abspath(args.spec)), spec["source"])) as f:
        source = f.read()
    space = {name: list(values) for name, values in spec["params"].items()}
    names = sorted(space)
    study, states = make_study(args.sampler, args.seed)
    defaults = spec.get("defaults", {})
    if not args.no_default and all(defaults.get(n) in space[n] for n in names):
        study.enqueue_trial({n + "_i": space[n].index(defaults[n]) for n in names})
    log = open(args.log, "a") if args.log else None

    def receive():
        line = sys.stdin.readline()
        if not line:
            return None
        if log:
            log.write(line if line.endswith("\n") else line + "\n")
            log.flush()
        return json.loads(line)

    def send(message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def tell(trial, result):
        """result: ("ok", seconds) | ("invalid", None) | ("failed", None)."""
        kind, value = result
        if states is None:
            study.tell(trial, value)
        elif kind == "ok":
            study.tell(trial, value)
        elif kind == "invalid":
            study.tell(trial, state=states.PRUNED)
        else:
            study.tell(trial, state=states.FAIL)

    seen = {}  # configuration (a tuple of values) -> result, so no attempt repeats one

    def ask_new():
        """A trial with a configuration not tried yet (repeats are told from memory)."""
        for _ in range(200):
            trial = study.ask()
            config = {n: space[n][trial.suggest_int(n + "_i", 0, len(space[n]) - 1)] for n in names}
            key = tuple(config[n] for n in names)
            if key not in seen:
                return trial, config, key
            tell(trial, seen[key])
        return trial, config, key  # the space looks exhausted: send a repeat

    task = receive()
    if task is None or task.get("type") != "task":
        sys.stderr.write("optuna_params.py: expected a task first\n")
        return 2
    sys.stderr.write("optuna_params.py: %s at %s, %s sampler, seed %d, budget %d\n" % (
        task["problem"], task["sizes"], args.sampler, args.seed, task["budget"]))
    message = {k: v for k, v in spec.items() if k != "source"}
    batch, sent_total = task["batch"], 0
    while batch > 0:
        pending = []
        for _ in range(batch):
            if args.max_trials and sent_total == args.max_trials:
                send({"type": "stop", "reason": "optuna_params.py: --max-trials reached"})
                break
            trial, config, key = ask_new()
            pending.append((trial, config, key))
            send({"type": "candidate", "source": source, "spec": message, "params": config,
                  "grid": spec["grid"], "block": spec.get("block", ["1"]),
                  "note": "%s trial %d: %s" % (args.sampler, trial.number,
                                               ",".join("%s=%d" % (n, config[n]) for n in names))})
            sent_total += 1
        next_batch = 0
        for trial, config, key in pending:
            feedback = receive()
            if feedback is None:
                return 0
            disposition = feedback.get("disposition")
            if feedback.get("passed"):
                result = ("ok", feedback["timing"]["median_s"])
            elif disposition == "invalid_config":
                result = ("invalid", None)
            else:
                result = ("failed", None)
            seen[key] = result
            tell(trial, result)
            sys.stderr.write("optuna_params.py: attempt %d: %s\n" % (feedback["attempt"], feedback.get("summary", "")))
            next_batch = feedback["next_batch"]
        if len(pending) < batch:
            break
        batch = next_batch
    receive()  # done
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
