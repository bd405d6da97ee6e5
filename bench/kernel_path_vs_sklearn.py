#!/usr/bin/env python3
"""`kforge kmodel` (one eigendecomposition per fold, the whole lambda path) against scikit-learn
refitting from scratch for every lambda, on the same rows and the same folds. CPU timings.

Per size n, one data set (make_moons with noise, or make_classification) and one gamma (sklearn's
'scale', passed to both sides). kforge runs as a process (`kforge kmodel MODEL --json`: its CSV
read, Gram matrix, eigendecompositions, paths and scoring) and prints each row's fold; the peers
then score the same folds:
  svm:    SVC(kernel='rbf', gamma, C = 1 / (n_train * lambda)), one fit per (lambda, fold);
          kforge's loss is the Huberized hinge (delta 0.5), SVC's the hinge: same model family,
          not the same optimum, so both accuracies are reported.
  logreg: LogisticRegression(C = 1 / (n_train * lambda)) on the explicit kernel (the columns of
          K(x, train) as features; its penalty is |w|^2, kforge's alpha^T K alpha).
The sides run in turn (interleaved) for --rounds rounds; each side's time is its wall time
(kforge: the whole process; sklearn: the kernel matrix once plus every fit and prediction). The
table gives medians with min..max over rounds and the per-round ratio sklearn/kforge.
Threads: both sides get --threads through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS.

  python3 bench/kernel_path_vs_sklearn.py --kforge build/kforge --sizes 500,1000,2000 --rounds 3
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


def log_grid(spec):
    lo, hi, count = spec.split(":")
    import numpy as np
    return sorted(np.geomspace(float(lo), float(hi), int(count)).tolist(), reverse=True)


def make_data(kind, n, seed):
    import numpy as np
    from sklearn.datasets import make_classification, make_moons
    if kind == "moons":
        x, y = make_moons(n_samples=n, noise=0.3, random_state=seed)
    else:
        x, y = make_classification(n_samples=n, n_features=10, n_informative=5, flip_y=0.05, random_state=seed)
    return x, np.where(y > 0, 1, -1)


def run_kforge(args, model, csv, gamma):
    cmd = [args.kforge, "kmodel", model, "--data", csv, "--gamma", repr(float(gamma)), "--lambdas", args.lambdas,
           "--folds", str(args.folds), "--json"]
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return time.perf_counter() - t, json.loads(out)


def run_sklearn(model, x, y, gamma, lambdas, fold):
    """Every (lambda, fold) fitted from scratch; accuracy per lambda (mean over folds)."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import SVC
    t = time.perf_counter()
    k = rbf_kernel(x, x, gamma=gamma) if model == "logreg" else None
    folds = sorted(set(fold.tolist()))
    acc = []
    for lam in lambdas:
        per_fold = []
        for f in folds:
            tr, te = fold != f, fold == f
            c = 1.0 / (tr.sum() * lam)
            if model == "svm":
                m = SVC(kernel="rbf", gamma=gamma, C=c).fit(x[tr], y[tr])
                pred = m.predict(x[te])
            else:
                m = LogisticRegression(C=c, max_iter=2000).fit(k[np.ix_(tr, tr)], y[tr])
                pred = m.predict(k[np.ix_(te, tr)])
            per_fold.append(float((pred == y[te]).mean()))
        acc.append(statistics.mean(per_fold))
    return time.perf_counter() - t, acc


def spread(v):
    return f"{statistics.median(v):.3g} ({min(v):.3g}..{max(v):.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kforge", default="build/kforge")
    ap.add_argument("--sizes", default="500,1000,2000")
    ap.add_argument("--models", default="svm,logreg")
    ap.add_argument("--data", default="moons", choices=["moons", "classification"])
    ap.add_argument("--lambdas", default="1e-4:1e1:20")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", help="also write the raw figures here")
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    bench_venv.ensure("sklearn", "scikit-learn")
    import numpy as np
    import sklearn

    lambdas = log_grid(args.lambdas)
    rows, raw = [], []
    tmp = tempfile.mkdtemp(prefix="kforge-kpath-bench-")
    for n in [int(s) for s in args.sizes.split(",")]:
        x, y = make_data(args.data, n, args.seed)
        gamma = float(1.0 / (x.shape[1] * x.var()))
        csv = os.path.join(tmp, f"data{n}.csv")
        np.savetxt(csv, np.c_[x, y], delimiter=",", fmt="%.17g")
        x = np.loadtxt(csv, delimiter=",")[:, :-1]  # both sides see the same rounded numbers
        for model in args.models.split(","):
            t_kf, t_sk, ratio = [], [], []
            for _ in range(args.rounds):
                tk, doc = run_kforge(args, model, csv, gamma)
                fold = np.array(doc["fold_of_row"])
                ts, acc_sk = run_sklearn(model, x, y, gamma, lambdas, fold)
                t_kf.append(tk)
                t_sk.append(ts)
                ratio.append(ts / tk)
            acc_kf = [p["accuracy_mean"] for p in doc["path"]]
            best_kf, best_sk = int(np.argmax(acc_kf)), int(np.argmax(acc_sk))
            row = {"n": n, "model": model, "kforge_s": t_kf, "sklearn_s": t_sk, "ratio": ratio,
                   "kforge_best": [lambdas[best_kf], acc_kf[best_kf]], "sklearn_best": [lambdas[best_sk], acc_sk[best_sk]],
                   "kforge_acc": acc_kf, "sklearn_acc": acc_sk, "kforge_seconds": doc["seconds"],
                   "max_abs_acc_diff": max(abs(a - b) for a, b in zip(acc_kf, acc_sk))}
            raw.append(row)
            rows.append(row)
            print(f"n={n} {model}: kforge {spread(t_kf)} s, sklearn {spread(t_sk)} s, ratio {spread(ratio)}x; "
                  f"best CV accuracy kforge {acc_kf[best_kf]:.4f} (lambda {lambdas[best_kf]:.3g}), "
                  f"sklearn {acc_sk[best_sk]:.4f} (lambda {lambdas[best_sk]:.3g})", flush=True)
    print(f"\n{args.data}, {len(lambdas)} lambdas {args.lambdas}, {args.folds} folds, {args.rounds} rounds, "
          f"{args.threads} thread(s), scikit-learn {sklearn.__version__}; CPU timings, wall seconds")
    print("| n | model | kforge path (s) | sklearn refits (s) | ratio sklearn/kforge | best CV acc kforge | best CV acc sklearn |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['n']} | {r['model']} | {spread(r['kforge_s'])} | {spread(r['sklearn_s'])} | "
              f"{spread(r['ratio'])}x | {r['kforge_best'][1]:.4f} (lambda {r['kforge_best'][0]:.3g}) | "
              f"{r['sklearn_best'][1]:.4f} (lambda {r['sklearn_best'][0]:.3g}) |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
