// kernel_svm (the hinge, by SMO) and kernel_logreg: one fit at one lambda passes kforge's
// thorough verification at odd N, D (N = 37, 101; D = 1, 3, 7) on cpu and opencl; the optimality
// checks accept the double reference's answer and any other minimizer (coefficients moved along
// K's null space) and reject answers that are not optimal (A scaled, B shifted, the fit at
// N lambda, F without B; for the svm also a out of its box, y^T a != 0, SMO stopped early); wrong
// cpu kernels are rejected (the logreg's gradient method: wrong gamma, F without B, a sign error,
// lambda off by N, no intercept, too few iterations; the svm's SMO: the gradient update's sign,
// first-order selection stopped early, the wrong box, no intercept, F without B, too few steps);
// bad scalars and sizes exit 2 naming the cause.
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/kmodel.hpp"

#include "kforge/alternative_answers.hpp"
#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

// "problem/backend".
class KernelModel : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelModel, PassesAtOddShapes) {
  const std::string problem = GetParam().substr(0, GetParam().find('/')), name = GetParam().substr(GetParam().find('/') + 1);
  auto backend = make_backend(name);
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  for (const Sizes& s : {Sizes{{"N", 37}, {"D", 1}}, Sizes{{"N", 101}, {"D", 3}}, Sizes{{"N", 101}, {"D", 7}}}) {
    const EvalResult r = evaluate(library_request(problem, name, s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Library, KernelModel,
                         ::testing::Values("kernel_svm/cpu", "kernel_logreg/cpu", "kernel_svm/opencl",
                                           "kernel_logreg/opencl"),
                         [](const auto& info) {
                           std::string n = info.param;
                           n[n.find('/')] = '_';
                           return n;
                         });

// The reference's own answer, and what the check does with answers near it.
struct Answers {
  std::shared_ptr<Problem> p;
  Instance in;
  std::vector<std::vector<double>> ref, mag;
  // Whether the check accepts `got` (it then replaces the reference by it).
  [[nodiscard]] bool accepts(const std::vector<std::vector<double>>& got) const {
    auto edited = ref;
    edited[0].assign(edited[0].size(), 12345.0);  // so that acceptance shows as a replacement
    dynamic_cast<const AlternativeAnswers&>(*p).accept_alternatives(in, got, edited);
    return edited == got;
  }
};

Answers answers(const std::string& problem, const Sizes& s, int trial) {
  Answers a;
  a.p = find_problem(problem);
  a.in = a.p->make_instance(s, DType::fp32, Distribution::normal, 3, trial);
  a.p->reference(a.in, a.ref, a.mag);
  return a;
}

// F = K A + B from the instance, in double.
std::vector<double> decisions(const Instance& in, const std::vector<double>& A, double b) {
  const std::int64_t N = in.sizes.at("N"), D = in.sizes.at("D");
  const auto& X = in.tensors[0];
  std::vector<double> f(static_cast<std::size_t>(N), b);
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double d2 = 0;
      for (std::int64_t d = 0; d < D; ++d) d2 += (X[i * D + d] - X[j * D + d]) * (X[i * D + d] - X[j * D + d]);
      f[i] += std::exp(-in.scalars.at("gamma") * d2) * A[j];
    }
  return f;
}

TEST(KernelModelCheck, AcceptsMinimizersOnlyAndEveryOne) {
  for (const char* problem : {"kernel_svm", "kernel_logreg"}) {
    const Answers a = answers(problem, {{"N", 53}, {"D", 2}}, 0);
    SCOPED_TRACE(problem);
    EXPECT_TRUE(a.accepts(a.ref));
    // Rounded to fp32, as a kernel returns it.
    auto f32 = a.ref;
    for (auto& t : f32)
      for (auto& v : t) v = static_cast<float>(v);
    EXPECT_TRUE(a.accepts(f32));
    // A scaled by 1.01 (F recomputed: consistent, not optimal).
    auto scaled = a.ref;
    for (auto& v : scaled[1]) v *= 1.01;
    scaled[0] = decisions(a.in, scaled[1], scaled[2][0]);
    EXPECT_FALSE(a.accepts(scaled));
    // B shifted by 0.05.
    auto shifted = a.ref;
    shifted[2][0] += 0.05;
    shifted[0] = decisions(a.in, shifted[1], shifted[2][0]);
    EXPECT_FALSE(a.accepts(shifted));
    // F without B (A and B optimal).
    auto no_b = a.ref;
    no_b[0] = decisions(a.in, no_b[1], 0.0);
    EXPECT_FALSE(a.accepts(no_b));
    // The fit at N lambda (lambda off by N), judged at lambda.
    Instance heavy = a.in;
    heavy.scalars["lambda"] *= 53;
    std::vector<std::vector<double>> href, hmag;
    a.p->reference(heavy, href, hmag);
    EXPECT_FALSE(a.accepts(href));
  }
}

// The SVM dual's own ways to be wrong, each from the reference's answer with F recomputed (so
// only the dual's conditions can reject it): a coefficient out of its box, y^T a != 0, and SMO
// stopped at a gap of 0.05 instead of 1e-10.
TEST(KernelModelCheck, RejectsWhatIsNotTheSvmDualsOptimum) {
  const std::int64_t N = 53;
  const Answers a = answers("kernel_svm", {{"N", N}, {"D", 2}}, 0);
  const double C = 1 / (static_cast<double>(N) * a.in.scalars.at("lambda"));
  const auto& Y = a.in.tensors[1];
  // A row at its bound and a free row of the same label.
  std::int64_t at = -1, fr = -1;
  for (std::int64_t t = 0; t < N; ++t) {
    const double x = Y[t] * a.ref[1][t];
    if (x > C * (1 - 1e-9) && at < 0) at = t;
    if (x > 1e-3 * C && x < C * (1 - 1e-3) && fr < 0 && (at < 0 || Y[t] == Y[at])) fr = t;
  }
  ASSERT_GE(at, 0) << "the instance has no row at the bound C";
  ASSERT_GE(fr, 0) << "the instance has no free row";
  auto edit = [&](auto f) {
    auto e = a.ref;
    f(e[1], e[2][0]);
    e[0] = decisions(a.in, e[1], e[2][0]);
    return e;
  };
  EXPECT_TRUE(a.accepts(edit([](auto&, double&) {})));
  // Out of the box: the bounded row 1% past C, the free row compensating (y^T a kept).
  EXPECT_FALSE(a.accepts(edit([&](auto& A, double&) {
    if (Y[fr] == Y[at]) A[fr] -= 0.01 * C * Y[at];
    A[at] += 0.01 * C * Y[at];
  })));
  // y^T a = 0.01 C, inside the box.
  EXPECT_FALSE(a.accepts(edit([&](auto& A, double&) { A[fr] += 0.01 * C * (Y[fr] * A[fr] < 0.5 * C ? Y[fr] : -Y[fr]); })));
  // SMO stopped at a gap of 0.05.
  Eigen::MatrixXd k(N, N);
  const auto& X = a.in.tensors[0];
  for (std::int64_t i = 0; i < N; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double d2 = 0;
      for (int d = 0; d < 2; ++d) d2 += (X[i * 2 + d] - X[j * 2 + d]) * (X[i * 2 + d] - X[j * 2 + d]);
      k(i, j) = std::exp(-a.in.scalars.at("gamma") * d2);
    }
  kmodel::SolverOptions o;
  o.loss = kmodel::Loss::hinge;
  o.tol = 0.05;
  const auto early = kmodel::fit_path_smo(k, Eigen::Map<const Eigen::VectorXd>(Y.data(), N), o, {a.in.scalars.at("lambda")}, false);
  ASSERT_GT(early[0].kkt, 2e-3) << "SMO at tol 0.05 stopped near the optimum anyway";
  EXPECT_FALSE(a.accepts(edit([&](auto& A, double& b) {
    A.assign(early[0].alpha.data(), early[0].alpha.data() + N);
    b = early[0].b;
  })));
}

// Two identical rows: their coefficients can trade weight (K's null space) without moving f or
// the objective. That other minimizer is accepted; it is not the one in representer form.
TEST(KernelModelCheck, AcceptsAnotherMinimizerAlongTheNullSpace) {
  for (const char* problem : {"kernel_svm", "kernel_logreg"}) {
    const bool svm = std::string(problem) == "kernel_svm";
    Answers a;
    a.p = find_problem(problem);
    // Row 7 := row r (and its label). For the svm, the first r whose pair holds weight that can
    // move inside the box [0, C] (not both 0, not both C).
    std::size_t r = 3;
    double C = 0, y = 0, total = 0;
    for (; r < 41; ++r) {
      if (r == 7) continue;
      a.in = a.p->make_instance({{"N", 41}, {"D", 2}}, DType::fp32, Distribution::normal, 5, 0);
      a.in.tensors[0][2 * 7] = a.in.tensors[0][2 * r], a.in.tensors[0][2 * 7 + 1] = a.in.tensors[0][2 * r + 1];
      a.in.tensors[1][7] = a.in.tensors[1][r];
      a.p->reference(a.in, a.ref, a.mag);
      if (!svm) break;
      C = 1 / (41 * a.in.scalars.at("lambda")), y = a.in.tensors[1][r];
      total = y * (a.ref[1][r] + a.ref[1][7]);
      if (total > 1e-3 * C && total < 2 * C * (1 - 1e-3)) break;
    }
    ASSERT_LT(r, 41u) << problem << ": no pair of duplicate rows whose weight can move";
    auto moved = a.ref;
    if (svm) {
      // As much of the pair's weight as fits onto the row that does not hold it now, the rest
      // on the other: another point of the box with the same K alpha.
      const double full = std::min(total, C);
      const std::size_t to = std::fabs(y * moved[1][r] - full) > std::fabs(y * moved[1][7] - full) ? r : 7;
      moved[1][to] = y * full, moved[1][to == r ? 7 : r] = y * (total - full);
      ASSERT_GT(std::fabs(moved[1][r] - a.ref[1][r]), 1e-3 * C) << "nothing moved";
    } else {
      const double t = 0.5 * (std::fabs(moved[1][3]) + 0.1);
      moved[1][3] += t, moved[1][7] -= t;
    }
    moved[0] = decisions(a.in, moved[1], moved[2][0]);
    EXPECT_TRUE(a.accepts(moved)) << problem << " (rows " << r << " and 7)";
  }
}

// The cpu kernel with each (from, to) of `edits` planted, verified (quick) at an odd shape.
EvalResult run_edited(const std::string& problem, const std::vector<std::pair<std::string, std::string>>& edits) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request(problem, "cpu", {{"N", 67}, {"D", 3}});
  for (const auto& [from, to] : edits) test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(KernelModelCpu, WrongLogregKernelsAreRejected) {
  const std::vector<std::pair<std::string, std::string>> bugs = {
      // A wrong gamma in the Gram matrix.
      {"rbf_gram(X, K, N, D, gamma)", "rbf_gram(X, K, N, D, 1.25f * gamma)"},
      // F (and the fit) without the intercept.
      {"f[i] = km_dot(K + (long long)i * N, a, N) + b;", "f[i] = km_dot(K + (long long)i * N, a, N);"},
      // The loss's slope with the wrong sign in the step.
      {"g[i] = Y[i] * km_slope(Y[i] * fz[i]);", "g[i] = -Y[i] * km_slope(Y[i] * fz[i]);"},
      // lambda where N lambda belongs (the regularization off by N).
      {"nl = N * lambda;", "nl = lambda;"},
      // No intercept fitted (B stays 0).
      {"const float bn = bz - eta_b * gs;", "const float bn = 0.0f * gs;"},
      // Too few iterations: stopped long before convergence.
      {"it < MAXIT;", "it < 6;"},
  };
  for (const auto& bug : bugs) {
    const EvalResult r = run_edited("kernel_logreg", {bug});
    EXPECT_EQ(r.disposition, Disposition::incorrect) << bug.second << ": " << describe(r);
  }
}

// Each edit compiles afresh (about 0.8 s on a loaded host), so the svm's are two tests of at most
// four compiles: the solver's bugs, then the outputs'.
TEST(KernelModelCpu, WrongSvmSolversAreRejected) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> bugs = {
      // The gradient update with the wrong sign.
      {{"vt -= vs * (", "vt += vs * ("}},
      // First-order working-set selection (j: the largest v_i - v_j) stopped after N / 4 steps.
      {{"const vf gain = b * b / q;", "const vf gain = b + 0.0f * q;"}, {"it < MAXIT &&", "it < N / 4 &&"}},
      // The wrong box: the negative rows' bound at -2C.
      {{"lo[t] = Y[t] > 0.0f ? 0.0f : -C;", "lo[t] = Y[t] > 0.0f ? 0.0f : -2.0f * C;"}},
      // Too few steps.
      {{"it < MAXIT &&", "it < 6 &&"}},
  };
  for (const auto& bug : bugs) {
    const EvalResult r = run_edited("kernel_svm", bug);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << bug[0].second << ": " << describe(r);
  }
}

TEST(KernelModelCpu, WrongSvmOutputsAreRejected) {
  const std::vector<std::vector<std::pair<std::string, std::string>>> bugs = {
      // No intercept (B = 0) and F without it.
      {{"B[0] = b;", "B[0] = 0.0f;"}, {"F[t] = s[t] + b;", "F[t] = s[t];"}},
      // F without B (A and B right).
      {{"F[t] = s[t] + b;", "F[t] = s[t];"}},
  };
  for (const auto& bug : bugs) {
    const EvalResult r = run_edited("kernel_svm", bug);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << bug[0].second << ": " << describe(r);
  }
  const EvalResult ok = run_edited("kernel_svm", {{"TI", "TI"}});  // control: a no-op edit passes
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

TEST(KernelModelCli, BadScalarsAndSizesExit2) {
  for (const std::string bad : {"--scalar lambda=0", "--scalar lambda=-0.1", "--scalar gamma=0",
                                "--scalar gamma=-2", "--size N=1,D=2"}) {
    const auto r = test::kforge_cli("verify kernel_svm " + (bad[2] == 's' && bad[3] == 'i' ? bad : "--size N=31,D=2 " + bad));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    const std::string name = bad.substr(bad.find(' ') + 1, bad.find('=') - bad.find(' ') - 1);
    EXPECT_NE(r.err.find(name == "N" ? "size N" : "scalar " + name), std::string::npos) << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace kforge
