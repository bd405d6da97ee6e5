#!/usr/bin/env python3
"""The priority scheduler on a real device (docs/commands/schedule.md): `kforge schedule JOBS
--rounds R --json` on the cpu backend, both policies in every round (which goes first
alternates), and per job the median over rounds of its completion time, its slowdown against
running alone, its largest wait and the share of its gaps filled, with min..max over rounds; the
high-priority job's completion under the scheduler over the unmanaged queue's, per round, as a
ratio with its spread. CPU timings.

    python3 bench/schedule_cpu.py [--kforge build/kforge] [--rounds 7] [--threads 2] [JOBS.json]
"""
import argparse
import json
import os
import statistics
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}..{fmt.format(max(values))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("jobs", nargs="?", default=os.path.join(ROOT, "examples/schedule/inference_and_training.json"))
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    out = subprocess.run([a.kforge, "schedule", a.jobs, "--rounds", str(a.rounds), "--threads", str(a.threads),
                          "--json"], env=env, capture_output=True, text=True, check=True)
    doc = json.loads(out.stdout)
    rounds = doc["rounds"]
    print(f"{doc['device']}, {len(rounds)} rounds, max delay {doc['max_delay_s'] * 1e3:g} ms, safety {doc['safety']}")
    print()
    print("| policy | job | completion ms | slowdown vs alone | max wait ms | gaps filled | device busy |")
    print("|---|---|---|---|---|---|---|")
    for policy, label in (("unmanaged", "one in-order queue"), ("managed", "priority scheduler")):
        names = [j["name"] for j in rounds[0][policy]["jobs"]]
        for i, name in enumerate(names):
            js = [r[policy]["jobs"][i] for r in rounds]
            busy = [r[policy]["device_busy"] * 100 for r in rounds]
            print(f"| {label} | {name} | {spread([j['completion_s'] * 1e3 for j in js])} | "
                  f"{spread([j['slowdown'] for j in js])}x | {spread([j['max_wait_s'] * 1e3 for j in js], '{:.3f}')} | "
                  f"{spread([j['gaps_filled'] * 100 for j in js], '{:.0f}')}% | {spread(busy, '{:.0f}')}% |")
    top = max(range(len(rounds[0]["managed"]["jobs"])), key=lambda i: rounds[0]["managed"]["jobs"][i]["priority"])
    ratio = [r["managed"]["jobs"][top]["completion_s"] / r["unmanaged"]["jobs"][top]["completion_s"] for r in rounds]
    cost = [r["managed"]["decision_s_mean"] * 1e6 for r in rounds]
    print()
    print(f"{rounds[0]['managed']['jobs'][top]['name']}: completion under the scheduler / the queue {spread(ratio, '{:.3f}')}x; "
          f"scheduler decision {spread(cost)} us each")


if __name__ == "__main__":
    main()
