// Poison that tells its origin (src/verify/poison.*), structured inputs
// (src/verify/structured_inputs.*), the refusal of a degenerate fixed scalar and the crash
// report that names its verification run. The wrong kernels these catch are in
// wrong_kernels_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "kforge/dtype.hpp"
#include "kforge/problem.hpp"
#include "test_util.hpp"
#include "verify/poison.hpp"
#include "verify/structured_inputs.hpp"

namespace kforge {
namespace {

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float poisoned_float(bool guard) {
  unsigned char b[4];
  if (guard) fill_guard(DType::fp32, b, 4);
  else fill_poison(DType::fp32, b, 4);
  float f;
  std::memcpy(&f, b, 4);
  return f;
}
NaNOrigin origin(float f) {
  const std::uint32_t v = bits(f);
  return nan_origin(DType::fp32, reinterpret_cast<const unsigned char*>(&v));
}

TEST(Poison, PatternsAreSignallingNaNsThatTellTheirOrigin) {
  for (DType t : {DType::fp64, DType::fp32, DType::fp16, DType::bf16}) {
    const std::size_t n = dtype_size(t);
    std::vector<unsigned char> poison(3 * n), guard(3 * n);
    fill_poison(t, poison.data(), poison.size());
    fill_guard(t, guard.data(), guard.size());
    std::vector<double> v(3);
    decode(t, poison.data(), v);
    EXPECT_TRUE(std::isnan(v[2])) << dtype_name(t);
    decode(t, guard.data(), v);
    EXPECT_TRUE(std::isnan(v[2])) << dtype_name(t);
    EXPECT_TRUE(is_untouched(t, poison.data() + n)) << dtype_name(t);
    EXPECT_FALSE(is_untouched(t, guard.data() + n)) << dtype_name(t);
    EXPECT_EQ(nan_origin(t, poison.data() + n), NaNOrigin::poison) << dtype_name(t);
    EXPECT_EQ(nan_origin(t, guard.data() + n), NaNOrigin::guard) << dtype_name(t);
    // Signalling: the quiet bit (the top mantissa bit) is clear.
    std::uint64_t e = 0;
    std::memcpy(&e, poison.data(), n);
    const int mantissa = t == DType::fp64 ? 52 : t == DType::fp32 ? 23 : t == DType::fp16 ? 10 : 7;
    EXPECT_EQ((e >> (mantissa - 1)) & 1, 0u) << dtype_name(t);
  }
  // Ordinary values and the hardware's default NaN carry no origin.
  EXPECT_EQ(origin(1.5f), NaNOrigin::none);
  EXPECT_EQ(origin(std::numeric_limits<float>::quiet_NaN()), NaNOrigin::none);
  EXPECT_EQ(origin(std::numeric_limits<float>::infinity()), NaNOrigin::none);
  // Integers have no NaN: all-ones poison, no origin.
  std::int32_t i = 0;
  fill_poison(DType::int32, reinterpret_cast<unsigned char*>(&i), 4);
  EXPECT_EQ(i, -1);
  EXPECT_TRUE(is_untouched(DType::int32, reinterpret_cast<const unsigned char*>(&i)));
}

TEST(Poison, ArithmeticAndConversionsKeepThePayload) {
  volatile float zero = 0.0f, one = 1.0f, minus = -2.0f;  // volatile: computed at run time
  for (bool guard : {false, true}) {
    const NaNOrigin want = guard ? NaNOrigin::guard : NaNOrigin::poison;
    const float p = poisoned_float(guard);
    EXPECT_NE(bits(p * zero), bits(p)) << "quieted: no longer the untouched pattern";
    EXPECT_EQ(origin(p * zero), want);
    EXPECT_EQ(origin(one + p * zero), want);
    EXPECT_EQ(origin(minus * p), want);
    EXPECT_EQ(origin(std::fma(p, zero, one)), want);
    EXPECT_EQ(origin(static_cast<float>(static_cast<double>(p) * 0.0)), want);
    // A 16-bit kernel converts to fp32, computes, converts back (kforge's conversions).
    for (DType t : {DType::fp16, DType::bf16}) {
      std::uint16_t h = 0;
      if (guard) fill_guard(t, reinterpret_cast<unsigned char*>(&h), 2);
      else fill_poison(t, reinterpret_cast<unsigned char*>(&h), 2);
      const float wide = t == DType::fp16 ? fp16_to_fp32(h) : bf16_to_fp32(h);
      const float r = one + wide * zero;
      const std::uint16_t back = t == DType::fp16 ? fp32_to_fp16(r) : fp32_to_bf16(r);
      EXPECT_EQ(nan_origin(t, reinterpret_cast<const unsigned char*>(&back)), want) << dtype_name(t);
      EXPECT_FALSE(is_untouched(t, reinterpret_cast<const unsigned char*>(&back))) << dtype_name(t);
    }
  }
}

Instance gemm_instance(DType t, std::int64_t M, std::int64_t N, std::int64_t K) {
  const auto p = find_problem("gemm");
  return p->make_instance({{"M", M}, {"N", N}, {"K", K}}, t, Distribution::normal, 7, 0);
}

TEST(Structured, PatternsHoldWhatTheyPromise) {
  const auto p = find_problem("gemm");
  const std::int64_t M = 7, N = 5, K = 11;  // rows of A are K long, rows of B N long
  EXPECT_EQ(structures_for(*p, {{"M", M}, {"N", N}, {"K", K}}).size(), 10u);
  auto with = [&](Structure st, DType t = DType::fp32) {
    Instance inst = gemm_instance(t, M, N, K);
    apply_structure(*p, st, inst, 3);
    return inst;
  };
  const Instance drawn = gemm_instance(DType::fp32, M, N, K);
  {
    const Instance z = with(Structure::zero_rows);
    for (std::int64_t k = 0; k < K; ++k) EXPECT_EQ(z.tensors[0][3 * K + k], 0.0);
    EXPECT_NE(z.tensors[0][1 * K], 0.0);
    EXPECT_EQ(z.tensors[2], drawn.tensors[2]) << "C is declared -1: left as drawn";
  }
  {
    const Instance c = with(Structure::zero_columns);
    for (std::int64_t r = 0; r < M; ++r) EXPECT_EQ(c.tensors[0][r * K + 3], 0.0);
  }
  {
    const Instance same = with(Structure::identical_rows);
    for (std::int64_t k = 0; k < K; ++k) EXPECT_EQ(same.tensors[0][5 * K + k], same.tensors[0][k]);
  }
  {
    const Instance hot = with(Structure::one_hot_rows);
    for (std::int64_t r = 0; r < M; ++r) {
      double sum = 0;
      for (std::int64_t k = 0; k < K; ++k) sum += hot.tensors[0][r * K + k];
      EXPECT_EQ(sum, 1.0);
    }
  }
  {
    const Instance alt = with(Structure::alternating_signs);
    for (std::int64_t i = 0; i + 1 < M * K; i += 2)
      EXPECT_TRUE(alt.tensors[0][i] >= 0 && alt.tensors[0][i + 1] <= 0) << i;
  }
  {
    const Instance nz = with(Structure::negative_zero);
    EXPECT_TRUE(nz.tensors[0][0] == 0 && std::signbit(nz.tensors[0][0]));
  }
  for (DType t : {DType::fp32, DType::fp16, DType::bf16}) {
    const double normal = t == DType::fp16 ? 0x1p-14 : 0x1p-126;
    const Instance sub = with(Structure::subnormal_inputs, t);
    double largest = 0;
    for (double v : sub.tensors[0]) largest = std::max(largest, std::fabs(v));
    EXPECT_GT(largest, 0) << dtype_name(t);
    EXPECT_LT(largest, normal) << dtype_name(t);
    // Products below the normal range, the factors above it.
    const Instance prod = with(Structure::subnormal_products, t);
    double a = 0, b = 0;
    for (double v : prod.tensors[0]) a = std::max(a, std::fabs(v));
    for (double v : prod.tensors[1]) b = std::max(b, std::fabs(v));
    EXPECT_GE(a, normal) << dtype_name(t);
    EXPECT_LT(a * b, normal) << dtype_name(t);
    EXPECT_GT(a * b, 0) << dtype_name(t);
    // Near overflow: large, yet the exact result finite in the dtype.
    const Instance big = with(Structure::near_overflow, t);
    std::vector<std::vector<double>> out, mag;
    p->reference(big, out, mag);
    double top = 0;
    for (double v : mag[0]) top = std::max(top, v);
    const double max = t == DType::fp16 ? 65504.0 : 3.4028234663852886e38;
    EXPECT_LT(top, max) << dtype_name(t);
    EXPECT_GT(top, max / 1e4) << dtype_name(t);
  }
}

TEST(Structured, ProblemsWithoutADeclarationKeepTheirDraws) {
  // A user's formula other than the library's Gaussian: its domain and bound are unknown.
  // Gradients of logsumexp, min and kmin: their LSE / IDX inputs are conditioned on X and Y,
  // which a pattern would leave stale.
  for (const char* name : {"cartpole", "lazy_reduce:sum:1/(1+sqdist(x,y))", "lazy_reduce:grad_x:sum:1/(1+sqdist(x,y))",
                           "lazy_reduce:kmin:sqdist(x,y)", "lazy_reduce.logsumexp_grad",
                           "lazy_reduce:grad_y:logsumexp:exp(-sqdist(x,y)/s)", "lazy_reduce:grad_x:kmin:sqdist(x,y)"})
    EXPECT_TRUE(structures_for(*find_problem(name), find_problem(name)->default_sizes()).empty()) << name;
}

// Every family with plain data declares its tensors: one per tensor, outputs and conditioned
// tensors (indices, probabilities, flags, Q and K) left as drawn.
TEST(Structured, TheFamiliesDeclareTheirDataTensors) {
  for (const char* name : {"gemm", "conv2d", "softmax", "rmsnorm", "layernorm", "moe_grouped_gemm",
                           "reduce.sum_axis1", "reduce.argmax_axis0", "scan.gae", "scan.linear", "activation.relu",
                           "activation.leaky_relu", "attention", "attention.causal", "spmm", "sddmm",
                           "spmm_bell", "spmspv", "spdnn", "gnn_aggregate", "gnn_attention", "fusedmm", "signature",
                           "lazy_reduce.gauss_sum", "lazy_reduce.knn", "lazy_reduce.logsumexp", "sigkernel",
                           "signature_grad", "sigkernel_grad", "sigkernel_gram_grad", "lazy_reduce.gauss_sum_grad",
                           "lazy_reduce:sum:exp(-sqdist(x, y) / s)", "lazy_reduce:grad_y:sum:exp(-sqdist(x,y)/s)"}) {
    const auto p = find_problem(name);
    const Sizes s = p->default_sizes();
    const auto rows = p->structured_rows(s);
    ASSERT_EQ(rows.size(), p->tensors().size()) << name;
    bool any = false;
    for (std::size_t t = 0; t < rows.size(); ++t) {
      if (p->tensors()[t].role != Role::in) EXPECT_EQ(rows[t], -1) << name << " output " << p->tensors()[t].name;
      any = any || rows[t] >= 0;
      if (rows[t] > 0) EXPECT_EQ(p->tensor_elements(t, s) % rows[t], 0) << name << " " << p->tensors()[t].name;
    }
    EXPECT_TRUE(any) << name;
    EXPECT_FALSE(structures_for(*p, s).empty()) << name;
  }
  EXPECT_FALSE(find_problem("rmsnorm")->special_scalars().empty());
  EXPECT_FALSE(find_problem("attention")->special_scalars().empty());
  EXPECT_FALSE(find_problem("activation.leaky_relu")->special_scalars().empty());
  EXPECT_TRUE(find_problem("activation.relu")->special_scalars().empty()) << "relu has no scalar to vary";
}

// Attention's near_overflow scales V alone, to a quarter of the largest value over S (the
// flash kernels' unnormalized sum over S keys stays finite), and keeps the conditioned Q and K
// as drawn; its matrix patterns reshape rows of D in Q, K and V, keeping |q|, |k| <= 4.
TEST(Structured, AttentionScalesVByItsLongestSumAndKeepsQAndKConditioned) {
  const auto p = find_problem("attention");
  const Sizes s{{"B", 1}, {"H", 4}, {"HKV", 2}, {"S", 37}, {"D", 16}};
  for (DType t : {DType::fp32, DType::fp16}) {
    const Instance drawn = p->make_instance(s, t, Distribution::normal, 11, 0);
    Instance big = drawn;
    apply_structure(*p, Structure::near_overflow, big, 11);
    EXPECT_EQ(big.tensors[0], drawn.tensors[0]) << dtype_name(t);
    EXPECT_EQ(big.tensors[1], drawn.tensors[1]) << dtype_name(t);
    double top = 0;
    for (double v : big.tensors[2]) top = std::max(top, std::fabs(v));
    const double max = t == DType::fp16 ? 65504.0 : 3.4028234663852886e38;
    EXPECT_LE(top * 37, max / 4 * 1.001) << dtype_name(t);  // the sum over S keys of weights <= 1
    EXPECT_GT(top * 37, max / 8) << dtype_name(t);
    for (Structure st : structures_for(*p, s)) {
      Instance x = drawn;
      apply_structure(*p, st, x, 11);
      for (std::size_t q : {0u, 1u})
        for (double v : x.tensors[q]) ASSERT_LE(std::fabs(v), 4.0) << structure_name(st);
    }
  }
  // zero_rows gives all-zero query rows: every score of such a row is equal.
  Instance z = p->make_instance(s, DType::fp32, Distribution::normal, 11, 0);
  apply_structure(*p, Structure::zero_rows, z, 11);
  for (std::int64_t d = 0; d < 16; ++d) EXPECT_EQ(z.tensors[0][d], 0.0);
}

// The sparse families reshape data only: every pattern keeps the structure tensors (pointers,
// indices, blocked-ELL slots and tiles, spdnn's layers) exactly as drawn, so the instance stays
// valid (the reference validates it), and near_overflow's exact result, on trial 0's scalars, is
// finite with every output element below a quarter of fp32's largest value times a small margin
// (the values spmm_bell leaves as drawn). The same for signature (its near_overflow length puts
// the top level's terms near the overflow) and gauss_sum (B scaled by M; X and Y as drawn).
TEST(Structured, TheSparseAndSignatureFamiliesKeepTheirStructureAndStayFinite) {
  const std::map<std::string, Sizes> sizes = {
      {"spmspv", {{"M", 97}, {"K", 83}, {"NNZ", 900}, {"XNNZ", 7}}},
      {"spmm_bell", {{"M", 61}, {"K", 53}, {"N", 19}, {"NNZ", 700}, {"BS", 4}, {"EC", 14}}},
      {"spdnn", {{"B", 23}, {"N", 37}, {"K", 5}, {"L", 3}}},
      {"gnn_aggregate", {{"M", 71}, {"N", 29}, {"NNZ", 400}}},
      {"gnn_attention", {{"M", 67}, {"D", 32}, {"N", 13}, {"NNZ", 500}}},
      {"fusedmm", {{"M", 67}, {"K", 59}, {"D", 32}, {"N", 17}, {"NNZ", 600}}},
      {"signature", {{"B", 7}, {"L", 19}, {"D", 12}, {"LEVEL", 2}}},
      {"lazy_reduce.gauss_sum", {{"N", 53}, {"M", 67}, {"D", 3}, {"E", 2}}}};
  for (const auto& [name, s] : sizes) {
    const auto p = find_problem(name);
    const auto rows = p->structured_rows(s);
    const Instance drawn = p->make_instance(s, DType::fp32, Distribution::normal, 5, 0);
    const bool matrix = std::any_of(rows.begin(), rows.end(), [](auto r) { return r > 0; });
    ASSERT_EQ(structures_for(*p, s).size(), matrix ? 10u : 6u) << name;
    for (Structure st : structures_for(*p, s)) {
      Instance x = drawn;
      apply_structure(*p, st, x, 5);
      for (std::size_t t = 0; t < rows.size(); ++t)
        if (rows[t] < 0 && p->tensors()[t].role == Role::in)
          EXPECT_EQ(x.tensors[t], drawn.tensors[t]) << name << " " << structure_name(st) << " " << p->tensors()[t].name;
      std::vector<std::vector<double>> out, mag;
      ASSERT_NO_THROW(p->reference(x, out, mag)) << name << " " << structure_name(st);
      if (st != Structure::near_overflow) continue;
      double top = 0;
      for (const auto& o : out)
        for (double v : o) {
          ASSERT_TRUE(std::isfinite(v)) << name;
          top = std::max(top, std::fabs(v));
        }
      EXPECT_LT(top, 3.4028234663852886e38 / 4 * 2) << name;
      // spdnn clips at 32; fusedmm's trial 0 takes the sigmoid, whose weights are in [0, 1] (the
      // large values are its arguments there)
      if (name != "spdnn" && name != "fusedmm")
        EXPECT_GT(top, 3.4028234663852886e38 / 1e6) << name << ": the pattern should come near the overflow";
    }
  }
}

// knn and logsumexp take the patterns on their points (struct8): near_overflow keeps -sqdist/s
// finite at both trial values of s (1 and 0.001) while putting it far below -1e30 (so a running
// max started at a "very negative" -1e30 never moves: tests/verify/wrong/logsumexp_sentinel_max.cpp);
// all_equal makes every distance 0 (knn: all 0, logsumexp: log M exactly).
TEST(Structured, KnnAndLogsumexpStayFiniteNearOverflow) {
  for (const char* name : {"lazy_reduce.knn", "lazy_reduce.logsumexp"}) {
    const auto p = find_problem(name);
    Sizes s{{"N", 13}, {"M", 29}, {"D", 3}};
    if (std::string(name) == "lazy_reduce.knn") s["K"] = 4;
    for (int trial : {0, 1}) {
      const Instance drawn = p->make_instance(s, DType::fp32, Distribution::normal, 7, trial);
      Instance big = drawn;
      apply_structure(*p, Structure::near_overflow, big, 7);
      std::vector<std::vector<double>> out, mag;
      p->reference(big, out, mag);
      double top = 0;
      for (double v : out[0]) {
        ASSERT_TRUE(std::isfinite(v) && std::fabs(v) < 3.4028234663852886e38) << name << " trial " << trial;
        top = std::max(top, std::fabs(v));
      }
      EXPECT_GT(top, 1e31) << name << " trial " << trial << ": the pattern should reach far past 1e30";
      Instance eq = drawn;
      apply_structure(*p, Structure::all_equal, eq, 7);
      p->reference(eq, out, mag);
      for (double v : out[0])
        EXPECT_EQ(v, std::string(name) == "lazy_reduce.knn" ? 0.0 : std::log(29.0)) << name;
    }
  }
}

// sigkernel and the signature gradients take the patterns on whole paths (rows of L*D) and are
// re-conditioned after each (StructuredReconditioning): every path's total variation stays
// within the conditioning's (2; 4 for signature_grad), the cotangents stay as drawn, the
// reference is finite, and the patterns keep their meaning (all_equal: constant paths, so
// sigkernel's K is 1 exactly; identical_rows: every path of X the first).
TEST(Structured, TheSignatureKernelsStayConditionedAndKeepThePattern) {
  const std::map<std::string, Sizes> sizes = {
      {"sigkernel", {{"B1", 4}, {"B2", 5}, {"L1", 9}, {"L2", 7}, {"D", 3}, {"DYADIC", 1}}},
      {"sigkernel_grad", {{"B", 4}, {"L1", 9}, {"L2", 7}, {"D", 3}, {"DYADIC", 1}}},
      {"sigkernel_gram_grad", {{"B1", 3}, {"B2", 4}, {"L1", 9}, {"L2", 7}, {"D", 3}, {"DYADIC", 0}}},
      {"signature_grad", {{"B", 4}, {"L", 9}, {"D", 3}, {"LEVEL", 3}}}};
  for (const auto& [name, s] : sizes) {
    const auto p = find_problem(name);
    const auto rows = p->structured_rows(s);
    const double tv_max = name == "signature_grad" ? 4.0 : 2.0;
    const Instance drawn = p->make_instance(s, DType::fp32, Distribution::wide, 3, 0);
    ASSERT_EQ(structures_for(*p, s).size(), 10u) << name;
    for (Structure st : structures_for(*p, s)) {
      Instance x = drawn;
      apply_structure(*p, st, x, 3);
      for (std::size_t t = 0; t < rows.size(); ++t) {
        if (rows[t] < 0) {
          if (p->tensors()[t].role == Role::in) EXPECT_EQ(x.tensors[t], drawn.tensors[t]) << name << " " << p->tensors()[t].name;
          continue;
        }
        const std::int64_t D = s.at("D"), L = rows[t] / D;
        for (std::size_t b = 0; b * rows[t] < x.tensors[t].size(); ++b) {
          double tv = 0;
          for (std::int64_t e = D; e < L * D; ++e)
            tv += std::fabs(x.tensors[t][b * rows[t] + e] - x.tensors[t][b * rows[t] + e - D]);
          ASSERT_LE(tv, tv_max * (1 + 1e-6)) << name << " " << structure_name(st) << " path " << b;
        }
        if (st == Structure::identical_rows)
          for (std::size_t e = 0; e < x.tensors[t].size(); ++e)
            ASSERT_EQ(x.tensors[t][e], x.tensors[t][e % rows[t]]) << name;
      }
      std::vector<std::vector<double>> out, mag;
      ASSERT_NO_THROW(p->reference(x, out, mag)) << name << " " << structure_name(st);
      for (const auto& o : out)
        for (double v : o) ASSERT_TRUE(std::isfinite(v)) << name << " " << structure_name(st);
      if (name == "sigkernel" && st == Structure::all_equal)
        for (double v : out[0]) EXPECT_EQ(v, 1.0);
    }
  }
}

// `--scalar alpha=0` makes gemm at beta = 0 all zeros: refused naming the scalar, exit 2.
TEST(SpecialScalars, ADegenerateFixedScalarIsRefusedByName) {
  const auto r = test::kforge_cli("verify gemm --size M=16,N=16,K=16 --scalar alpha=0 --quick --json");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("--scalar alpha=0"), std::string::npos) << r.out << r.err;
  // The same sizes without it are fine.
  const auto ok = test::kforge_cli("verify gemm --size M=16,N=16,K=16 --quick --json");
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
}

// A degenerate instance is refused saying whether it depends on the inputs drawn (struct8):
// relu of one element, relu(x + bias), is 0 at about half the seeds (refused, naming a seed
// whose inputs can judge, which then passes); softmax over rows of one element is 1 at every
// seed (refused as the same at three seeds).
TEST(Degenerate, ARefusalSaysWhetherTheSeedDecidesIt) {
  int refused = 0;
  for (int seed = 1; seed <= 16 && refused == 0; ++seed) {
    const auto r = test::kforge_cli("verify activation.relu --size M=1,N=1 --quick --backend cpu --json --seed " +
                                    std::to_string(seed));
    if (r.exit_code == 0) continue;
    ASSERT_EQ(r.exit_code, 2) << r.out << r.err;
    const std::string msg = r.out + r.err;
    ASSERT_NE(msg.find("the inputs drawn decide it"), std::string::npos) << msg;
    const auto at = msg.find("use --seed ");
    ASSERT_NE(at, std::string::npos) << msg;
    const int other = std::stoi(msg.substr(at + 11));
    EXPECT_NE(other, seed);
    const auto ok = test::kforge_cli("verify activation.relu --size M=1,N=1 --quick --backend cpu --json --seed " +
                                     std::to_string(other));
    EXPECT_EQ(ok.exit_code, 0) << "the seed the refusal named: " << ok.out << ok.err;
    ++refused;
  }
  EXPECT_EQ(refused, 1) << "no seed in 1..16 drew a negative relu(x + bias)";
  const auto r = test::kforge_cli("verify softmax --size M=3,N=1 --quick --backend cpu --json --seed 9");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("the same at seeds 9, 10, 11"), std::string::npos) << r.out << r.err;
}

// A crashing kernel is reported with the verification run it was in.
TEST(CrashReport, NamesTheTrialAndShape) {
  const auto r = test::kforge_cli("eval --problem gemm --lang cpp --source '" + std::string(KFORGE_TEST_DATA) + "/segfault.cpp" +
                                  "' --grid 'ceil_div(M,16)' --size M=33,N=17,K=9 --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("crashed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("during verification run: trial 0 at K=9,M=33,N=17"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("kforge-progress"), std::string::npos) << "progress lines are not shown: " << r.out;
}

}  // namespace
}  // namespace kforge
