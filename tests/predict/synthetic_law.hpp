#pragma once
// A known performance law over Kernel Tuner-style parameters, for tests of the models: time
// falls with threads per block up to 256 then rises, tiles help until they spill, and a flag
// costs 30%; multiplicative noise on top. A model that recovers the law orders configurations
// right on points it never saw.
#include <cmath>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/predict.hpp"

namespace kforge::test {

// Whether this build has XGBoost (the model tests skip without it).
#ifdef KFORGE_WITH_XGBOOST
inline constexpr bool kHaveXgboost = true;
#else
inline constexpr bool kHaveXgboost = false;
#endif

inline const std::vector<double> kBlockX{8, 16, 32, 64, 128}, kBlockY{1, 2, 4, 8, 16}, kTile{1, 2, 3, 4, 6, 8}, kFlag{0, 1};

inline double law_ms(double bx, double by, double tile, double flag) {
  const double threads = bx * by;
  return 1.0 + 0.4 * std::pow(std::log2(threads / 256.0), 2) + 0.15 * std::pow(tile - 4, 2) + 0.3 * flag * (1 + tile / 8);
}

inline std::string fmt_key(double bx, double by, double t, double f) {
  return std::to_string(static_cast<int>(bx)) + "," + std::to_string(static_cast<int>(by)) + "," +
         std::to_string(static_cast<int>(t)) + "," + std::to_string(static_cast<int>(f));
}

// Every configuration of the law as a Kernel Tuner cache (the recorded-space format), with
// noise `noise` (relative, uniform +-) drawn from `seed`.
inline nlohmann::json law_cache(double noise, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-noise, noise);
  nlohmann::json j{{"device_name", "Synthetic GPU"}, {"kernel_name", "law"}, {"problem_size", {1024}}, {"objective", "time"},
                   {"tune_params_keys", {"block_size_x", "block_size_y", "tile_size_x", "use_flag"}},
                   {"tune_params", {{"block_size_x", kBlockX}, {"block_size_y", kBlockY}, {"tile_size_x", kTile}, {"use_flag", kFlag}}}};
  nlohmann::json cache = nlohmann::json::object();
  for (double bx : kBlockX)
    for (double by : kBlockY)
      for (double t : kTile)
        for (double f : kFlag) {
          const std::string key = fmt_key(bx, by, t, f);
          cache[key] = {{"block_size_x", static_cast<int>(bx)}, {"block_size_y", static_cast<int>(by)},
                        {"tile_size_x", static_cast<int>(t)},   {"use_flag", static_cast<int>(f)},
                        {"time", law_ms(bx, by, t, f) * (1 + u(gen))}, {"compile_time", 100},
                        {"verification_time", 0}, {"benchmark_time", 50}};
        }
  j["cache"] = cache;
  return j;
}

}  // namespace kforge::test
