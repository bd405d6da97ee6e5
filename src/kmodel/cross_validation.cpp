// Model selection: the lambda grid, stratified folds and k-fold cross-validation of a path,
// one kernel matrix for all rows; per training fold its block, then SMO's path on it (hinge) or
// one eigendecomposition and the spectral path (the smooth losses).
#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"
#include "kmodel/blas.hpp"

namespace kforge::kmodel {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double parse_positive(const std::string& s, const std::string& grid) {
  std::size_t used = 0;
  double v = 0;
  try { v = std::stod(s, &used); } catch (const std::exception&) { used = 0; }
  if (used != s.size() || !(v > 0) || !std::isfinite(v))
    throw UsageError(fmt::format("--lambdas {}: '{}' is not a positive number (a grid is LO:HI:COUNT, "
                                 "e.g. 1e-4:1e1:20, or a list 0.1,0.01)", grid, s));
  return v;
}

Eigen::MatrixXd rows_cols(const Eigen::MatrixXd& k, const std::vector<Eigen::Index>& r,
                          const std::vector<Eigen::Index>& c) {
  Eigen::MatrixXd out(static_cast<Eigen::Index>(r.size()), static_cast<Eigen::Index>(c.size()));
  for (std::size_t j = 0; j < c.size(); ++j)
    for (std::size_t i = 0; i < r.size(); ++i) out(i, j) = k(r[i], c[j]);
  return out;
}

}  // namespace

std::vector<double> parse_lambdas(const std::string& s) {
  std::vector<double> out;
  if (s.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ':');) parts.push_back(p);
    if (parts.size() != 3) throw UsageError("--lambdas " + s + ": a grid is LO:HI:COUNT, e.g. 1e-4:1e1:20");
    const double lo = parse_positive(parts[0], s), hi = parse_positive(parts[1], s);
    int count = 0;
    try { count = std::stoi(parts[2]); } catch (const std::exception&) {}
    if (count < 1 || count > 10000) throw UsageError("--lambdas " + s + ": COUNT must be 1..10000");
    for (int i = 0; i < count; ++i)
      out.push_back(count == 1 ? lo : std::exp(std::log(lo) + (std::log(hi) - std::log(lo)) * i / (count - 1)));
  } else {
    std::stringstream ss(s);
    for (std::string p; std::getline(ss, p, ',');) out.push_back(parse_positive(p, s));
  }
  if (out.empty()) throw UsageError("--lambdas is empty; e.g. 1e-4:1e1:20");
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

std::vector<int> stratified_folds(const Eigen::VectorXd& y, int k, std::uint64_t seed) {
  if (k < 2) throw UsageError(fmt::format("--folds {}: need at least 2", k));
  std::mt19937_64 rng(seed);
  std::vector<int> fold(static_cast<std::size_t>(y.size()), 0);
  int next = 0;  // dealing continues across classes so fold sizes differ by at most one
  for (const double label : {-1.0, 1.0}) {
    std::vector<std::size_t> idx;
    for (Eigen::Index i = 0; i < y.size(); ++i)
      if (y[i] == label) idx.push_back(static_cast<std::size_t>(i));
    if (static_cast<int>(idx.size()) < k)
      throw UsageError(fmt::format("--folds {}: class {:+} has only {} rows; every fold needs one of each "
                                   "class (use fewer folds or more data)", k, label, idx.size()));
    // Fisher-Yates with mt19937_64's raw output (std::shuffle's draws differ between libraries).
    for (std::size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng() % i]);
    for (const std::size_t i : idx) fold[i] = next++ % k;
  }
  return fold;
}

CvResult cross_validate(const Dataset& d, const CvOptions& o) {
  check_labels(d.y, "the data");
  if (o.lambdas.empty()) throw UsageError("no lambdas to fit");
  const auto t_total = std::chrono::steady_clock::now();
  CvResult r;
  auto t0 = std::chrono::steady_clock::now();
  const Eigen::MatrixXd k = gram(o.kernel, d.x, d.x);  // every fold's blocks come from this one
  r.seconds_gram = seconds_since(t0);
  r.fold = stratified_folds(d.y, o.folds, o.seed);
  const std::vector<int>& fold = r.fold;
  for (const double l : o.lambdas) r.path.push_back(LambdaScore{l, {}, 0, 0, 0, 0, 0, 0, true});
  std::vector<std::vector<Eigen::Index>> trains(static_cast<std::size_t>(o.folds)), tests(trains.size());
  for (Eigen::Index i = 0; i < d.y.size(); ++i)
    for (int f = 0; f < o.folds; ++f) (fold[i] == f ? tests : trains)[static_cast<std::size_t>(f)].push_back(i);
  // Smooth losses, shared: the whole K's spectrum, every fold's path in lockstep (fit_path_folds).
  std::vector<std::vector<Fit>> shared_fits;
  if (o.solver.loss != Loss::hinge && o.shared_decomposition) {
    t0 = std::chrono::steady_clock::now();
    auto sp = std::make_shared<const Spectrum>(decompose(k, o.eigensolver, o.solver.rank_tol));
    r.seconds_eigen += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    shared_fits = fit_path_folds(*sp, d.y, trains, o.solver, o.lambdas, o.warm);
    r.spectrum = std::move(sp);
    r.seconds_path += seconds_since(t0);
  }
  for (int f = 0; f < o.folds; ++f) {
    const std::vector<Eigen::Index>& train = trains[static_cast<std::size_t>(f)];
    const std::vector<Eigen::Index>& test = tests[static_cast<std::size_t>(f)];
    Eigen::VectorXd y_train(static_cast<Eigen::Index>(train.size()));
    for (std::size_t i = 0; i < train.size(); ++i) y_train[i] = d.y[train[i]];
    t0 = std::chrono::steady_clock::now();
    std::vector<Fit> fits;
    if (o.solver.loss == Loss::hinge) {  // SMO on the fold's Gram block: no decomposition
      const Eigen::MatrixXd k_train = rows_cols(k, train, train);
      fits = fit_path_smo(k_train, y_train, o.solver, o.lambdas, o.warm);
    } else if (o.shared_decomposition) {
      fits = std::move(shared_fits[static_cast<std::size_t>(f)]);
      r.rank.push_back(fits.empty() ? 0 : fits.front().rank);
    } else {
      const Spectrum sp = decompose(rows_cols(k, train, train), o.eigensolver, o.solver.rank_tol);
      r.seconds_eigen += seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      fits = fit_path(sp, y_train, o.solver, o.lambdas, o.warm);
      r.rank.push_back(fits.empty() ? 0 : fits.front().rank);
    }
    r.seconds_path += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const Eigen::MatrixXd k_test = rows_cols(k, test, train);  // (test, train)
    // Every lambda's decisions as ONE product (test x train times train x lambdas): one read of
    // k_test instead of one per lambda.
    Eigen::MatrixXd alphas(static_cast<Eigen::Index>(train.size()), static_cast<Eigen::Index>(fits.size()));
    for (std::size_t l = 0; l < fits.size(); ++l) alphas.col(static_cast<Eigen::Index>(l)) = fits[l].alpha;
    const Eigen::MatrixXd f_tests = blas::gemm(k_test, false, alphas);
    for (std::size_t l = 0; l < fits.size(); ++l) {
      const Eigen::VectorXd f_test = f_tests.col(static_cast<Eigen::Index>(l)).array() + fits[l].b;
      int correct = 0;
      for (std::size_t i = 0; i < test.size(); ++i) correct += (f_test[i] >= 0 ? 1.0 : -1.0) == d.y[test[i]];
      r.path[l].accuracy.push_back(static_cast<double>(correct) / static_cast<double>(test.size()));
      r.path[l].iterations += fits[l].iterations;
      r.path[l].support_vectors += fits[l].support_vectors;
      r.path[l].kkt = std::max(r.path[l].kkt, fits[l].kkt);
      r.path[l].converged = r.path[l].converged && fits[l].converged;
    }
    r.seconds_score += seconds_since(t0);
  }
  for (auto& s : r.path) {
    s.mean = 0;
    for (const double a : s.accuracy) s.mean += a / static_cast<double>(s.accuracy.size());
    s.min = *std::min_element(s.accuracy.begin(), s.accuracy.end());
    s.max = *std::max_element(s.accuracy.begin(), s.accuracy.end());
  }
  for (std::size_t l = 1; l < r.path.size(); ++l)  // strict: a tie keeps the larger lambda
    if (r.path[l].mean > r.path[r.best].mean) r.best = l;
  r.seconds_total = seconds_since(t_total);
  return r;
}

Fit fit_all(const Dataset& d, const CvOptions& o, double lambda, const Spectrum* whole) {
  std::vector<double> path;
  for (const double l : o.lambdas)
    if (l >= lambda) path.push_back(l);
  if (path.empty() || path.back() != lambda) path.push_back(lambda);
  if (whole != nullptr && o.solver.loss != Loss::hinge) {
    if (whole->u.rows() != d.y.size()) throw std::invalid_argument("fit_all: the spectrum is of another matrix");
    return fit_path(*whole, d.y, o.solver, path, o.warm).back();
  }
  const Eigen::MatrixXd k = gram(o.kernel, d.x, d.x);
  if (o.solver.loss == Loss::hinge) return fit_path_smo(k, d.y, o.solver, path, o.warm).back();
  return fit_path(decompose(k, o.eigensolver, o.solver.rank_tol), d.y, o.solver, path, o.warm).back();
}

Eigen::VectorXd decision(const KernelFunction& k, const Eigen::MatrixXd& train, const Fit& fit,
                         const Eigen::MatrixXd& x) {
  return (gram(k, x, train) * fit.alpha).array() + fit.b;
}

nlohmann::json CvResult::to_json() const {
  nlohmann::json j;
  for (const auto& s : path)
    j["path"].push_back({{"lambda", s.lambda}, {"accuracy_mean", s.mean}, {"accuracy_min", s.min},
                         {"accuracy_max", s.max}, {"accuracy_folds", s.accuracy},
                         {"iterations", s.iterations}, {"kkt_max", s.kkt},
                         {"support_vectors", s.support_vectors}, {"converged", s.converged}});
  j["best_lambda"] = path.at(best).lambda;
  j["best_accuracy"] = path.at(best).mean;
  j["fold_of_row"] = fold;
  j["rank_per_fold"] = rank;
  j["seconds"] = {{"gram", seconds_gram}, {"eigen", seconds_eigen}, {"path", seconds_path}, {"score", seconds_score},
                  {"total", seconds_total}};
  return j;
}

}  // namespace kforge::kmodel
