#!/usr/bin/env python3
"""kforge's memory-bound kernels (cpu backend) against numpy, interleaved, in one run.

For each problem, `--rounds` rounds: `kforge bench PROBLEM --json` (its median kernel time and
its speed-of-light fraction against the machine's measured bandwidth, `kforge ceilings`), then
numpy's equivalent on inputs of the same size (median of `--reps` calls). Each round's ratio is
numpy's time over kforge's; the table shows the median over rounds and the spread (min..max).
With `--before DIR`, each round also times the kernels of an older checkout's kernels/ folder
(`kforge eval --source`, same binary, same inputs): a before/after comparison in the same run.
"kforge SOL" is against the cached ceilings (the best minute `kforge ceilings` ever measured);
"SOL now" against the memory roof measured right before and after each kforge run
(`kforge bench --roof-now`): the host's bandwidth swings 1.5x between minutes.
"ns/el L2" is the kernel alone: nanoseconds per element on one thread with its data hot in L2
(8 rows, plain stores); "cpu/mem" is that time spread over all cores divided by the memory's
time at the roof of the minute: near 1 or above, the CPU's instructions, not the memory, are the
limit, and the kernel reaches the roof only if computing and streaming overlap perfectly.
Sizes default to N = 8192 and M rows enough for each tensor to outgrow the last-level cache (at
least 4096 rows, 128 MiB): 4096 x 8192 with a 32 MiB L3, 9216 x 8192 (288 MiB a tensor) with a
260 MiB one, so both sides stream from memory. (Each kforge bench call at that size spends about
a minute outside the timing: verification trials, the double reference, and checking the output
of every timed run.) CPU timings: kforge runs on all cores, numpy's ufuncs on one. numpy (and
scipy, for GELU's erf) are installed with pip into build/bench-venv when missing (never a
dependency of kforge).

usage: bench/memory_bound_vs_numpy.py [--build build] [--size M=...,N=8192] [--rounds 3]
                                      [--problems a,b,...] [--before DIR]
"""
import argparse
import json
import os
import subprocess
import sys
import time


def ensure_numpy(build):
    try:
        import numpy  # noqa: F401
        return
    except ImportError:
        pass
    venv = os.path.join(build, "bench-venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):  # (its python may be a symlink)
        sys.exit("numpy is missing from " + venv)
    if not os.path.exists(py):
        subprocess.check_call([sys.executable, "-m", "venv", venv])
    subprocess.check_call([py, "-m", "pip", "install", "-q", "numpy", "scipy"])
    os.execv(py, [py] + sys.argv)


def numpy_peers(np, M, N):
    """problem -> (setup() -> state, run(state)); the float32 computation a numpy user writes."""
    eps = np.float32(1e-5)

    def rows():
        rng = np.random.default_rng(1)
        return rng.standard_normal((M, N), dtype=np.float32)

    def softmax(s):
        x, y = s
        m = x.max(axis=1, keepdims=True)
        np.subtract(x, m, out=y)
        np.exp(y, out=y)
        y /= y.sum(axis=1, keepdims=True)

    def rmsnorm(s):
        x, g, y = s
        ms = np.einsum("ij,ij->i", x, x) / np.float32(N)
        np.multiply(x, (1 / np.sqrt(ms + eps))[:, None], out=y)
        y *= g

    def layernorm(s):
        x, g, b, y = s
        mu = x.mean(axis=1, keepdims=True)
        np.subtract(x, mu, out=y)
        var = np.einsum("ij,ij->i", y, y) / np.float32(N)
        y *= (1 / np.sqrt(var + eps))[:, None]
        y *= g
        y += b

    def relu(s):
        x, y = s
        np.maximum(x, np.float32(0), out=y)

    def gelu_tanh(s):  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), in place in y
        x, y = s
        np.multiply(x, x, out=y)
        y *= np.float32(0.044715)
        y += np.float32(1)
        y *= x
        y *= np.float32(0.7978845608)
        np.tanh(y, out=y)
        y += np.float32(1)
        y *= x
        y *= np.float32(0.5)

    def leaky_relu(s):  # slope -0.75, as in kforge's timed trial
        x, y = s
        np.multiply(x, np.float32(-0.75), out=y)
        np.copyto(y, x, where=x > 0)

    def gelu_erf(s):  # 0.5 x (1 + erf(x / sqrt 2)), scipy's erf, in place in y
        from scipy.special import erf
        x, y = s
        np.multiply(x, np.float32(0.70710678), out=y)
        erf(y, out=y)
        y += np.float32(1)
        y *= x
        y *= np.float32(0.5)

    def silu(s):  # x / (1 + exp(-x)), in place in y
        x, y = s
        np.negative(x, out=y)
        np.exp(y, out=y)
        y += np.float32(1)
        np.divide(x, y, out=y)

    vec = lambda: np.random.default_rng(2).standard_normal(N, dtype=np.float32)
    pair = lambda: (rows(), np.empty((M, N), np.float32))
    return {
        "activation.relu": (pair, relu),
        "activation.leaky_relu": (pair, leaky_relu),
        "activation.gelu_erf": (pair, gelu_erf),
        "activation.gelu_tanh": (pair, gelu_tanh),
        "activation.silu": (pair, silu),
        "reduce.sum_axis1": (lambda: (rows(),), lambda s: s[0].sum(axis=1)),
        "reduce.sum_axis0": (lambda: (rows(),), lambda s: s[0].sum(axis=0)),
        "reduce.max_axis1": (lambda: (rows(),), lambda s: s[0].max(axis=1)),
        "reduce.max_axis0": (lambda: (rows(),), lambda s: s[0].max(axis=0)),
        "reduce.argmax_axis1": (lambda: (rows(),), lambda s: s[0].argmax(axis=1)),
        "reduce.argmax_axis0": (lambda: (rows(),), lambda s: s[0].argmax(axis=0)),
        "softmax": (lambda: (rows(), np.empty((M, N), np.float32)), softmax),
        "rmsnorm": (lambda: (rows(), vec(), np.empty((M, N), np.float32)), rmsnorm),
        "layernorm": (lambda: (rows(), vec(), vec(), np.empty((M, N), np.float32)), layernorm),
    }


def timed(label, argv):
    """(median seconds, SOL fraction, SOL fraction against the roof measured now or None) of a
    passed `kforge bench`/`kforge eval --bench` --json run."""
    r = json.loads(subprocess.run(argv, check=True, capture_output=True, text=True).stdout)
    r = r[0] if isinstance(r, list) else r
    if r.get("disposition") != "passed":
        sys.exit(f"{label}: {r.get('disposition')}: {r.get('error')}")
    return r["median_s"], r["sol_fraction"], r.get("roof_now", {}).get("sol_fraction")


def kforge_bench(kforge, problem, size):
    return timed(f"kforge bench {problem}",
                 [kforge, "bench", problem, "--backend", "cpu", "--size", size, "--quick", "--trials",
                  "1", "--no-baseline", "--repetitions", "15", "--roof-now", "--json"])


def in_cache_ns(kforge, problem, n):
    """Nanoseconds per element of the kernel alone: one thread, 8 rows of n hot in L2, plain
    stores (NT=0 where the kernel streams its output: streaming stores go to DRAM even then)."""
    params = ["--no-db", "-p", "NT=0"] if not problem.startswith("reduce.") else []
    t, _, _ = timed(f"kforge bench {problem} (in cache)",
                    [kforge, "bench", problem, "--backend", "cpu", "--size", f"M=8,N={n}", "--threads",
                     "1", "--quick", "--trials", "1", "--no-baseline", "--repetitions", "31", "--json"]
                    + params)
    return t * 1e9 / (8 * n)


def spec_path(kernels, problem):
    """The cpu spec of a problem in a kernels/ folder: softmax, rmsnorm, activation.relu, ..."""
    family, _, fn = problem.partition(".")
    folder = {"rmsnorm": "norm", "layernorm": "norm"}.get(family, family)
    return os.path.join(kernels, folder, (fn or problem) + "_cpu.json")


def before_bench(kforge, kernels, problem, size):
    """The kernel of an older kernels/ folder, through `kforge eval --bench` (same binary)."""
    spec = spec_path(kernels, problem)
    with open(spec) as f:
        doc = json.load(f)
    return timed(f"kforge eval {problem} (before)",
                 [kforge, "eval", "--problem", problem, "--backend", "cpu", "--size", size, "--spec",
                  spec, "--source", os.path.join(os.path.dirname(spec), doc["source"]), "--entry",
                  doc["entry"], "--quick", "--trials", "1", "--bench", "--json"])


def llc_bytes():
    """The largest cache sysfs lists for cpu0 (32 MiB when it lists none)."""
    best = 32 << 20
    for i in range(8):
        try:
            s = open(f"/sys/devices/system/cpu/cpu0/cache/index{i}/size").read().strip()
        except OSError:
            break
        best = max(best, int(s[:-1]) << {"K": 10, "M": 20}[s[-1]] if s[-1] in "KM" else int(s))
    return best


def default_size(n=8192):
    """M x n fp32 with each tensor at least the last-level cache, M a multiple of 1024."""
    rows = -(-llc_bytes() // (4 * n))
    return f"M={max(4096, -(-rows // 1024) * 1024)},N={n}"


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", default=default_size(), help="M=..,N=.. (default: each tensor beyond the LLC)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--problems", default="softmax,rmsnorm,layernorm,activation.relu,"
                    "activation.leaky_relu,activation.gelu_erf,activation.gelu_tanh,activation.silu,"
                    "reduce.sum_axis1,reduce.sum_axis0,reduce.max_axis1,reduce.max_axis0,"
                    "reduce.argmax_axis1,reduce.argmax_axis0")
    ap.add_argument("--before", help="an older checkout whose kernels/ to time too (e.g. a git "
                    "archive of the base commit)")
    a = ap.parse_args()
    ensure_numpy(a.build)
    import numpy as np

    sizes = dict(kv.split("=") for kv in a.size.split(","))
    M, N = int(sizes["M"]), int(sizes["N"])
    cores = len(os.sched_getaffinity(0))
    kforge = os.path.join(a.build, "kforge")
    peers = numpy_peers(np, M, N)
    print(f"kforge (cpu backend, all cores) vs numpy {np.__version__} (one core), fp32, M={M} N={N} "
          f"({M * N * 4 >> 20} MiB per tensor, last-level cache {llc_bytes() >> 20} MiB), "
          f"{a.rounds} interleaved rounds")
    print("load before:", open("/proc/loadavg").read().split()[:3])
    header = (f"{'problem':22} {'kforge ms':>10} {'numpy ms':>10} {'numpy/kforge':>13} {'spread':>13} "
              f"{'kforge SOL':>10} {'SOL now':>8} {'spread':>11} {'ns/el L2':>8} {'cpu/mem':>7}" + (f" {'before ms':>10} {'before/now':>11} {'spread':>13} "
                                       f"{'before SOL':>10}" if a.before else ""))
    print(header, flush=True)
    for problem in a.problems.split(","):  # each row printed when its rounds are done
        state = peers[problem][0]()
        run = peers[problem][1]
        run(state)  # warm-up: first-touch page faults are not numpy's speed
        ks, ns, sols, nows, tsols, bs, bsols = [], [], [], [], [], [], []
        for _ in range(a.rounds):
            if a.before:
                b, bsol, _ = before_bench(kforge, os.path.join(a.before, "kernels"), problem, a.size)
                bs.append(b)
                bsols.append(bsol)
            k, sol, now = kforge_bench(kforge, problem, a.size)
            tsols.append(now * k)  # t_sol against the roof of the minute
            t = []
            for _ in range(a.reps):
                t0 = time.perf_counter()
                run(state)
                t.append(time.perf_counter() - t0)
            ks.append(k)
            ns.append(median(t))
            sols.append(sol)
            nows.append(now)
        del state
        # The instructions alone, spread over all cores, against the memory's time at the roof
        # of the minute: near 1 or above, the kernel cannot stream at the roof on this CPU.
        ns_el = in_cache_ns(kforge, problem, N)
        cpu_mem = ns_el * 1e-9 * M * N / cores / median(tsols)
        ratios = [n / k for k, n in zip(ks, ns)]
        line = (f"{problem:22} {median(ks) * 1e3:10.2f} {median(ns) * 1e3:10.2f} {median(ratios):12.2f}x "
                f"{min(ratios):6.2f}..{max(ratios):<6.2f} {median(sols) * 100:9.1f}% {median(nows) * 100:7.1f}% "
                f"{f'{min(nows) * 100:.0f}..{max(nows) * 100:.0f}%':>11} {ns_el:8.3f} {cpu_mem:7.2f}")
        if a.before:
            gains = [b / k for k, b in zip(ks, bs)]
            line += (f" {median(bs) * 1e3:10.2f} {median(gains):10.2f}x {min(gains):6.2f}..{max(gains):<6.2f} "
                     f"{median(bsols) * 100:9.1f}%")
        print(line, flush=True)
    print("load after:", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
