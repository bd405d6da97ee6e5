// The verification a stored verdict had, and the rule for reusing it: a verdict answers a
// request only if it was verified at least as strongly (docs/verification.md, "Reusing a
// stored verdict"). Stronger means: thorough over quick, more trials, a superset of the input
// distributions, at least as many fuzzed shapes and determinism repeats, bitwise repeats over
// bound-only repeats, the index_width check over none, a ThreadSanitizer run over none, and the same fixed scalars (a verdict at
// other fixed scalars verified another instance: neither is stronger).
#include <algorithm>

#include <fmt/format.h>

#include "kforge/store.hpp"

namespace kforge {

nlohmann::json verification_level(const EvalRequest& req) {
  const VerifyOptions& v = req.verify;
  std::vector<std::string> dists;
  for (Distribution d : v.distributions) dists.emplace_back(distribution_name(d));
  std::sort(dists.begin(), dists.end());
  dists.erase(std::unique(dists.begin(), dists.end()), dists.end());
  // The thorough-only checks count as not run in a quick verification, whatever they were set to.
  return {{"thorough", v.thorough},
          {"trials", v.trial_count()},
          {"distributions", dists},
          {"fuzz_shapes", v.thorough ? v.fuzz_shapes : 0},
          {"determinism_runs", v.thorough ? v.determinism_runs : 0},
          {"bitwise_repeats", v.bitwise_repeats},
          {"index_width", v.thorough && v.index_width},
          {"tsan", v.thorough && v.tsan && req.backend == "cpu"},
          {"scalars", req.scalars}};
}

std::string verification_shortfall(const nlohmann::json& stored, const nlohmann::json& wanted) {
  if (!stored.is_object() || stored.empty())
    return "its verification is unknown (stored before kforge kept it, or imported)";
  const auto flag = [](const nlohmann::json& j, const char* name) { return j.value(name, false); };
  const auto count = [](const nlohmann::json& j, const char* name) { return j.value(name, 0); };
  if (flag(wanted, "thorough") && !flag(stored, "thorough")) return "it was verified quickly; thorough is wanted";
  for (const char* n : {"trials", "fuzz_shapes", "determinism_runs"})
    if (count(stored, n) < count(wanted, n))
      return fmt::format("it was verified with {} {}; {} are wanted", count(stored, n), n, count(wanted, n));
  const auto had = stored.value("distributions", std::vector<std::string>{});
  for (const auto& d : wanted.value("distributions", std::vector<std::string>{}))
    if (std::find(had.begin(), had.end(), d) == had.end())
      return "it was verified without the " + d + " distribution";
  if (flag(wanted, "bitwise_repeats") && !flag(stored, "bitwise_repeats"))
    return "its repeats were not compared bit for bit";
  if (flag(wanted, "index_width") && !flag(stored, "index_width"))
    return "it was verified without the index_width check";
  if (flag(wanted, "tsan") && !flag(stored, "tsan")) return "it was verified without ThreadSanitizer";
  const auto scalars = [](const nlohmann::json& j) { return j.value("scalars", nlohmann::json::object()); };
  if (scalars(stored) != scalars(wanted))
    return fmt::format("it was verified with the scalars {}; {} are wanted", scalars(stored).dump(),
                       scalars(wanted).dump());
  return {};
}

}  // namespace kforge
