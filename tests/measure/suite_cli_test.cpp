// `kforge suite --json` end to end on small sizes: a Google-Benchmark-shaped document (context,
// benchmarks, summary) with every field a report or a comparison needs; then `kforge report`
// on it, and `kforge bench --compare` of a result with itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
#include "test_util.hpp"

namespace kforge::test {
namespace {

const std::string kCli = KFORGE_CLI_PATH;
// gemm only: the other problems run at their default sizes, which are sized for benchmarks.
const std::string kSmall = " --backend cpu --problem gemm --size M=96,N=80,K=72 --trials 1 --repetitions 5 ";

TEST(SuiteCli, JsonHasContextBenchmarksAndSummary) {
  const CommandResult r = run_command(kCli + " suite" + kSmall + "--json");
  ASSERT_LE(r.exit_code, 1) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& c = doc.at("context");
  for (const char* k : {"date", "host_name", "cpu_model", "num_cpus", "caches", "ceilings", "measure"})
    EXPECT_TRUE(c.contains(k)) << k;
  ASSERT_FALSE(c["ceilings"].empty());
  EXPECT_GT(c["ceilings"][0]["bandwidth_GBs"].get<double>(), 0);
  const auto& b = doc.at("benchmarks");
  ASSERT_EQ(b.size(), 1u);  // one problem (gemm) on one backend
  for (const char* k : {"name", "run_type", "iterations", "real_time", "time_unit", "problem",
                        "kernel", "backend", "disposition", "correct", "median_s", "stdev_s",
                        "samples", "outliers", "stop_reason", "gflops", "sol_fraction", "bound",
                        "arithmetic_intensity", "speedup_vs_baseline"})
    EXPECT_TRUE(b[0].contains(k)) << k;
  EXPECT_EQ(b[0]["name"], "gemm/cpu/K=72,M=96,N=80/fp32");
  EXPECT_EQ(b[0]["repetitions"], 5);
  EXPECT_EQ(b[0]["stop_reason"], "fixed count of 5");
  const auto& s = doc.at("summary");
  for (const char* k : {"entries", "correct", "fast_1.0", "fast_1.5", "fast_2.0", "geomean_sol_fraction"})
    EXPECT_TRUE(s.contains(k)) << k;
  EXPECT_EQ(s["entries"], 1);

  const auto dir = std::filesystem::temp_directory_path() / "kforge-suite-cli-test";
  std::filesystem::create_directories(dir);
  const auto input = dir / "suite.json";
  std::ofstream(input) << r.out;
  const CommandResult rep = run_command(kCli + " report --input " + input.string() + " --out " + dir.string());
  EXPECT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html"));

  const CommandResult cmp = run_command(kCli + " bench --compare " + input.string() + " " + input.string() + " --json");
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  const auto cj = nlohmann::json::parse(cmp.out);
  ASSERT_EQ(cj.size(), 1u);
  EXPECT_FALSE(cj[0]["differ"].get<bool>());  // the same samples never differ
  EXPECT_DOUBLE_EQ(cj[0]["ratio_b_over_a"].get<double>(), 1.0);
}

TEST(SuiteCli, CsvHasAHeaderAndOneRowPerEntry) {
  const CommandResult r = run_command(kCli + " suite" + kSmall + "--csv");
  ASSERT_LE(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out.rfind("name,problem,kernel,backend", 0), 0u);
  int lines = 0;
  for (char ch : r.out) lines += ch == '\n';
  EXPECT_EQ(lines, 2);
}

// --roof-now: a second speed of light against the memory roof measured next to the timing, at
// the level the data sits in: two 33 MB tensors, DRAM with a 32 MiB L3, the LLC with a 260 MiB
// one (the cached ceilings, measured by the run itself, say which).
TEST(BenchCli, RoofNowMeasuresTheRoofNextToTheKernel) {
  const CommandResult r = run_command(kCli + " bench activation.relu --backend cpu --size M=2051,N=4099 "
                                      "--quick --trials 1 --repetitions 5 --no-baseline --roof-now --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  const auto& b = doc.is_array() ? doc[0] : doc;
  ASSERT_TRUE(b.contains("roof_now")) << r.out.substr(0, 2000);
  const auto& now = b["roof_now"];
  const Bandwidth bw = Bandwidth::from_json(now.at("GBs"));
  for (double f : {bw.read, bw.write, bw.copy, bw.triad}) EXPECT_GT(f, 1e8);
  EXPECT_EQ(now["bound"], "memory");
  EXPECT_GE(now["before_after_ratio"].get<double>(), 1.0);
  const double median = b["median_s"], bytes = b["gbytes_s"].get<double>() * 1e9 * median;
  const auto backend = make_backend("cpu");
  const std::string level = level_name(ceilings(*backend).memory_level(bytes, /*hot=*/true));
  EXPECT_EQ(now["memory_roof"].get<std::string>().rfind(level, 0), 0u) << level;
  const double t_sol = now["t_sol_s"];
  EXPECT_GE(t_sol, bytes / bw.best() * (1 - 1e-9));  // no faster than the best stream now
  EXPECT_NEAR(now["sol_fraction"].get<double>(), t_sol / median, 1e-9);
  EXPECT_EQ(b["memory_roof"].get<std::string>().rfind(level, 0), 0u) << level;
}

TEST(SuiteCli, HelpDocumentsColdAndHot) {
  const CommandResult r = run_command(kCli + " bench --help");
  EXPECT_NE(r.out.find("--cold"), std::string::npos);
  EXPECT_NE(r.out.find("Default: hot"), std::string::npos);
  EXPECT_NE(r.out.find("--repetitions"), std::string::npos);
  EXPECT_NE(r.out.find("--compare"), std::string::npos);
  EXPECT_NE(r.out.find("--roof-now"), std::string::npos);
}

}  // namespace
}  // namespace kforge::test
