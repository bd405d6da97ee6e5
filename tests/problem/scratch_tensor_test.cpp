// The scratch tensor role (Role::scratch, include/kforge/problem.hpp): a workspace a kernel may
// use as it likes. Declared in a problem file (docs/problem-files.md), so both the file format
// and the runner are exercised: sized from the sizes, poisoned before every run (a kernel that
// reads it before writing it, or hopes to find what its previous run left, fails), guard-banded
// (a write past its end fails), never compared (garbage left in it passes), absent from the
// reference's tensors and from the problem's fewest bytes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

// y = 2 x + 1, with a workspace w of N + 3 elements the reference never sees.
const char* const kProblem = R"J({
  "name": "test.scratch",
  "description": "y = 2 x + 1, through a workspace",
  "sizes": {"N": {"default": 1000, "min": 1}},
  "tensors": [{"name": "x", "role": "in", "shape": ["N"]},
              {"name": "y", "role": "out", "shape": ["N"]},
              {"name": "w", "role": "scratch", "shape": ["N + 3"]}],
  "flops": "2 * N",
  "reduction_length": "2",
  "reference": {"source": "scratch_reference.cpp", "function": "scratch_reference"},
  "kernels": ["scratch_cpu.json"],
  "timeout_s": 20
})J";
// The reference's ABI has no w: x, then y and its magnitude, then N.
const char* const kReference = R"J(#include <cmath>
#include <cstdint>
void scratch_reference(const double* x, double* y, double* y_mag, int64_t N) {
  for (int64_t i = 0; i < N; ++i) { y[i] = 2 * x[i] + 1; y_mag[i] = 2 * std::fabs(x[i]) + 1; }
}
)J";
const char* const kSpec = R"J({"name": "scratch.cpu", "problem": "test.scratch", "lang": "cpp",
  "source": "scratch.cpp", "entry": "scratch", "grid": ["1"]})J";
// One block: 2x into the workspace, then y from it; the workspace's tail left holding NaN
// (never compared, so it passes).
const char* const kKernel = R"J(#include <cmath>
static void body(const kf_ctx&, const float* x, float* y, float* w, int N) {
  for (int i = 0; i < N; ++i) w[i] = 2.0f * x[i];
  for (int i = 0; i < N; ++i) y[i] = w[i] + 1.0f;
  w[N] = w[N + 1] = w[N + 2] = NAN;
}
KF_KERNEL(scratch, body)
)J";

std::string problem_path() {
  static const std::string path = [] {
    const auto dir = test::scratch_dir("kforge-scratch-test", "problem");
    std::ofstream(dir / "scratch.json") << kProblem;
    std::ofstream(dir / "scratch_reference.cpp") << kReference;
    std::ofstream(dir / "scratch_cpu.json") << kSpec;
    std::ofstream(dir / "scratch.cpp") << kKernel;
    return (dir / "scratch.json").string();
  }();
  return path;
}

EvalResult run(const std::string& from, const std::string& to, bool thorough = true, bool bench = false) {
  auto backend = make_backend("cpu");
  EvalRequest req = test::library_request(problem_path(), "cpu", {{"N", 1001}});
  test::plant(req, from, to);
  req.verify.thorough = thorough;
  if (bench) {  // a few timed runs after the verification, each one's output checked
    req.bench = true;
    req.measure.warmup = 1;
    req.measure.repetitions = 4;
  }
  return evaluate(req, *backend);
}

TEST(ScratchTensor, DeclaredInAFileSizedButNeverDrawnNorCounted) {
  const auto p = find_problem(problem_path());
  const auto specs = p->tensors();
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[2].role, Role::scratch);
  EXPECT_FALSE(is_output(Role::scratch));
  EXPECT_FALSE(is_input(Role::scratch));
  EXPECT_STREQ(role_name(Role::scratch), "scratch");
  const Sizes s{{"N", 37}};
  EXPECT_EQ(p->tensor_elements(2, s), 40);
  const Instance inst = p->make_instance(s, DType::fp32, Distribution::normal, 5, 0);
  ASSERT_EQ(inst.tensors.size(), 3u);
  EXPECT_EQ(inst.tensors[0].size(), 37u);
  EXPECT_TRUE(inst.tensors[2].empty()) << "a scratch tensor has no values to draw";
  // The fewest bytes: x read, y written; w is the kernel's own traffic.
  EXPECT_DOUBLE_EQ(p->bytes(s, DType::fp32), 2 * 37 * 4.0);
  EXPECT_DOUBLE_EQ(p->bytes_written(inst), 37 * 4.0);
  // The reference sees x, y and y's magnitude only.
  std::vector<std::vector<double>> out, mag;
  p->reference(inst, out, mag);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_DOUBLE_EQ(out[0][3], 2 * inst.tensors[0][3] + 1);
  EXPECT_NE(p->signature(Lang::cpp).find("T* w"), std::string::npos) << p->signature(Lang::cpp);
}

TEST(ScratchTensor, AKernelUsingItPassesAndWhatItLeavesThereIsNotCompared) {
  const EvalResult r = run("body", "body");
  EXPECT_TRUE(r.passed()) << test::describe(r);
}

TEST(ScratchTensor, ReadBeforeWrittenIsPoison) {
  // Accumulating into a workspace assumed zero: the poison reaches y.
  const EvalResult r = run("w[i] = 2.0f * x[i];", "w[i] += 2.0f * x[i];", false);
  EXPECT_FALSE(r.passed()) << test::describe(r);
}

TEST(ScratchTensor, NothingIsCarriedFromOneRunToTheNext) {
  // A kernel that takes a shortcut (here: a wrong one) whenever its previous run's mark is still
  // in the workspace. Every run, timed ones included, must find poison there: the mark is never
  // seen and every timed run's output is right. Were the workspace not poisoned again before each
  // run, the second timed run would be wrong and timed_outputs would fail.
  const EvalResult r = run("w[N] = w[N + 1] = w[N + 2] = NAN;",
                           "if (w[N] == 12345.0f) y[0] = -7.0f;\n  w[N] = 12345.0f;", false, true);
  EXPECT_TRUE(r.passed()) << test::describe(r);
  bool timed = false;
  for (const auto& c : r.verify->checks) timed = timed || (c.name == "timed_outputs" && c.passed);
  EXPECT_TRUE(timed) << "the timed runs were checked";
  // The same kernel run without the poisoning in between would be caught: the mark, once seen,
  // gives a wrong y (checked here by leaving the mark where the first run can see it: a w that
  // starts as the mark is a different kernel, so plant it before the check instead).
  const EvalResult planted = run("w[N] = w[N + 1] = w[N + 2] = NAN;",
                                 "w[N] = 12345.0f;\n  if (w[N] == 12345.0f) y[0] = -7.0f;", false);
  EXPECT_FALSE(planted.passed()) << "the shortcut, once taken, is wrong";
}

TEST(ScratchTensor, AWritePastItsEndIsCaughtByItsGuard) {
  const EvalResult r = run("w[N] = w[N + 1] = w[N + 2] = NAN;", "w[N + 3] = 1.0f;", false);
  EXPECT_FALSE(r.passed()) << test::describe(r);
  ASSERT_TRUE(r.verify.has_value());
  EXPECT_EQ(r.verify->failed_check, "guard") << test::describe(r);
}

}  // namespace
}  // namespace kforge
