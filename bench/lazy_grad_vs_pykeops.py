#!/usr/bin/env python3
"""lazy_reduce.gauss_sum_grad against pykeops' gradient (torch autograd through a LazyTensor
reduction, CPU mode), CPU timings.

The gradient in x_i of L = sum_i g_i sum_j exp(-|x_i - y_j|^2 / s) b_j, N = M points in 3
dimensions, an (N,3) output. kforge runs its generated gradient kernel (build/bench/
lazy_reduce_run --problem lazy_reduce.gauss_sum_grad); pykeops runs torch.autograd.grad on the
LazyTensor sum, which is its forward reduction and then its backward reduction (autograd has no
way to skip the forward; kforge's gradient of a sum needs no forward output), so the table also
times pykeops' forward alone. Each side runs in a process of its own, interleaved, --rounds
rounds of --reps calls after a warm-up; medians with min..max over rounds; ratio = pykeops /
kforge per round. Each side checks its first rows against numpy in double.

  python3 bench/lazy_grad_vs_pykeops.py --sizes 10000,100000 --rounds 3 --reps 3 --threads 2

--reduce logsumexp: the gradient in x_i of L = sum_i g_i log sum_j exp(-|x_i - y_j|^2 / s)
instead (kforge: lazy_reduce:grad_x:logsumexp:-sqdist(x,y)/s, which takes the forward's lse as
an input, as KeOps' backward does; pykeops: torch.autograd.grad of the LazyTensor's
.logsumexp(dim=1)). A gradient of logsumexp needs the forward's output, so the table also
times kforge's forward (lazy_reduce:logsumexp:-sqdist(x,y)/s) and compares pykeops'
forward+backward with kforge's forward + gradient per round. kforge's runner gets the
gradient's LSE input from the forward kernel run once, untimed, on the same points.
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


def peer_main(args):
    import numpy as np
    import torch
    from pykeops.torch import LazyTensor
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(42)
    n, s = args.n, args.s
    x = rng.standard_normal((n, 3), dtype=np.float32)
    y = rng.standard_normal((n, 3), dtype=np.float32)
    b = rng.standard_normal((n, 1), dtype=np.float32)
    g = rng.standard_normal((n, 1), dtype=np.float32)
    xt = torch.tensor(x, requires_grad=True)
    yt, bt, gt = torch.tensor(y), torch.tensor(b), torch.tensor(g)

    def forward(xx, yy, bb):
        X, Y = LazyTensor(xx[:, None, :]), LazyTensor(yy[None, :, :])
        if args.reduce == "logsumexp":
            return (-((X - Y) ** 2).sum(-1) / s).logsumexp(dim=1)
        return (-((X - Y) ** 2).sum(-1) / s).exp() @ bb

    def gradient(xx, yy, bb, gg):
        (gx,) = torch.autograd.grad(forward(xx, yy, bb), xx, gg)
        return gx
    small = torch.tensor(x[:1000], requires_grad=True)  # warm-up: pykeops compiles both reductions
    gradient(small, yt[:1000], bt[:1000], gt[:1000])
    if args.peer == "pykeops_fwd":
        run = lambda: forward(xt.detach(), yt, bt)  # noqa: E731
    else:
        run = lambda: gradient(xt, yt, bt, gt)  # noqa: E731
    secs = []
    for _ in range(args.reps):
        t = time.perf_counter()
        out = run().detach().numpy()
        secs.append(time.perf_counter() - t)
    err = 0.0
    if args.peer == "pykeops":  # the first rows in double
        xd, yd, bd, gd = x[:4].astype(float), y.astype(float), b[:, 0].astype(float), g[:4, 0].astype(float)
        diff = xd[:, None, :] - yd[None]
        k = np.exp(-(diff ** 2).sum(-1) / s)
        if args.reduce == "logsumexp":  # the softmax weights instead of k b
            f = -(diff ** 2).sum(-1) / s
            w = np.exp(f - f.max(1, keepdims=True))
            ref = gd[:, None] * ((w / w.sum(1, keepdims=True))[:, :, None] * (-2 / s) * diff).sum(1)
        else:
            ref = gd[:, None] * ((k * bd[None])[:, :, None] * (-2 / s) * diff).sum(1)
        err = float(np.max(np.abs(out[:4] - ref)) / np.max(np.abs(ref)))
    print(json.dumps({"seconds": secs, "median_s": statistics.median(secs), "check_max_rel_err": err}))


def run_child(cmd, env):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, env=env, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stdout}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def spread(v):
    return f"{statistics.median(v):.4g} ({min(v):.4g}..{max(v):.4g})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--s", type=float, default=1.0)
    ap.add_argument("--reduce", choices=["sum", "logsumexp"], default="sum",
                    help="the gradient of the Gaussian sum (default) or of logsumexp of -|x - y|^2 / s")
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    ap.add_argument("--peer", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    bench_venv.ensure("pykeops", "pykeops==2.3")
    bench_venv.ensure("torch", "torch")
    if args.peer:
        return peer_main(args)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), OPENBLAS_NUM_THREADS=str(args.threads),
               OPENBLAS_THREAD_TIMEOUT="4")
    runner = os.path.join(args.build, "bench", "lazy_reduce_run")
    lse = args.reduce == "logsumexp"
    grad_problem = "lazy_reduce:grad_x:logsumexp:-sqdist(x,y)/s" if lse else "lazy_reduce.gauss_sum_grad"
    print(f"# {grad_problem} (gradient in x), D=3, s={args.s}, {args.threads} threads, CPU, "
          f"{args.rounds} rounds x {args.reps} reps; load average {os.getloadavg()[0]:.2f} at start")
    if lse:
        print("| N = M | side | time s, median (min..max) | side / kforge gradient | side / kforge forward+gradient "
              "| kforge SOL |")
        print("|---|---|---|---|---|---|")
    else:
        print("| N = M | side | time s, median (min..max) | side / kforge | kforge SOL |")
        print("|---|---|---|---|---|")
    for n in [int(v) for v in args.sizes.split(",")]:
        sides = ["kforge", "kforge_fwd", "pykeops", "pykeops_fwd"] if lse else ["kforge", "pykeops", "pykeops_fwd"]
        t = {side: [] for side in sides}
        sol = []
        for _ in range(args.rounds):
            for side in t:
                if side.startswith("kforge"):
                    problem = grad_problem if side == "kforge" else "lazy_reduce:logsumexp:-sqdist(x,y)/s"
                    cmd = [runner, "--problem", problem, "--n", str(n), "--d", "3", "--reps",
                           str(args.reps), "--warmup", "1", "--threads", str(args.threads), "--s", str(args.s)]
                else:
                    cmd = [sys.executable, os.path.abspath(__file__), "--peer", side, "--n", str(n),
                           "--reps", str(args.reps), "--s", str(args.s), "--threads", str(args.threads),
                           "--reduce", args.reduce]
                res = run_child(cmd, env)
                if res["check_max_rel_err"] > 1e-3:
                    raise SystemExit(f"{side} N={n}: wrong result, relative error {res['check_max_rel_err']}")
                t[side].append(res["median_s"])
                if side == "kforge":
                    sol.append(res["sol_fraction"])
        names = {"kforge": "kforge gradient", "kforge_fwd": "kforge forward (lse)",
                 "pykeops": "pykeops forward+backward (autograd)", "pykeops_fwd": "pykeops forward only"}
        if lse:  # kforge's forward + gradient, per round
            t["kforge_both"] = [a + b for a, b in zip(t["kforge"], t["kforge_fwd"])]
            names["kforge_both"] = "kforge forward + gradient"
        for side in t:
            ratio = "" if side == "kforge" else spread([a / b for a, b in zip(t[side], t["kforge"])])
            both = ""
            if lse and side.startswith("pykeops"):
                both = spread([a / b for a, b in zip(t[side], t["kforge_both"])])
            print(f"| {n} | {names[side]} | {spread(t[side])} | {ratio} | " + (f"{both} | " if lse else "") +
                  f"{spread(sol) if side == 'kforge' else ''} |", flush=True)
    print(f"# load average {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    main()
