// `kforge bench --compare A.json B.json`: Google Benchmark's compare.py idea for kforge's
// results; the rank test lives in src/measure/stats.cpp.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common.hpp"
#include "cli/compare.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/report.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {
namespace {

std::string key_of(const nlohmann::json& r) {
  return r.value("problem", "") + "|" + r.value("kernel", "") + "|" + r.value("backend", "") +
         "|" + r.value("sizes", nlohmann::json::object()).dump() + "|" + r.value("dtype", "");
}

std::vector<nlohmann::json> load(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + " is not JSON (" + e.what() + "); pass the output of `kforge bench --json`");
  }
  std::vector<nlohmann::json> out;
  for (auto& r : result_entries(doc))
    if (r.contains("samples") && !r["samples"].empty()) out.push_back(std::move(r));
  if (out.empty()) throw UsageError(path + " holds no timed result (bench with --json records samples)");
  return out;
}

}  // namespace

int compare_result_files(const std::string& a_path, const std::string& b_path, bool json) {
  const auto a = load(a_path), b = load(b_path);
  nlohmann::json doc = nlohmann::json::array();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const nlohmann::json* match = nullptr;
    for (const auto& r : b)
      if (key_of(r) == key_of(a[i])) match = &r;
    if (!match && a.size() == b.size()) match = &b[i];  // different kernels: pair by position
    if (!match) continue;
    const auto sa = a[i]["samples"].get<std::vector<double>>();
    const auto sb = (*match)["samples"].get<std::vector<double>>();
    const SampleComparison c = compare_samples(sa, sb);
    doc.push_back({{"a", {{"kernel", a[i].value("kernel", "")}, {"backend", a[i].value("backend", "")},
                          {"median_s", median_of(sa)}, {"repetitions", sa.size()}}},
                   {"b", {{"kernel", match->value("kernel", "")}, {"backend", match->value("backend", "")},
                          {"median_s", median_of(sb)}, {"repetitions", sb.size()}}},
                   {"ratio_b_over_a", c.ratio},
                   {"u", c.test.u},
                   {"z", c.test.z},
                   {"p_value", c.test.p_value},
                   {"alpha", 0.05},
                   {"differ", c.differ},
                   {"enough_samples", c.enough_samples},
                   {"verdict", c.verdict()}});
  }
  if (doc.empty()) throw UsageError("no result of " + a_path + " matches one of " + b_path);
  if (json) {
    fmt::print("{}\n", doc.dump(2));
    return kExitPassed;
  }
  fmt::print("{:<28} {:>11} {:>11} {:>8} {:>9}  {}\n", "result (A -> B)", "A ms", "B ms", "B/A",
             "p-value", "verdict (Mann-Whitney U, alpha 0.05)");
  for (const auto& c : doc) {
    const std::string name = c["a"]["kernel"].get<std::string>() + " " +
                             c["a"]["backend"].get<std::string>();
    fmt::print("{:<28} {:>11.4f} {:>11.4f} {:>8.3f} {:>9.2g}  {}{}\n", name,
               c["a"]["median_s"].get<double>() * 1e3, c["b"]["median_s"].get<double>() * 1e3,
               c["ratio_b_over_a"].get<double>(), c["p_value"].get<double>(),
               c["verdict"].get<std::string>(),
               c["enough_samples"].get<bool>() ? "" : " (fewer than 9 samples: little power)");
  }
  return kExitPassed;
}

}  // namespace kforge::cli
