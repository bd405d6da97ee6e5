// NVML energy without a GPU: the reader driven directly against a fake libnvidia-ml
// (tests/backend/fake_nvml.c) whose counter follows a known law, the batch measurement on a
// coarse counter, and an evaluation through the gates whose backend has that counter (the cpu
// backend lent the fake NVML, as the cuda backend lends the real one): measured where the
// counter answers, the labelled model with NVML's reason where it does not. Untested on a real
// GPU until a GPU session runs tools/gpu-check.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "backend/nvml_energy.hpp"
#include "eval/energy_plan.hpp"
#include "kforge/evaluate.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

// The fake library, with the law it follows from now on.
void use_fake(const std::string& law) {
  setenv("KFORGE_NVML_LIBRARY", FAKE_NVML_LIBRARY, 1);
  setenv("FAKE_NVML_LAW", law.c_str(), 1);
}

std::shared_ptr<NvmlEnergyReader> open_fake(const std::string& law, const NvmlDevice& d, std::string* why) {
  use_fake(law);
  return NvmlEnergyReader::open({}, d, why);
}

TEST(NvmlEnergy, AMissingLibraryIsNamedWithTheFix) {
  std::string why;
  EXPECT_FALSE(NvmlEnergyReader::open("/nonexistent/libnvidia-ml.so.1", {}, &why));
  EXPECT_NE(why.find("NVML: library not found: /nonexistent/libnvidia-ml.so.1"), std::string::npos) << why;
  EXPECT_NE(why.find("KFORGE_NVML_LIBRARY"), std::string::npos) << why;
  setenv("KFORGE_NVML_LIBRARY", "/nonexistent/elsewhere.so", 1);  // the override is the default path
  EXPECT_FALSE(NvmlEnergyReader::open({}, {}, &why));
  EXPECT_NE(why.find("/nonexistent/elsewhere.so"), std::string::npos) << why;
}

TEST(NvmlEnergy, TheReaderReturnsTheLawsMillijoules) {
  std::string why;
  // GPU 1 starts at 2,000,000 mJ and advances 2 x 7 mJ at every read (open reads it once).
  const auto r = open_fake("per_read:7", {1, ""}, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_NE(r->describe().find("GPU 1 (Fake GPU 1)"), std::string::npos) << r->describe();
  const std::uint64_t a = r->energy_mj(), b = r->energy_mj(), c = r->energy_mj();
  EXPECT_EQ(a, 2'000'000u + 14u * 2u);
  EXPECT_EQ(b - a, 14u);
  EXPECT_EQ(c - b, 14u);
}

TEST(NvmlEnergy, TheGpuIsMatchedByPciBusIdNotByIndex) {
  std::string why;
  // Index 0 but the bus id of GPU 1, in CUDA's 4-digit-domain spelling: GPU 1 is read.
  const auto r = open_fake("per_read:5", {0, "0000:02:00.0"}, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_NE(r->describe().find("PCI 0000:02:00.0 (Fake GPU 1)"), std::string::npos) << r->describe();
  const std::uint64_t a = r->energy_mj();  // GPU 1's law: from 2,000,000 mJ, 2 x 5 mJ per read
  EXPECT_EQ(r->energy_mj() - a, 10u);
  EXPECT_EQ((a - 2'000'000u) % 10u, 0u);
  EXPECT_FALSE(open_fake("per_read:5", {0, "0000:07:00.0"}, &why));
  EXPECT_NE(why.find("no GPU at PCI 0000:07:00.0: Not Found"), std::string::npos) << why;
  EXPECT_FALSE(open_fake("per_read:5", {2, ""}, &why));
  EXPECT_NE(why.find("no GPU 2"), std::string::npos) << why;
}

TEST(NvmlEnergy, NotSupportedAndAFailedInitAreReasonsNotReaders) {
  std::string why;
  EXPECT_FALSE(open_fake("not_supported", {0, ""}, &why));
  EXPECT_NE(why.find("NVML: total energy of the GPU 0: Not Supported (nvmlReturn_t 3)"), std::string::npos) << why;
  EXPECT_FALSE(open_fake("init_fail", {0, ""}, &why));
  EXPECT_NE(why.find("NVML: nvmlInit_v2: Driver Not Loaded"), std::string::npos) << why;
}

// A coarse counter (a step of 50 W x 10 ms every 10 ms) under runs of a known length: the
// batch's joules per run are the law's, 50 W x the run's wall time.
TEST(NvmlEnergy, TheBatchBetweenCounterStepsGivesTheLawsJoulesPerRun) {
  std::string why;
  const auto r = open_fake("watts:50:tick_ms:10", {0, ""}, &why);
  ASSERT_TRUE(r) << why;
  double run_s = 0;
  int runs = 0;
  const auto run_once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::microseconds(1500));
    run_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++runs;
  };
  const auto b = measure_batch_energy(*r, run_once, {.min_s = 0.15, .max_wait_s = 2.0, .min_runs = 3}, &why);
  ASSERT_TRUE(b) << why;
  const double law_j = 50.0 * run_s / runs;
  EXPECT_NEAR(b->joules_per_run, law_j, 0.1 * law_j) << b->runs << " runs, " << b->delta_mj << " mJ in "
                                                      << b->window_s << " s";
  EXPECT_GE(b->window_s, 0.15);
  EXPECT_EQ(b->delta_mj % 500, 0u);  // whole steps of the counter
}

// A counter that steps at every read: the window holds exactly two steps (the reading taken
// after the minimum time and the one after the next run), so the joules per run must be those
// 2 x K mJ over exactly the runs after the opening one: every run is counted, none twice.
TEST(NvmlEnergy, TheBatchCountsExactlyTheRunsInsideTheWindow) {
  std::string why;
  const auto r = open_fake("per_read:9", {0, ""}, &why);
  ASSERT_TRUE(r) << why;
  int calls = 0;
  const auto b = measure_batch_energy(*r, [&] { ++calls; }, {.min_s = 0.02, .max_wait_s = 1.0, .min_runs = 3}, &why);
  ASSERT_TRUE(b) << why;
  EXPECT_EQ(b->runs, calls - 1);  // the run that opened the window is not in it
  EXPECT_GE(b->runs, 4);
  EXPECT_EQ(b->delta_mj, 2u * 9u);
  EXPECT_DOUBLE_EQ(b->joules_per_run, 2 * 9e-3 / b->runs);
}

TEST(NvmlEnergy, ACounterThatDoesNotMoveIsTooShortToMeasure) {
  std::string why;
  const auto r = open_fake("frozen", {0, ""}, &why);
  ASSERT_TRUE(r) << why;
  EXPECT_FALSE(measure_batch_energy(*r, [] {}, {.min_s = 0.01, .max_wait_s = 0.05, .min_runs = 1}, &why));
  EXPECT_NE(why.find("too short to measure"), std::string::npos) << why;
}

// The cpu backend with a GPU's counter: what the cuda backend does with NVML, on this machine.
class WithCounter final : public Backend, public DeviceEnergySource {
 public:
  WithCounter(std::unique_ptr<Backend> inner, std::string law) : inner_(std::move(inner)), law_(std::move(law)) {}
  std::string name() const override { return inner_->name(); }
  std::string device() const override { return inner_->device(); }
  Lang lang() const override { return inner_->lang(); }
  bool can_run() const override { return inner_->can_run(); }
  std::unique_ptr<Buffer> alloc(std::size_t n) override { return inner_->alloc(n); }
  void write(Buffer& b, const void* s, std::size_t n) override { inner_->write(b, s, n); }
  void read(const Buffer& b, void* d, std::size_t n) override { inner_->read(b, d, n); }
  std::shared_ptr<Module> compile(const std::string& s, const std::string& e, const Defines& d,
                                  const std::string& n) override {
    return inner_->compile(s, e, d, n);
  }
  double run(Module& m, const LaunchGeometry& g, std::span<const Arg> a) override { return inner_->run(m, g, a); }
  std::shared_ptr<EnergyCounter> energy_counter(std::string* why) override {
    std::string reason;
    auto c = open_fake(law_, {0, ""}, &reason);
    if (why) *why = reason;
    return c;
  }

 private:
  std::unique_ptr<Backend> inner_;
  std::string law_;
};

EvalRequest small_gemm() {
  const nlohmann::json spec = {{"name", "naive_gemm.cpp"}, {"problem", "gemm"}, {"lang", "cpp"},
                               {"entry", "gemm"}, {"dtypes", {"fp32"}}, {"grid", {"ceil_div(M, 16)"}}};
  EvalRequest r;
  r.problem = "gemm";
  r.kernel = KernelSpec::from_json_with_source(spec, test::data_file("naive_gemm.cpp"));
  r.sizes = {{"M", 37}, {"N", 29}, {"K", 41}};
  r.backend_options.threads = 1;
  r.verify.thorough = false;
  r.bench = true;
  r.measure.warmup = 1;
  r.measure.repetitions = 5;
  return r;
}

TEST(NvmlEnergy, AnEvaluationReportsTheCountersEnergyOrTheLabelledModel) {
  const EvalRequest req = small_gemm();
  WithCounter measured(make_backend("cpu", req.backend_options), "watts:40:tick_ms:5");
  EXPECT_EQ(plan_energy(measured).describe(), "measured: NVML total energy, GPU 0 (Fake GPU 0)");
  const EvalResult m = evaluate(req, measured);
  ASSERT_EQ(m.disposition, Disposition::passed) << m.error;
  ASSERT_TRUE(m.energy && m.timing);
  EXPECT_EQ(m.energy->source, "measured");
  EXPECT_NE(m.energy->detail.find("between two counter steps"), std::string::npos) << m.energy->detail;
  // 40 W over each back-to-back run: the kernel's own time and a launch's overhead (well under
  // 5 ms on a loaded host); a unit slip (mJ read as J) or a wrong count is far outside.
  EXPECT_GE(m.energy->joules, 40.0 * m.timing->min_s * 0.5) << m.energy->detail;
  EXPECT_LE(m.energy->joules, 40.0 * (m.timing->median_s + 5e-3)) << m.energy->detail;

  WithCounter unsupported(make_backend("cpu", req.backend_options), "not_supported");
  EXPECT_EQ(plan_energy(unsupported).describe(),
            "model (NVML: total energy of the GPU 0: Not Supported (nvmlReturn_t 3))");
  const EvalResult f = evaluate(req, unsupported);
  ASSERT_EQ(f.disposition, Disposition::passed) << f.error;
  ASSERT_TRUE(f.energy);
  EXPECT_EQ(f.energy->source, "model");
  EXPECT_EQ(f.energy->detail.rfind("NVML: total energy of the GPU 0: Not Supported", 0), 0u) << f.energy->detail;
}

#ifdef KFORGE_WITH_CUDA
TEST(NvmlEnergy, TheCudaBackendWithoutAGpuSaysWhyItModels) {
  const auto cuda = make_backend("cuda");
  if (cuda->can_run()) GTEST_SKIP() << "a GPU is here: tools/gpu-check tests NVML on it";
  const EnergyPlan p = plan_energy(*cuda);
  EXPECT_EQ(p.source(), "model");
  EXPECT_EQ(p.describe().rfind("model (NVML: ", 0), 0u) << p.describe();
  EXPECT_FALSE(p.rapl) << "the host's RAPL is not a GPU's energy";
}
#endif

TEST(NvmlEnergy, TheCpuBackendKeepsRaplOrThePlainModel) {
  const auto cpu = make_backend("cpu");
  EXPECT_TRUE(plan_energy(*cpu).model_reason.empty());
}

}  // namespace
}  // namespace kforge
