// Issue 24: a ceiling measured too low (a neighbour on a core during the first `kforge
// ceilings`) must never make a correct kernel `suspect`. A cache with every roof cut to an eighth is
// planted; the library's memory-bound kernels at cached sizes and gemm must still pass, and
// whichever beat the planted roof must say that the roof was measured again.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
#include "test_util.hpp"

namespace kforge::test {
namespace {

namespace fs = std::filesystem;

Bandwidth scaled(const Bandwidth& b, double f) { return {b.read * f, b.write * f, b.copy * f, b.triad * f}; }

Ceilings lowered(Ceilings c, double f) {
  for (Roofs* r : {&c.all, &c.one}) {
    for (MemoryLevel l : {MemoryLevel::dram, MemoryLevel::llc, MemoryLevel::l2}) r->at(l) = scaled(r->at(l), f);
    Compute& k = r->compute;
    for (double* p : {&k.fp64, &k.fp32, &k.fp16, &k.bf16, &k.int8}) *p *= f;
  }
  return c;
}

// A cache folder that shares the test cache's compiled kernels but holds `c` as its ceilings.
fs::path plant(Backend& backend, const Ceilings& c) {
  const fs::path shared = test_cache_dir();
  const fs::path dir = fs::temp_directory_path() / ("kforge-false-suspect-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ceilings");
  for (const auto& e : fs::directory_iterator(shared))
    if (e.path().filename() != "ceilings") fs::create_directory_symlink(e.path(), dir / e.path().filename());
  std::ofstream(dir / "ceilings" / fs::path(ceilings_cache_path(backend)).filename()) << c.to_json().dump(2);
  return dir;
}

TEST(FalseSuspect, LoweredCeilingsRejectNoLibraryKernel) {
  const auto backend = make_backend("cpu");
  const Ceilings real = ceilings(*backend);  // the test cache's (measured here if absent)
  const Ceilings low = lowered(real, 0.125);
  const fs::path dir = plant(*backend, low);
  // Hot data beyond the 4 MiB of L2 and within the LLC, and a small gemm (compute-bound).
  const char* const cases[] = {"activation.relu --size M=512,N=2048", "reduce.sum_axis1 --size M=512,N=4096",
                               "softmax --size M=256,N=4096", "gemm --size M=192,N=192,K=192"};
  for (const char* c : cases) {
    SCOPED_TRACE(c);
    const CommandResult r = run_command("KFORGE_CACHE_DIR='" + dir.string() + "' '" + KFORGE_CLI_PATH +
                                        "' bench " + c + " --backend cpu --quick --trials 1 --repetitions 5 "
                                        "--no-baseline --json");
    auto doc = parse_or_fail(r);
    const auto& b = doc.is_array() ? doc[0] : doc;
    EXPECT_EQ(b.value("disposition", ""), "passed") << b.value("error", "") << r.err;
    EXPECT_EQ(r.exit_code, 0);
    if (!b.contains("median_s")) continue;
    // Against the planted roof (all bytes at the best figure: a floor on the kernel's fraction).
    const double median = b["median_s"], flops = b["gflops"].get<double>() * 1e9 * median,
                 bytes = b["gbytes_s"].get<double>() * 1e9 * median;
    const double planted = roofline(low, DType::fp32, flops, bytes, median, 0, true).sol_fraction;
    std::cout << c << ": " << planted << "x the planted roof, " << b.value("sol_fraction", 0.0)
              << " of the roof judged; " << b.value("roof_remeasured", std::string("not re-measured")) << "\n";
    // The gate's noise (sol_gate.cpp): beyond it, the roof must have been measured again.
    const double noise = std::max(0.05, 3 * 1.4826 * b["mad_s"].get<double>() / median);
    if (planted > 1 + noise) {
      EXPECT_FALSE(b.value("roof_remeasured", "").empty()) << "beat the planted roof " << planted << "x";
      EXPECT_LT(b["sol_fraction"].get<double>(), planted);  // reported against the roof measured again
    }
  }
  fs::remove_all(dir);
}

// A 1-thread pool's ceilings measured while a neighbour held the core (the case seen: DRAM
// 3.7-6 GB/s where the 2-thread pool's one-thread column read 23.6) are lifted by the other
// pools' files on this host: one thread is one thread in any pool. No figure is lowered, and
// a pool of more threads never lifts a smaller pool's all-threads figures.
Roofs synthetic_roofs(double dram, double llc, double l2, double fp32) {
  Roofs r;
  r.dram = {dram, dram, dram, dram}, r.llc = {llc, llc, llc, llc}, r.l2 = {l2, l2, l2, l2};
  r.compute.fp32 = fp32, r.compute.fp64 = fp32 / 2;
  return r;
}

Ceilings synthetic(Backend& b, int workers, const Roofs& all, const Roofs& one) {
  Ceilings c;
  c.fingerprint = ceilings_fingerprint(b), c.backend = "cpu", c.device = b.device(), c.workers = workers;
  c.llc_bytes = 32 << 20, c.l2_bytes = 1 << 20, c.all = all, c.one = one;
  return c;
}

TEST(CeilingsPools, AnUnderMeasuredOneThreadPoolIsLiftedByTheOtherPools) {
  const auto one_pool = make_backend("cpu", {.threads = 1});
  const auto two_pool = make_backend("cpu", {.threads = 2});
  const fs::path dir = fs::temp_directory_path() / ("kforge-pools-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "ceilings");
  const auto plant_at = [&](Backend& b, const Ceilings& c) {
    std::ofstream(dir / "ceilings" / fs::path(ceilings_cache_path(b)).filename()) << c.to_json().dump(2);
  };
  // The 1-thread pool: DRAM and LLC under-measured, its L2 and fp32 the best figures of all.
  const Roofs low = synthetic_roofs(5e9, 40e9, 130e9, 101e9);
  // The 2-thread pool: all threads, and its one-thread column.
  const Roofs two_all = synthetic_roofs(45e9, 140e9, 260e9, 205e9), two_one = synthetic_roofs(24e9, 80e9, 100e9, 99e9);
  const char* const old_dir = std::getenv("KFORGE_CACHE_DIR");
  const std::string restore = old_dir ? old_dir : "";
  setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
  // Paths depend on the cache folder: plant after switching to it.
  plant_at(*one_pool, synthetic(*one_pool, 1, low, low));
  plant_at(*two_pool, synthetic(*two_pool, 2, two_all, two_one));
  const Ceilings one = ceilings(*one_pool), two = ceilings(*two_pool);
  setenv("KFORGE_CACHE_DIR", restore.c_str(), 1);
  fs::remove_all(dir);

  // Lifted to the 2-thread pool's one-thread column, never to its all-threads figures.
  EXPECT_DOUBLE_EQ(one.all.dram.read, 24e9);
  EXPECT_DOUBLE_EQ(one.all.llc.copy, 80e9);
  EXPECT_DOUBLE_EQ(one.one.dram.triad, 24e9);
  EXPECT_DOUBLE_EQ(one.all.l2.read, 130e9);   // its own, higher: kept
  EXPECT_DOUBLE_EQ(one.all.compute.fp32, 101e9);
  // The 2-thread pool: its all-threads figures stay; one thread's take the 1-thread pool's best.
  EXPECT_DOUBLE_EQ(two.all.dram.read, 45e9);
  EXPECT_DOUBLE_EQ(two.all.l2.read, 260e9);
  EXPECT_DOUBLE_EQ(two.one.l2.read, 130e9);
  EXPECT_DOUBLE_EQ(two.one.compute.fp32, 101e9);
  EXPECT_DOUBLE_EQ(two.one.dram.read, 24e9);
}

// Ceilings that contradict themselves are named, and what they allow widens to what one thread
// times the threads, or the level below, could do.
TEST(FalseSuspect, InconsistentCeilingsAreDoubted) {
  Ceilings c;
  c.backend = "cpu";
  c.workers = 2;
  c.all.dram = {30e9, 20e9, 25e9, 28e9};
  c.one.dram = {20e9, 15e9, 18e9, 19e9};
  c.all.llc = {99e9, 60e9, 70e9, 80e9};
  c.one.llc = {99e9, 50e9, 60e9, 70e9};  // all threads no faster than one
  c.all.l2 = {25e9, 20e9, 20e9, 20e9};   // slower than the LLC below it
  c.one.l2 = {20e9, 10e9, 10e9, 10e9};
  const auto d = c.doubts();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_NE(d[0].find("llc"), std::string::npos);
  EXPECT_NE(d[1].find("l2 roof"), std::string::npos);
  EXPECT_DOUBLE_EQ(c.upper_bound_at(MemoryLevel::llc).read, 198e9);
  EXPECT_GE(c.upper_bound_at(MemoryLevel::l2).best(), c.upper_bound_at(MemoryLevel::llc).best());
  EXPECT_DOUBLE_EQ(c.upper_bound_at(MemoryLevel::dram).read, 30e9);  // DRAM may saturate on one thread

  c.one.llc = scaled(c.one.llc, 0.5);
  c.all.l2 = scaled(c.all.l2, 8);
  EXPECT_TRUE(c.doubts().empty());
  EXPECT_DOUBLE_EQ(c.upper_bound_at(MemoryLevel::llc).read, 99e9);  // consistent: the figure itself
}

}  // namespace
}  // namespace kforge::test
