#!/usr/bin/env python3
"""conv2d kernel variants on one thread, interleaved: the figures behind the conv2d README's
"Against the targets, and the gap" (1x1 kernel, single-channel kernel, vgg16 conv1_2).

Each round runs every (shape, variant) once, in turn, through `kforge bench conv2d --threads 1`
(fixed repetitions, quick verification, no stored tuning); a variant is a --params string, or
"@before" = the same defaults run by another kforge binary (--before, e.g. main's build). Per
(shape, variant): the median over rounds of the run's median time, min..max over rounds, the
ratio to the shape's first variant per round (median, min..max) and the fraction of --peak.

  python3 bench/conv2d_variants.py --set 1x1 --rounds 3
  python3 bench/conv2d_variants.py --set c1 vgg --rounds 3
"""
import argparse
import json
import statistics
import subprocess
import sys

SIZES = "N=1,C={C},H={H},W={H},K={K},R={R},S={R},stride={st},pad={pad},dil=1"


def size(C, H, K, R, st=1, pad=None):
    return SIZES.format(C=C, H=H, K=K, R=R, st=st, pad=(R // 2 if pad is None else pad))


# set -> [(shape name, sizes, [variants])]; the first variant is the ratio's reference.
# "1x1-ablation" takes the 1x1 kernel's compile-time switches PFY and RUNS (see conv2d_1x1.cpp)
# as parameters: add `"PFY": [0, 1], "RUNS": [0, 1]` to conv2d_1x1_cpu.json's params and rebuild.
ONE = ["", "MC=288", "MC=48"]
ABL = ["PFY=0,RUNS=0", "PFY=0,RUNS=1", "PFY=1,RUNS=0", "PFY=1,RUNS=1", "MC=288,PFY=0,RUNS=0"]
ONE_SHAPES = [
    ("resnet50 conv2_x 1x1 64->256", size(64, 56, 256, 1)),
    ("resnet50 conv2_x 1x1 256->64", size(256, 56, 64, 1)),
    ("resnet50 conv3_1 1x1/2", size(256, 56, 512, 1, st=2)),
    ("resnet50 conv4_x 1x1", size(256, 14, 1024, 1)),
]
SETS = {
    "1x1": [(n, s, ONE) for n, s in ONE_SHAPES]
    + [("conv3_1's GEMM unstrided (28x28)", size(256, 28, 512, 1), [""])],
    "1x1-ablation": [(n, s, ABL) for n, s in ONE_SHAPES],
    "c1": [
        ("1ch 512x512 3x3 K=32", size(1, 512, 32, 3), ["KR=8,QV=2", "KR=6,QV=2", "KR=4,QV=3", "KR=6,QV=2,NT=0"]),
        ("1ch 512x512 5x5 K=64", size(1, 512, 64, 5), ["KR=8,QV=2", "KR=6,QV=2", "KR=4,QV=3"]),
        ("1ch 512x512 7x7 K=64", size(1, 512, 64, 7), ["KR=8,QV=2", "KR=6,QV=2", "KR=4,QV=3"]),
    ],
    "vgg": [
        ("vgg16 conv1_2 3x3 (112x112)", size(64, 112, 64, 3), ["", "PB=4", "KB=96", "KB=96,PB=4", "CB=4096"]),
        ("resnet50 conv2_x 3x3 (56x56)", size(64, 56, 64, 3), ["", "PB=4", "KB=96"]),
    ],
}


def run_once(kforge, sizes, params, reps):
    cmd = [kforge, "bench", "conv2d", "--threads", "1", "--quick", "--no-db", "--no-baseline",
           "--repetitions", str(reps), "--json", "--size", sizes]
    if params:
        cmd += ["--params", params]
    out = subprocess.run(cmd, capture_output=True, text=True)
    try:
        doc = json.loads(out.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)}: no JSON (exit {out.returncode}): {out.stderr.strip()[-400:]}")
    rs = doc if isinstance(doc, list) else doc.get("results", [doc])
    r = rs[0]
    if "median_s" not in r:
        sys.exit(f"{' '.join(cmd)}: {r.get('disposition')}: {r.get('error', '')[:400]}")
    return r["median_s"], r["gflops"], r["kernel"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", nargs="+", default=["1x1"], choices=sorted(SETS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repetitions", type=int, default=15, help="timed runs per bench call")
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--before", help="another kforge binary: adds the variant @before (its defaults)")
    ap.add_argument("--peak", type=float, default=102.8, help="one thread's fp32 GFLOP/s (kforge ceilings)")
    a = ap.parse_args()
    shapes = [s for name in a.set for s in SETS[name]]
    if a.before:
        shapes = [(n, s, v + ["@before"]) for n, s, v in shapes]
    times = {}  # (shape, variant) -> [median_s per round]
    gfl = {}
    for rnd in range(a.rounds):
        for name, sizes, variants in shapes:
            for v in variants:
                kf, params = (a.before, "") if v == "@before" else (a.kforge, v)
                t, g, kernel = run_once(kf, sizes, params, a.repetitions)
                times.setdefault((name, v), []).append(t)
                gfl.setdefault((name, v), []).append(g)
        print(f"round {rnd + 1} of {a.rounds} done", file=sys.stderr)
    print(f"one thread, {a.rounds} rounds interleaved, {a.repetitions} runs per call; "
          f"ratio = the first variant's time / this one's, per round (> 1: faster)")
    print(f"{'shape':36} {'params':24} {'ms':>8} {'min..max':>15} {'of peak':>8} {'ratio':>6} {'min..max':>12}")
    for name, sizes, variants in shapes:
        ref = times[(name, variants[0])]
        for v in variants:
            ts = times[(name, v)]
            ratios = [r / t for r, t in zip(ref, ts)]
            g = statistics.median(gfl[(name, v)])
            print(f"{name:36} {v or 'defaults':24} {statistics.median(ts) * 1e3:8.3f} "
                  f"{min(ts) * 1e3:7.3f}..{max(ts) * 1e3:<7.3f} {g / a.peak:8.2f} "
                  f"{statistics.median(ratios):6.2f} {min(ratios):5.2f}..{max(ratios):<5.2f}")


if __name__ == "__main__":
    main()
