#include "kforge/tune.hpp"

#include <algorithm>
#include <chrono>
#include <set>

#include "eval/energy_plan.hpp"
#include "kforge/error.hpp"
#include "kforge/rng.hpp"
#include "kforge/search.hpp"
#include "kforge/util.hpp"
#include "tune/tune_start.hpp"

namespace kforge {

std::vector<ParamValues> valid_configs(const KernelSpec& k, const Sizes& s, std::size_t limit) {
  std::vector<ParamValues> out;
  std::vector<std::size_t> idx(k.params.size(), 0);
  while (out.size() < limit) {
    ParamValues p;
    for (std::size_t i = 0; i < idx.size(); ++i) p[k.params[i].name] = k.params[i].values[idx[i]];
    if (!k.check(p, s)) out.push_back(std::move(p));
    std::size_t d = idx.size();
    while (d > 0) {
      --d;
      if (++idx[d] < k.params[d].values.size()) break;
      idx[d] = 0;
      if (d == 0) return out;
    }
    if (idx.empty()) return out;
  }
  return out;
}

std::vector<ParamValues> sample_configs(const KernelSpec& k, const Sizes& s, std::size_t count,
                                        std::uint64_t seed) {
  std::vector<ParamValues> out;
  std::set<ParamValues> seen;
  const std::uint64_t max_draws = 2000 * count + 10000;
  for (std::uint64_t draw = 0; draw < max_draws && out.size() < count; ++draw) {
    ParamValues p;
    for (std::size_t i = 0; i < k.params.size(); ++i) {
      const auto& vals = k.params[i].values;
      p[k.params[i].name] = vals[random_bits(seed, i, draw) % vals.size()];
    }
    if (seen.insert(p).second && !k.check(p, s)) out.push_back(std::move(p));
  }
  return out;
}

KernelSpec restrict_space(const KernelSpec& k, const std::string& spec) {
  KernelSpec out = k;
  if (trim(spec).empty()) return out;
  for (const std::string& item : split(spec, ',')) {
    const auto eq = item.find('=');
    const std::string name = trim(item.substr(0, eq));
    if (eq == std::string::npos || name.empty())
      throw UsageError("bad restriction '" + item + "': write NAME=V1|V2, comma-separated");
    auto p = std::find_if(out.params.begin(), out.params.end(), [&](const Param& x) { return x.name == name; });
    if (p == out.params.end()) throw UsageError("kernel " + k.name + " has no parameter '" + name + "' to restrict");
    std::vector<std::int64_t> keep;
    for (const std::string& v : split(item.substr(eq + 1), '|')) {
      std::int64_t x = 0;
      try {
        x = std::stoll(trim(v));
      } catch (const std::exception&) {
        throw UsageError("bad value '" + v + "' for " + name + ": an integer is needed");
      }
      if (std::find(p->values.begin(), p->values.end(), x) == p->values.end())
        throw UsageError("value " + std::to_string(x) + " is not one of " + name + "'s values");
      keep.push_back(x);
    }
    p->values = keep;
    if (std::find(keep.begin(), keep.end(), out.defaults[name]) == keep.end()) out.defaults[name] = keep.front();
  }
  return out;
}

TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o,
                const TuneProgress& progress) {
  TuneStart start = start_tuning(base, o);
  const Space& space = start.space;
  auto& strategy = start.strategy;
  const int total = start.total;

  check_objective(o.objective);
  const std::string energy_source = plan_energy(backend).source();
  TuneResult r;
  r.space_size = space.size();
  auto objective = [&](const Config& c) {
    EvalRequest req = base;
    req.params = space.values(c);
    req.bench = true;
    req.baseline = false;  // the caller measures the peer once, beside the winner
    const auto t0 = std::chrono::steady_clock::now();
    std::optional<EvalResult> stored = o.lookup ? o.lookup(req) : std::nullopt;  // resume
    // Energy is never mixed: a stored result whose energy is not of the kind this machine
    // gives now (measured or model) runs again.
    if (stored && o.objective != "time" && (!stored->energy || stored->energy->source != energy_source)) stored.reset();
    r.evaluations.push_back(stored ? std::move(*stored)
                            : o.isolate ? evaluate_isolated(req)
                                        : evaluate(req, backend));
    if (!stored && o.record) o.record(req, r.evaluations.back());
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const EvalResult& e = r.evaluations.back();
    Outcome out{std::nullopt, spent};
    if (e.passed()) {
      out.objective = objective_value(e, o.objective);
      if (out.objective && (r.best < 0 || *out.objective < *objective_value(r.evaluations[r.best], o.objective)))
        r.best = static_cast<int>(r.evaluations.size()) - 1;
    }
    if (progress) progress(static_cast<int>(r.evaluations.size()), total, e);
    return out;
  };
  Budget budget;
  budget.evaluations = o.budget;
  budget.seconds = o.time_limit_s;
  budget.stop = o.stop;
  std::vector<Config> first;
  if (auto d = space.config_of(base.kernel.resolve({}))) first.push_back(*d);
  const SearchTrace t = run_search(*strategy, objective, budget, first);
  r.stopped = t.stopped;
  r.strategy_report = strategy->report();
  return r;
}

}  // namespace kforge
