#include "kforge/tune.hpp"

#include <set>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"

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

TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o,
                const TuneProgress& progress) {
  if (o.budget < 1) throw UsageError("tuning budget must be at least 1 evaluation");
  std::vector<ParamValues> plan;
  const ParamValues defaults = base.kernel.resolve({});
  if (!base.kernel.check(defaults, base.sizes)) plan.push_back(defaults);
  std::vector<ParamValues> more;
  if (o.strategy == "brute") more = valid_configs(base.kernel, base.sizes, o.budget + 1);
  else if (o.strategy == "random") more = sample_configs(base.kernel, base.sizes, o.budget + 1, o.seed);
  else throw UsageError("unknown strategy '" + o.strategy + "': use random or brute");
  for (auto& p : more)
    if (static_cast<int>(plan.size()) < o.budget && (plan.empty() || p != plan.front()))
      plan.push_back(std::move(p));

  TuneResult r;
  for (const ParamValues& p : plan) {
    EvalRequest req = base;
    req.params = p;
    req.bench = true;
    req.baseline = false;  // the caller measures the peer once, beside the winner
    r.evaluations.push_back(evaluate(req, backend));
    const EvalResult& e = r.evaluations.back();
    if (e.passed() && e.timing &&
        (r.best < 0 || e.timing->median_s < r.evaluations[r.best].timing->median_s))
      r.best = static_cast<int>(r.evaluations.size()) - 1;
    if (progress) progress(static_cast<int>(r.evaluations.size()), static_cast<int>(plan.size()), e);
  }
  return r;
}

}  // namespace kforge
