// The thorough protocol's own checks, each caught by a kernel built to slip past every other
// check: a race that shows only on a repeat, a kernel that memoizes its answer, one that is
// right everywhere but at size 1, and a problem instance that cannot judge anything.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "kforge/error.hpp"
#include "kforge/verify.hpp"

namespace kforge {
namespace {

const Sizes kShape{{"M", 23}, {"N", 19}, {"K", 31}};

// gemm in double, written to C: passes every check on its own.
KernelOutput exact(const Instance& in) {
  const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N"), K = in.sizes.at("K");
  const double alpha = in.scalars.at("alpha"), beta = in.scalars.at("beta");
  KernelOutput out;
  std::vector<double> c(M * N);
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (std::int64_t k = 0; k < K; ++k) s += in.tensors[0][i * K + k] * in.tensors[1][k * N + j];
      c[i * N + j] = alpha * s + (beta != 0 ? beta * in.tensors[2][i * N + j] : 0.0);
    }
  round_to(in.dtype, c);
  out.tensors = {c};
  out.unwritten = {std::vector<bool>(c.size(), false)};
  return out;
}

VerifyReport thorough(const Sizes& s, const KernelCall& call) {
  return verify(*find_problem("gemm"), s, DType::fp32, call, VerifyOptions{});
}

TEST(Protocol, ACorrectKernelPassesEveryCheck) {
  const VerifyReport r = thorough(kShape, [](const Instance& in, bool) { return exact(in); });
  ASSERT_TRUE(r.passed) << r.failure;
  std::set<std::string> names;
  for (const auto& c : r.checks) {
    EXPECT_TRUE(c.passed) << c.name;
    names.insert(c.name);
  }
  for (const char* n : {"degenerate", "poison", "guard", "inputs_intact", "finite", "bound", "determinism",
                        "perturbation", "shapes"})
    EXPECT_TRUE(names.count(n)) << "missing check " << n;
  EXPECT_GE(r.shapes_tried.size(), 4u);
  EXPECT_EQ(r.shapes_tried.front(), (Sizes{{"K", 1}, {"M", 1}, {"N", 1}})) << "size 1 comes first";
}

TEST(Protocol, ARaceThatShowsOnlyOnARepeatIsNondeterministic) {
  int calls = 0;
  const VerifyReport r = thorough(kShape, [&](const Instance& in, bool) {
    KernelOutput out = exact(in);
    if (++calls == 4) out.tensors[0][7] += 1.0;  // the first repeat of trial 0 loses a race
    return out;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_check, "determinism") << r.failure;
  EXPECT_TRUE(r.nondeterministic());
}

TEST(Protocol, AMemoizedAnswerFailsPerturbation) {
  // Right the first time it sees a (sizes, scalars, A[0]) key, then replays that answer.
  std::map<std::pair<double, double>, KernelOutput> memo;
  const VerifyReport r = thorough(kShape, [&](const Instance& in, bool) {
    const auto key = std::make_pair(in.scalars.at("beta") + 10 * in.sizes.at("M"), in.tensors[0][0]);
    auto it = memo.find(key);
    if (it == memo.end()) it = memo.emplace(key, exact(in)).first;
    return it->second;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_check, "perturbation") << r.failure;
}

TEST(Protocol, WrongOnlyAtSizeOneIsFoundByShapeFuzzing) {
  const VerifyReport r = thorough(kShape, [](const Instance& in, bool) {
    KernelOutput out = exact(in);
    if (in.sizes.at("K") == 1) out.tensors[0][0] *= 2;
    return out;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_check, "shapes") << r.failure;
  EXPECT_EQ(r.element_check, "bound") << r.failure;
  EXPECT_EQ(r.failed_sizes.at("K"), 1);
  EXPECT_NE(r.failure.find("fuzzed shape"), std::string::npos) << r.failure;
}

TEST(Protocol, UnclaimedShapesAreSkippedNotFailed) {
  VerifyOptions o;
  o.supports = [](const Sizes& s) { return s.at("M") % 2 == 1; };  // a kernel for odd M only
  const VerifyReport r = verify(*find_problem("gemm"), kShape, DType::fp32, [](const Instance& in, bool) {
    KernelOutput out = exact(in);
    if (in.sizes.at("M") % 2 == 0) out.tensors[0][0] = 1e30;  // wrong where it claims nothing
    return out;
  }, o);
  EXPECT_TRUE(r.passed) << r.failure;
  for (const auto& s : r.shapes_tried) EXPECT_EQ(s.at("M") % 2, 1);
}

TEST(Protocol, FuzzedShapesIncludeTileNeighboursAndStaySmall) {
  const auto shapes = fuzz_shapes(*find_problem("gemm"), {{"M", 2048}, {"N", 2048}, {"K", 2048}}, {96}, 40, 7);
  std::set<std::int64_t> seen;
  for (const auto& s : shapes) {
    double work = 1;
    for (const auto& [k, v] : s) {
      seen.insert(v);
      work *= static_cast<double>(v);
    }
    EXPECT_LE(work, 6e6);
  }
  EXPECT_TRUE(seen.count(95) || seen.count(97)) << "tile±1";
  EXPECT_EQ(fuzz_shapes(*find_problem("gemm"), kShape, {96}, 10, 7),
            fuzz_shapes(*find_problem("gemm"), kShape, {96}, 10, 7)) << "seeded";
}

// A problem whose reference ignores its inputs: nothing can be judged on it.
class Constant : public Problem {
 public:
  std::string name() const override { return "constant"; }
  std::string description() const override { return "y = 3"; }
  std::vector<std::string> size_names() const override { return {"N"}; }
  Sizes default_sizes() const override { return {{"N", 8}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override { return {{"x", Role::in}, {"y", Role::out}}; }
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t, const Sizes& s) const override { return s.at("N"); }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    out = {std::vector<double>(in.sizes.at("N"), 3.0)};
    mag = out;
  }
  double reduction_length(const Sizes&) const override { return 1; }
  double flops(const Sizes&) const override { return 0; }
  double bytes(const Sizes&, DType) const override { return 0; }
  std::vector<std::string> kernel_specs() const override { return {}; }
};

// Not constant, but still blind to its inputs: y[i] = i + 1 whatever x holds.
class Ramp final : public Constant {
 public:
  // Its own name: the reference cache is keyed by it, and Constant's answers must not be reused.
  std::string name() const override { return "ramp"; }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    out = {std::vector<double>(in.sizes.at("N"))};
    for (std::size_t i = 0; i < out[0].size(); ++i) out[0][i] = static_cast<double>(i + 1);
    mag = out;
  }
};

TEST(Protocol, AReferenceBlindToItsInputsIsRefused) {
  Ramp p;
  const KernelCall call = [&](const Instance& in, bool) {
    KernelOutput out;
    std::vector<std::vector<double>> mag;
    p.reference(in, out.tensors, mag);
    out.unwritten = {std::vector<bool>(in.sizes.at("N"), false)};
    return out;
  };
  try {
    (void)verify(p, {{"N", 8}}, DType::fp32, call, VerifyOptions{});
    FAIL() << "a reference that ignores its inputs must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("same for different inputs"), std::string::npos) << e.what();
  }
}

TEST(Protocol, ADegenerateInstanceIsRefusedBeforeAnyVerdict) {
  Constant p;
  const KernelCall call = [](const Instance& in, bool) {
    KernelOutput out;
    out.tensors = {std::vector<double>(in.sizes.at("N"), 3.0)};
    out.unwritten = {std::vector<bool>(in.sizes.at("N"), false)};
    return out;
  };
  try {
    (void)verify(p, {{"N", 8}}, DType::fp32, call, VerifyOptions{});
    FAIL() << "a constant reference must be refused";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("degenerate"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kforge

namespace kforge {
namespace {

// The hooks evaluate.cpp sets, exercised without a backend: a cache keyed by the buffers
// (modelled as "the run in the same buffers returns the previous answer") fails
// reused_buffers; a run that reports a changed FP environment fails fp_environment at once;
// the determinism repeats ask for schedule variants 1..n and put the ordinary one back.
TEST(Protocol, AnAnswerKeptForTheSameBuffersFailsReusedBuffers) {
  KernelOutput last;
  VerifyOptions o;
  auto fresh = [&](const Instance& in, bool) { return last = exact(in); };
  o.call_same_buffers = [&](const Instance&, bool) { return last; };  // the old answer
  const VerifyReport r = verify(*find_problem("gemm"), kShape, DType::fp32, fresh, o);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_check, "reused_buffers") << r.failure;
  // The same hook running the kernel honestly passes.
  o.call_same_buffers = [&](const Instance& in, bool p) { return fresh(in, p); };
  const VerifyReport ok = verify(*find_problem("gemm"), kShape, DType::fp32, fresh, o);
  EXPECT_TRUE(ok.passed) << ok.failure;
  bool listed = false;
  for (const auto& c : ok.checks) listed = listed || c.name == "reused_buffers";
  EXPECT_TRUE(listed);
}

TEST(Protocol, AChangedFpEnvironmentFailsEvenWhenTheOutputIsRight) {
  int calls = 0;
  const VerifyReport r = thorough(kShape, [&](const Instance& in, bool) {
    KernelOutput out = exact(in);
    if (++calls == 5) out.fp_environment = "flush-to-zero (MXCSR.FZ) on";  // during a repeat
    return out;
  });
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.failed_check, "fp_environment") << r.failure;
  EXPECT_NE(r.failure.find("flush-to-zero"), std::string::npos) << r.failure;
}

TEST(Protocol, RepeatsRunUnderScheduleVariantsAndBitwiseClaimsAreHeld) {
  std::vector<int> variants;
  VerifyOptions o;
  o.schedule = [&](int v, std::uint64_t) {
    variants.push_back(v);
    return v == 0 ? std::string("ordinary") : "variant " + std::to_string(v);
  };
  int calls = 0;
  auto call = [&](const Instance& in, bool) {
    KernelOutput out = exact(in);
    if (++calls == 5) out.tensors[0][3] = std::nextafter(out.tensors[0][3], 1e30);  // one ulp off, in bound
    return out;
  };
  const VerifyReport r = verify(*find_problem("gemm"), kShape, DType::fp32, call, o);
  EXPECT_TRUE(r.passed) << r.failure;
  EXPECT_EQ(variants, (std::vector<int>{1, 0, 2, 0, 3, 0, 4, 0}));
  calls = 0;
  o.bitwise_repeats = true;
  const VerifyReport strict = verify(*find_problem("gemm"), kShape, DType::fp32, call, o);
  EXPECT_FALSE(strict.passed);
  EXPECT_EQ(strict.failed_check, "determinism") << strict.failure;
  EXPECT_NE(strict.failure.find("bit for bit"), std::string::npos) << strict.failure;
}

}  // namespace
}  // namespace kforge
