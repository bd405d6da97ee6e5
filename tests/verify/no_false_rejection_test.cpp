// The other half of the proof: verification never rejects a correct kernel. The library's GEMM
// (cpu and opencl, fp32, fp16 and bf16) goes through `kforge verify --thorough` at many odd
// shapes (1, primes, tile±1 of nothing in particular, skinny and flat ones) with a fresh random
// seed each; every verdict must be `passed`. Each verdict is itself many checked runs (three
// trials, determinism repeats, perturbations, fuzzed shapes), all counted below.
//
// Seeds: a fixed base (so a failure replays) unless KFORGE_NFR_SEED is set; every failure
// prints the exact command that replays it. KFORGE_NFR_ROUNDS (default 3) is the number of
// rounds over shapes x dtypes, each with new seeds: 3 rounds are 216 verdicts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;

struct Shape {
  int m, n, k;
};

// Odd shapes, all <= 200, so that a round stays cheap; the verifier fuzzes more around them.
const Shape kShapes[] = {{1, 1, 1},     {3, 5, 7},     {17, 1, 33},   {1, 97, 61},  {31, 29, 2},
                         {67, 61, 127}, {127, 3, 200}, {100, 99, 1},  {199, 37, 5}, {64, 65, 63},
                         {13, 200, 97}, {151, 149, 11}};
const char* const kDtypes[] = {"fp32", "fp16", "bf16"};

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

TEST(NoFalseRejection, LibraryGemmPassesThoroughAtOddShapesAndRandomSeeds) {
  const std::uint64_t base = static_cast<std::uint64_t>(env_int("KFORGE_NFR_SEED", 20261203));
  const int rounds = std::max(1, env_int("KFORGE_NFR_ROUNDS", 3));
  const auto t0 = std::chrono::steady_clock::now();
  int verdicts = 0, rejections = 0;
  long long runs = 0, shapes_fuzzed = 0;
  double worst_ratio = 0;
  std::string worst_case;
  std::uint64_t counter = 0;
  for (int round = 0; round < rounds; ++round)
    for (const Shape& s : kShapes)
      for (const char* dtype : kDtypes) {
        const std::uint64_t seed = mix(base + counter++) >> 16;
        // index_width runs at one fixed wide shape whatever the requested one (seconds each with
        // the library's kernel): in long runs only, once per dtype (round 0, first shape).
        const bool wide = rounds > 3 && round == 0 && &s == &kShapes[0];
        const std::string args = "verify gemm --backend cpu,opencl --threads 2 --dtype " + std::string(dtype) +
                                 " --size M=" + std::to_string(s.m) + ",N=" + std::to_string(s.n) +
                                 ",K=" + std::to_string(s.k) + " --seed " + std::to_string(seed) +
                                 " --thorough --json" + (wide ? " --index-width" : "");
        const auto r = test::kforge_cli(args);
        json doc;
        try {
          doc = json::parse(r.out);
        } catch (const std::exception& e) {
          ADD_FAILURE() << "kforge " << args << ": not JSON (" << e.what() << ")\n" << r.out << r.err;
          continue;
        }
        if (!doc.is_array()) doc = json::array({doc});
        const int rejected_before = rejections;
        for (const auto& res : doc) {
          ++verdicts;
          const std::string backend = res.value("backend", "?");
          const std::string disposition = res.value("disposition", "?");
          const json v = res.value("verify", json::object());
          runs += v.value("trials", 0);
          shapes_fuzzed += static_cast<long long>(v.value("shapes_tried", json::array()).size());
          const double ratio = v.value("max_error_over_bound", 0.0);
          if (ratio > worst_ratio) {
            worst_ratio = ratio;
            worst_case = backend + " " + dtype + " " + std::to_string(s.m) + "x" + std::to_string(s.n) +
                         "x" + std::to_string(s.k) + " seed " + std::to_string(seed) + " (" +
                         v.value("worst_distribution", std::string("?")) + " inputs)";
          }
          if (disposition != "passed") {
            ++rejections;
            ADD_FAILURE() << "false rejection on " << backend << ": " << disposition << " ("
                          << v.value("failed_check", std::string()) << ")\n  replay: kforge "
                          << args << "\n  " << res.value("error", std::string()) << "\n  failed_sizes "
                          << v.value("failed_sizes", json::object()).dump();
          }
        }
        EXPECT_EQ(r.exit_code, rejections > rejected_before ? 1 : 0) << "kforge " << args << "\n" << r.err;
      }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ no-false-rejection ] %d verdicts (cpu+opencl x fp32/fp16/bf16 x %zu shapes x %d round(s)), "
              "%lld checked kernel runs, %lld fuzzed shapes, %d false rejections, %.1f s\n",
              verdicts, std::size(kShapes), rounds, runs, shapes_fuzzed, rejections, secs);
  std::printf("[ no-false-rejection ] worst error/bound ratio among passing runs: %.3g at %s\n",
              worst_ratio, worst_case.c_str());
  EXPECT_EQ(rejections, 0);
  EXPECT_GE(verdicts, 200) << "too few verdicts to mean anything";
  EXPECT_GE(runs, 200);
  EXPECT_LE(worst_ratio, 1.0);
}

}  // namespace
}  // namespace kforge
