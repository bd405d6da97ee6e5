// kernel_kmeans: one kernel k-means step passes kforge's thorough verification at odd N, D, K
// (not multiples of any tile or SIMD width) on cpu and opencl, with the RBF and the polynomial
// kernel; wrong kernels (a dropped cluster term, padding that weighs in, a counter never reset,
// a polynomial degree off by one or its coef0 dropped) are rejected; a label is accepted in
// place of the reference's only at a true tie; a bad polynomial degree exits 2.
#include <gtest/gtest.h>

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

class KernelKmeans : public ::testing::TestWithParam<std::string> {};

TEST_P(KernelKmeans, PassesAtOddShapes) {
  auto backend = make_backend(GetParam());
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  for (const Sizes& s : {Sizes{{"N", 301}, {"D", 3}, {"K", 7}}, Sizes{{"N", 53}, {"D", 17}, {"K", 13}},
                         Sizes{{"N", 5}, {"D", 1}, {"K", 5}}, Sizes{{"N", 130}, {"D", 2}, {"K", 1}}}) {
    const EvalResult r = evaluate(library_request("kernel_kmeans", GetParam(), s), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// The polynomial kernel fixed by the user (`--scalar kind=1`): every trial polynomial, gamma,
// degree and coef0 as the trials vary them, then fixed at an odd degree with a negative coef0
// (negative kernel values: the magnitudes must be absolute).
TEST_P(KernelKmeans, PolynomialPassesAtOddShapes) {
  auto backend = make_backend(GetParam());
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  for (const Scalars& fixed : {Scalars{{"kind", 1}}, Scalars{{"kind", 1}, {"degree", 5}, {"coef0", -0.75}}})
    for (const Sizes& s : {Sizes{{"N", 301}, {"D", 3}, {"K", 7}}, Sizes{{"N", 53}, {"D", 17}, {"K", 13}},
                           Sizes{{"N", 5}, {"D", 1}, {"K", 5}}}) {
      EvalRequest req = library_request("kernel_kmeans", GetParam(), s);
      req.scalars = fixed;
      const EvalResult r = evaluate(req, *backend);
      EXPECT_TRUE(r.passed()) << "degree " << (fixed.count("degree") ? fixed.at("degree") : 0) << ": " << describe(r);
    }
}

INSTANTIATE_TEST_SUITE_P(Library, KernelKmeans, ::testing::Values("cpu", "opencl"),
                         [](const auto& info) { return info.param; });

// The cpu kernel with `from` replaced by `to`, verified (quick) at an odd shape.
EvalResult run_edited(const std::string& from, const std::string& to, const Scalars& fixed = {},
                      const Sizes& s = {{"N", 97}, {"D", 3}, {"K", 6}}) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request("kernel_kmeans", "cpu", s);
  req.scalars = fixed;
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

// Each edit compiles and runs, and verification calls it incorrect (not a compile error).
void expect_incorrect(const std::string& from, const std::string& to, const Scalars& fixed = {}) {
  const EvalResult r = run_edited(from, to, fixed);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << to << ": " << describe(r);
}

TEST(KernelKmeansCpu, WrongKernelsAreRejected) {
  // The cluster term z_c left out.
  expect_incorrect("(row[c] / n[c]) + z[c]", "(row[c] / n[c])");
  // Padding slots weighing 1: points at the origin join every cluster.
  expect_incorrect("kf_exp(d2[r] * -gamma) * w", "kf_exp(d2[r] * -gamma)");
  // The counter never reset: the second launch has no last block, DIST keeps raw sums.
  expect_incorrect("__atomic_store_n(count, 0u, __ATOMIC_RELEASE);", "");
  // The argmax for the argmin: every label but K = 1's is wrong.
  expect_incorrect("if (row[c] < row[best]) best = c;", "if (row[c] > row[best]) best = c;");
  // Control: the same path with a no-op edit passes.
  const EvalResult ok = run_edited("BI", "BI");
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

TEST(KernelKmeansCpu, WrongPolynomialKernelsAreRejected) {
  const Scalars poly{{"kind", 1}, {"degree", 3}, {"coef0", 0.5}};
  // The degree off by one (b^(p-1)) in the pair sums.
  expect_incorrect("for (int e = 1; e < degree; ++e) k *= b;", "for (int e = 2; e < degree; ++e) k *= b;", poly);
  // coef0 dropped.
  expect_incorrect("const vf b = d2[r] * gamma + coef0;", "const vf b = d2[r] * gamma;", poly);
  // k(x_i, x_i) taken as RBF's 1.
  expect_incorrect("NEWL[i] - 2.0f", "1.0f - 2.0f", poly);
  const EvalResult ok = run_edited("BI", "BI", poly);
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

// A degree outside 1..8 or not an integer, or an unknown kernel, is a usage error (exit 2)
// that names the scalar.
TEST(KernelKmeansCli, BadPolynomialScalarsExit2) {
  for (const char* bad : {"--scalar degree=9", "--scalar degree=0", "--scalar degree=2.5", "--scalar kind=2"}) {
    const auto r = test::kforge_cli(std::string("verify kernel_kmeans --size N=31,D=2,K=3 --scalar kind=1,") + (bad + 9));
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find(std::string(bad).substr(9, 4)), std::string::npos) << bad << ": " << r.err;
  }
}

// Two mirror-image clusters {-1, 0} and {0, 1} on a line: the points at 0 are exactly as far
// from both, so either label is right for them; the point at -1 must stay in cluster 0.
TEST(KernelKmeansCpu, AcceptsOtherLabelsOnlyAtTies) {
  const auto p = find_problem("kernel_kmeans");
  const auto* alt = dynamic_cast<const AlternativeAnswers*>(p.get());
  ASSERT_NE(alt, nullptr);
  Instance in = p->make_instance({{"N", 4}, {"D", 1}, {"K", 2}}, DType::fp32, Distribution::normal, 1, 0);
  in.tensors[0] = {-1.0, 0.0, 0.0, 1.0};
  in.tensors[1] = {0, 0, 1, 1};
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  ASSERT_EQ(ref[1], (std::vector<double>{0, 0, 0, 1}));  // ties to the lowest cluster
  EXPECT_EQ(ref[0][2], ref[0][3]);                         // point 1 equidistant
  auto accepted = ref;
  alt->accept_alternatives(in, {ref[0], {0, 1, 1, 1}, ref[2]}, accepted);
  EXPECT_EQ(accepted[1], (std::vector<double>{0, 1, 1, 1}));
  accepted = ref;
  alt->accept_alternatives(in, {ref[0], {1, 0, 0, 1}, ref[2]}, accepted);  // -1 is not at a tie
  EXPECT_EQ(accepted[1], (std::vector<double>{0, 0, 0, 1}));
}

// The reference against a direct evaluation of the feature-space formula with an explicit Gram
// matrix (tiny N), so the reference's factoring into S and z is itself checked.
// Trial 1 is RBF, trial 2 polynomial (degree 3, coef0 1).
TEST(KernelKmeansCpu, ReferenceMatchesTheExplicitGramFormula) {
  for (int trial : {1, 2}) {
  const auto p = find_problem("kernel_kmeans");
  const Sizes s{{"N", 23}, {"D", 3}, {"K", 4}};
  const Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 7, trial);
  ASSERT_EQ(in.scalars.at("kind"), trial == 2 ? 1 : 0);
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  const auto& X = in.tensors[0];
  const auto& L = in.tensors[1];
  const double g = in.scalars.at("gamma");
  auto k = [&](int i, int j) {
    if (trial == 2) {
      double dot = 0;
      for (int d = 0; d < 3; ++d) dot += X[i * 3 + d] * X[j * 3 + d];
      return std::pow(g * dot + in.scalars.at("coef0"), in.scalars.at("degree"));
    }
    double d2 = 0;
    for (int d = 0; d < 3; ++d) d2 += (X[i * 3 + d] - X[j * 3 + d]) * (X[i * 3 + d] - X[j * 3 + d]);
    return std::exp(-g * d2);
  };
  for (int i = 0; i < 23; ++i)
    for (int c = 0; c < 4; ++c) {
      double n = 0, a = 0, b = 0;
      for (int j = 0; j < 23; ++j)
        if (L[j] == c) {
          n += 1, a += k(i, j);
          for (int l = 0; l < 23; ++l)
            if (L[l] == c) b += k(j, l);
        }
      ASSERT_GT(n, 0);  // conditioning gives every cluster a point
      EXPECT_NEAR(ref[0][i * 4 + c], k(i, i) - 2 * a / n + b / (n * n), 1e-12);
    }
  }
}

// Kernel k-means to convergence on cpu and opencl: the library kernel launched once per Lloyd
// iteration on the same buffers (so SYNC must come back to zero each time), its labels fed
// back, against the double reference iterated from the same initial labels; every iteration's
// labels equal the reference's (or are accepted ties), and the run converges.
TEST_P(KernelKmeans, IteratesToConvergenceLikeTheReference) {
  auto backend = make_backend(GetParam());
  if (!backend->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend->device();
  const auto p = find_problem("kernel_kmeans");
  const auto* alt = dynamic_cast<const AlternativeAnswers*>(p.get());
  const Sizes s{{"N", 263}, {"D", 2}, {"K", 5}};
  Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 11, 0);
  in.scalars["gamma"] = 0.5;
  const KernelSpec k = library_kernel(*p, GetParam() == "cpu" ? Lang::cpp : Lang::opencl, s);
  const ParamValues params = k.resolve({});
  Defines defines{{"KF_DTYPE_FP32", "1"}};
  for (const auto& [name, v] : params) defines.emplace_back(name, std::to_string(v));
  auto module = backend->compile(k.source, k.entry, defines, k.source_path);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (std::size_t t = 0; t < 5; ++t) {
    std::vector<float> host(static_cast<std::size_t>(p->tensor_elements(t, s)), 0.0f);
    if (t < 2) host.assign(in.tensors[t].begin(), in.tensors[t].end());
    bufs.push_back(backend->alloc(host.size() * 4));
    backend->write(*bufs.back(), host.data(), host.size() * 4);
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const char* n : {"N", "D", "K"}) args.push_back(Arg::i(static_cast<std::int32_t>(s.at(n))));
  for (float v : {0.5f, 0.0f, 1.0f, 0.0f}) args.push_back(Arg::f(v));  // gamma, kernel (RBF), degree, coef0
  bool converged = false;
  int it = 0;
  for (; it < 50 && !converged; ++it) {
    backend->run(*module, k.geometry(params, s), args);
    std::vector<float> next(263);
    backend->read(*bufs[3], next.data(), next.size() * 4);
    std::vector<std::vector<double>> ref, mag;
    p->reference(in, ref, mag);
    auto accepted = ref;
    std::vector<double> got(next.begin(), next.end());
    alt->accept_alternatives(in, {ref[0], got, {0.0}}, accepted);
    ASSERT_EQ(got, accepted[1]) << "iteration " << it;
    converged = got == in.tensors[1];
    in.tensors[1] = got;
    backend->write(*bufs[1], next.data(), next.size() * 4);
  }
  EXPECT_TRUE(converged) << it << " iterations";
  EXPECT_GT(it, 2);  // the random start is not already a fixed point
}

}  // namespace
}  // namespace kforge
