#!/usr/bin/env python3
"""How reliably verification catches the racy kernels of tests/verify/wrong (docs/verification.md,
"Races"): each kernel through `kforge eval --thorough` (and `--quick`) at SEEDS seeds, with one
or two kforge binaries (a build before a change and after it), the binaries interleaved seed by
seed so a load that comes and goes hits both alike. Prints, per kernel, mode and binary, how
many seeds rejected the kernel and by which check. A race shows by chance: the figure depends on
the machine and on its load, so say which when quoting it.

    python3 bench/race_catch_rate.py [--kforge build/kforge] [--before /path/to/old/kforge]
                                     [--seeds 20] [--modes thorough,quick,tsan] [--only NAME]

Mode `tsan` is `--thorough --tsan`: the checks column then says whether the ordinary checks
(bound, determinism, ...) or the race worker (`race`: ThreadSanitizer for cpu kernels, Oclgrind
for OpenCL ones) caught each seed. The last column is the mean wall time of one seed's command;
the correct controls (examples/naive_gemm.*, never caught) give the race worker's cost as the
difference between their tsan and thorough rows.
"""
import argparse
import collections
import json
import os
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WRONG = os.path.join(ROOT, "tests/verify/wrong")
KERNELS = [  # (file, arguments, environment): each header's own command
    ("race_split_k.cpp", ["--lang", "cpp", "--params", "KS=8", "--grid", "KS", "--size", "M=128,N=128,K=512",
                          "--threads", "4"], {}),
    ("race_two_block_add.cpp", ["--lang", "cpp", "--grid", "ceil_div(M,16),2", "--size", "M=128,N=128,K=256"], {}),
    # Right under every schedule: only ThreadSanitizer (mode tsan) can catch it.
    ("race_lazy_init.cpp", ["--lang", "cpp", "--grid", "ceil_div(M,16)", "--size", "M=64,N=48,K=40",
                            "--no-index-width"], {}),
    ("race_split_k.cl", ["--lang", "opencl", "--params", "KS=8", "--grid", "ceil_div(N,128),ceil_div(M,128),KS",
                         "--block", "16,16,1", "--size", "M=128,N=128,K=512"], {}),
    # Right on PoCL (its compiler adds the missing barrier): only Oclgrind (mode tsan) can catch it.
    ("tiled_no_load_barrier.cl", ["--lang", "opencl", "--grid", "ceil_div(N,16),ceil_div(M,16)", "--block", "16,16",
                                  "--size", "M=64,N=64,K=64"], {}),
    # Correct controls: never caught; their time per seed, tsan mode against thorough, is what
    # the race worker costs a passed candidate.
    ("../../../examples/naive_gemm.cl", ["--lang", "opencl", "--grid", "ceil_div(N,16),ceil_div(M,16)", "--block",
                                         "16,16", "--size", "M=64,N=64,K=64"], {}),
    ("../../../examples/naive_gemm.cpp", ["--lang", "cpp", "--grid", "ceil_div(M,16)", "--size", "M=64,N=48,K=40",
                                          "--no-index-width"], {}),
]


def run(kforge, file, args, env_extra, mode, seed):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4", **env_extra)
    # tsan: thorough verification and then the race worker (cpu: ThreadSanitizer, opencl: Oclgrind)
    flags = ["--thorough", "--tsan"] if mode == "tsan" else ["--" + mode]
    cmd = [kforge, "eval", "--problem", "gemm", "--source", os.path.join(WRONG, file), *args,
           "--seed", str(seed), *flags, "--json"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        return "error", f"exit {out.returncode}: {out.stderr[:200]}"
    if doc.get("disposition") == "passed":
        return "passed", ""
    return "caught", doc.get("verify", {}).get("failed_check", "") or doc.get("disposition", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build/kforge"))
    ap.add_argument("--before", help="a second kforge binary (before the change), run interleaved")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--modes", default="thorough,quick")
    ap.add_argument("--only", help="only kernels whose file name contains this")
    a = ap.parse_args()
    binaries = [("after", a.kforge)] + ([("before", a.before)] if a.before else [])
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| kernel | mode | binary | caught / seeds | checks that caught it | s per seed |")
    print("|---|---|---|---|---|---|")
    for file, args, env in KERNELS:
        if a.only and a.only not in file:
            continue
        for mode in a.modes.split(","):
            tally = {name: collections.Counter() for name, _ in binaries}
            spent = collections.Counter()
            t0 = time.time()
            for seed in range(1, a.seeds + 1):
                for name, path in binaries:
                    t1 = time.time()
                    verdict, check = run(path, file, args, env, mode, seed)
                    spent[name] += time.time() - t1
                    tally[name][verdict] += 1
                    if verdict == "caught":
                        tally[name]["check:" + check] += 1
            for name, _ in binaries:
                t = tally[name]
                checks = ", ".join(f"{k[6:]} {v}" for k, v in sorted(t.items()) if k.startswith("check:"))
                print(f"| {file} | {mode} | {name} | {t['caught']}/{a.seeds - t['error']}"
                      f"{' (+' + str(t['error']) + ' errors)' if t['error'] else ''} | {checks} "
                      f"| {spent[name] / a.seeds:.2f} |", flush=True)
            print(f"<!-- {file} {mode}: {time.time() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main()
