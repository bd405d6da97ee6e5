#!/usr/bin/env python3
"""One kernel-model fit at one lambda: kforge's kernel_svm / kernel_logreg library kernel (cpu
backend, fp32, the Gram matrix computed inside) against scikit-learn on the same rows, the same
gamma and the same regularization, with the held-out accuracy of each beside its time.

Per size n: one data set (make_moons(noise=0.3), 2 features, or make_classification: 10 features,
5 informative, 5% labels flipped), split 80/20 (stratified, --seed), gamma = 1/(features * var(x))
(sklearn's 'scale', from the training rows), C = 1 / (n_train * lambda):
  svm:    kforge kernel_svm (the hinge, SMO in fp32) vs SVC(kernel='rbf', gamma, C) (libsvm, SMO in
          double): the same model at the same stopping gap (1e-3), so besides both accuracies the
          table has max |f - f_sklearn| over the held-out rows (decision values, kforge's first round).
  logreg: kforge kernel_logreg vs LogisticRegression(C) (lbfgs) on the explicit kernel (the
          columns of K(x, train) as features; its penalty is |w|^2, kforge's alpha^T K alpha);
          its time includes rbf_kernel on the training rows.
Times: kforge's is the kernel launch as its backend times it (build/bench/kernel_model_run, the
kernel compiled beforehand), sklearn's the fit (in this process). Both sides run in turn for
--rounds rounds; medians with min..max, and the per-round ratio sklearn/kforge. kforge's answer
is also run through the verifier's optimality check (--check) in the first round.
Threads: --threads for both (the kforge kernel is one block: one thread; sklearn through
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS; libsvm is single-threaded).

  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/kernel_model_vs_sklearn.py --run build/bench/kernel_model_run \\
      --sizes 500,1000,2000 --lambda 0.01 --rounds 3
  OPENBLAS_THREAD_TIMEOUT=4 python3 bench/kernel_model_vs_sklearn.py --run build/bench/kernel_model_run \\
      --data classification --sizes 500,1000,2000 --lambda 0.01 --rounds 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_venv  # noqa: E402


def make_data(kind, n, seed):
    import numpy as np
    from sklearn.datasets import make_classification, make_moons
    from sklearn.model_selection import train_test_split
    if kind == "moons":
        x, y = make_moons(n_samples=n, noise=0.3, random_state=seed)
    else:
        x, y = make_classification(n_samples=n, n_features=10, n_informative=5, flip_y=0.05, random_state=seed)
    y = np.where(y > 0, 1, -1)
    return train_test_split(x.astype(np.float32), y, test_size=0.2, stratify=y, random_state=seed)


def rbf(a, b, gamma):
    import numpy as np
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2 * a @ b.T
    return np.exp(-gamma * np.maximum(d2, 0))


def run_kforge(args, model, tmp, xtr, ytr, lam, gamma, check):
    import numpy as np
    xf, yf, out = (os.path.join(tmp, name) for name in ("x.f32", "y.f32", "ab.f32"))
    xtr.astype(np.float32).tofile(xf)
    ytr.astype(np.float32).tofile(yf)
    cmd = [args.run, "--model", model, "--n", str(len(ytr)), "--d", str(xtr.shape[1]), "--x", xf, "--y", yf,
           "--lambda", repr(lam), "--gamma", repr(float(gamma)), "--out", out, "--threads", str(args.threads)]
    if args.params:
        cmd += ["--params", args.params]
    if check:
        cmd.append("--check")
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode not in (0, 1):
        raise SystemExit(f"kernel_model_run failed ({res.returncode}): {res.stderr}")
    info = json.loads(res.stdout.strip().splitlines()[-1])
    ab = np.fromfile(out, dtype=np.float32).astype(np.float64)
    return info, ab[:-1], ab[-1]


def run_sklearn(model, xtr, ytr, xte, gamma, c):
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import SVC
    t = time.perf_counter()
    if model == "svm":
        m = SVC(kernel="rbf", gamma=gamma, C=c).fit(xtr, ytr)
        secs = time.perf_counter() - t
        return secs, m.predict(xte), m.decision_function(xte)
    ktr = rbf(xtr, xtr, gamma)
    m = LogisticRegression(C=c, max_iter=5000).fit(ktr, ytr)
    secs = time.perf_counter() - t
    return secs, m.predict(rbf(xte, xtr, gamma)), None  # another penalty (|w|^2): not the same model


def fmt_range(v):
    return f"{statistics.median(v):.3g} ({min(v):.3g}..{max(v):.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="build/bench/kernel_model_run")
    ap.add_argument("--data", choices=["moons", "classification"], default="moons")
    ap.add_argument("--sizes", default="500,1000,2000")
    ap.add_argument("--models", default="svm,logreg")
    ap.add_argument("--lambda", dest="lam", type=float, default=0.01)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--params", default="", help="kforge kernel parameters, e.g. MAXIT=20000")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    bench_venv.ensure("sklearn", "scikit-learn")
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    import numpy as np

    print(f"data {args.data}, lambda {args.lam}, C = 1/(n_train lambda), {args.rounds} rounds, "
          f"{args.threads} thread(s); times in seconds, median (min..max)")
    print("| n (train) | model | kforge fit (s) | sklearn fit (s) | ratio sklearn/kforge | test acc kforge | "
          "test acc sklearn | max abs f - f_sklearn | kforge optimal |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            xtr, xte, ytr, yte = make_data(args.data, n, args.seed)
            gamma = 1.0 / (xtr.shape[1] * xtr.astype(np.float64).var())
            c = 1.0 / (len(ytr) * args.lam)
            for model in args.models.split(","):
                tk, ts, ratio = [], [], []
                acc_k = acc_s = None
                optimal = None
                for r in range(args.rounds):
                    info, a, b = run_kforge(args, model, tmp, xtr, ytr, args.lam, gamma, check=(r == 0))
                    secs_s, pred_s, dec_s = run_sklearn(model, xtr, ytr, xte, gamma, c)
                    tk.append(info["kernel_s_median"])
                    ts.append(secs_s)
                    ratio.append(secs_s / info["kernel_s_median"])
                    if r == 0:
                        optimal = info["optimal"]
                        f = rbf(xte.astype(np.float64), xtr.astype(np.float64), gamma) @ a + b
                        acc_k = float((np.where(f >= 0, 1, -1) == yte).mean())
                        acc_s = float((pred_s == yte).mean())
                        df = "-" if dec_s is None else f"{float(np.abs(f - dec_s).max()):.3g}"
                print(f"| {len(ytr)} | {model} | {fmt_range(tk)} | {fmt_range(ts)} | {fmt_range(ratio)}x | "
                      f"{acc_k:.4f} | {acc_s:.4f} | {df} | {'yes' if optimal else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
