// lazy_reduce gradients: symbolic derivatives of formulas (compact, refusing abs/min/max), the
// double reference against central finite differences of the sum's double reference, the
// generated kernels passing verification at odd shapes (cpu, opencl), wrong ones rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/formula.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using test::describe;
using test::library_request;

TEST(LazyGrad, DerivativesAreSimplified) {
  const Formula f = Formula::parse("exp(-sqdist(x,y)/s)");
  EXPECT_EQ(f.derivative(0).text(), "(-(exp(((-sqdist(x,y)) / s)) / s))");
  // The derivative is a formula: its text parses back to the same function of the terms.
  const Formula g = Formula::parse("dot(x,y)*pow(sqdist(x,y)+1, -1.5) + log(2+dot(x,y)^2)");
  const double x[] = {0.3, -1.2, 0.7}, y[] = {1.1, 0.4, -0.2};
  const Scalars none;
  for (int k = 0; k < 2; ++k) {
    const Formula d = g.derivative(k);
    const Formula back = Formula::parse(d.text());
    EXPECT_NEAR(back.eval(x, y, 3, none).v, d.eval(x, y, 3, none).v, 1e-14) << d.text();
  }
  EXPECT_EQ(Formula::parse("sqdist(x,y)*2+abs(s)").derivative(0).text(), "2");
  EXPECT_THROW((void)Formula::parse("abs(dot(x,y))").derivative(0), UsageError);
  EXPECT_THROW((void)Formula::parse("min(sqdist(x,y), 1)").derivative(0), UsageError);
}

// The gradient reference against central differences of L = sum_i G_i (sum_j f b_j)_i, the
// sum's own double reference, in every coordinate of X, Y and B. Central differences in double
// with h = 1e-5 err by O(h^2) (~1e-10 relative) plus rounding ~1e-16 |L| / h: 1e-7 relative
// to the gradient's largest entry is honest and far below any wrong derivative.
TEST(LazyGrad, ReferenceMatchesFiniteDifferences) {
  for (const std::string f : {"exp(-sqdist(x,y)/s)", "dot(x,y)*exp(-sqdist(x,y)/sigma)+1",
                              "pow(sqdist(x,y)+1, -0.5)", "sqrt(sqdist(x,y)+eps)/(2+dot(x,y)^2)"}) {
    const auto sum = find_problem("lazy_reduce:sum:" + f);
    for (const char wrt : {'x', 'y', 'b'}) {
      const auto grad = find_problem(std::string("lazy_reduce:grad_") + wrt + ":sum:" + f);
      const Sizes s{{"N", 6}, {"M", 9}, {"D", 3}};
      Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 7, 1);
      for (auto& [name, v] : in.scalars) v = 0.7;
      std::vector<std::vector<double>> g, mag;
      grad->reference(in, g, mag);
      Instance fw{{{"N", 6}, {"M", 9}, {"D", 3}, {"E", 1}}, DType::fp32, in.scalars,
                  {in.tensors[0], in.tensors[1], in.tensors[2], std::vector<double>(6)}};
      auto loss = [&] {
        std::vector<std::vector<double>> o, m;
        sum->reference(fw, o, m);
        double l = 0;
        for (int i = 0; i < 6; ++i) l += in.tensors[3][i] * o[0][i];
        return l;
      };
      auto& v = fw.tensors[wrt == 'x' ? 0 : wrt == 'y' ? 1 : 2];
      ASSERT_EQ(v.size(), g[0].size());
      double scale = 0;
      for (double e : g[0]) scale = std::max(scale, std::fabs(e));
      ASSERT_GT(scale, 0);
      for (std::size_t k = 0; k < v.size(); ++k) {
        const double at = v[k], h = 1e-5;
        v[k] = at + h;
        const double up = loss();
        v[k] = at - h;
        const double down = loss();
        v[k] = at;
        EXPECT_NEAR((up - down) / (2 * h), g[0][k], 1e-7 * scale) << f << " wrt " << wrt << " entry " << k;
      }
    }
  }
}

// logsumexp's gradient reference against central differences of L = sum_i G_i lse_i, the
// logsumexp reduction's double reference (the instance's LSE input is the true lse of its X and
// Y: condition_inputs; LSE is the forward's output, held fixed as autograd holds it).
TEST(LazyGrad, LogsumexpReferenceMatchesFiniteDifferences) {
  for (const std::string f : {"-sqdist(x,y)/s", "dot(x,y)*exp(-sqdist(x,y)/sigma)+1"}) {
    const auto fwd = find_problem("lazy_reduce:logsumexp:" + f);
    for (const char wrt : {'x', 'y'}) {
      const auto grad = find_problem(std::string("lazy_reduce:grad_") + wrt + ":logsumexp:" + f);
      const Sizes s{{"N", 6}, {"M", 9}, {"D", 3}};
      Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 11, 0, {{"s", 0.7}, {"sigma", 0.7}});
      std::vector<std::vector<double>> g, mag;
      Instance fw{s, DType::fp32, in.scalars, {in.tensors[0], in.tensors[1], std::vector<double>(6)}};
      std::vector<std::vector<double>> o, m;
      fwd->reference(fw, o, m);
      for (int i = 0; i < 6; ++i) EXPECT_NEAR(in.tensors[2][i], o[0][i], 1e-6 * (1 + std::fabs(o[0][i])));
      in.tensors[2] = o[0];  // the exact lse, so the difference quotient's L is the same function
      grad->reference(in, g, mag);
      auto loss = [&] {
        fwd->reference(fw, o, m);
        double l = 0;
        for (int i = 0; i < 6; ++i) l += in.tensors[3][i] * o[0][i];
        return l;
      };
      auto& v = fw.tensors[wrt == 'x' ? 0 : 1];
      ASSERT_EQ(v.size(), g[0].size());
      double scale = 0;
      for (double e : g[0]) scale = std::max(scale, std::fabs(e));
      ASSERT_GT(scale, 0);
      for (std::size_t k = 0; k < v.size(); ++k) {
        const double at = v[k], h = 1e-5;
        v[k] = at + h;
        const double up = loss();
        v[k] = at - h;
        const double down = loss();
        v[k] = at;
        EXPECT_NEAR((up - down) / (2 * h), g[0][k], 1e-7 * scale) << f << " wrt " << wrt << " entry " << k;
      }
    }
  }
}

// min and kmin: the gradient reference against central differences of L = sum_i sum_k G_ik v_ik,
// v the kmin (or min) reduction's double reference; the instance's IDX (the forward's indices)
// are the reference's. Random normal points: no two values of a row within h of each other
// here, so the selection does not move under the differences.
TEST(LazyGrad, MinReferenceMatchesFiniteDifferences) {
  for (const std::string f : {"sqdist(x,y)", "-dot(x,y)*exp(-sqdist(x,y)/s)"}) {
    for (const std::string red : {"min", "kmin"}) {
      const std::int64_t K = red == "kmin" ? 3 : 1;
      const auto fwd = find_problem("lazy_reduce:" + red + ":" + f);
      for (const char wrt : {'x', 'y'}) {
        const auto grad = find_problem(std::string("lazy_reduce:grad_") + wrt + ":" + red + ":" + f);
        Sizes s{{"N", 6}, {"M", 9}, {"D", 3}};
        if (K > 1) s["K"] = K;
        Instance in = grad->make_instance(s, DType::fp32, Distribution::normal, 5, 0, {{"s", 0.7}});
        std::vector<std::vector<double>> g, mag, o, m;
        Instance fw{s, DType::fp32, in.scalars, {in.tensors[0], in.tensors[1], std::vector<double>(6 * K)}};
        if (K > 1) fw.tensors.push_back(std::vector<double>(6 * K));
        fwd->reference(fw, o, m);
        if (K > 1) EXPECT_EQ(in.tensors[2], o[1]) << f;  // IDX: the forward's indices
        grad->reference(in, g, mag);
        auto loss = [&] {
          fwd->reference(fw, o, m);
          double l = 0;
          for (std::int64_t e = 0; e < 6 * K; ++e) l += in.tensors[3][e] * o[0][e];
          return l;
        };
        auto& v = fw.tensors[wrt == 'x' ? 0 : 1];
        ASSERT_EQ(v.size(), g[0].size());
        double scale = 0;
        for (double e : g[0]) scale = std::max(scale, std::fabs(e));
        ASSERT_GT(scale, 0);
        for (std::size_t k = 0; k < v.size(); ++k) {
          const double at = v[k], h = 1e-5;
          v[k] = at + h;
          const double up = loss();
          v[k] = at - h;
          const double down = loss();
          v[k] = at;
          EXPECT_NEAR((up - down) / (2 * h), g[0][k], 1e-7 * scale) << f << " " << red << " wrt " << wrt << " entry " << k;
        }
      }
    }
  }
}

class LazyGradKernels : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    backend_ = make_backend(GetParam());
    if (!backend_->can_run()) GTEST_SKIP() << "backend cannot run here: " << backend_->device();
  }
  std::unique_ptr<Backend> backend_;
};

TEST_P(LazyGradKernels, GaussSumGradPassesAtOddShapes) {
  for (const Sizes& s : {Sizes{{"N", 37}, {"M", 263}, {"D", 3}}, Sizes{{"N", 5}, {"M", 129}, {"D", 11}},
                         Sizes{{"N", 70}, {"M", 1}, {"D", 1}}}) {
    const EvalResult r = evaluate(library_request("lazy_reduce.gauss_sum_grad", GetParam(), s), *backend_);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
}

// Two pair terms, quick protocol: x, y and b on cpu; the swapped roles (y) on opencl.
TEST_P(LazyGradKernels, FormulaGradientsPass) {
  for (const char* wrt : {"x", "y", "b"}) {
    if (GetParam() != "cpu" && std::string(wrt) != "y") continue;
    const std::string name = std::string("lazy_reduce:grad_") + wrt + ":sum:dot(x,y)*exp(-sqdist(x,y)/sigma)+1";
    EvalRequest req = library_request(name, GetParam(), {{"N", 29}, {"M", 41}, {"D", 10}});
    req.verify.thorough = false;
    const EvalResult r = evaluate(req, *backend_);
    EXPECT_TRUE(r.passed()) << name << ": " << describe(r);
  }
}

// logsumexp: the library's (x; trial s = 0.001 underflows exp without the shift) and a user
// formula with dot in x and y, thorough, at shapes that are no multiple of any tile.
TEST_P(LazyGradKernels, LogsumexpGradientsPassAtOddShapes) {
  for (const Sizes& s : {Sizes{{"N", 37}, {"M", 263}, {"D", 3}}, Sizes{{"N", 70}, {"M", 1}, {"D", 1}}}) {
    const EvalResult r = evaluate(library_request("lazy_reduce.logsumexp_grad", GetParam(), s), *backend_);
    EXPECT_TRUE(r.passed()) << describe(r);
  }
  for (const char* wrt : {"x", "y"}) {
    const std::string name = std::string("lazy_reduce:grad_") + wrt + ":logsumexp:dot(x,y)*exp(-sqdist(x,y)/sigma)";
    const EvalResult r = evaluate(library_request(name, GetParam(), {{"N", 29}, {"M", 41}, {"D", 10}}), *backend_);
    EXPECT_TRUE(r.passed()) << name << ": " << describe(r);
  }
}

// min and kmin through the forward's indices, x and y, thorough, odd shapes.
TEST_P(LazyGradKernels, MinGradientsPassAtOddShapes) {
  for (const char* wrt : {"x", "y"}) {
    for (const std::string name : {std::string("lazy_reduce:grad_") + wrt + ":kmin:sqdist(x,y)",
                                   std::string("lazy_reduce:grad_") + wrt + ":min:-dot(x,y)*exp(-sqdist(x,y)/s)"}) {
      Sizes s{{"N", 37}, {"M", 263}, {"D", 3}};
      if (name.find(":kmin:") != std::string::npos) s["K"] = 5;
      const EvalResult r = evaluate(library_request(name, GetParam(), s), *backend_);
      EXPECT_TRUE(r.passed()) << name << ": " << describe(r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LazyGradKernels, ::testing::Values("cpu", "opencl"));

// The cpu kernel of `problem` with `from` replaced by `to`, quick protocol at N=23, M=77, D=3.
EvalResult run_edited(const std::string& problem, const std::string& from, const std::string& to) {
  auto backend = make_backend("cpu");
  EvalRequest req = library_request(problem, "cpu", {{"N", 23}, {"M", 77}, {"D", 3}});
  test::plant(req, from, to);
  req.verify.thorough = false;
  return evaluate(req, *backend);
}

TEST(LazyGradCpu, WrongKernelsAreRejected) {
  // sqdist's gradient with the wrong sign, a derivative with the wrong sign, the control.
  EXPECT_FALSE(run_edited("lazy_reduce.gauss_sum_grad", "w * (2.0f * (pv - q))", "w * (2.0f * (q - pv))").passed());
  EXPECT_FALSE(run_edited("lazy_reduce.gauss_sum_grad", "#define LZ_G0(t0, t1) (", "#define LZ_G0(t0, t1) -(").passed());
  EXPECT_FALSE(run_edited("lazy_reduce:grad_y:sum:dot(x,y)", "kind == 0 ?", "kind == 1 ?").passed());
  const EvalResult ok = run_edited("lazy_reduce:grad_y:sum:dot(x,y)", "BI", "BI");
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

// logsumexp's wrong kernels: the softmax without the shift (exp(f) / exp(lse): 50 dot(x,y)
// overflows exp), the lse of the next row, the derivative's sign flipped, the sum's gradient
// (weights 1, no softmax), the same in the swapped (y) form; the controls pass.
TEST(LazyGradCpu, WrongLogsumexpKernelsAreRejected) {
  const std::string big = "lazy_reduce:grad_x:logsumexp:50*dot(x,y)", lib = "lazy_reduce.logsumexp_grad";
  const std::string dy = "lazy_reduce:grad_y:logsumexp:dot(x,y)*exp(-sqdist(x,y)/s)";
  EXPECT_FALSE(run_edited(big, "return expf(kf_min(f - lse, kf_splat(0.0f)));", "return expf(f) / expf(lse);").passed());
  EXPECT_FALSE(run_edited(lib, "B[i0 + r]", "B[(i0 + r + 1) % rows]").passed());
  EXPECT_FALSE(run_edited(dy, "lt[j] = j < nj ? B[j0 + j]", "lt[j] = j < nj ? B[(j0 + j + 1) % inner]").passed());
  EXPECT_FALSE(run_edited(lib, "#define LZ_G0(t0, t1) (", "#define LZ_G0(t0, t1) -(").passed());
  EXPECT_FALSE(run_edited(lib, "return expf(kf_min(f - lse, kf_splat(0.0f)));", "return kf_splat(1.0f);").passed());
  EXPECT_FALSE(run_edited(dy, "return expf(kf_min(f - lse, kf_splat(0.0f)));", "return kf_splat(1.0f);").passed());
  for (const auto& name : {big, dy}) {
    const EvalResult ok = run_edited(name, "BI", "BI");
    EXPECT_TRUE(ok.passed()) << describe(ok);
  }
}

// min/kmin's wrong kernels: the gradient at the next point instead of the selected one, the
// y-gradient scattered to the next row, the derivative's sign flipped, the first index only
// for kmin; the control passes.
TEST(LazyGradCpu, WrongMinKernelsAreRejected) {
  const std::string kx = "lazy_reduce:grad_x:kmin:sqdist(x,y)", ky = "lazy_reduce:grad_y:kmin:sqdist(x,y)";
  const Sizes s{{"N", 23}, {"M", 77}, {"D", 3}, {"K", 4}};
  auto run = [&](const std::string& problem, const std::string& from, const std::string& to) {
    auto backend = make_backend("cpu");
    EvalRequest req = library_request(problem, "cpu", s);
    test::plant(req, from, to);
    req.verify.thorough = false;
    return evaluate(req, *backend);
  };
  EXPECT_FALSE(run(kx, "const int j = (int)IDX[e];", "const int j = ((int)IDX[e] + 1) % M;").passed());
  EXPECT_FALSE(run(ky, "const int r = (LZ_WRT == 0 ? i : j) - r0;", "const int r = (LZ_WRT == 0 ? i : (j + 1) % M) - r0;").passed());
  EXPECT_FALSE(run(kx, "#define LZ_G0(t0, t1) (", "#define LZ_G0(t0, t1) -(").passed());
  EXPECT_FALSE(run(ky, "for (int k = 0; k < K; ++k) {", "for (int k = 0; k < 1; ++k) {").passed());
  const EvalResult ok = run(ky, "BI", "BI");
  EXPECT_TRUE(ok.passed()) << describe(ok);
}

TEST(LazyGradCpu, BadNamesAreRefused) {
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_z:sum:dot(x,y)"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_x:argmin:dot(x,y)"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_b:kmin:dot(x,y)"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_y:min:abs(dot(x,y))"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_b:logsumexp:dot(x,y)"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_x:logsumexp:max(dot(x,y), 0)"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_x:sum:abs(dot(x,y))"), UsageError);
  EXPECT_THROW((void)find_problem("lazy_reduce:grad_x:sum:dot(x,y)*G"), UsageError);  // G is the upstream
}

// The command line: --grad names the gradient problem; misuse exits 2 with the fix.
TEST(LazyGradCli, GradOptionNamesTheProblem) {
  const auto ok = test::kforge_cli("verify lazy_reduce --formula 'exp(-sqdist(x,y)/s)' --grad y --quick "
                                   "--size N=19,M=23,D=2 --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("lazy_reduce:grad_y:sum:exp(-sqdist(x,y)/s)"), std::string::npos) << ok.out;
  const auto alone = test::kforge_cli("verify lazy_reduce --grad x");
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--grad goes with --formula"), std::string::npos) << alone.err;
  const auto am = test::kforge_cli("verify lazy_reduce --formula 'dot(x,y)' --reduce argmin --grad x");
  EXPECT_EQ(am.exit_code, 2);
  EXPECT_NE(am.err.find("indices have no gradient"), std::string::npos) << am.err;
  const auto lse_b = test::kforge_cli("verify lazy_reduce --formula 'dot(x,y)' --reduce logsumexp --grad b");
  EXPECT_EQ(lse_b.exit_code, 2);
  EXPECT_NE(lse_b.err.find("logsumexp has no weights b"), std::string::npos) << lse_b.err;
  const auto abs_f = test::kforge_cli("verify 'lazy_reduce:grad_y:logsumexp:abs(dot(x,y))'");
  EXPECT_EQ(abs_f.exit_code, 2);
  EXPECT_NE(abs_f.err.find("abs"), std::string::npos) << abs_f.err;
  const auto lse = test::kforge_cli("verify lazy_reduce --formula '-sqdist(x,y)/s' --reduce logsumexp --grad y --quick "
                                    "--size N=19,M=23,D=2 --json");
  EXPECT_EQ(lse.exit_code, 0) << lse.out << lse.err;
  EXPECT_NE(lse.out.find("lazy_reduce:grad_y:logsumexp:-sqdist(x,y)/s"), std::string::npos) << lse.out;
}

}  // namespace
}  // namespace kforge
