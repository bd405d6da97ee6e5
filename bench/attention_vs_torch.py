#!/usr/bin/env python3
"""kforge's fused attention (cpu backend, fp32) against PyTorch's
`torch.nn.functional.scaled_dot_product_attention`, interleaved, in one run.

Per shape, `--rounds` rounds, each: `kforge bench attention[.causal] --json` (its median kernel
time; verified once per call with --quick --trials 1), then torch's SDPA on inputs of the same
shapes (median of `--reps` calls after a warm-up), torch.set_num_threads(the same thread count).
Each round's ratio is torch's time over kforge's (above 1: kforge is faster); the table shows the
median over rounds and the spread (min..max). FLOPs are counted the same way for both, the
problem's: 4·B·H·S²·D, or 4·B·H·S(S+1)/2·D when causal (exp, RoPE and the softmax sums not
counted). "of peak" is kforge's GFLOP/s over the fp32 peak `kforge ceilings` measures for the
same thread count.

kforge's problem does more than SDPA: RoPE of Q and K inside the kernel and grouped-query
attention (HKV key/value heads for H query heads). torch's SDPA gets Q, K and V already rotated
and K, V already expanded to H heads (outside its timing), so "torch/kforge" compares the
attention alone and is conservative for kforge. "+rope" also times the RoPE a torch user writes
(rotate-half, cos/sin cached) in front of SDPA: the same work as kforge's kernel.

torch comes from pip into bench/.venv (bench/bench_venv.py): Debian's python3-torch (1.13) has
no scaled_dot_product_attention. torch's OpenMP threads wait as torch's own default has them
(--omp-wait-policy inherit: spin a little, then sleep). Not active: this process keeps torch
loaded while `kforge bench` runs in the same round, and with OMP_WAIT_POLICY=ACTIVE torch's idle
threads spin through kforge's turn (quiet host, 2026-12-05: kforge 52 ms alone at 2048:64, 78 ms
beside them; torch's own time the same either way). passive (sleep at once) helps torch only on
a host shared with other work.
CPU timings; on a shared host trust the ratios, not the ms.

usage: bench/attention_vs_torch.py [--build build] [--threads 2] [--rounds 3]
                                   [--shapes 2048:64,2048:64:c,...] [--params BQ=64,...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402

SHAPES = "512:64:c,2048:64,2048:64:c,2048:128,2048:128:c,4096:64,4096:64:c,4096:128:c"


def spread(v):
    return f"{statistics.median(v):.2f} ({min(v):.2f}..{max(v):.2f})"


def flops(B, H, S, D, causal):
    return 4.0 * B * H * D * (S * (S + 1) / 2 if causal else S * S)


def kforge(args, S, D, causal):
    """kforge's median kernel time (s) at this shape, its output verified."""
    cmd = [os.path.join(args.build, "kforge"), "bench", "attention.causal" if causal else "attention",
           "--backend", "cpu", "--size", f"B={args.batch},H={args.heads},HKV={args.kv_heads},S={S},D={D}",
           "--quick", "--trials", "1", "--no-baseline", "--json", "--threads", str(args.threads)]
    if args.params:
        cmd += ["--params", args.params]
    r = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    r = r[0] if isinstance(r, list) else r
    return r["median_s"]


def fp32_peak(args):
    out = subprocess.run([os.path.join(args.build, "kforge"), "ceilings", "--backend", "cpu", "--json",
                          "--threads", str(args.threads)], check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    doc = doc[0] if isinstance(doc, list) else doc
    return doc["fp32_GFLOPs"], doc.get("one_thread", {}).get("GFLOPs", {}).get("fp32", 0.0)


def torch_peers(torch, args, S, D, causal):
    """(sdpa(), rope_sdpa()): torch's SDPA alone on rotated, expanded inputs; and RoPE + SDPA."""
    g = torch.Generator().manual_seed(1)
    B, H, HKV = args.batch, args.heads, args.kv_heads
    q = torch.randn(B, H, S, D, generator=g)
    k = torch.randn(B, HKV, S, D, generator=g)
    v = torch.randn(B, HKV, S, D, generator=g)
    half = D // 2
    theta = 10000.0 ** (-2.0 * torch.arange(half, dtype=torch.float64) / D)
    ang = torch.arange(S, dtype=torch.float64)[:, None] * theta[None, :]
    cos, sin = torch.cos(ang).float(), torch.sin(ang).float()  # the rotary cache
    scale = 0.125

    def rope(x):
        a, b = x[..., :half], x[..., half:]
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    F = torch.nn.functional
    ke, ve = k.repeat_interleave(H // HKV, dim=1), v.repeat_interleave(H // HKV, dim=1)
    qr, kr = rope(q), rope(ke)

    def sdpa():
        return F.scaled_dot_product_attention(qr, kr, ve, is_causal=causal, scale=scale)

    def rope_sdpa():
        return F.scaled_dot_product_attention(rope(q), rope(k).repeat_interleave(H // HKV, dim=1), ve,
                                              is_causal=causal, scale=scale)
    return sdpa, rope_sdpa


def time_median(f, reps):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="timed torch calls per round")
    ap.add_argument("--shapes", default=SHAPES, help="S:D or S:D:c (causal), comma-separated")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--params", default="", help="kforge kernel parameters (default: the kernel's defaults)")
    ap.add_argument("--omp-wait-policy", default="inherit", choices=["passive", "inherit"],
                    help="torch's OpenMP threads at a barrier: inherit keeps $OMP_WAIT_POLICY (unset: "
                         "torch's default); passive (sleep at once) is faster on a shared host. No "
                         "active: its spinning threads would run through kforge's turn")
    args = ap.parse_args()
    if args.omp_wait_policy != "inherit":  # read by OpenMP when torch loads (the venv re-exec keeps it)
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
    bench_venv.ensure("torch", "torch")
    import torch
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '')}, "
          f"B={args.batch} H={args.heads} HKV={args.kv_heads}, fp32, load average before {load_average()}", flush=True)
    peak, one = fp32_peak(args)
    print(f"fp32 peak (kforge ceilings, cached best or measured now): {peak:.1f} GFLOP/s on {args.threads} "
          f"threads, {one:.1f} on one", flush=True)
    hdr = f"{'S:D':<12} {'kforge ms':>10} {'GFLOP/s':>8} {'of peak':>8} {'torch ms':>9} " \
          f"{'torch/kforge (min..max)':>24} {'+rope/kforge (min..max)':>24}"
    rows = []
    for shape in args.shapes.split(","):
        p = shape.split(":")
        S, D, causal = int(p[0]), int(p[1]), len(p) == 3 and p[2] == "c"
        sdpa, rope_sdpa = torch_peers(torch, args, S, D, causal)
        kt, tt, rt = [], [], []
        for _ in range(args.rounds):
            kt.append(kforge(args, S, D, causal))
            tt.append(time_median(sdpa, args.reps))
            rt.append(time_median(rope_sdpa, args.reps))
        gf = flops(args.batch, args.heads, S, D, causal) / statistics.median(kt) / 1e9
        rows.append(f"{shape:<12} {statistics.median(kt) * 1e3:>10.2f} {gf:>8.1f} {gf / peak:>8.2f} "
                    f"{statistics.median(tt) * 1e3:>9.2f} {spread([t / k for t, k in zip(tt, kt)]):>24} "
                    f"{spread([t / k for t, k in zip(rt, kt)]):>24}")
        print(rows[-1], file=sys.stderr, flush=True)
    print(hdr)
    for r in rows:
        print(r)
    print(f"({args.rounds} rounds; ratio = torch median / kforge median per round, above 1: kforge faster; "
          f"load average after {load_average()})")


if __name__ == "__main__":
    main()
