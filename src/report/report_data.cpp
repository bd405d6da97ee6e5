// Reads the JSON of `kforge suite`, `bench` or `tune` into one shape: roofs and points.
#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/report.hpp"

namespace kforge {
namespace {

std::string sizes_text(const nlohmann::json& s) {
  std::string out;
  if (!s.is_object()) return out;
  for (auto it = s.begin(); it != s.end(); ++it)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", it.key(), it.value().dump());
  return out;
}

bool is_result(const nlohmann::json& j) { return j.is_object() && j.contains("disposition"); }

ReportPoint point_from(const nlohmann::json& r) {
  ReportPoint p;
  p.problem = r.value("problem", "");
  p.kernel = r.value("kernel", "");
  p.backend = r.value("backend", "");
  p.dtype = r.value("dtype", "fp32");
  p.sizes = sizes_text(r.value("sizes", nlohmann::json::object()));
  p.disposition = r.value("disposition", "");
  p.correct = p.disposition == "passed";
  p.median_s = r.value("median_s", 0.0);
  p.gflops = r.value("gflops", 0.0);
  p.arithmetic_intensity = r.value("arithmetic_intensity", 0.0);
  p.sol_fraction = r.value("sol_fraction", 0.0);
  if (r.contains("roof_now")) p.sol_now = r["roof_now"].value("sol_fraction", 0.0);
  p.speedup = r.value("speedup_vs_baseline", 0.0);
  if (r.contains("sol_score") && r["sol_score"].is_number()) p.score = r["sol_score"].get<double>();
  p.bound = r.value("bound", "");
  // The kernel's name, or the problem's and the kernel's when one kernel serves several
  // problems (attention and attention.causal).
  p.label = p.kernel.empty() ? p.problem
            : p.kernel.rfind(p.problem + ".", 0) == 0 ? p.kernel
                                                        : p.problem + " [" + p.kernel + "]";
  if (p.label.find(p.backend) == std::string::npos) p.label += " (" + p.backend + ")";
  if (p.dtype != "fp32") p.label += " " + p.dtype;
  return p;
}

}  // namespace

std::vector<nlohmann::json> result_entries(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  if (doc.is_object() && doc.contains("benchmarks")) {  // suite
    for (const auto& b : doc["benchmarks"])
      if (is_result(b)) out.push_back(b);
    return out;
  }
  if (is_result(doc)) return {doc};  // one bench result
  if (doc.is_array()) {
    for (const auto& e : doc) {
      if (is_result(e)) out.push_back(e);                              // bench, several backends
      else if (e.is_object() && e.contains("best")) out.push_back(e["best"]);  // tune
    }
    if (!out.empty() || doc.empty()) return out;
  }
  throw UsageError(
      "the input is not the JSON of `kforge suite`, `kforge bench` or `kforge tune` (run one "
      "of them with --json and pass its output)");
}

RoofSet roof_set(const nlohmann::json& c) {
  RoofSet r;
  r.backend = c.value("backend", "");
  r.device = c.value("device", c.value("fingerprint", ""));
  r.dram_GBs = c.value("bandwidth_GBs", 0.0);
  r.llc_GBs = c.value("llc_bandwidth_GBs", 0.0);
  if (c.contains("all_threads")) {
    for (const char* t : {"fp64", "fp32", "fp16", "bf16", "int8"}) {
      const double v = c["all_threads"]["GFLOPs"].value(t, 0.0);
      if (v > 0) r.peaks_GFLOPs.emplace_back(t, v);
    }
  } else {
    if (c.value("fp64_GFLOPs", 0.0) > 0) r.peaks_GFLOPs.emplace_back("fp64", c["fp64_GFLOPs"]);
    if (c.value("fp32_GFLOPs", 0.0) > 0) r.peaks_GFLOPs.emplace_back("fp32", c["fp32_GFLOPs"]);
  }
  return r;
}

ReportData report_data(const nlohmann::json& doc, const nlohmann::json& ceilings) {
  ReportData d;
  for (const auto& r : result_entries(doc)) d.points.push_back(point_from(r));
  d.source = doc.is_object() && doc.contains("benchmarks") ? "suite"
             : doc.is_array() && !doc.empty() && doc[0].contains("best") ? "tune"
                                                                          : "bench";
  if (doc.is_object() && doc.contains("context")) d.context = doc["context"];
  if (doc.is_object() && doc.contains("summary")) d.summary = doc["summary"];
  auto add_roofs = [&](const nlohmann::json& list) {
    if (!list.is_array()) return;
    for (const auto& c : list) {
      RoofSet r = roof_set(c);
      bool have = false;
      for (const auto& o : d.roofs) have = have || o.backend == r.backend;
      if (!have) d.roofs.push_back(std::move(r));
    }
  };
  if (d.context.is_object() && d.context.contains("ceilings")) add_roofs(d.context["ceilings"]);
  add_roofs(ceilings);
  d.title = "kforge " + d.source + " report";
  return d;
}

}  // namespace kforge
