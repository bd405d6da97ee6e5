#!/usr/bin/env python3
"""What the index_width check costs (docs/verification.md, "Index width"): `kforge verify
PROBLEM --thorough --backend cpu` with the library's cpu kernel at small requested sizes, three
ways, interleaved over rounds: without the check (`--no-index-width`), with the real check
(`--index-width`: an output past 2^31 elements written whole) and with its proxy
(`KFORGE_INDEX_WIDTH_PROXY=1 --index-width`: the output's earlier rows folded onto 16 MiB).
Prints per problem and dtype the median wall time of each (min..max over rounds), the check's
added seconds (median difference with the run without it) and the peak resident memory of the
kforge process (ru_maxrss). CPU timings, wall time of the whole command, kernel cache warm (a
warm-up round is dropped).

    OPENBLAS_THREAD_TIMEOUT=4 python3 bench/index_width_cost.py [--kforge build/kforge] \\
        [--rounds 3] [--problems activation.relu,softmax,gemm,scan.linear] [--dtypes fp32,bf16] \\
        [--modes off,real,proxy]
"""
import argparse
import json
import os
import statistics
import subprocess
import time

# others: M=37,N=45 (row-wise families and reduce.*), scan.*: batch=5,time=64
SIZES = {"gemm": "M=64,N=64,K=64",
         "conv2d": "N=2,C=5,H=7,W=6,K=4,R=1,S=1,stride=1,pad=0,dil=1",  # 1x1: the wide run's 1x1 shape
         "conv2d_nchw8c": "N=2,C=16,H=7,W=6,K=8,R=3,S=3,stride=1,pad=1,dil=1",  # 3x3: its 3x3 shape
         "conv2d_nchw8c_xplain": "N=2,C=3,H=9,W=9,K=8,R=3,S=3,stride=2,pad=1,dil=1",
         "moe_grouped_gemm": "T=37,H=50,F=24,E=4,K=2",
         "attention": "B=1,H=2,HKV=1,S=24,D=16"}


def sizes_of(problem):
    if problem.startswith("scan."):
        return "batch=5,time=64"
    return SIZES.get(problem, "M=37,N=45")


def run(kforge, problem, dtype, mode):
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    cmd = [kforge, "verify", problem, "--thorough", "--backend", "cpu", "--dtype", dtype, "--json",
           "--size", sizes_of(problem)]
    if mode == "off":
        cmd.append("--no-index-width")
    else:
        cmd.append("--index-width")
        if mode == "proxy":
            env["KFORGE_INDEX_WIDTH_PROXY"] = "1"
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate()
    t = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{out[-2000:]}\n{err[-2000:]}")
    if mode != "off" and '"index_width"' not in out:
        raise SystemExit(f"{' '.join(cmd)}: no index_width check in the verdict")
    return t, out


def peak_rss_mib(kforge, problem, dtype, mode):
    """One more run under /usr/bin/time -f %M (maximum resident set size, KiB)."""
    env = dict(os.environ, OPENBLAS_THREAD_TIMEOUT="4")
    cmd = ["/usr/bin/time", "-f", "%M", kforge, "verify", problem, "--thorough", "--backend", "cpu", "--dtype",
           dtype, "--json", "--size", sizes_of(problem),
           "--no-index-width" if mode == "off" else "--index-width"]
    if mode == "proxy":
        env["KFORGE_INDEX_WIDTH_PROXY"] = "1"
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        return int(r.stderr.strip().splitlines()[-1]) / 1024
    except (ValueError, IndexError):
        return float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--problems", default="activation.relu,softmax,gemm")
    ap.add_argument("--dtypes", default="fp32,bf16")
    # "off,real" where no output grows past 2^31 elements (reduce.*_axis0, conv2d*, moe): the proxy
    # would be the real check again
    ap.add_argument("--modes", default="off,real,proxy")
    a = ap.parse_args()
    modes = tuple(a.modes.split(","))
    cases = [(p, d) for p in a.problems.split(",") for d in a.dtypes.split(",")]
    times = {(c, m): [] for c in cases for m in modes}
    details = {}
    for c in cases:  # warm-up: compiles and caches every kernel, not counted
        for m in modes:
            _, out = run(a.kforge, c[0], c[1], m)
            doc = json.loads(out)
            doc = doc[0] if isinstance(doc, list) else doc
            detail = [k.get("detail", "") for k in doc["verify"]["checks"] if k.get("name") == "index_width"]
            details[(c, m)] = bool(detail) and "proxy" in detail[0]
    for r in range(a.rounds):
        order = modes if r % 2 == 0 else tuple(reversed(modes))
        for c in cases:
            for m in order:
                times[(c, m)].append(run(a.kforge, c[0], c[1], m)[0])
    print("| problem | dtype | without s | real check s | proxy s | real adds s | proxy adds s | peak RSS MiB without / real / proxy |")
    print("|---|---|---|---|---|---|---|---|")
    for c in cases:
        def cell(m):
            t = times.get((c, m), [])
            return f"{statistics.median(t):.2f} ({min(t):.2f}..{max(t):.2f})" if t else "-"
        off = times[(c, "off")]
        adds = {m: f"{statistics.median([x - y for x, y in zip(times[(c, m)], off)]):.2f}" if (c, m) in times else "-"
                for m in ("real", "proxy")}
        rss = [f"{peak_rss_mib(a.kforge, c[0], c[1], m):.0f}" if m in modes else "-" for m in ("off", "real", "proxy")]
        real_note = " (ran as proxy: memory short)" if details.get((c, "real")) else ""
        print(f"| {c[0]} | {c[1]} | {cell('off')} | {cell('real')}{real_note} | {cell('proxy')} | "
              f"{adds['real']} | {adds['proxy']} | {rss[0]} / {rss[1]} / {rss[2]} |")


if __name__ == "__main__":
    main()
