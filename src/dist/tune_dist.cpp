// tune() over MPI ranks: rank 0 asks the strategy for as many configurations as there are free
// ranks, hands them out, and tells the strategy, the store and the progress bar about each
// result as it arrives. What differs from tune() (src/tune/tune.cpp) is only the order.
#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>

#include "dist/rank_pool.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "tune/tune_start.hpp"

namespace kforge::dist {

std::vector<EvalResult> evaluate_all(const std::vector<EvalRequest>& requests, const std::vector<bool>& isolate,
                                     Backend& local, const std::function<void(int)>& progress) {
  std::vector<EvalResult> out(requests.size());
  if (!active()) {
    for (std::size_t i = 0; i < requests.size(); ++i) {
      out[i] = isolate[i] ? evaluate_isolated(requests[i]) : evaluate(requests[i], local);
      if (progress) progress(static_cast<int>(i + 1));
    }
    return out;
  }
  RankPool pool(current()->size(), &local, silence_seconds());
  for (std::size_t i = 0; i < requests.size(); ++i) pool.submit(Job{i, requests[i], isolate[i], {}});
  for (int done = 1; pool.outstanding() > 0; ++done) {
    Completion c = pool.next();
    out[c.ticket] = std::move(c.result);
    if (progress) progress(done);
  }
  return out;
}

TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o, const TuneProgress& progress) {
  if (!active()) return kforge::tune(base, backend, o, progress);
  TuneStart start = start_tuning(base, o);
  const Space& space = start.space;
  auto& strategy = start.strategy;
  const int total = start.total;

  TuneResult r;
  r.space_size = space.size();
  // The default configuration first, as in tune(); reserved so that no ask() repeats it.
  std::deque<Config> first;
  if (auto d = space.config_of(base.kernel.resolve({})); d && space.contains(*d)) {
    first.push_back(*d);
    strategy->reserve(*d);
  }

  RankPool pool(current()->size(), &backend, silence_seconds());
  std::map<std::uint64_t, std::pair<Config, EvalRequest>> in_flight;
  std::uint64_t next_ticket = 1;
  int handed_out = 0;
  double spent_s = 0;  // evaluation time summed over the ranks, as tune()'s time limit counts it
  r.stopped = "budget";

  // One result, from a rank or from the store: into the strategy, the result and the progress.
  auto accept = [&](const Config& c, EvalResult e, double seconds) {
    std::optional<double> objective;
    r.evaluations.push_back(std::move(e));
    const EvalResult& last = r.evaluations.back();
    if (last.passed()) {  // time, energy or edp (TuneOptions::objective)
      objective = objective_value(last, o.objective);
      if (objective && (r.best < 0 || *objective < *objective_value(r.evaluations[r.best], o.objective)))
        r.best = static_cast<int>(r.evaluations.size()) - 1;
    }
    strategy->tell(c, objective);
    spent_s += seconds;
    if (progress) progress(static_cast<int>(r.evaluations.size()), total, last);
  };
  auto may_hand_out = [&] {
    if (handed_out >= o.budget) return false;
    if (o.time_limit_s > 0 && spent_s >= o.time_limit_s) { r.stopped = "time"; return false; }
    if (o.stop && o.stop()) { r.stopped = "cancelled"; return false; }
    return true;
  };

  for (;;) {
    while (pool.free_slots() > 0 && may_hand_out()) {
      std::optional<Config> c;
      if (!first.empty()) {
        c = first.front();
        first.pop_front();
      } else {
        c = strategy->ask();
      }
      if (!c) { r.stopped = "exhausted"; break; }
      ++handed_out;
      EvalRequest req = base;
      req.params = space.values(*c);
      req.bench = true;
      req.baseline = false;  // the caller measures the peer once, beside the winner
      if (std::optional<EvalResult> stored = o.lookup ? o.lookup(req) : std::nullopt) {  // resume
        accept(*c, std::move(*stored), 0);
        continue;
      }
      const std::uint64_t ticket = next_ticket++;
      in_flight.emplace(ticket, std::make_pair(*c, req));
      pool.submit(Job{ticket, req, o.isolate, {}});
    }
    if (pool.outstanding() == 0) break;  // the budget handed out (or a stop) and every result in
    Completion done = pool.next();
    auto it = in_flight.find(done.ticket);
    if (it == in_flight.end()) continue;
    const auto [config, req] = std::move(it->second);
    in_flight.erase(it);
    if (o.record) o.record(req, done.result);
    accept(config, std::move(done.result), done.seconds);
  }
  r.strategy_report = strategy->report();
  return r;
}

}  // namespace kforge::dist
