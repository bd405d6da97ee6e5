// The correctness protocol, exercised in-process with hand-written gemm "kernels": the right
// one passes; each classic mistake fails, with a failure text that says what went wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "kforge/problem.hpp"
#include "kforge/verify.hpp"

namespace kforge {
namespace {

// A kernel's view of C: reads see the initial contents (NaN where poisoned), writes are
// tracked, and stored values are rounded to the dtype as a real store would.
struct OutC {
  std::vector<double> v;
  std::vector<bool> written;
  DType t;
  [[nodiscard]] double get(std::int64_t i) const { return v[i]; }
  void set(std::int64_t i, double x) {
    double r[1] = {x};
    round_to(t, r);
    v[i] = r[0];
    written[i] = true;
  }
};

using GemmBody = std::function<void(const Instance&, OutC&)>;

KernelCall make_call(GemmBody body) {
  return [body](const Instance& inst, bool poison_inout) {
    const auto& c0 = inst.tensors[2];
    OutC c{poison_inout ? std::vector<double>(c0.size(), std::numeric_limits<double>::quiet_NaN()) : c0,
           std::vector<bool>(c0.size(), false), inst.dtype};
    body(inst, c);
    KernelOutput out;
    out.unwritten.assign(1, std::vector<bool>(c0.size(), false));
    if (poison_inout)
      for (std::size_t i = 0; i < c0.size(); ++i) out.unwritten[0][i] = !c.written[i];
    out.tensors = {c.v};
    return out;
  };
}

struct Dims {
  std::int64_t M, N, K;
  double alpha, beta;
};
Dims dims(const Instance& in) {
  return {in.sizes.at("M"), in.sizes.at("N"), in.sizes.at("K"), in.scalars.at("alpha"),
          in.scalars.at("beta")};
}

double dot(const Instance& in, std::int64_t i, std::int64_t j, std::int64_t k_end = -1) {
  const auto [M, N, K, alpha, beta] = dims(in);
  double s = 0;
  for (std::int64_t k = 0; k < (k_end < 0 ? K : k_end); ++k)
    s += in.tensors[0][i * K + k] * in.tensors[1][k * N + j];
  return s;
}

// The right answer, in double.
void correct(const Instance& in, OutC& c) {
  const auto [M, N, K, alpha, beta] = dims(in);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j)
      c.set(i * N + j, alpha * dot(in, i, j) + (beta != 0 ? beta * c.get(i * N + j) : 0.0));
}

const Sizes kOdd{{"M", 37}, {"N", 29}, {"K", 41}};

class Verify : public ::testing::Test {
 protected:
  std::shared_ptr<Problem> gemm = find_problem("gemm");
  // Quick unless a test asks for thorough: these tests count trials.
  VerifyReport run(const GemmBody& body, const Sizes& s = kOdd, DType t = DType::fp32,
                   VerifyOptions o = quick()) {
    return verify(*gemm, s, t, make_call(body), o);
  }
  static VerifyOptions quick() {
    VerifyOptions o;
    o.thorough = false;
    return o;
  }
};

TEST_F(Verify, CorrectGemmPassesOnOddShapesAndEveryDType) {
  for (const Sizes& s : {kOdd, Sizes{{"M", 1}, {"N", 1}, {"K", 1}}, Sizes{{"M", 3}, {"N", 1}, {"K", 130}}}) {
    for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
      const VerifyReport r = run(correct, s, t);
      EXPECT_TRUE(r.passed) << dtype_name(t) << ": " << r.failure;
      EXPECT_TRUE(r.failure.empty());
      EXPECT_EQ(r.trials_run, 2);
      EXPECT_EQ(r.worst.elements, s.at("M") * s.at("N"));
      EXPECT_LE(r.worst.max_bound_ratio, 1.0);
    }
  }
}

TEST_F(Verify, CorrectGemmPassesEveryDistribution) {
  VerifyOptions o = quick();
  o.trials = 5;
  o.distributions.assign(std::begin(kAllDistributions), std::end(kAllDistributions));
  const VerifyReport r = run(correct, kOdd, DType::fp32, o);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(r.trials_run, 5);
}

TEST_F(Verify, SkippingTheTailFails) {
  // A kernel that assumes M and N are multiples of its tile: the last row and column stay
  // unwritten.
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M - 1; ++i)
      for (std::int64_t j = 0; j < N - 1; ++j)
        c.set(i * N + j, alpha * dot(in, i, j) + (beta != 0 ? beta * c.get(i * N + j) : 0.0));
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst.unwritten, 37 + 29 - 1);
  EXPECT_EQ(r.worst.bad_elements, 37 + 29 - 1);
  EXPECT_NE(r.failure.find("never written"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("65"), std::string::npos) << "should count them: " << r.failure;
}

TEST_F(Verify, IgnoringBetaFails) {
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) c.set(i * N + j, alpha * dot(in, i, j));
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst.unwritten, 0);
  EXPECT_GT(r.worst.bad_elements, 37 * 29 / 2);
  EXPECT_NE(r.failure.find("beta=0.5"), std::string::npos) << "should name the trial's beta: " << r.failure;
}

TEST_F(Verify, ReadingCWhenBetaIsZeroFails) {
  // beta * C with beta = 0 is not 0 when C holds garbage (NaN): BLAS must not read C then.
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) c.set(i * N + j, alpha * dot(in, i, j) + beta * c.get(i * N + j));
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst.non_finite, 37 * 29);
  EXPECT_NE(r.failure.find("NaN"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("beta=0"), std::string::npos) << r.failure;
}

TEST_F(Verify, UnwrittenElementsAreDetected) {
  // Forgets every 7th element.
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t e = 0; e < M * N; ++e)
      if (e % 7 != 3) c.set(e, alpha * dot(in, e / N, e % N) + (beta != 0 ? beta * c.get(e) : 0.0));
  });
  EXPECT_FALSE(r.passed);
  std::int64_t skipped = 0;
  for (std::int64_t e = 0; e < 37 * 29; ++e) skipped += e % 7 == 3;
  EXPECT_EQ(r.worst.unwritten, skipped);
  EXPECT_NE(r.failure.find("never written"), std::string::npos) << r.failure;
}

TEST_F(Verify, AllZerosFails) {
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    for (std::size_t e = 0; e < in.tensors[2].size(); ++e) c.set(static_cast<std::int64_t>(e), 0.0);
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.worst.unwritten, 0);
  EXPECT_GT(r.worst.bad_elements, 37 * 29 * 9 / 10);
  EXPECT_NEAR(r.worst.rel_frobenius_error, 1.0, 1e-9);
  EXPECT_EQ(r.failed_check, "all_zero");
  EXPECT_NE(r.failure.find("all zeros"), std::string::npos) << r.failure;
}

TEST_F(Verify, OffByOneReductionFails) {
  // for (k = 0; k < K - 1; ++k): drops the last term of every dot product.
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j)
        c.set(i * N + j, alpha * dot(in, i, j, K - 1) + (beta != 0 ? beta * c.get(i * N + j) : 0.0));
  });
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.worst.max_bound_ratio, 1.0);
  EXPECT_FALSE(r.failure.empty());
}

TEST_F(Verify, OffByOneColumnIndexFails) {
  // Reads B one column to the right (clamped at the edge).
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += in.tensors[0][i * K + k] * in.tensors[1][k * N + std::min(j + 1, N - 1)];
        c.set(i * N + j, alpha * s + (beta != 0 ? beta * c.get(i * N + j) : 0.0));
      }
  });
  EXPECT_FALSE(r.passed);
  EXPECT_GT(r.worst.bad_elements, 37 * 27);
}

// Accumulates in `acc` precision (rounding after every add), stores in the dtype.
GemmBody accumulate_in(DType acc) {
  return [acc](const Instance& in, OutC& c) {
    const auto [M, N, K, alpha, beta] = dims(in);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        double s[1] = {0};
        for (std::int64_t k = 0; k < K; ++k) {
          s[0] += in.tensors[0][i * K + k] * in.tensors[1][k * N + j];
          round_to(acc, s);
        }
        c.set(i * N + j, alpha * s[0] + (beta != 0 ? beta * c.get(i * N + j) : 0.0));
      }
  };
}

TEST_F(Verify, Fp16AccumulationFailsTheBoundAtLongReductions) {
  const Sizes s{{"M", 5}, {"N", 7}, {"K", 512}};
  const VerifyReport bad = run(accumulate_in(DType::fp16), s, DType::fp16);
  EXPECT_FALSE(bad.passed) << "fp16 accumulation over K=512 should exceed the bound";
  EXPECT_GT(bad.worst.max_bound_ratio, 1.0);
  // The same kernel accumulating in fp32 is what the bound allows.
  const VerifyReport good = run(accumulate_in(DType::fp32), s, DType::fp16);
  EXPECT_TRUE(good.passed) << good.failure;
}

TEST_F(Verify, OneElementSlightlyBeyondTheBoundFails) {
  // Correct except for one element, off by 1.5 times the bound the problem's magnitude
  // implies (n·u·Σ|a·b| plus the final rounding).
  const auto perturbed = [this](double factor) {
    return [this, factor](const Instance& in, OutC& c) {
      correct(in, c);
      std::vector<std::vector<double>> ref, mag;
      gemm->reference(in, ref, mag);
      const std::int64_t e = 100;
      const double n = gemm->reduction_length(in.sizes);
      const double bound = unit_roundoff(DType::fp32) * std::fabs(ref[0][e]) +
                           n * unit_roundoff(DType::fp32) * mag[0][e];
      c.v[e] = ref[0][e] + factor * bound;  // stored as is, beyond fp32's own rounding
    };
  };
  const VerifyReport bad = run(perturbed(1.5));
  EXPECT_FALSE(bad.passed);
  EXPECT_EQ(bad.worst.bad_elements, 1);
  EXPECT_GT(bad.worst.max_bound_ratio, 1.0);
  EXPECT_NE(bad.failure.find("1 of 1073"), std::string::npos) << bad.failure;
  const VerifyReport fine = run(perturbed(0.5));
  EXPECT_TRUE(fine.passed) << "an error well inside the bound must pass: " << fine.failure;
}

TEST_F(Verify, ReportJsonCarriesTheCounts) {
  const VerifyReport r = run([](const Instance& in, OutC& c) {
    for (std::size_t e = 1; e < in.tensors[2].size(); ++e) c.set(static_cast<std::int64_t>(e), 1.0);
  });
  const auto j = r.to_json();
  EXPECT_FALSE(j.at("passed").get<bool>());
  EXPECT_EQ(j.at("unwritten").get<std::int64_t>(), 1);
  EXPECT_EQ(j.at("failure").get<std::string>(), r.failure);
}

// compare() directly: the reference of an instance against a result computed here.
class Compare : public ::testing::Test {
 protected:
  std::shared_ptr<Problem> gemm = find_problem("gemm");
  Instance inst(std::int64_t M, std::int64_t N, std::int64_t K, DType t, int trial) {
    return gemm->make_instance({{"M", M}, {"N", N}, {"K", K}}, t, Distribution::normal, 99, trial);
  }
  Comparison check(const Instance& in, const std::vector<double>& got) {
    std::vector<std::vector<double>> ref, mag;
    gemm->reference(in, ref, mag);
    KernelOutput out;
    out.tensors = {got};
    out.unwritten = {std::vector<bool>(got.size(), false)};
    return compare(*gemm, in, out, ref, mag);
  }
  // fp32 accumulation in the plain k order, then alpha/beta in fp32, stored in the dtype.
  std::vector<double> fp32_gemm(const Instance& in) {
    const auto [M, N, K, alpha, beta] = dims(in);
    std::vector<double> out(M * N);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        float s = 0;
        for (std::int64_t k = 0; k < K; ++k)
          s += static_cast<float>(in.tensors[0][i * K + k]) * static_cast<float>(in.tensors[1][k * N + j]);
        float r = static_cast<float>(alpha) * s;
        if (beta != 0) r += static_cast<float>(beta) * static_cast<float>(in.tensors[2][i * N + j]);
        out[i * N + j] = r;
      }
    round_to(in.dtype, out);
    return out;
  }
};

TEST_F(Compare, Fp32AccumulationPassesAtLongReductions) {
  for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
    for (int trial : {0, 1}) {
      const Instance in = inst(3, 5, 4096, t, trial);
      const Comparison c = check(in, fp32_gemm(in));
      EXPECT_TRUE(c.passed) << dtype_name(t) << " trial " << trial << ": " << c.failure;
      EXPECT_GT(c.max_abs_error, 0.0) << "fp32 accumulation should not be exact";
      EXPECT_EQ(c.elements, 15);
    }
  }
}

TEST_F(Compare, NanOrInfWhereTheReferenceIsFiniteFails) {
  const Instance in = inst(4, 6, 9, DType::fp32, 1);
  std::vector<double> got = fp32_gemm(in);
  ASSERT_TRUE(check(in, got).passed);
  got[5] = std::numeric_limits<double>::quiet_NaN();
  Comparison c = check(in, got);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.non_finite, 1);
  EXPECT_EQ(c.bad_elements, 1);
  EXPECT_NE(c.failure.find("NaN"), std::string::npos) << c.failure;
  got[5] = -std::numeric_limits<double>::infinity();
  c = check(in, got);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.non_finite, 1);
}

TEST_F(Compare, UnwrittenMaskCounts) {
  const Instance in = inst(4, 6, 9, DType::fp32, 0);
  const std::vector<double> got = fp32_gemm(in);
  std::vector<std::vector<double>> ref, mag;
  gemm->reference(in, ref, mag);
  std::vector<bool> mask(got.size(), false);
  mask[0] = mask[23] = true;
  KernelOutput out;
  out.tensors = {got};
  out.unwritten = {mask};
  const Comparison c = compare(*gemm, in, out, ref, mag);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.unwritten, 2);
  EXPECT_EQ(c.bad_elements, 2);
}

// Large enough that every core compares its own range: the counts, the first bad element and
// the error figures must be those of one pass in element order.
TEST_F(Compare, LargeOutputsCountEveryRangeAndReportTheFirstBadElement) {
  const Instance in = inst(611, 523, 3, DType::fp32, 1);  // 319553 outputs
  std::vector<double> got = fp32_gemm(in);
  std::vector<std::vector<double>> ref, mag;
  gemm->reference(in, ref, mag);
  KernelOutput out;
  std::vector<bool> mask(got.size(), false);
  const std::size_t n = got.size(), far = n - 7, mid = n / 2 + 3, near = 70001;
  mask[far] = true;
  got[mid] = ref[0][mid] + 1 + std::fabs(ref[0][mid]);
  got[near] = ref[0][near] - 1 - std::fabs(ref[0][near]);
  out.tensors = {got};
  out.unwritten = {mask};
  const Comparison c = compare(*gemm, in, out, ref, mag);
  EXPECT_FALSE(c.passed);
  EXPECT_EQ(c.elements, static_cast<std::int64_t>(n));
  EXPECT_EQ(c.unwritten, 1);
  EXPECT_EQ(c.bad_elements, 3);
  EXPECT_EQ(c.first_bad.index, static_cast<std::int64_t>(near));
  EXPECT_DOUBLE_EQ(c.max_abs_error, std::max(1 + std::fabs(ref[0][mid]), 1 + std::fabs(ref[0][near])));
  EXPECT_LE(c.ulp_p50, c.ulp_p90);
  EXPECT_LE(c.ulp_p90, c.ulp_p99);
  EXPECT_GT(c.ulp_p99, 0.0);
}

}  // namespace
}  // namespace kforge
