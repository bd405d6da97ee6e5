// kernel_svm and kernel_logreg: one fit at one lambda passes kforge's thorough verification at
// odd N, D (N = 37, 101; D = 1, 3, 7) on cpu and opencl; the optimality check accepts the double
// reference's answer and any other minimizer (coefficients moved along K's null space) and
// rejects answers that are not optimal (A scaled, B shifted, the fit at N lambda, F without B);
// wrong cpu kernels (wrong gamma, F without B, a sign error, lambda off by N, no intercept, too
// few iterations) are rejected; bad scalars and sizes exit 2 naming the cause.
#include <gtest/gtest.h>

#include <cmath>

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

// Two identical rows: their coefficients can trade weight (K's null space) without moving f or
// the objective. That other minimizer is accepted; it is not the one in representer form.
TEST(KernelModelCheck, AcceptsAnotherMinimizerAlongTheNullSpace) {
  for (const char* problem : {"kernel_svm", "kernel_logreg"}) {
    Answers a;
    a.p = find_problem(problem);
    a.in = a.p->make_instance({{"N", 41}, {"D", 2}}, DType::fp32, Distribution::normal, 5, 0);
    a.in.tensors[0][2 * 7] = a.in.tensors[0][2 * 3], a.in.tensors[0][2 * 7 + 1] = a.in.tensors[0][2 * 3 + 1];
    a.in.tensors[1][7] = a.in.tensors[1][3];
    a.p->reference(a.in, a.ref, a.mag);
    auto moved = a.ref;
    const double t = 0.5 * (std::fabs(moved[1][3]) + 0.1);
    moved[1][3] += t, moved[1][7] -= t;
    moved[0] = decisions(a.in, moved[1], moved[2][0]);
    EXPECT_TRUE(a.accepts(moved)) << problem;
  }
}

// The cpu kernel with `from` replaced by `to`, verified (quick) at an odd shape.
EvalResult run_edited(const std::string& problem, const std::string& from, const std::string& to) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request(problem, "cpu", {{"N", 67}, {"D", 3}});
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(KernelModelCpu, WrongKernelsAreRejected) {
  const std::vector<std::pair<std::string, std::string>> bugs = {
      // A wrong gamma in the Gram matrix.
      {"km_gram(X, K, N, D, gamma)", "km_gram(X, K, N, D, 1.25f * gamma)"},
      // F (and the fit) without the intercept.
      {"f[i] = km_dot(K + (long long)i * N, a, N) + b;", "f[i] = km_dot(K + (long long)i * N, a, N);"},
      // The loss's slope with the wrong sign in the step.
      {"g[i] = Y[i] * km_slope<LOSS>(Y[i] * fz[i]);", "g[i] = -Y[i] * km_slope<LOSS>(Y[i] * fz[i]);"},
      // lambda where N lambda belongs (the regularization off by N).
      {"nl = N * lambda;", "nl = lambda;"},
      // No intercept fitted (B stays 0).
      {"const float bn = bz - eta_b * gs;", "const float bn = 0.0f * gs;"},
      // Too few iterations: stopped long before convergence.
      {"it < MAXIT;", "it < 6;"},
  };
  // One kernel source serves both losses (a template on LOSS), so each edit is tried on one
  // problem, the two in turn: each edit compiles afresh (about 0.5 s).
  for (std::size_t i = 0; i < bugs.size(); ++i) {
    const char* problem = i % 2 ? "kernel_logreg" : "kernel_svm";
    const EvalResult r = run_edited(problem, bugs[i].first, bugs[i].second);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << problem << ": " << bugs[i].second << ": " << describe(r);
  }
  const EvalResult ok = run_edited("kernel_svm", "TI", "TI");  // control: a no-op edit passes
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
