#!/usr/bin/env python3
"""`kforge kmodel` (the whole lambda path per fold: svm's hinge by warm-started SMO over the fold's
block of one Gram matrix, logreg with one eigendecomposition per fold) against scikit-learn
refitting from scratch for every lambda, on the same rows and the same folds. CPU timings.

Per size n, one data set (make_moons with noise, or make_classification) and one gamma (sklearn's
'scale', passed to both sides). kforge runs as a process (`kforge kmodel MODEL --json`: its CSV
read, Gram matrix, eigendecompositions, paths and scoring) and prints each row's fold; the peers
then score the same folds:
  svm:    SVC(kernel='rbf', gamma, C = 1 / (n_train * lambda)), one fit per (lambda, fold), at
          its default tol 1e-3 (libsvm's gap), kforge's svm default too: the same hinge-loss
          model. To show it, the bench also fits fold 0 at kforge's chosen lambda on both sides
          at tol 1e-3 and 1e-8 and prints max |f_kforge - f_sklearn| / max |f_sklearn| over the
          held-out rows (kforge through --save and `kmodel predict`). --svm-loss
          huberized-hinge times kforge's spectral path instead (then the models differ).
  logreg: LogisticRegression(C = 1 / (n_train * lambda)) on the explicit kernel (the columns of
          K(x, train) as features; its penalty is |w|^2, kforge's alpha^T K alpha).
With --peers sklearn,torchkm, torchkm (PyTorch; its own pathwise solver: one eigendecomposition
of the whole n x n kernel matrix, the full-data path over the lambdas, and per lambda a batched
CV refit warm-started from the full-data fit, the held-out rows' labels set to 0) runs too, on
the CPU, through its low-level classes cvksvm / cvklogit (the ones its TorchKMSVC / TorchKMLogit
estimators wrap; used directly to read their iteration counts and convergence flags):
  kernel: torchkm.functions.rbf_kernel(x, sigma) is exp(-2 sigma |x-z|^2), so sigma = gamma/2
          (checked against scikit-learn's rbf_kernel before timing);
  lambda: torchkm minimizes (1/n) sum L + ulam alpha^T K alpha with n ALL rows even in its CV
          refits (held-out rows contribute 0 to the sum), so a fold's fit equals kforge's
          (1/n_train) sum L + (lambda/2) alpha^T K alpha at ulam = lambda n_train / (2 n): the
          same C = 1/(n_train lambda) that SVC gets;
  folds:  kforge's fold_of_row (+1: torchkm counts folds from 1);
  svm:    torchkm solves the hinge itself, through a continuation of smoothed hinges (corner
          width 2 delta, delta = 1, 1/8, ... up to 8 stages) stopped by a KKT test on the hinge;
  logreg: the same loss log(1 + e^-t) and the same penalty alpha^T K alpha on both.
torchkm's time: its kernel matrix plus fit() (eigendecomposition, full-data path, CV path) plus
scoring the out-of-fold decisions it returns. Its path budget --torchkm-max-iter bounds the SUM of
iterations over the whole path (its maxit; the default 1000 stops a 20-lambda path early).
The sides run in turn (interleaved) for --rounds rounds; each side's time is its wall time
(kforge: the whole process; sklearn: the kernel matrix once plus every fit and prediction). The
table gives medians with min..max over rounds and the per-round ratio peer/kforge.
Threads: every side gets --threads through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS (torch also
through torch.set_num_threads).

  python3 bench/kernel_path_vs_sklearn.py --kforge build/kforge --sizes 500,1000,2000 --rounds 3
  python3 bench/kernel_path_vs_sklearn.py --kforge build/kforge --sizes 500,1000 --peers sklearn,torchkm
"""
import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

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


def run_kforge(args, model, csv, gamma, extra=None):
    cmd = [args.kforge, "kmodel", model, "--data", csv, "--gamma", repr(float(gamma)), "--lambdas", args.lambdas,
           "--folds", str(args.folds), "--json"]
    if model == "svm":
        cmd += ["--loss", args.svm_loss]
    cmd += (args.kforge_args if extra is None else extra).split()
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


def same_model_check(args, x, y, gamma, lam, fold, tmp):
    """Fold 0 at one lambda, both sides: max |f_kforge - f_sklearn| / max |f_sklearn| on the held-out
    rows, at tol 1e-3 (what the timed runs use) and 1e-8. kforge fits through `--test/--save`
    with that one lambda (the refit on all of its --data rows: the fold's training rows) and
    scores through `kmodel predict`."""
    import numpy as np
    from sklearn.svm import SVC
    tr, te = fold != 0, fold == 0
    train_csv, test_csv = os.path.join(tmp, "fold0_train.csv"), os.path.join(tmp, "fold0_test.csv")
    np.savetxt(train_csv, np.c_[x[tr], y[tr]], delimiter=",", fmt="%.17g")
    np.savetxt(test_csv, np.c_[x[te], y[te]], delimiter=",", fmt="%.17g")
    out = {}
    for tol in (1e-3, 1e-8):
        model = os.path.join(tmp, "fold0_model.json")
        subprocess.run([args.kforge, "kmodel", "svm", "--loss", "hinge", "--data", train_csv, "--gamma", repr(float(gamma)),
                        "--lambdas", repr(lam), "--folds", "2", "--tol", repr(tol), "--save", model, "--json"],
                       check=True, capture_output=True, text=True)
        pred = json.loads(subprocess.run([args.kforge, "kmodel", "predict", "--model", model, "--data", test_csv, "--json"],
                                         check=True, capture_output=True, text=True).stdout)
        f_k = np.array([p["decision"] for p in pred["predictions"]])
        svc = SVC(kernel="rbf", gamma=gamma, C=1.0 / (tr.sum() * lam), tol=tol).fit(x[tr], y[tr])
        f_s = svc.decision_function(x[te])
        out[tol] = {"rel_max_diff": float(np.abs(f_k - f_s).max() / np.abs(f_s).max()),
                    "label_agreement": float((np.sign(f_k) == np.sign(f_s)).mean()),
                    "support_vectors_sklearn": int(svc.support_.size)}
    return out


def torchkm_setup(threads):
    """Imports torch once, outside every timing, pinned to `threads` threads."""
    import torch
    torch.set_num_threads(threads)
    import torchkm
    return torchkm.__version__


def check_torchkm_kernel(x, gamma):
    """torchkm's rbf_kernel(x, sigma) is exp(-2 sigma |x - z|^2): sigma = gamma / 2 must give
    scikit-learn's exp(-gamma |x - z|^2), or the comparison is not on the same kernel."""
    import numpy as np
    import torch
    from sklearn.metrics.pairwise import rbf_kernel
    from torchkm.functions import rbf_kernel as tk_rbf
    k = tk_rbf(torch.as_tensor(x, dtype=torch.double), gamma / 2).numpy()
    err = float(np.abs(k - rbf_kernel(x, x, gamma=gamma)).max())
    if err > 1e-12:
        sys.exit(f"torchkm's rbf kernel differs from exp(-gamma |x-z|^2) by {err}: the sigma mapping is wrong")


def run_torchkm(model, x, y, gamma, lambdas, fold, max_iter):
    """torchkm's own path + CV (cvksvm / cvklogit) on the CPU; accuracy per lambda (mean over folds)
    from its out-of-fold decisions, and its iteration counts and convergence flags."""
    import numpy as np
    import torch
    from torchkm.cvklogit import cvklogit
    from torchkm.cvksvm import cvksvm
    from torchkm.functions import rbf_kernel as tk_rbf
    folds = sorted(set(fold.tolist()))
    n = len(y)
    t = time.perf_counter()
    k = tk_rbf(torch.as_tensor(x, dtype=torch.double), gamma / 2)
    # Per fold n_train = n - |fold|; folds differ by at most one row, the mean is used.
    n_train = n - n / len(folds)
    ulam = torch.tensor([lam * n_train / (2.0 * n) for lam in lambdas], dtype=torch.double)
    common = dict(Kmat=k, y=torch.as_tensor(y, dtype=torch.double), nlam=len(lambdas), ulam=ulam,
                  foldid=torch.as_tensor(fold + 1), nfolds=len(folds), eps=1e-5, maxit=max_iter,
                  gamma=1e-8, device="cpu")  # gamma: the eigenvalue shift TorchKMSVC passes
    m = cvksvm(is_exact=0, **common) if model == "svm" else cvklogit(**common)
    with contextlib.redirect_stdout(io.StringIO()) as chatter, warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        m.fit()
    pred = m.pred.numpy()
    label = np.where(pred > 0, 1, -1)
    acc = [statistics.mean(float((label[fold == f, l] == y[fold == f]).mean()) for f in folds)
           for l in range(len(lambdas))]
    elapsed = time.perf_counter() - t
    info = {"path_iterations": int(m.npass.sum()), "cv_iterations": int(m.cvnpass.sum()),
            "lambdas_converged": int(m.converged.sum()), "jerr": int(m.jerr),
            "warnings": [str(w.message) for w in warned], "stdout": chatter.getvalue().strip()}
    return elapsed, acc, info


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
    ap.add_argument("--peers", default="sklearn", help="comma list: sklearn, torchkm")
    ap.add_argument("--torchkm-max-iter", type=int, default=100000,
                    help="torchkm's maxit: a budget on the iterations summed over the whole path")
    ap.add_argument("--svm-loss", default="hinge", choices=["hinge", "huberized-hinge"],
                    help="kforge's svm loss: hinge (SMO, the same model as SVC) or huberized-hinge (spectral path)")
    ap.add_argument("--kforge-args", default="",
                    help="more options for `kforge kmodel`, e.g. \"--per-fold-decomposition --eigensolver lapack "
                         "--double-steps\" (logreg's route before 2026-12-05)")
    ap.add_argument("--kforge-alt-args", default=None,
                    help="also run kforge with these options instead of --kforge-args, right after it in every "
                         "round (interleaved), e.g. \"--two-pass-steps\": its time, its ratio to each peer and "
                         "the per-round time ratio alt/kforge")
    ap.add_argument("--json", help="also write the raw figures here")
    args = ap.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    peers = args.peers.split(",")
    for p in peers:
        if p not in ("sklearn", "torchkm"):
            ap.error(f"--peers: unknown peer '{p}' (use sklearn, torchkm or both, comma-separated)")
    if "torchkm" in peers:
        bench_venv.ensure("torchkm", "torchkm")  # pulls torch and scikit-learn
    bench_venv.ensure("sklearn", "scikit-learn")
    import numpy as np
    import sklearn
    versions = f"scikit-learn {sklearn.__version__}"
    if "torchkm" in peers:
        import torch
        versions += f", torchkm {torchkm_setup(args.threads)} (torch {torch.__version__}, cpu, {torch.get_num_threads()} thread(s))"

    lambdas = log_grid(args.lambdas)
    rows, raw = [], []
    tmp = tempfile.mkdtemp(prefix="kforge-kpath-bench-")
    for n in [int(s) for s in args.sizes.split(",")]:
        x, y = make_data(args.data, n, args.seed)
        gamma = float(1.0 / (x.shape[1] * x.var()))
        csv = os.path.join(tmp, f"data{n}.csv")
        np.savetxt(csv, np.c_[x, y], delimiter=",", fmt="%.17g")
        x = np.loadtxt(csv, delimiter=",")[:, :-1]  # both sides see the same rounded numbers
        if "torchkm" in peers:
            check_torchkm_kernel(x, gamma)
        for model in args.models.split(","):
            alt = args.kforge_alt_args is not None
            t = {side: [] for side in ["kforge"] + (["alt"] if alt else []) + peers}
            ratio = {p: [] for p in peers}
            alt_ratio, alt_peer_ratio, alt_doc = [], {p: [] for p in peers}, None
            paths, alt_paths = [], []  # kforge's own "path" seconds per round, both variants
            acc, info = {}, {}
            for _ in range(args.rounds):
                tk, doc = run_kforge(args, model, csv, gamma)
                t["kforge"].append(tk)
                paths.append(doc["seconds"]["path"])
                if alt:
                    ta, alt_doc = run_kforge(args, model, csv, gamma, args.kforge_alt_args)
                    t["alt"].append(ta)
                    alt_ratio.append(ta / tk)
                    alt_paths.append(alt_doc["seconds"]["path"])
                fold = np.array(doc["fold_of_row"])
                for p in peers:
                    if p == "sklearn":
                        tp, acc[p] = run_sklearn(model, x, y, gamma, lambdas, fold)
                    else:
                        tp, acc[p], info[p] = run_torchkm(model, x, y, gamma, lambdas, fold, args.torchkm_max_iter)
                    t[p].append(tp)
                    ratio[p].append(tp / tk)
                    if alt:
                        alt_peer_ratio[p].append(tp / ta)
            acc["kforge"] = [p["accuracy_mean"] for p in doc["path"]]
            best = {side: int(np.argmax(acc[side])) for side in ["kforge"] + peers}  # ties: the larger lambda
            row = {"n": n, "model": model, "seconds": t, "ratio": ratio, "acc": acc, "peer_info": info,
                   "best": {side: [lambdas[b], acc[side][b]] for side, b in best.items()},
                   "kforge_seconds": doc["seconds"],
                   "max_abs_acc_diff": {p: max(abs(a - b) for a, b in zip(acc["kforge"], acc[p])) for p in peers}}
            if model == "svm" and "sklearn" in peers and args.svm_loss == "hinge":
                row["same_model"] = same_model_check(args, x, y, gamma, lambdas[best["kforge"]], fold, tmp)
            raw.append(row)
            rows.append(row)
            line = f"n={n} {model}: kforge {spread(t['kforge'])} s"
            for p in peers:
                line += f", {p} {spread(t[p])} s ({spread(ratio[p])}x)"
            line += "; best CV accuracy " + ", ".join(
                f"{side} {acc[side][b]:.4f} (lambda {lambdas[b]:.3g})" for side, b in best.items())
            if "torchkm" in info:
                ti = info["torchkm"]
                line += (f"; torchkm iterations path {ti['path_iterations']} cv {ti['cv_iterations']}, "
                         f"converged {ti['lambdas_converged']}/{len(lambdas)}, jerr {ti['jerr']}, "
                         f"{len(ti['warnings'])} warning(s)")
            ks = doc["seconds"]
            line += (f"; kforge's own split (last round): gram {ks['gram']:.3f} s, eigen {ks['eigen']:.3f} s, "
                     f"paths {ks['path']:.3f} s, scoring {ks.get('score', 0):.3f} s, "
                     f"iterations {sum(p['iterations'] for p in doc['path'])}")
            if alt:
                ka = alt_doc["seconds"]
                row["alt"] = {"args": args.kforge_alt_args, "ratio_alt_over_kforge": alt_ratio,
                              "paths_seconds": alt_paths, "kforge_paths_seconds": paths,
                              "peer_ratio": alt_peer_ratio, "kforge_seconds": ka,
                              "best": [lambdas[int(np.argmax([p["accuracy_mean"] for p in alt_doc["path"]]))],
                                       max(p["accuracy_mean"] for p in alt_doc["path"])]}
                line += (f"; kforge {args.kforge_alt_args}: {spread(t['alt'])} s, time alt/kforge "
                         f"{spread(alt_ratio)}x, paths (kforge's own split, every round) {spread(alt_paths)} s "
                         f"against {spread(paths)} s, alt/kforge {spread([a / b for a, b in zip(alt_paths, paths)])}x" + "".join(f", {p}/alt {spread(alt_peer_ratio[p])}x" for p in peers) +
                         f", its split (last round): eigen {ka['eigen']:.3f} s, paths {ka['path']:.3f} s, "
                         f"iterations {sum(p['iterations'] for p in alt_doc['path'])}, best CV accuracy "
                         f"{row['alt']['best'][1]:.4f} (lambda {row['alt']['best'][0]:.3g})")
            if "same_model" in row:
                line += "; same model, fold 0 at lambda {:.3g}: ".format(lambdas[best["kforge"]]) + ", ".join(
                    f"tol {tol:g}: max|f_kforge - f_sklearn|/max|f_sklearn| {v['rel_max_diff']:.2e}, "
                    f"labels agree {v['label_agreement']:.4f}" for tol, v in row["same_model"].items())
            print(line, flush=True)
    print(f"\n{args.data}, {len(lambdas)} lambdas {args.lambdas}, {args.folds} folds, {args.rounds} rounds, "
          f"{args.threads} thread(s), {versions}; CPU timings, wall seconds")
    head = "| n | model | kforge path (s) |"
    for p in peers:
        head += f" {p}{' refits' if p == 'sklearn' else ''} (s) | ratio {p}/kforge |"
    head += " best CV acc kforge |" + "".join(f" best CV acc {p} |" for p in peers)
    print(head)
    print("|" + "---|" * (3 + 2 * len(peers) + 1 + len(peers)))
    for r in rows:
        line = f"| {r['n']} | {r['model']} | {spread(r['seconds']['kforge'])} |"
        for p in peers:
            line += f" {spread(r['seconds'][p])} | {spread(r['ratio'][p])}x |"
        for side in ["kforge"] + peers:
            line += f" {r['best'][side][1]:.4f} (lambda {r['best'][side][0]:.3g}) |"
        print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
