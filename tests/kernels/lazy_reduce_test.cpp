// lazy_reduce.*: the library's three problems pass kforge's thorough verification at odd N, M,
// D (not multiples of any tile) on cpu and opencl; formulas from a problem name; wrong kernels
// (a flipped sign, a logsumexp without its max shift, a broken KNN insertion) are rejected;
// KNN and argmin accept any of tied indices and refuse a far one.
#include <gtest/gtest.h>

#include "kforge/alternative_answers.hpp"
#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/verify.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

class LazyReduce : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    backend_ = make_backend(std::get<1>(GetParam()));
    if (!backend_->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend_->device();
  }
  EvalResult run(const Sizes& s, const ParamValues& params = {}) {
    return evaluate(library_request(std::get<0>(GetParam()), std::get<1>(GetParam()), s, DType::fp32, params), *backend_);
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(LazyReduce, PassesAtOddShapes) {
  const bool knn = std::get<0>(GetParam()).ends_with("knn");
  const bool sum = std::get<0>(GetParam()).ends_with("sum");
  Sizes a{{"N", 37}, {"M", 263}, {"D", 3}}, b{{"N", 5}, {"M", 129}, {"D", 7}}, c{{"N", 70}, {"M", 1}, {"D", 1}};
  if (knn) a["K"] = 13, b["K"] = 64, c["K"] = 1;
  if (sum) a["E"] = 1, b["E"] = 3, c["E"] = 5;
  for (const Sizes& s : {a, b, c}) {
    const EvalResult r = run(s);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Library, LazyReduce,
    ::testing::Combine(::testing::Values("lazy_reduce.gauss_sum", "lazy_reduce.logsumexp", "lazy_reduce.knn"),
                       ::testing::Values("cpu", "opencl")),
    [](const auto& info) { return std::get<0>(info.param).substr(12) + "_" + std::get<1>(info.param); });

// The cpu kernel with `from` replaced by `to` in its (generated) source.
EvalResult run_edited(const std::string& problem, const Sizes& s, const std::string& from, const std::string& to,
                      Distribution d = Distribution::normal) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request(problem, "cpu", s);
  test::plant(req, from, to);
  req.verify.thorough = false;
  req.verify.distributions = {d};
  return evaluate(req, *backend);
}

TEST(LazyReduceCpu, WrongKernelsAreRejected) {
  const Sizes s{{"N", 29}, {"M", 301}, {"D", 3}};
  // The Gaussian with its sign flipped.
  EXPECT_FALSE(run_edited("lazy_reduce.gauss_sum", {{"N", 29}, {"M", 301}, {"D", 3}, {"E", 2}},
                          "#define LZ_F(t0, t1) (", "#define LZ_F(t0, t1) -(").passed());
  // logsumexp without the running max: exp(-sqdist/0.001) underflows to 0 (the second trial).
  const EvalResult lse = run_edited("lazy_reduce.logsumexp", s, "if (tm > mx[r]) sm[r] *= expf(mx[r] - tm), mx[r] = tm;",
                                    "mx[r] = 0.0f;");
  EXPECT_FALSE(lse.passed()) << describe(lse);
  // KNN that inserts in the wrong order.
  EXPECT_FALSE(run_edited("lazy_reduce.knn", {{"N", 29}, {"M", 301}, {"D", 3}, {"K", 5}}, "d_[p - 1] > f[j]",
                          "d_[p - 1] < f[j]").passed());
  // The same edits' controls: the kernels as generated pass.
  EXPECT_TRUE(run_edited("lazy_reduce.logsumexp", s, "BI", "BI").passed());
}

// Integer coordinates in [-8, 8]: many pairs at the same squared distance. A kernel that keeps
// the last of tied candidates (<= for <) picks other indices than the reference and passes.
TEST(LazyReduceCpu, KnnAndArgminAcceptTiedIndices) {
  const Sizes s{{"N", 41}, {"M", 500}, {"D", 2}, {"K", 7}};
  const EvalResult last = run_edited("lazy_reduce.knn", s, "if (!(f[j] < d_[K - 1]))", "if (!(f[j] <= d_[K - 1]))",
                                     Distribution::integers);
  EXPECT_TRUE(last.passed()) << describe(last);
  const EvalResult am = run_edited("lazy_reduce:argmin:sqdist(x,y)", {{"N", 41}, {"M", 500}, {"D", 2}},
                                   "if (f[j] < best[r])", "if (f[j] <= best[r])", Distribution::integers);
  EXPECT_TRUE(am.passed()) << describe(am);
}

// The tie rule itself: a duplicate point's index is accepted, a far point's is not, and a row
// may not name one index twice.
TEST(LazyReduceCpu, AcceptAlternativesOnlyForTies) {
  const auto p = find_problem("lazy_reduce.knn");
  const auto* alt = dynamic_cast<const AlternativeAnswers*>(p.get());
  ASSERT_NE(alt, nullptr);
  Instance in = p->make_instance({{"N", 1}, {"M", 4}, {"D", 1}, {"K", 2}}, DType::fp32, Distribution::normal, 1, 0);
  in.tensors[0] = {0.0};
  in.tensors[1] = {5.0, 1.0, 1.0, -3.0};  // y1 and y2 tie at distance 1
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  ASSERT_EQ(ref[1], (std::vector<double>{1, 2}));
  auto accepted = ref;
  alt->accept_alternatives(in, {ref[0], {2, 1}}, accepted);
  EXPECT_EQ(accepted[1], (std::vector<double>{2, 1}));
  accepted = ref;
  alt->accept_alternatives(in, {ref[0], {2, 2}}, accepted);  // one index twice
  EXPECT_EQ(accepted[1], (std::vector<double>{1, 2}));
  accepted = ref;
  alt->accept_alternatives(in, {ref[0], {3, 2}}, accepted);  // y3 is at distance 9
  EXPECT_EQ(accepted[1], (std::vector<double>{1, 2}));
}

// Any formula by name: the kernel is generated from it, and verified against the interpreter.
TEST(LazyReduceCpu, FormulasFromTheCommandLinePass) {
  auto backend = make_backend("cpu");
  for (const char* name : {"lazy_reduce:sum:dot(x,y)*exp(-sqdist(x,y)/sigma)+1", "lazy_reduce:min:sqrt(sqdist(x,y)+eps)",
                           "lazy_reduce:logsumexp:dot(x,y)/sigma", "lazy_reduce:kmin:-dot(x,y)"}) {
    const auto p = find_problem(name);
    Sizes s = p->resolve_sizes({{"N", 23}, {"M", 157}, {"D", 5}});
    EvalRequest req = library_request(name, "cpu", s);
    req.verify.thorough = false;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  EXPECT_THROW((void)find_problem("lazy_reduce:sum:exp(-sqdist(x,y)/N)"), UsageError);  // N is reserved
  EXPECT_THROW((void)find_problem("lazy_reduce:average:sqdist(x,y)"), UsageError);
}

}  // namespace
}  // namespace kforge
