// `kforge kmodel svm|logreg`: a kernel SVM or kernel logistic regression over a regularization
// path, scored by stratified k-fold cross-validation: the SVM's hinge by SMO over each fold's
// Gram block, warm-started along the path; the smooth losses with one eigendecomposition per
// training fold serving every lambda (include/kforge/kmodel.hpp, docs/kernel-models.md). `kforge kmodel
// predict` scores new rows with a model saved by `--save`.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {
namespace {

struct Opts {
  std::string model, loss, data, save, test, model_file, out, kernel = "rbf", gamma = "scale", lambdas = "1e-4:1e1:20", eigensolver = "auto";
  int folds = 5, max_iter = 0, degree = 3;  // max_iter, tol: 0 = the solver's default
  double coef0 = 1, delta = 0.5, tol = 0, rank_tol = 1e-12;
  std::uint64_t seed = 1;
  bool json = false, cold = false, no_shrinking = false, per_fold = false, double_steps = false,
       sgemm_steps = false, two_pass_steps = false;
};

double parse_gamma(const std::string& s, const Eigen::MatrixXd& x) {
  if (s == "scale") return kmodel::gamma_scale(x);
  std::size_t used = 0;
  double g = 0;
  try { g = std::stod(s, &used); } catch (const std::exception&) { used = 0; }
  if (used != s.size() || !(g > 0) || !std::isfinite(g))
    throw UsageError("--gamma " + s + ": a positive number, or 'scale' (1 / (features * variance of x))");
  return g;
}

// Scores the rows of --data with the saved --model: per row the decision value f(x), the label
// (+1 where f >= 0) and, for logistic regression, P(y = +1) = 1 / (1 + exp(-f)); the accuracy
// when the rows carry labels.
void predict(const Opts& o, int& code) {
  if (o.model_file.empty()) throw UsageError("kmodel predict: needs --model FILE (written by `kforge kmodel svm|logreg --save`)");
  const kmodel::SavedModel m = kmodel::load_model(o.model_file);
  Eigen::VectorXd labels;
  const Eigen::MatrixXd x = kmodel::read_rows_to_score(o.data, m.x.cols(), &labels);
  const Eigen::VectorXd f = kmodel::decision(m.kernel, m.x, m.fit, x);
  const bool logistic = m.loss == kmodel::Loss::logistic;
  std::string csv = logistic ? "decision,label,probability\n" : "decision,label\n";
  nlohmann::json rows = nlohmann::json::array();
  int correct = 0;
  for (Eigen::Index i = 0; i < f.size(); ++i) {
    const int label = f[i] >= 0 ? 1 : -1;
    const double p = 1.0 / (1.0 + std::exp(-f[i]));
    csv += logistic ? fmt::format("{:.17g},{},{:.17g}\n", f[i], label, p) : fmt::format("{:.17g},{}\n", f[i], label);
    nlohmann::json r{{"decision", f[i]}, {"label", label}};
    if (logistic) r["probability"] = p;
    rows.push_back(r);
    if (labels.size() > 0) correct += label == labels[i];
  }
  const double accuracy = labels.size() > 0 ? static_cast<double>(correct) / static_cast<double>(f.size()) : NAN;
  if (!o.out.empty()) {
    try {
      write_file_atomic(o.out, csv);
    } catch (const std::exception&) {
      throw UsageError("--out " + o.out + ": cannot write the file (does its folder exist?)");
    }
  }
  code = kExitPassed;
  if (o.json) {
    nlohmann::json j{{"model", {{"path", o.model_file}, {"kind", kmodel::model_name(m.loss)}, {"loss", kmodel::loss_name(m.loss)}, {"training_rows", m.x.rows()}}},
                     {"data", {{"path", o.data}, {"rows", f.size()}, {"labelled", labels.size() > 0}}}};
    if (labels.size() > 0) j["accuracy"] = accuracy;
    if (o.out.empty()) j["predictions"] = rows;
    else j["written"] = o.out;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  if (o.out.empty()) fmt::print("{}", csv);
  const std::string summary = fmt::format("{} rows scored by the {} model in {}{}{}\n", f.size(), kmodel::model_name(m.loss),
                                          o.model_file, labels.size() > 0 ? fmt::format(": accuracy {:.4f}", accuracy) : "",
                                          o.out.empty() ? "" : ", predictions written to " + o.out);
  if (o.out.empty()) fmt::print(stderr, "{}", summary);  // stdout is the CSV
  else fmt::print("{}", summary);
}

void print_table(const Opts& o, const kmodel::CvOptions& cv, const kmodel::Dataset& d, const kmodel::CvResult& r) {
  const bool smo = cv.solver.loss == kmodel::Loss::hinge;
  fmt::print("{} ({}) on {}: {} rows, {} features, kernel {}{}, {} folds, {} lambdas\n", o.model,
             smo ? std::string("hinge, SMO")
             : cv.solver.loss == kmodel::Loss::huber_hinge ? fmt::format("Huberized hinge, delta {}", o.delta)
                                                           : std::string("logistic"),
             o.data,
             d.x.rows(), d.x.cols(), o.kernel,
             cv.kernel.kind == kmodel::KernelFunction::Kind::rbf    ? fmt::format(" gamma {:.4g}", cv.kernel.gamma)
             : cv.kernel.kind == kmodel::KernelFunction::Kind::poly ? fmt::format(" (gamma {:.4g} x.z + {:g})^{}", cv.kernel.gamma,
                                                                                  cv.kernel.coef0, cv.kernel.degree)
                                                                    : "",
             cv.folds, cv.lambdas.size());
  fmt::print("  {:>11} {:>10} {:>17} {:>10}{}\n", "lambda", "accuracy", "folds min..max", "iterations",
             smo ? fmt::format(" {:>9} {:>9}", "SVs", "max gap") : "");
  for (std::size_t l = 0; l < r.path.size(); ++l) {
    const auto& s = r.path[l];
    fmt::print("  {:>11.4g} {:>10.4f} {:>8.4f}..{:<8.4f} {:>10}{}{}{}\n", s.lambda, s.mean, s.min, s.max,
               s.iterations, smo ? fmt::format(" {:>9} {:>9.2g}", s.support_vectors, s.kkt) : "",
               s.converged ? "" : " (not converged)", l == r.best ? "  <- chosen" : "");
  }
  fmt::print("chosen lambda {:.4g}: mean accuracy {:.4f} ({:.4f}..{:.4f})\n", r.path[r.best].lambda,
             r.path[r.best].mean, r.path[r.best].min, r.path[r.best].max);
  if (smo)
    fmt::print("time {:.3f} s (CPU): kernel matrix {:.3f} s, SMO paths {:.3f} s, scoring {:.3f} s\n", r.seconds_total,
               r.seconds_gram, r.seconds_path, r.seconds_score);
  else
    fmt::print("time {:.3f} s (CPU): kernel matrix {:.3f} s, eigendecompositions {:.3f} s, paths {:.3f} s, scoring {:.3f} s\n",
               r.seconds_total, r.seconds_gram, r.seconds_eigen, r.seconds_path, r.seconds_score);
}

}  // namespace

void add_kmodel(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand(
      "kmodel", "kernel SVM / logistic regression over a lambda path, chosen by cross-validation");
  auto o = std::make_shared<Opts>();
  cmd->add_option("model", o->model, "svm (hinge by SMO), logreg (logistic), or predict (with --model)")
      ->required()->check(CLI::IsMember({"svm", "logreg", "predict"}));
  cmd->add_option("--data", o->data, "CSV file: features, then the label (-1/+1 or 0/1) in the last column "
                                     "(predict: the label column is optional)")
      ->required();
  cmd->add_option("--model", o->model_file, "predict: a model written by --save");
  cmd->add_option("--out", o->out, "predict: write the predictions (CSV) to this file instead of stdout");
  cmd->add_option("--kernel", o->kernel, "rbf, linear or poly")->capture_default_str();
  cmd->add_option("--degree", o->degree, "poly: (gamma x.z + coef0)^degree")->capture_default_str();
  cmd->add_option("--coef0", o->coef0, "poly: the constant term")->capture_default_str();
  cmd->add_option("--gamma", o->gamma, "rbf width exp(-gamma |x-z|^2), poly scale; 'scale' = 1/(features * var(x))")
      ->capture_default_str();
  cmd->add_option("--lambdas", o->lambdas, "LO:HI:COUNT (log grid) or a list 0.1,0.01")->capture_default_str();
  cmd->add_option("--folds", o->folds, "cross-validation folds (stratified)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the fold assignment")->capture_default_str();
  cmd->add_option("--loss", o->loss, "svm: hinge (default; SMO) or huberized-hinge (the spectral path); logreg: logistic");
  auto* delta = cmd->add_option("--delta", o->delta, "huberized-hinge: width of the hinge's rounded corner (0 < delta <= 1)")
      ->capture_default_str();
  auto* tol = cmd->add_option("--tol", o->tol, "stop a fit at this KKT measure (default: hinge 1e-3, the gap m(a) - M(a); "
                                               "others 1e-4, the relative residual)");
  cmd->add_option("--rank-tol", o->rank_tol, "eigenvalues below this times the largest are taken as 0")
      ->capture_default_str();
  auto* max_iter = cmd->add_option("--max-iter", o->max_iter, "iterations per lambda at most (default: hinge "
                                                               "max(10^7, 100 n) SMO steps; others 20000)");
  cmd->add_option("--eigensolver", o->eigensolver, "auto (pivoted Cholesky when K is numerically low rank, else lapack), "
                                                   "lapack (OpenBLAS; top eigenpairs only) or eigen (Eigen's solver, all)")
      ->capture_default_str();
  cmd->add_flag("--per-fold-decomposition", o->per_fold,
                "smooth losses: decompose each training fold's block instead of the whole kernel matrix once");
  cmd->add_flag("--double-steps", o->double_steps,
                "smooth losses: the path's products in double throughout (default: float steps when tol >= 1e-5, "
                "each fit judged in double)");
  cmd->add_flag("--sgemm-steps", o->sgemm_steps,
                "smooth losses: the path's products with U by OpenBLAS (sgemm, dgemm) instead of streaming U (for "
                "comparison)");
  cmd->add_flag("--two-pass-steps", o->two_pass_steps,
                "smooth losses: each float step reads U twice (U (s beta), then U^T g) instead of once by row "
                "blocks (for comparison)");
  cmd->add_flag("--cold", o->cold, "fit each lambda from zero instead of the previous lambda's solution");
  cmd->add_flag("--no-shrinking", o->no_shrinking, "hinge: SMO scans every row at every step (same fits; for comparison)");
  cmd->add_option("--save", o->save, "refit on every row at the chosen lambda and write the model (JSON)");
  cmd->add_option("--test", o->test, "refit on every row at the chosen lambda and score this held-out CSV file");
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o, &code, tol, max_iter, delta] {
    if (o->model == "predict") return predict(*o, code);
    if (!o->model_file.empty() || !o->out.empty())
      throw UsageError("--model and --out are for `kforge kmodel predict`; to write a fitted model use --save");
    if (!(o->delta > 0 && o->delta <= 1)) throw UsageError(fmt::format("--delta {}: needs 0 < delta <= 1", o->delta));
    if (tol->count() > 0 && !(o->tol > 0)) throw UsageError(fmt::format("--tol {}: needs a positive tolerance", o->tol));
    if (!(o->rank_tol >= 0 && o->rank_tol < 1))
      throw UsageError(fmt::format("--rank-tol {}: needs 0 <= rank_tol < 1", o->rank_tol));
    if (max_iter->count() > 0 && o->max_iter < 1) throw UsageError("--max-iter: needs at least 1");
    kmodel::CvOptions cv;
    cv.solver.loss = kmodel::loss_of_model(o->model, o->loss);
    if (delta->count() > 0 && cv.solver.loss != kmodel::Loss::huber_hinge)
      throw UsageError(fmt::format("--delta is the width of the Huberized hinge's corner: it needs --loss huberized-hinge "
                                   "(the loss here is {})", kmodel::loss_name(cv.solver.loss)));
    cv.kernel.kind = kmodel::parse_kernel_kind(o->kernel);
    if (o->degree < 1 || o->degree > 32) throw UsageError(fmt::format("--degree {}: an integer 1..32", o->degree));
    if (!std::isfinite(o->coef0)) throw UsageError("--coef0: a finite number");
    cv.kernel.degree = o->degree;
    cv.kernel.coef0 = o->coef0;
    cv.lambdas = kmodel::parse_lambdas(o->lambdas);
    cv.eigensolver = kmodel::parse_eigensolver(o->eigensolver);
    const kmodel::Dataset d = kmodel::read_csv(o->data);
    cv.kernel.gamma = parse_gamma(o->gamma, d.x);
    cv.solver.delta = o->delta;
    cv.solver.tol = o->tol;
    cv.solver.max_iter = o->max_iter;
    cv.solver.rank_tol = o->rank_tol;
    cv.folds = o->folds;
    cv.seed = o->seed;
    cv.warm = !o->cold;
    cv.solver.shrinking = !o->no_shrinking;
    cv.shared_decomposition = !o->per_fold;
    cv.solver.single_precision_steps = !o->double_steps;
    cv.solver.streamed_products = !o->sgemm_steps;
    cv.solver.one_pass_steps = !o->two_pass_steps;
    // A held-out file is read before the work, so that a bad one fails fast.
    std::optional<kmodel::Dataset> held_out;
    if (!o->test.empty()) {
      held_out = kmodel::read_csv(o->test);
      if (held_out->x.cols() != d.x.cols())
        throw UsageError(fmt::format("--test {}: {} features, the training data {}", o->test, held_out->x.cols(),
                                     d.x.cols()));
    }
    const kmodel::CvResult r = kmodel::cross_validate(d, cv);
    nlohmann::json final_fit;
    if (!o->save.empty() || held_out) {
      const double lambda = r.path[r.best].lambda;
      const kmodel::Fit fit = kmodel::fit_all(d, cv, lambda, r.spectrum.get());
      final_fit = {{"lambda", lambda}, {"converged", fit.converged}, {"iterations", fit.iterations}};
      if (held_out) {
        const Eigen::VectorXd f = kmodel::decision(cv.kernel, d.x, fit, held_out->x);
        int correct = 0;
        for (Eigen::Index i = 0; i < f.size(); ++i) correct += (f[i] >= 0 ? 1.0 : -1.0) == held_out->y[i];
        final_fit["test"] = {{"path", o->test}, {"rows", f.size()},
                             {"accuracy", static_cast<double>(correct) / static_cast<double>(f.size())}};
      }
      if (!o->save.empty()) {
        kmodel::SavedModel m{cv.solver.loss, cv.kernel, lambda, o->delta, fit, d.x};
        try {
          write_file_atomic(o->save, m.to_json().dump() + "\n");
        } catch (const std::exception&) {
          throw UsageError("--save " + o->save + ": cannot write the file (does its folder exist?)");
        }
        final_fit["saved"] = o->save;
      }
    }
    code = kExitPassed;
    if (o->json) {
      nlohmann::json j = r.to_json();
      if (!final_fit.is_null()) j["final"] = final_fit;
      j["model"] = o->model;
      j["data"] = {{"path", o->data}, {"rows", d.x.rows()}, {"features", d.x.cols()}};
      j["kernel"] = {{"kind", o->kernel}, {"gamma", cv.kernel.gamma}};
      if (cv.kernel.kind == kmodel::KernelFunction::Kind::poly) j["kernel"].update({{"degree", o->degree}, {"coef0", o->coef0}});
      const bool smo = cv.solver.loss == kmodel::Loss::hinge;
      j["solver"] = {{"loss", kmodel::loss_name(cv.solver.loss)}, {"method", smo ? "smo" : "spectral"},
                     {"tol", o->tol > 0 ? o->tol : smo ? 1e-3 : 1e-4},
                     // the effective cap (SMO's default grows with the rows: this is for all of them)
                     {"max_iter", o->max_iter > 0 ? static_cast<long>(o->max_iter)
                                  : smo ? std::max(10'000'000L, 100L * static_cast<long>(d.x.rows())) : 20000L},
                     {"warm", cv.warm}};
      if (smo) j["solver"]["shrinking"] = cv.solver.shrinking;
      if (!smo) j["solver"].update({{"rank_tol", o->rank_tol}, {"eigensolver", o->eigensolver},
                                    {"decomposition", cv.shared_decomposition ? "shared" : "per_fold"},
                                    {"single_precision_steps", cv.solver.single_precision_steps},
                                    {"streamed_products", cv.solver.streamed_products},
                                    {"one_pass_steps", cv.solver.one_pass_steps}});
      if (cv.solver.loss == kmodel::Loss::huber_hinge) j["solver"]["delta"] = o->delta;
      j["folds"] = cv.folds;
      j["seed"] = cv.seed;
      fmt::print("{}\n", j.dump(2));
      return;
    }
    print_table(*o, cv, d, r);
    if (final_fit.contains("test"))
      fmt::print("refitted on all {} rows at lambda {:.4g}: accuracy {:.4f} on {} ({} rows)\n", d.x.rows(),
                 final_fit["lambda"].get<double>(), final_fit["test"]["accuracy"].get<double>(), o->test,
                 final_fit["test"]["rows"].get<long>());
    if (final_fit.contains("saved")) fmt::print("model written to {}\n", o->save);
  });
}

}  // namespace kforge::cli
