// history and ceilings: what the store remembers (runs, evaluations, agent attempts) and the
// machine's measured speed limits per backend (cached per machine; measured on request).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/store.hpp"
#include "mcp/tool_common.hpp"

namespace kforge::mcp {
namespace {

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(); }

json evaluation_row(const StoredEvaluation& e) {
  return {{"id", e.id},
          {"run", e.run_id},
          {"problem", e.key.problem},
          {"kernel", e.kernel},
          {"backend", e.key.backend},
          {"sizes", e.sizes()},
          {"dtype", e.key.dtype},
          {"params", e.params()},
          {"disposition", e.disposition},
          {"error", e.error},
          {"median_s", optional_number(e.median_s)},
          {"gflops", optional_number(e.gflops)},
          {"sol_fraction", optional_number(e.sol_fraction)},
          {"baseline_median_s", optional_number(e.baseline_median_s)},
          {"finished", e.finished}};
}

json attempt_row(const AgentAttempt& a) {
  return {{"attempt", a.attempt},
          {"disposition", a.disposition},
          {"gate", a.feedback.value("gate", "")},
          {"summary", a.feedback.value("summary", "")},
          {"score", a.score},
          {"speedup", optional_number(a.speedup)},
          {"median_s", optional_number(a.median_s)},
          {"sol_fraction", optional_number(a.sol_fraction)},
          {"note", a.note},
          {"lang", a.lang},
          {"source", a.source},
          {"finished", a.finished}};
}

ToolResult history(const ToolCall& c) {
  const json& a = c.args;
  const std::filesystem::path path =
      a.contains("db") ? std::filesystem::path(a["db"].get<std::string>()) : c.options->db;
  const std::size_t limit = a.value("limit", 20);
  ToolResult r;
  r.structured = {{"db", path.string()}, {"runs", json::array()}, {"evaluations", json::array()}};
  const auto store = open_store_if_exists(path);
  if (!store) {
    r.text = fmt::format("no results database at {} yet: evaluate, bench and tune record there",
                         path.string());
    return r;
  }
  StoreQuery q;
  if (a.contains("run")) q.run_id = a["run"].get<std::int64_t>();
  q.problem = a.value("problem", std::string());
  q.disposition = a.value("disposition", std::string());
  if (q.run_id && !store->run(*q.run_id))
    throw UsageError(fmt::format("no run {} in {} (history without `run` lists the recent ones)",
                                 *q.run_id, path.string()));
  auto runs = store->runs();
  std::sort(runs.begin(), runs.end(),
            [](const RunInfo& x, const RunInfo& y) { return x.id > y.id; });
  for (const auto& run : runs) {
    if (r.structured["runs"].size() >= limit) break;
    if (!q.run_id || run.id == *q.run_id) r.structured["runs"].push_back(run.to_json());
  }
  auto es = store->evaluations(q);
  std::sort(es.begin(), es.end(),
            [](const StoredEvaluation& x, const StoredEvaluation& y) { return x.id > y.id; });
  for (std::size_t i = 0; i < es.size() && i < limit; ++i)
    r.structured["evaluations"].push_back(evaluation_row(es[i]));
  std::string text =
      fmt::format("{}: {} run(s), {} evaluation(s) shown (newest first)", path.string(),
                  r.structured["runs"].size(), r.structured["evaluations"].size());
  if (q.run_id) {
    json attempts = json::array();
    for (const auto& at : store->agent_attempts(*q.run_id)) attempts.push_back(attempt_row(at));
    if (!attempts.empty()) {
      r.structured["agent_attempts"] = attempts;
      text += fmt::format(", {} agent attempt(s)", attempts.size());
    }
  }
  r.text = text_of(text, r.structured);
  return r;
}

ToolResult ceilings_run(const ToolCall& c) {
  const auto held = in_process_measurement();
  const json& a = c.args;
  const bool measure = a.value("measure", false), remeasure = a.value("remeasure", false);
  std::vector<std::string> names;
  if (a.contains("backend"))
    names = {a["backend"].get<std::string>()};
  else
    names = backend_names();
  ToolResult r;
  r.structured["backends"] = json::array();
  std::string text;
  for (const auto& name : names) {
    json entry = {{"backend", name}};
    auto b = open_backend(name);
    entry["device"] = b->device();
    if (!b->can_run()) {
      entry["available"] = false;
      text += fmt::format("{}: cannot run here ({})\n", name, b->device());
      r.structured["backends"].push_back(entry);
      continue;
    }
    entry["available"] = true;
    const std::string cache = ceilings_cache_path(*b);
    const bool cached = std::filesystem::exists(cache);
    entry["cache_file"] = cache;
    entry["cached"] = cached;
    if (!cached && !measure && !remeasure) {
      text += fmt::format(
          "{}: not measured on this machine yet (call again with measure: true; about a minute)\n",
          name);
      r.structured["backends"].push_back(entry);
      continue;
    }
    int step = 0;
    const Ceilings ce = ceilings(
        *b, remeasure, [&](const std::string& what) { c.progress(++step, 0, name + ": " + what); });
    entry["ceilings"] = ce.to_json();
    entry["doubts"] = ce.doubts();
    text += fmt::format(
        "{} [{}]: DRAM {:.1f} GB/s, LLC {:.1f} GB/s, fp32 {:.1f} GFLOP/s, fp64 {:.1f} GFLOP/s{}\n",
        name, ce.device, ce.bandwidth_bytes_s() * 1e-9, ce.llc_bandwidth_bytes_s() * 1e-9,
        ce.flops_for(DType::fp32) * 1e-9, ce.flops_for(DType::fp64) * 1e-9,
        ce.doubts().empty() ? "" : " (some figures in doubt)");
    r.structured["backends"].push_back(entry);
  }
  r.text = text_of(text, r.structured);
  return r;
}

}  // namespace

Tool history_tool() {
  json extra = {
      {"db", {{"type", "string"}, {"description", "a results database (default: the server's)"}}},
      {"run",
       {{"type", "integer"},
        {"minimum", 1},
        {"description",
         "one run: its evaluations and, for an "
         "agent run, its attempts"}}},
      {"problem", {{"type", "string"}, {"description", "only this problem's evaluations"}}},
      {"disposition",
       {{"type", "string"}, {"description", "only evaluations with this disposition"}}},
      {"limit",
       {{"type", "integer"},
        {"minimum", 1},
        {"maximum", 10000},
        {"description",
         "at most this many "
         "runs and evaluations (default 20)"}}}};
  return {"history",
          "Results history",
          "Recent runs and evaluations from kforge's results store (SQLite; `kforge db`), newest "
          "first: tuning "
          "runs, `kforge agent` runs with their attempts, and this server's own evaluate, bench "
          "and tune calls.",
          object_schema({}, extra, {}),
          true,
          history};
}

Tool ceilings_tool() {
  json extra = {
      {"backend",
       {{"type", "string"},
        {"enum", {"cpu", "opencl", "cuda"}},
        {"description", "one backend (default: every backend of this build)"}}},
      {"measure",
       {{"type", "boolean"},
        {"description", "measure where nothing is cached yet (about a minute)"}}},
      {"remeasure",
       {{"type", "boolean"}, {"description", "measure again and keep the best of each figure"}}}};
  return {"ceilings",
          "Machine ceilings",
          "This machine's memory bandwidths (DRAM, last-level cache, L2: read, write, copy, triad) "
          "and peak "
          "operation rates (fp64, fp32, fp16, bf16, int8) per backend, as kforge measured and "
          "cached them: the "
          "roofs behind every speed-of-light fraction. Reads the cache; measures only when asked.",
          object_schema({}, extra, {}),
          false,
          ceilings_run};
}

}  // namespace kforge::mcp
