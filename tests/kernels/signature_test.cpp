// The signature family: signature and sigkernel pass kforge's thorough verification at odd
// shapes on cpu and opencl; the references match hand-computable cases (a straight segment's
// signature is Δ^{⊗k}/k!, the Lévy area of an L-shaped path, one PDE cell) and each other (the
// refined PDE scheme converges to the inner product of the signatures); wrong kernels are
// rejected.
#include <gtest/gtest.h>

#include <cmath>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

class SignatureFamily : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    backend_ = make_backend(std::get<1>(GetParam()));
    if (!backend_->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend_->device();
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(SignatureFamily, PassesAtOddShapes) {
  const std::string problem = std::get<0>(GetParam());
  std::vector<Sizes> shapes;
  if (problem == "signature")
    shapes = {{{"B", 3}, {"L", 17}, {"D", 3}, {"LEVEL", 4}},
              {{"B", 5}, {"L", 2}, {"D", 5}, {"LEVEL", 3}},
              {{"B", 2}, {"L", 9}, {"D", 2}, {"LEVEL", 6}},
              {{"B", 1}, {"L", 31}, {"D", 1}, {"LEVEL", 5}},
              {{"B", 19}, {"L", 23}, {"D", 7}, {"LEVEL", 2}}};
  else
    shapes = {{{"B1", 3}, {"B2", 19}, {"L1", 13}, {"L2", 7}, {"D", 3}, {"DYADIC", 0}},
              {{"B1", 2}, {"B2", 3}, {"L1", 5}, {"L2", 9}, {"D", 2}, {"DYADIC", 2}},
              {{"B1", 1}, {"B2", 33}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 1}}};
  for (const Sizes& s : shapes) {
    const EvalResult r = evaluate(library_request(problem, std::get<1>(GetParam()), s), *backend_);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(Library, SignatureFamily,
                         ::testing::Combine(::testing::Values("signature", "sigkernel"),
                                            ::testing::Values("cpu", "opencl")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// The reference of `problem` on inputs set by hand.
std::vector<double> reference_of(const std::string& problem, const Sizes& s, std::vector<std::vector<double>> inputs) {
  const auto p = find_problem(problem);
  Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 1, 0);
  for (std::size_t t = 0; t < inputs.size(); ++t) in.tensors[t] = std::move(inputs[t]);
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  return ref[0];
}

// One straight segment: level k is Δ^{⊗k}/k!, word (i1..ik) the product Δ_i1···Δ_ik / k!.
TEST(SignatureReference, StraightSegmentIsTensorPowerOverFactorial) {
  const std::vector<double> x0{0.5, -1.0, 2.0}, delta{0.75, -0.5, 1.25};
  std::vector<double> x = x0;
  for (int i = 0; i < 3; ++i) x.push_back(x0[i] + delta[i]);
  const auto sig = reference_of("signature", {{"B", 1}, {"L", 2}, {"D", 3}, {"LEVEL", 4}}, {x});
  ASSERT_EQ(sig.size(), 3u + 9 + 27 + 81);
  std::size_t at = 0;
  double factorial = 1;
  for (int k = 1; k <= 4; ++k) {
    factorial *= k;
    const int n = static_cast<int>(std::pow(3, k));
    for (int w = 0; w < n; ++w) {
      double want = 1 / factorial;
      for (int e = w, j = 0; j < k; ++j, e /= 3) want *= delta[e % 3];
      EXPECT_NEAR(sig[at + w], want, 1e-14) << "level " << k << " word " << w;
    }
    at += n;
  }
}

// (0,0) -> (1,0) -> (1,1): level 2 is [[1/2, 1], [0, 1/2]] (the word 12 collects the area, 21
// none) and level 3's word 112 is 1/2, 122 is 1/2, 211 is 0.
TEST(SignatureReference, LShapedPathHasLevyArea) {
  const auto sig = reference_of("signature", {{"B", 1}, {"L", 3}, {"D", 2}, {"LEVEL", 3}}, {{0, 0, 1, 0, 1, 1}});
  const std::vector<double> level2(sig.begin() + 2, sig.begin() + 6);
  EXPECT_EQ(sig[0], 1);
  EXPECT_EQ(sig[1], 1);
  EXPECT_EQ(level2, (std::vector<double>{0.5, 1, 0, 0.5}));
  EXPECT_DOUBLE_EQ(sig[6 + 0b001], 0.5);  // word 112
  EXPECT_DOUBLE_EQ(sig[6 + 0b011], 0.5);  // word 122
  EXPECT_DOUBLE_EQ(sig[6 + 0b100], 0.0);  // word 211
}

// One cell: K = 2 (1 + a/2 + a²/12) - (1 - a²/12) = 1 + a + a²/4.
TEST(SigKernelReference, OneCell) {
  const auto k = reference_of("sigkernel", {{"B1", 1}, {"B2", 1}, {"L1", 2}, {"L2", 2}, {"D", 2}, {"DYADIC", 0}},
                              {{0, 0, 0.5, 1}, {1, 1, 1.5, 0}});
  const double a = 0.5 * 0.5 + 1 * -1;
  EXPECT_DOUBLE_EQ(k[0], 1 + a + a * a / 4);
}

// The refined scheme converges to the signature kernel <S(x), S(y)> (with level 0's 1): the two
// references agree on short paths to 1e-6 at DYADIC = 4 (the unrefined scheme is 7e-5 off).
TEST(SigKernelReference, ConvergesToInnerProductOfSignatures) {
  const std::int64_t L = 4, D = 2, N = 6;
  std::vector<double> x(L * D), y(L * D);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = 0.3 * std::sin(1.7 * i + 0.2), y[i] = 0.3 * std::cos(2.3 * i);
  const auto sx = reference_of("signature", {{"B", 1}, {"L", L}, {"D", D}, {"LEVEL", N}}, {x});
  const auto sy = reference_of("signature", {{"B", 1}, {"L", L}, {"D", D}, {"LEVEL", N}}, {y});
  double inner = 1;
  for (std::size_t i = 0; i < sx.size(); ++i) inner += sx[i] * sy[i];
  const auto fine = reference_of("sigkernel", {{"B1", 1}, {"B2", 1}, {"L1", L}, {"L2", L}, {"D", D}, {"DYADIC", 4}}, {x, y});
  const auto coarse = reference_of("sigkernel", {{"B1", 1}, {"B2", 1}, {"L1", L}, {"L2", L}, {"D", D}, {"DYADIC", 0}}, {x, y});
  EXPECT_NEAR(fine[0], inner, 1e-6 * std::fabs(inner));
  EXPECT_GT(std::fabs(coarse[0] - inner), 1e-5 * std::fabs(inner));  // refinement is what got it there
  EXPECT_GT(std::fabs(inner - 1), 0.05);  // the paths are not so short that any K near 1 passes
}

// The cpu kernel with `from` replaced by `to`, verified quickly.
EvalResult run_edited(const std::string& problem, const Sizes& s, const std::string& from, const std::string& to) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request(problem, "cpu", s);
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(SignatureCpu, WrongKernelsAreRejected) {
  const Sizes sig{{"B", 3}, {"L", 11}, {"D", 3}, {"LEVEL", 4}};
  // Levels from the bottom up: the upper levels see the new lower ones.
  EXPECT_FALSE(run_edited("signature", sig, "for (int k = LEVEL; k >= 2; --k)", "for (int k = 2; k <= LEVEL; ++k)").passed());
  // 1/m! off by one.
  EXPECT_FALSE(run_edited("signature", sig, "delta / (float)m", "delta / (float)(m + 1)").passed());
  // LEVEL <= 3's fused pass: level 3's middle letter without its 1/2.
  const Sizes small{{"B", 3}, {"L", 11}, {"D", 3}, {"LEVEL", 3}};
  EXPECT_FALSE(run_edited("signature", small, "const E dj = dm[D + j];", "const E dj = dm[j];").passed());
  const Sizes ker{{"B1", 2}, {"B2", 5}, {"L1", 6}, {"L2", 5}, {"D", 3}, {"DYADIC", 1}};
  // The scheme without its second-order term, and without the refinement's 1/4^DYADIC.
  EXPECT_FALSE(run_edited("sigkernel", ker, "sq = aa * aa * twelfth", "sq = 0.0f * aa").passed());
  EXPECT_FALSE(run_edited("sigkernel", ker, "const vf aa = s * scale", "const vf aa = s").passed());
  // The controls: the kernels as shipped pass the same quick check.
  EXPECT_TRUE(run_edited("signature", sig, "PATHS", "PATHS").passed());
  EXPECT_TRUE(run_edited("sigkernel", ker, "VB", "VB").passed());
}

// The one-path-at-a-time variant (BATCHED=0: the library's choice for large D^LEVEL) passes too.
TEST(SignatureCpu, UnbatchedPassesAtOddShapes) {
  auto backend = make_backend("cpu");
  for (const Sizes& s : {Sizes{{"B", 3}, {"L", 17}, {"D", 3}, {"LEVEL", 4}}, Sizes{{"B", 2}, {"L", 5}, {"D", 9}, {"LEVEL", 5}}}) {
    const EvalResult r = evaluate(library_request("signature", "cpu", s, DType::fp32, {{"BATCHED", 0}}), *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  EXPECT_EQ(library_kernel(*find_problem("signature"), Lang::cpp, {{"B", 8}, {"L", 9}, {"D", 8}, {"LEVEL", 6}}).name,
            "signature.cpu.large");
}

TEST(SignatureSizes, BadSizesNameTheFix) {
  const auto sig = find_problem("signature");
  EXPECT_THROW(sig->check_sizes({{"B", 1}, {"L", 2}, {"D", 3}, {"LEVEL", 7}}), UsageError);
  EXPECT_THROW(sig->check_sizes({{"B", 1}, {"L", 1}, {"D", 3}, {"LEVEL", 2}}), UsageError);
  EXPECT_THROW(sig->check_sizes({{"B", 1}, {"L", 2}, {"D", 100}, {"LEVEL", 6}}), UsageError);
  const auto ker = find_problem("sigkernel");
  EXPECT_NO_THROW(ker->check_sizes({{"B1", 1}, {"B2", 1}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 0}}));
  EXPECT_THROW(ker->check_sizes({{"B1", 1}, {"B2", 1}, {"L1", 2}, {"L2", 2}, {"D", 1}, {"DYADIC", 5}}), UsageError);
}

}  // namespace
}  // namespace kforge
