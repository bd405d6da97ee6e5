// Outside sources run in a kforge-worker subprocess: whatever a kernel does (crash, abort,
// hang, eat memory, fail to compile, print) becomes a disposition, and this process lives on.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/resident_watch.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

EvalRequest request_for(const std::string& data_name) {
  const nlohmann::json spec = {{"name", data_name}, {"problem", "gemm"}, {"lang", "cpp"},
                               {"entry", "gemm"},   {"dtypes", {"fp32"}}, {"grid", {"ceil_div(M, 16)"}}};
  EvalRequest r;
  r.problem = "gemm";
  r.kernel = KernelSpec::from_json_with_source(spec, test::data_file(data_name));
  r.kernel.source_path = test::data_path(data_name);
  r.sizes = {{"M", 37}, {"N", 29}, {"K", 41}};  // 37 rows: two full 16-row blocks and a tail
  r.dtype = DType::fp32;
  r.backend = "cpu";
  r.backend_options.threads = 2;
  return r;
}

EvalResult run(const std::string& data_name, IsolationLimits limits = {.timeout_s = 60}) {
  return evaluate_isolated(request_for(data_name), limits);
}

TEST(Isolation, CorrectNaiveGemmPasses) {
  const EvalResult r = run("naive_gemm.cpp");
  ASSERT_EQ(r.disposition, Disposition::passed) << r.error << "\n" << r.compile_log;
  ASSERT_TRUE(r.verify.has_value());
  EXPECT_TRUE(r.verify->passed);
  // Thorough by default: three trials, repeats, perturbations and fuzzed shapes.
  EXPECT_GE(r.verify->trials_run, 3 + 2 + 2);
  EXPECT_FALSE(r.verify->shapes_tried.empty());
  EXPECT_TRUE(r.verify->failed_check.empty());
  EXPECT_EQ(r.problem, "gemm");
  EXPECT_EQ(r.backend, "cpu");
  EXPECT_FALSE(r.device.empty());
  EXPECT_EQ(r.sizes.at("M"), 37);
  EXPECT_FALSE(r.timing.has_value()) << "no timing unless asked";
}

TEST(Isolation, SkippingTheTailIsIncorrect) {
  const EvalResult r = run("tail_skip.cpp");
  ASSERT_EQ(r.disposition, Disposition::incorrect) << r.error;
  ASSERT_TRUE(r.verify.has_value());
  EXPECT_EQ(r.verify->failed_check, "poison");
  EXPECT_EQ(r.verify->worst.unwritten, 5 * 29);  // rows 32..36
  EXPECT_NE(r.error.find("never written"), std::string::npos) << r.error;
}

TEST(Isolation, SegfaultIsCrashedAndNamesTheSignal) {
  const EvalResult r = run("segfault.cpp");
  EXPECT_EQ(r.disposition, Disposition::crashed) << r.error;
  EXPECT_TRUE(r.error.find("SIGSEGV") != std::string::npos ||
              r.error.find("signal 11") != std::string::npos)
      << r.error;
}

TEST(Isolation, AbortIsCrashed) {
  const EvalResult r = run("abort.cpp");
  EXPECT_EQ(r.disposition, Disposition::crashed) << r.error;
  EXPECT_TRUE(r.error.find("signal 6") != std::string::npos ||
              r.error.find("bort") != std::string::npos)
      << r.error;
}

TEST(Isolation, EndlessLoopTimesOut) {
  const auto t0 = std::chrono::steady_clock::now();
  const EvalResult r = run("endless.cpp", {.timeout_s = 3});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.disposition, Disposition::timeout) << r.error;
  EXPECT_FALSE(r.error.empty());
  EXPECT_LT(took, 15.0) << "the worker should be killed near its limit";
}

// The index_width run's own time limit (ResidentWatch::stretch_*, set by evaluate_isolated): the
// deadline moves when the marker shows on the child's stderr, and only then.
TEST(Isolation, TheIndexWidthRunHasATimeLimitOfItsOwn) {
  const std::vector<std::string> slow{
      "sh", "-c", "sleep 0.3; echo 'kforge-progress: index_width: gemm at M=65537' >&2; sleep 1.5; echo done"};
  ResidentWatch stretch{.stretch_marker = "kforge-progress: index_width", .stretch_timeout_s = 6};
  const ProcessResult p = run_process(slow, {}, {.timeout_s = 1}, stretch);
  EXPECT_TRUE(p.ok()) << p.describe();
  EXPECT_TRUE(stretch.stretched);
  EXPECT_EQ(p.out, "done\n");
  // Without the marker the same child ends at the evaluation's limit,
  ResidentWatch other{.stretch_marker = "kforge-progress: shapes", .stretch_timeout_s = 6};
  EXPECT_TRUE(run_process(slow, {}, {.timeout_s = 1}, other).timed_out);
  EXPECT_FALSE(other.stretched);
  // and a stretch never shortens it (0.3 + 0.2 s is before the evaluation's 1 s).
  ResidentWatch short_stretch{.stretch_marker = "kforge-progress: index_width", .stretch_timeout_s = 0.2};
  EXPECT_TRUE(run_process(slow, {}, {.timeout_s = 1}, short_stretch).timed_out);
}

TEST(Isolation, MemoryHogIsCrashedUnderTheLimit) {
  // Without the index_width check, which maps its wide tensors on top of the limit: the hog
  // would touch that much more before it is stopped.
  EvalRequest req = request_for("memory_hog.cpp");
  req.verify.index_width = false;
  const EvalResult r = evaluate_isolated(req, {.timeout_s = 60, .memory_bytes = 1ll << 30});
  EXPECT_EQ(r.disposition, Disposition::crashed) << r.error;
  EXPECT_FALSE(r.error.empty());
}

// The index_width run maps its wide tensors beyond the memory limit: the worker may raise its
// own limit for that run alone. Every other run keeps the limit (a kernel reserving 3 GiB under
// a 1 GiB limit aborts), and the wide run still gets its room (a correct kernel passes it).
TEST(Isolation, OnlyTheIndexWidthRunGoesBeyondTheMemoryLimit) {
  EvalRequest req = request_for("reserves_3gib.cpp");
  ASSERT_TRUE(req.verify.index_width);
  const EvalResult r = evaluate_isolated(req, {.timeout_s = 120, .memory_bytes = 1ll << 30});
  EXPECT_EQ(r.disposition, Disposition::crashed) << r.error;
  const EvalResult ok = evaluate_isolated(request_for("naive_gemm.cpp"), {.timeout_s = 120, .memory_bytes = 1ll << 30});
  ASSERT_EQ(ok.disposition, Disposition::passed) << ok.error;
  bool wide_ran = false;
  for (const auto& c : ok.verify->checks)
    if (c.name == "index_width") wide_ran = c.passed && c.detail.rfind("passed at", 0) == 0;
  EXPECT_TRUE(wide_ran) << "the index_width run did not get its room under the limit";
}

// A kernel may not raise its own limits: the sandbox refuses setting any (EPERM), so under a
// 1 GiB limit its 3 GiB fail and it aborts, root or not. Where the worker has room above its
// address-space limit (gemm's index_width run), the sandbox lets the address space be set,
// and the kernel raises it; the parent's resident-memory watchdog then stops it at the limit.
TEST(Isolation, AKernelCannotRaiseItsOwnLimits) {
  EvalRequest req = request_for("hostile/raises_own_limit.cpp");
  req.verify.index_width = false;  // no room: soft == hard
  const EvalResult r = evaluate_isolated(req, {.timeout_s = 60, .memory_bytes = 1ll << 30});
  EXPECT_EQ(r.disposition, Disposition::crashed) << r.error;
  EXPECT_NE(r.error.find("signal 6"), std::string::npos) << r.error;  // abort(): an allocation failed
  req.verify.index_width = true;  // the wide run's room as the hard limit
  const EvalResult w = evaluate_isolated(req, {.timeout_s = 60, .memory_bytes = 1ll << 30});
  EXPECT_EQ(w.disposition, Disposition::crashed) << w.error;
  EXPECT_NE(w.error.find("MiB of resident memory, past its limit of 1024 MiB"), std::string::npos) << w.error;
}

TEST(Isolation, SyntaxErrorIsCompileErrorWithTheCompilersWords) {
  const EvalResult r = run("syntax_error.cpp");
  ASSERT_EQ(r.disposition, Disposition::compile_error) << r.error;
  EXPECT_NE(r.compile_log.find("undeclared_thing_kf"), std::string::npos) << r.compile_log;
  EXPECT_NE(r.compile_log.find("error"), std::string::npos) << r.compile_log;
  EXPECT_FALSE(r.verify.has_value());
}

TEST(Isolation, KernelPrintingToStdoutDoesNotBreakTheProtocol) {
  const EvalResult r = run("prints_stdout.cpp");
  EXPECT_EQ(r.disposition, Disposition::passed) << r.error;
  EXPECT_EQ(r.sizes.at("N"), 29);
}

TEST(Isolation, InvalidConfigIsRefusedBeforeCompiling) {
  EvalRequest req = request_for("naive_gemm.cpp");
  req.kernel.params.push_back({"TILE", {8, 16}});
  req.kernel.defaults["TILE"] = 8;
  req.kernel.constraints.push_back(Expr::parse("M % TILE == 0"));
  const EvalResult r = evaluate_isolated(req, {.timeout_s = 60});
  EXPECT_EQ(r.disposition, Disposition::invalid_config) << r.error;
  EXPECT_NE(r.error.find("M % TILE == 0"), std::string::npos) << r.error;
}

TEST(Isolation, ParentSurvivesAndStillEvaluates) {
  // After every kind of failure above, this process is intact and can evaluate again.
  const EvalResult crash = run("segfault.cpp");
  EXPECT_EQ(crash.disposition, Disposition::crashed);
  const EvalResult ok = run("naive_gemm.cpp");
  EXPECT_EQ(ok.disposition, Disposition::passed) << ok.error;
}

}  // namespace
}  // namespace kforge
