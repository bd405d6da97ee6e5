// The scores of a set of agent runs (include/kforge/agent.hpp): KernelBench's fast_p over the
// problem instances, geometric means, the arena score; one latest run per instance.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "kforge/agent.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"

namespace kforge {
namespace {

std::optional<double> number(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number()) return std::nullopt;
  return j.at(key).get<double>();
}

AgentRunScore score_of(const RunInfo& run, const nlohmann::json& agent, int attempts) {
  AgentRunScore s;
  s.run_id = run.id;
  s.problem = agent.value("problem", "");
  s.sizes = agent.contains("sizes") ? agent.at("sizes").dump() : "{}";
  s.dtype = agent.value("dtype", "");
  s.backend = agent.value("backend", "");
  s.proposer = agent.value("proposer", "");
  s.attempts = attempts;
  if (agent.contains("final")) {
    const nlohmann::json& f = agent.at("final").value("feedback", nlohmann::json::object());
    s.correct = f.value("passed", false);
    s.speedup = number(f, "speedup");
    if (f.contains("sol")) s.sol_fraction = number(f.at("sol"), "fraction");
    s.arena = f.value("score", 0.0);
  }
  return s;
}

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return 0;
  double log_sum = 0;
  for (double x : xs) log_sum += std::log(x);
  return std::exp(log_sum / static_cast<double>(xs.size()));
}

}  // namespace

AgentScores agent_scores(const Store& store, const std::vector<std::int64_t>& run_ids) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, AgentRunScore> latest;
  std::size_t selected = 0;
  for (const RunInfo& run : store.runs()) {  // in id order: a later run replaces an earlier one
    if (!run_ids.empty() && std::find(run_ids.begin(), run_ids.end(), run.id) == run_ids.end()) continue;
    if (!run.meta.contains("agent")) {
      if (!run_ids.empty())
        throw UsageError("run " + std::to_string(run.id) + " is not a `kforge agent` run: see `kforge db list`");
      continue;
    }
    ++selected;
    const nlohmann::json agent = run.meta.at("agent");
    AgentRunScore s = score_of(run, agent, static_cast<int>(store.agent_attempts(run.id).size()));
    auto [it, fresh] = latest.try_emplace({s.problem, s.sizes, s.dtype, s.backend}, s);
    if (!fresh) {
      s.superseded = it->second.superseded + 1;
      it->second = s;
    }
  }
  if (!run_ids.empty() && selected != run_ids.size())
    throw UsageError("a run id given is not in " + store.path().string() + ": see `kforge db list`");

  AgentScores out;
  std::vector<SuiteEntry> entries;
  std::vector<double> speedups, sols;
  double arena = 0;
  for (auto& [key, s] : latest) {
    entries.push_back({s.correct, s.speedup.value_or(0), s.sol_fraction.value_or(0)});
    if (s.correct && s.speedup && *s.speedup > 0) speedups.push_back(*s.speedup);
    if (s.correct && s.sol_fraction && *s.sol_fraction > 0) sols.push_back(*s.sol_fraction);
    arena += s.arena;
    out.runs.push_back(std::move(s));
  }
  std::size_t correct = 0;
  for (const auto& e : entries) correct += e.correct ? 1 : 0;
  // fast_0 is KernelBench's share correct; fast_p for p > 0 needs a speedup over the baseline.
  out.fast_p.emplace_back(0.0, entries.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(entries.size()));
  for (double p : {1.0, 1.5, 2.0}) out.fast_p.emplace_back(p, fast_p(entries, p));
  out.geomean_speedup = geomean(speedups);
  out.geomean_sol = geomean(sols);
  out.mean_arena = entries.empty() ? 0 : arena / static_cast<double>(entries.size());
  return out;
}

nlohmann::json AgentScores::to_json() const {
  nlohmann::json rs = nlohmann::json::array();
  for (const auto& s : runs)
    rs.push_back({{"run", s.run_id}, {"problem", s.problem}, {"sizes", nlohmann::json::parse(s.sizes)},
                  {"dtype", s.dtype}, {"backend", s.backend}, {"proposer", s.proposer}, {"attempts", s.attempts},
                  {"correct", s.correct}, {"speedup", s.speedup ? nlohmann::json(*s.speedup) : nlohmann::json()},
                  {"sol_fraction", s.sol_fraction ? nlohmann::json(*s.sol_fraction) : nlohmann::json()},
                  {"arena", s.arena}, {"superseded_runs", s.superseded}});
  nlohmann::json fp = nlohmann::json::object();
  for (const auto& [p, v] : fast_p) fp[p == 0 ? "fast_0" : "fast_" + std::to_string(p).substr(0, 3)] = v;
  return {{"instances", runs.size()}, {"fast_p", fp}, {"geomean_speedup", geomean_speedup},
          {"geomean_sol", geomean_sol}, {"mean_arena", mean_arena}, {"runs", rs}};
}

}  // namespace kforge
