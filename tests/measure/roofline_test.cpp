// Speed-of-light arithmetic on known counts: the SOL fraction and its bound, the memory roof
// hot data gets, SOL-ExecBench's score, and the suite figures.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "kforge/measure.hpp"

namespace kforge {
namespace {

Ceilings known() {
  Ceilings c;
  c.backend = "cpu";
  c.fingerprint = "test";
  c.llc_bytes = 32 << 20;
  c.all.dram = {100e9, 80e9, 90e9, 95e9};  // best: read, 100 GB/s
  c.all.llc = {400e9, 300e9, 350e9, 380e9};
  c.all.compute.fp32 = 1e12;
  c.all.compute.fp64 = 0.5e12;
  c.all.compute.bf16 = 2e12;
  return c;
}

TEST(Roofline, ComputeBound) {
  // 1e12 FLOPs at 1 TFLOP/s: T_sol = 1 s; 1 GB at 100 GB/s is 10 ms. Took 2 s.
  const Roofline r = roofline(known(), DType::fp32, 1e12, 1e9, 2.0);
  EXPECT_EQ(r.bound, "compute");
  EXPECT_DOUBLE_EQ(r.t_sol_s, 1.0);
  EXPECT_DOUBLE_EQ(r.sol_fraction, 0.5);
  EXPECT_DOUBLE_EQ(r.arithmetic_intensity, 1000);
  EXPECT_FALSE(r.score);  // no baseline
}

TEST(Roofline, MemoryBoundUsesTheBestDramFigure) {
  // 1e9 FLOPs (1 ms) but 10 GB at 100 GB/s: T_sol = 0.1 s. Took 0.4 s.
  const Roofline r = roofline(known(), DType::fp32, 1e9, 10e9, 0.4);
  EXPECT_EQ(r.bound, "memory");
  EXPECT_EQ(r.memory_roof, "dram");
  EXPECT_DOUBLE_EQ(r.sol_fraction, 0.25);
}

// A machine like this one: loads alone stream slower than a copy moves bytes.
TEST(Roofline, EachDirectionIsNoFasterThanItsOwnStream) {
  Ceilings c = known();
  c.all.dram = {28e9, 40e9, 44e9, 44e9};
  // A reduction: 28 GB read, 1 KB written: the read figure limits, 1 s.
  const Roofline red = roofline(c, DType::fp32, 1e3, 28e9, 2.0, 0, false, 1e3);
  EXPECT_NEAR(red.t_sol_s, 1.0, 1e-6);
  EXPECT_NEAR(red.sol_fraction, 0.5, 1e-6);
  EXPECT_EQ(red.memory_roof, "dram-read");
  // A copy: 22 GB each way: the copy figure (44 GB/s) limits; neither direction alone does.
  const Roofline copy = roofline(c, DType::fp32, 1e3, 44e9, 1.0, 0, false, 22e9);
  EXPECT_DOUBLE_EQ(copy.t_sol_s, 1.0);
  EXPECT_EQ(copy.memory_roof, "dram");
  // A fill: 40 GB written at 40 GB/s.
  const Roofline fill = roofline(c, DType::fp32, 1e3, 40e9, 1.0, 0, false, 40e9);
  EXPECT_DOUBLE_EQ(fill.t_sol_s, 1.0);
  EXPECT_EQ(fill.memory_roof, "dram-write");
  // Half read, half written, with stores slower: the write stream limits, and is named.
  Ceilings slow_stores = c;
  slow_stores.all.dram.write = 11e9;
  const Roofline halves = roofline(slow_stores, DType::fp32, 1e3, 44e9, 4.0, 0, false, 22e9);
  EXPECT_DOUBLE_EQ(halves.t_sol_s, 2.0);
  EXPECT_EQ(halves.memory_roof, "dram-write");
  // Unknown split: the total alone, as before.
  EXPECT_DOUBLE_EQ(roofline(c, DType::fp32, 1e3, 28e9, 1.0).t_sol_s, 28e9 / 44e9);
}

TEST(Roofline, HotDataThatFitsTheCacheMeetsTheCacheRoof) {
  const double bytes = 16 << 20;  // fits 32 MiB
  const Roofline hot = roofline(known(), DType::fp32, 1e3, bytes, 1.0, 0, /*hot=*/true);
  EXPECT_EQ(hot.memory_roof, "llc");
  EXPECT_DOUBLE_EQ(hot.t_sol_s, bytes / 400e9);
  const Roofline cold = roofline(known(), DType::fp32, 1e3, bytes, 1.0, 0, /*hot=*/false);
  EXPECT_EQ(cold.memory_roof, "dram");
  EXPECT_DOUBLE_EQ(cold.t_sol_s, bytes / 100e9);
}

// A machine with 2 MiB of L2 per thread: a few rows hot in them stream faster than the LLC
// roof, and must meet the L2's, not be "suspect" against the LLC's.
TEST(Roofline, HotDataThatFitsTheThreadsL2MeetsTheL2Roof) {
  Ceilings c = known();
  c.l2_bytes = 4 << 20;
  c.all.l2 = {900e9, 700e9, 800e9, 850e9};
  const double small = 3 << 20, large = 8 << 20;
  const Roofline hot = roofline(c, DType::fp32, 1e3, small, 1.0, 0, /*hot=*/true);
  EXPECT_EQ(hot.memory_roof, "l2");
  EXPECT_DOUBLE_EQ(hot.t_sol_s, small / 900e9);
  EXPECT_EQ(roofline(c, DType::fp32, 1e3, large, 1.0, 0, true).memory_roof, "llc");  // beyond the L2s
  EXPECT_EQ(roofline(c, DType::fp32, 1e3, small, 1.0, 0, false).memory_roof, "dram");  // cold
  // Without a measured L2 roof (other backends), the LLC's as before.
  EXPECT_EQ(roofline(known(), DType::fp32, 1e3, small, 1.0, 0, true).memory_roof, "llc");
  // Roofs::at names the same figures the roofline uses.
  EXPECT_DOUBLE_EQ(c.all.at(MemoryLevel::l2).read, 900e9);
  EXPECT_DOUBLE_EQ(c.all.at(MemoryLevel::llc).read, 400e9);
  EXPECT_DOUBLE_EQ(c.all.at(MemoryLevel::dram).read, 100e9);
}

// The roof of the minute at the LLC can come out below the cached DRAM figure on a busy host;
// it is still the LLC's roof for that run (roofline() alone would fall back to DRAM's).
TEST(Roofline, RoofAtALevelStaysAtThatLevel) {
  Ceilings now = known();
  now.all.llc = {60e9, 50e9, 55e9, 58e9};  // busy minute: below DRAM's cached 100 GB/s
  const double bytes = 16 << 20;
  const Roofline r = roofline_at(now, MemoryLevel::llc, DType::fp32, 1e3, bytes, 1.0);
  EXPECT_EQ(r.memory_roof, "llc");
  EXPECT_DOUBLE_EQ(r.t_sol_s, bytes / 60e9);
  EXPECT_EQ(roofline(now, DType::fp32, 1e3, bytes, 1.0, 0, true).memory_roof, "dram");
}

TEST(Roofline, PeakPerDtype) {
  const Ceilings c = known();
  EXPECT_DOUBLE_EQ(c.flops_for(DType::fp64), 0.5e12);
  EXPECT_DOUBLE_EQ(c.flops_for(DType::bf16), 2e12);   // its own dot-product peak
  EXPECT_DOUBLE_EQ(c.flops_for(DType::fp16), 1e12);   // none measured: fp32's
}

TEST(SolScore, HalfAtTheBaselineOneAtTheSpeedOfLight) {
  EXPECT_DOUBLE_EQ(*sol_score(4.0, 1.0, 4.0), 0.5);
  EXPECT_DOUBLE_EQ(*sol_score(1.0, 1.0, 4.0), 1.0);
  EXPECT_DOUBLE_EQ(*sol_score(2.0, 1.0, 4.0), 1.0 / (1.0 + 1.0 / 3.0));  // 0.75
  EXPECT_LT(*sol_score(8.0, 1.0, 4.0), 0.5);  // slower than the baseline
  EXPECT_FALSE(sol_score(2.0, 1.0, 1.0));     // a baseline at the roof gives no scale
}

TEST(SolScore, CarriedByRoofline) {
  // T_sol = 1 s, baseline 3 s, kernel 2 s: S = 1 / (1 + 1/2) = 2/3.
  const Roofline r = roofline(known(), DType::fp32, 1e12, 1e3, 2.0, 3.0);
  ASSERT_TRUE(r.score);
  EXPECT_NEAR(*r.score, 2.0 / 3.0, 1e-12);
}

TEST(Suite, FastPAndGeomeanSol) {
  const std::vector<SuiteEntry> e = {
      {true, 2.5, 0.5}, {true, 1.2, 0.2}, {false, 3.0, 0.9}, {true, 0.8, 0.1}, {true, 0.0, 0.4}};
  EXPECT_DOUBLE_EQ(fast_p(e, 1.0), 2.0 / 5);  // 2.5 and 1.2; the incorrect one never counts
  EXPECT_DOUBLE_EQ(fast_p(e, 1.5), 1.0 / 5);
  EXPECT_DOUBLE_EQ(fast_p(e, 2.0), 1.0 / 5);
  EXPECT_NEAR(geomean_sol(e), std::pow(0.5 * 0.2 * 0.1 * 0.4, 0.25), 1e-12);
  EXPECT_DOUBLE_EQ(fast_p({}, 1.0), 0);
  EXPECT_DOUBLE_EQ(geomean_sol({}), 0);
}

TEST(Ceilings, JsonRoundTrip) {
  Ceilings c = known();
  c.one.compute.fp32 = 0.1e12;
  c.l2_bytes = 4 << 20;
  c.all.l2.copy = 800e9;
  const Ceilings back = Ceilings::from_json(c.to_json());
  EXPECT_EQ(back.l2_bytes, 4 << 20);
  EXPECT_DOUBLE_EQ(back.all.l2.copy, 800e9);
  EXPECT_DOUBLE_EQ(back.bandwidth_bytes_s(), 100e9);
  EXPECT_DOUBLE_EQ(back.llc_bandwidth_bytes_s(), 400e9);
  EXPECT_DOUBLE_EQ(back.all.compute.bf16, 2e12);
  EXPECT_DOUBLE_EQ(back.one.compute.fp32, 0.1e12);
  EXPECT_EQ(back.llc_bytes, 32 << 20);
  EXPECT_DOUBLE_EQ(c.to_json()["bandwidth_GBs"].get<double>(), 100.0);
}

TEST(Ceilings, KeepBestTakesTheHigherOfEachFigure) {
  Ceilings busy = known(), quiet = known();
  busy.all.dram.triad = 120e9;    // higher in the busy run for this one figure
  quiet.all.compute.fp32 = 2e12;  // and in the quiet one for another
  quiet.one.llc.copy = 50e9;
  quiet.all.l2.read = 900e9;
  busy.keep_best(quiet);
  EXPECT_DOUBLE_EQ(busy.all.l2.read, 900e9);
  EXPECT_DOUBLE_EQ(busy.all.dram.triad, 120e9);
  EXPECT_DOUBLE_EQ(busy.all.compute.fp32, 2e12);
  EXPECT_DOUBLE_EQ(busy.one.llc.copy, 50e9);
  EXPECT_DOUBLE_EQ(busy.all.dram.read, 100e9);  // equal figures stay
}

}  // namespace
}  // namespace kforge
