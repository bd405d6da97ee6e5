#!/usr/bin/env python3
"""The cost of the worker's seccomp sandbox (docs/commands/eval.md, "Sandbox"): `kforge eval
--bench` of a kernel with and without it (KFORGE_NO_SANDBOX=1), interleaved, several rounds.
Prints per kernel the median of the timed kernel's median_s with the sandbox over without it,
with min..max over rounds, and the same for the command's wall time. CPU timings. For OpenCL
(PoCL) the sandboxed worker also runs PoCL's generic work-group function instead of one
specialized to the local size (kforge-worker sets POCL_WORK_GROUP_SPECIALIZATION=0 there): the
ratio includes that.

    python3 bench/sandbox_overhead.py [--kforge build/kforge] [--rounds 7]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPU_GEMM = ["--lang", "cpp", "--grid", "ceil_div(M,16)"]
CL_TILED = ["--lang", "opencl", "--backend", "opencl", "--spec", os.path.join(ROOT, "kernels/gemm/gemm_opencl.json")]
KERNELS = [  # (label, source, arguments, sizes)
    ("naive gemm, no system calls", "examples/naive_gemm.cpp", CPU_GEMM, "M=300,N=200,K=77"),
    ("naive gemm + 20,000 getppid per launch", "bench/data/syscall_heavy_gemm.cpp", CPU_GEMM, "M=300,N=200,K=77"),
    ("OpenCL naive gemm (16x16 work-groups)", "examples/naive_gemm.cl",
     ["--lang", "opencl", "--backend", "opencl", "--grid", "ceil_div(N,16),ceil_div(M,16)", "--block", "16,16"],
     "M=300,N=200,K=77"),
    ("OpenCL tiled gemm (the library's, defaults)", "kernels/gemm/gemm.cl", CL_TILED, "M=512,N=512,K=512"),
]


def run(kforge, source, args, sizes, sandbox):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    if not sandbox:
        env["KFORGE_NO_SANDBOX"] = "1"
    cmd = [kforge, "eval", "--problem", "gemm", "--source", os.path.join(ROOT, source), *args,
           "--size", sizes, "--quick", "--bench", "--json"]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    doc = json.loads(out.stdout)
    if doc.get("disposition") != "passed":
        raise SystemExit(f"{source}: {doc.get('disposition')}: {doc.get('error')}")
    return doc["median_s"], wall


def spread(ratios):
    return f"{statistics.median(ratios):.3f}x ({min(ratios):.3f}..{max(ratios):.3f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kforge", default=os.path.join(ROOT, "build", "kforge"))
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    print(f"| kernel | kernel time, sandbox / none | wall time, sandbox / none | median kernel ms (sandbox, none) |")
    print("|---|---|---|---|")
    for label, source, args, sizes in KERNELS:
        k_ratio, w_ratio, on_ms, off_ms = [], [], [], []
        for r in range(a.rounds):
            order = [True, False] if r % 2 == 0 else [False, True]
            got = {s: run(a.kforge, source, args, sizes, s) for s in order}
            k_ratio.append(got[True][0] / got[False][0])
            w_ratio.append(got[True][1] / got[False][1])
            on_ms.append(got[True][0] * 1e3)
            off_ms.append(got[False][0] * 1e3)
        print(f"| {label} | {spread(k_ratio)} | {spread(w_ratio)} | "
              f"{statistics.median(on_ms):.3f}, {statistics.median(off_ms):.3f} |")


if __name__ == "__main__":
    main()
