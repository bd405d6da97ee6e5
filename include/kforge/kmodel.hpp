#pragma once
// Kernel models over a regularization path (issue 21): kernel SVM and kernel logistic regression,
// fitted for every lambda of a grid and scored by k-fold cross-validation. The SVM's hinge loss
// is solved exactly by SMO on the dual over each fold's block of one Gram matrix, warm-started
// along the path (fit_path_smo); the smooth losses (logistic, Huberized hinge) by
// majorization-minimization with ONE eigendecomposition of the whole kernel matrix reused by
// every fold (its loss summed over its training rows) across the path (fit_path_folds).
//
// The model is f(x) = sum_j alpha_j k(x, x_j) + b, fitted by
//   minimize over (alpha, b):  (1/n) sum_i L(y_i f(x_i)) + (lambda/2) alpha^T K alpha,
// the intercept b unpenalized. The smooth losses have bounded curvature (L'' <= c: 1/delta for the
// Huberized hinge, 1/4 for the logistic), so one quadratic majorizer with curvature c holds
// everywhere; with K = U diag(s) U^T its linear system is diagonal in U's basis, so each
// iteration is two n x n matrix-vector products, never a new factorization. docs/kernel-models.md
// has the derivation, the stopping rule and the measured figures.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace kforge::kmodel {

// Rows of features and labels in {-1, +1}.
struct Dataset {
  Eigen::MatrixXd x;  // (n, d)
  Eigen::VectorXd y;  // (n): -1 or +1
};

// A CSV file of numbers, the label in the last column (-1/+1 or 0/1; 0 becomes -1). An optional
// header line is skipped when its first field is not a number. Throws UsageError naming the file,
// the line and the fix: unreadable file, a non-number, ragged rows, labels other than those, or
// only one class.
[[nodiscard]] Dataset read_csv(const std::string& path);
// Throws UsageError unless both classes are present and labels are -1/+1 (`what` names the data).
void check_labels(const Eigen::VectorXd& y, const std::string& what);

struct KernelFunction {
  enum class Kind { rbf, linear, poly } kind = Kind::rbf;
  double gamma = 1;  // rbf: k(x, z) = exp(-gamma |x - z|^2); linear: k(x, z) = x . z
  int degree = 3;     // poly: k(x, z) = (gamma x . z + coef0)^degree
  double coef0 = 1;
};
[[nodiscard]] const char* kernel_kind_name(KernelFunction::Kind k);
// Parses "rbf", "linear" or "poly"; throws UsageError otherwise.
[[nodiscard]] KernelFunction::Kind parse_kernel_kind(const std::string& s);
// scikit-learn's gamma='scale': 1 / (d * variance of all entries of x).
[[nodiscard]] double gamma_scale(const Eigen::MatrixXd& x);
// K(a, b) for every row pair: (rows of a, rows of b). Dot products by Eigen's blocked matrix
// product, then the kernel's map elementwise (squared distances clamped at 0).
[[nodiscard]] Eigen::MatrixXd gram(const KernelFunction& k, const Eigen::MatrixXd& a, const Eigen::MatrixXd& b);

// hinge max(0, 1 - t) (the SVM, by SMO); Huberized hinge (its corner rounded over delta, by the
// spectral path: what torchkm solves; the kernel_svm problem solves the hinge); logistic (logreg).
enum class Loss { hinge, huber_hinge, logistic };
// "hinge", "huberized-hinge", "logistic"; throws UsageError naming --loss otherwise.
[[nodiscard]] Loss parse_loss(const std::string& s);
[[nodiscard]] const char* loss_name(Loss l);   // as parse_loss reads it
[[nodiscard]] const char* model_name(Loss l);  // "svm" (either hinge) or "logreg"
// The loss of `kforge kmodel MODEL [--loss LOSS]`: svm -> hinge (or huberized-hinge), logreg ->
// logistic; an empty `loss` takes the model's default. Throws UsageError on a mismatch.
[[nodiscard]] Loss loss_of_model(const std::string& model, const std::string& loss);

struct SolverOptions {
  Loss loss = Loss::huber_hinge;
  double delta = 0.5;     // Huberized hinge: quadratic on (1 - delta, 1], curvature 1/delta
  // 0 takes the solver's default: the spectral path's relative KKT residual 1e-4 (see
  // kkt_residual); SMO's gap m(a) - M(a) 1e-3 (libsvm's and scikit-learn's SVC default).
  double tol = 0;
  // Per lambda; 0 takes the solver's default: 20000 MM steps, or max(10^7, 100 n) SMO steps (pair
  // updates, libsvm's cap).
  int max_iter = 0;
  bool shrinking = true;  // SMO: rows stuck at a bound leave the scans until the active rows converge
  bool accelerate = true;  // Nesterov momentum on the MM steps, restarted when the objective rises
  // The spectral path's two products per step in float when tol >= 1e-5 (their error ~1e-6 is
  // well below the stop; the float phase stops at 0.8 tol); each lambda's end point is
  // re-evaluated and judged in double, and a fold that misses tol there goes on with double
  // steps. false: double throughout.
  bool single_precision_steps = true;
  // The path's products with U (float steps and the per-lambda double ones) streamed over U and a
  // transposed copy (AVX2 dot products, no copy of U per call) instead of OpenBLAS's sgemm/dgemm,
  // which pack all of U on every call. false: OpenBLAS (for comparison).
  bool streamed_products = true;
  // With the streamed float steps: each step reads U once, by blocks of its rows (f = U (s beta)
  // for the block, the slopes there, then U_blk^T g while the block is in cache), instead of
  // twice (U (s beta), then U^T g). The same iterates (the restart test is applied after the pass;
  // a restarted fold's slopes are retaken in the next pass). false: two passes (for comparison).
  bool one_pass_steps = true;
  // ... but only where U in float (n x r x 4 bytes) is at least this large: where U stays in the
  // caches the two passes' longer loops win (bench/kernel_path_vs_sklearn.py, quiet: two moons,
  // n = 1000, paths 0.054 s two-pass against 0.064 s one-pass; full rank at n = 1000, 3.8 MiB:
  // one pass 1.32x faster).
  std::size_t one_pass_min_bytes = std::size_t{2} << 20;
  // Eigenvalues below rank_tol * the largest are taken as 0: the solver iterates only on the r
  // others (O(n r) per step instead of O(n^2)); the fitted values move by at most
  // rank_tol * s_max * |alpha|. Smooth kernels on low-dimensional data have r << n.
  double rank_tol = 1e-12;
};

// The loss of a margin t = y f, its derivative (the hinge: the subgradient -1 below 1, else 0) and
// its curvature bound (the hinge has none: curvature_bound throws std::logic_error).
[[nodiscard]] double loss_value(Loss l, double delta, double t);
[[nodiscard]] double loss_slope(Loss l, double delta, double t);
[[nodiscard]] double curvature_bound(Loss l, double delta);

// A kernel matrix's eigendecomposition K = U diag(s) U^T (eigenvalues ascending), or its top r
// eigenpairs: the rest are taken as 0 (see SolverOptions::rank_tol).
struct Spectrum {
  Eigen::MatrixXd u;  // (n, r)
  Eigen::VectorXd s;  // (r)
};
// automatic: a pivoted Cholesky factor K ~ L L^T (columns added until the trace of what is left
// is below rank_tol times a lower bound of s_max), then QR of L and the small eigenproblem of
// R R^T: O(n r^2), exact to the truncation, when K is numerically of rank r <= n/4 (a smooth
// kernel on low-dimensional data); else it gives up at n/4 columns and runs lapack.
// lapack: OpenBLAS's dsytrd, dstemr, dormtr. eigen: Eigen's SelfAdjointEigenSolver (every eigenpair).
enum class EigenSolver { automatic, lapack, eigen };
[[nodiscard]] EigenSolver parse_eigensolver(const std::string& s);
// lapack computes only the eigenpairs above rank_tol * s_max: those fit_path iterates on (all
// when rank_tol is 0); the tridiagonalization stays O(n^3), the eigenvectors cost O(n^2 r).
// automatic with rank_tol 0 is lapack.
[[nodiscard]] Spectrum decompose(const Eigen::MatrixXd& k, EigenSolver how = EigenSolver::lapack,
                                 double rank_tol = 0);
// The pivoted Cholesky route of `automatic`; returns false (and leaves `out` alone) when more
// than max_rank columns would be needed.
[[nodiscard]] bool low_rank_eigenpairs(const Eigen::MatrixXd& k, double rank_tol, Eigen::Index max_rank, Spectrum& out);

// One fitted model.
struct Fit {
  double lambda = 0;
  Eigen::VectorXd alpha;  // (n) coefficients of k(., x_j)
  double b = 0;
  double objective = 0;
  double kkt = 0;  // the relative KKT residual at the end
  int iterations = 0;
  bool converged = false;
  int rank = 0;  // eigenpairs iterated on (see SolverOptions::rank_tol); SMO: 0
  int support_vectors = 0;  // rows with alpha_i != 0 (SMO; the smooth losses' alpha is dense)
};

// The objective and the relative KKT residual of (alpha, b) at lambda, from K directly: what the
// tests use to check any solver's answer. The residual is
//   max( |g + n lambda alpha|_2 / (|g|_2 + n lambda |alpha|_2),  |sum g| / |g|_1 )
// with g_i = y_i L'(y_i f_i): zero exactly at the minimizer (stationarity in alpha's
// representer form alpha = -g/(n lambda), and in b), scale-free.
// For the hinge (not differentiable) it is SMO's measure instead, from K: the maximal KKT
// violation m(a) - M(a) of a = y * alpha (0 when negative), +infinity when a leaves the box
// [0, 1/(n lambda)] or y^T a != 0 (beyond rounding); b is not used.
[[nodiscard]] double objective(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o,
                               double lambda, const Eigen::VectorXd& alpha, double b);
[[nodiscard]] double kkt_residual(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o,
                                  double lambda, const Eigen::VectorXd& alpha, double b);

// Fits every lambda in the order given (warm start from the previous one when `warm`; the path
// runs best from large to small lambda). The spectrum is of the training kernel matrix. The
// smooth losses only (throws std::invalid_argument for the hinge: fit_path_smo).
[[nodiscard]] std::vector<Fit> fit_path(const Spectrum& sp, const Eigen::VectorXd& y, const SolverOptions& o,
                                        const std::vector<double>& lambdas, bool warm = true);
// The same path for the model fitted on `rows` only (a training fold), from the spectrum of the
// kernel matrix over ALL of y's rows: the loss sums over `rows`, the penalty is
// (lambda/2) alpha^T K alpha with n_t = rows.size() in the 1/n_t; the other rows' labels are not
// read. Every minimizer's alpha vanishes off `rows` (the representer theorem), so the fit is the
// one fit_path gives on the block K[rows, rows]; Fit::alpha has rows.size() entries, in the order
// of `rows`. Cross-validation uses it to decompose once for all folds.
[[nodiscard]] std::vector<Fit> fit_path_rows(const Spectrum& sp, const Eigen::VectorXd& y,
                                             const std::vector<Eigen::Index>& rows, const SolverOptions& o,
                                             const std::vector<double>& lambdas, bool warm = true);
// fit_path_rows for several row sets (the training folds) at once: per lambda their steps run in
// lockstep, each step's two products with U taken for all of them as one matrix product (U is
// read once per step, not once per fold). out[j] is fold j's path, as fit_path_rows gives it.
[[nodiscard]] std::vector<std::vector<Fit>> fit_path_folds(const Spectrum& sp, const Eigen::VectorXd& y,
                                                           const std::vector<std::vector<Eigen::Index>>& folds,
                                                           const SolverOptions& o, const std::vector<double>& lambdas,
                                                           bool warm = true);

// The hinge loss's path, exactly: per lambda the dual
//   minimize (1/2) a^T Q a - 1^T a  over 0 <= a_i <= C,  y^T a = 0,   Q_ij = y_i y_j K_ij,
// C = 1 / (n lambda) (scikit-learn's SVC at that C), solved by SMO with second-order working-set
// selection over the precomputed (n, n) kernel matrix k. alpha_i = y_i a_i. With `warm`, each
// lambda starts from the previous lambda's a scaled by C_new / C_old (still feasible; lambdas
// from large to small). Stops when the maximal KKT violation m(a) - M(a) (Fit::kkt) <= tol. The
// intercept b: the mean of y_i - (K alpha)_i over the free support vectors (0 < a_i < C), or
// the midpoint of b's feasible interval when none is free. Fit::objective is the primal
// (1/n) sum hinge + (lambda/2) alpha^T K alpha.
[[nodiscard]] std::vector<Fit> fit_path_smo(const Eigen::MatrixXd& k, const Eigen::VectorXd& y, const SolverOptions& o,
                                            const std::vector<double>& lambdas, bool warm = true);

// "1e-4:1e1:20": 20 values log-spaced from 1e-4 to 1e1; or a comma list "0.1,0.01". Returned
// from the largest to the smallest (the path's order). Throws UsageError on a bad grid.
[[nodiscard]] std::vector<double> parse_lambdas(const std::string& s);

// Stratified k-fold: each class shuffled by `seed` (mt19937_64, Fisher-Yates: the same folds on
// every platform) and dealt round-robin. fold[i] in [0, k). Throws UsageError when a class has
// fewer than k rows.
[[nodiscard]] std::vector<int> stratified_folds(const Eigen::VectorXd& y, int k, std::uint64_t seed);

struct CvOptions {
  KernelFunction kernel;
  SolverOptions solver;
  std::vector<double> lambdas;  // the path's order
  int folds = 5;
  std::uint64_t seed = 1;
  EigenSolver eigensolver = EigenSolver::automatic;
  bool warm = true;
  // The smooth losses: ONE decomposition of the whole kernel matrix for every fold (fit_path_rows)
  // instead of one per training fold's block (fit_path). The hinge's SMO decomposes nothing.
  bool shared_decomposition = true;
};

struct LambdaScore {
  double lambda = 0;
  std::vector<double> accuracy;  // per fold
  double mean = 0, min = 0, max = 0;
  int iterations = 0;  // summed over folds
  int support_vectors = 0;  // summed over folds (SMO)
  double kkt = 0;  // the largest over the folds of Fit::kkt
  bool converged = true;  // every fold's fit converged
};

struct CvResult {
  std::vector<LambdaScore> path;
  std::size_t best = 0;  // highest mean accuracy; ties go to the larger lambda (the simpler model)
  std::vector<int> fold;  // each row's test fold, so that a peer can score on the same splits
  std::vector<int> rank;  // per fold: eigenpairs the solver iterated on (the spectral path only)
  // The kernel matrix; the folds' eigendecompositions (spectral path); the paths (SMO: with
  // cutting each fold's block); scoring the held-out rows.
  double seconds_gram = 0, seconds_eigen = 0, seconds_path = 0, seconds_score = 0, seconds_total = 0;
  // The whole kernel matrix's spectrum (smooth losses, shared decomposition): fit_all reuses it.
  std::shared_ptr<const Spectrum> spectrum;
  [[nodiscard]] nlohmann::json to_json() const;
};

[[nodiscard]] CvResult cross_validate(const Dataset& d, const CvOptions& o);

// The model on every row at `lambda`: one more decomposition (of the whole kernel matrix; none
// for the hinge), the
// path of o.lambdas down to `lambda` warm-started as in cross-validation.
// `whole`: the spectrum of d's whole kernel matrix (CvResult::spectrum) for the smooth losses,
// which then need neither the kernel matrix nor a decomposition; nullptr computes them.
[[nodiscard]] Fit fit_all(const Dataset& d, const CvOptions& o, double lambda, const Spectrum* whole = nullptr);
// f(x) = K(x, train) alpha + b for each row of x.
[[nodiscard]] Eigen::VectorXd decision(const KernelFunction& k, const Eigen::MatrixXd& train, const Fit& fit,
                                       const Eigen::MatrixXd& x);

// A model saved by `kforge kmodel svm|logreg --save FILE` (format "kforge-kmodel-1"): the
// training rows travel with it, since f(x) = sum_j alpha_j k(x, x_j) + b needs them.
struct SavedModel {
  Loss loss = Loss::huber_hinge;
  KernelFunction kernel;
  double lambda = 0, delta = 0.5;
  Fit fit;            // alpha and b
  Eigen::MatrixXd x;  // (n, d) the training rows
  [[nodiscard]] nlohmann::json to_json() const;
};
// Reads and checks a saved model; throws UsageError naming the file and what is wrong (not
// JSON, another format, a missing or non-finite field, alpha and the rows of different counts).
[[nodiscard]] SavedModel load_model(const std::string& path);

// Rows to score: a CSV file of numbers with `features` columns, or `features` + 1 with the
// label last (then `labels` is set, -1/+1 or 0/1 as in read_csv). Throws UsageError otherwise.
[[nodiscard]] Eigen::MatrixXd read_rows_to_score(const std::string& path, Eigen::Index features,
                                                 Eigen::VectorXd* labels);

}  // namespace kforge::kmodel
