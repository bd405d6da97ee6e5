"""What the signature family's bench programs share (signature_vs_peers.py,
signature_grad_vs_peers.py, sigkernel_grad_vs_peers.py): kforge's median through `kforge bench
--json`, a median with its spread, and the signature kernel's PDE scheme in double."""
import json
import os
import statistics
import subprocess


def spread(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g}..{max(v):.4g})"


def kforge_bench(build, problem, sizes, threads, params=None):
    """kforge's median kernel time (s) and SOL fraction for `problem` on the cpu backend
    (`params`: "NAME=V,..." for the kernel, its defaults when None)."""
    extra = ["--params", params] if params else []
    out = subprocess.run([os.path.join(build, "kforge"), "bench", problem, "--backend", "cpu", "--size", sizes,
                          "--quick", "--no-baseline", "--json", "--threads", str(threads)] + extra,
                         check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    r = r[0] if isinstance(r, list) else r
    return r["median_s"], r.get("sol_fraction", 0.0)


def sigkernel_ref(np, x, y, dyadic):
    """One pair's scheme in double (the problem's reference, kernels/signature/problem.cpp)."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    dx, dy = np.diff(x, axis=0), np.diff(y, axis=0)
    g = (dx @ dy.T) / 4.0 ** dyadic
    g = np.repeat(np.repeat(g, 2 ** dyadic, axis=0), 2 ** dyadic, axis=1)
    row = np.ones(g.shape[1] + 1)
    for i in range(g.shape[0]):
        new = np.ones_like(row)
        for j in range(g.shape[1]):
            a = g[i, j]
            new[j + 1] = (new[j] + row[j + 1]) * (1 + a / 2 + a * a / 12) - row[j] * (1 - a * a / 12)
        row = new
    return row[-1]
