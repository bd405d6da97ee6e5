#include "kforge/search.hpp"

#include "kforge/error.hpp"

namespace kforge {

int SearchTrace::steps_to_within(double optimum, double fraction) const {
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].best <= optimum * (1 + fraction)) return static_cast<int>(i) + 1;
  return -1;
}

SearchTrace run_search(Strategy& s, const Objective& f, const Budget& b, const std::vector<Config>& first,
                       const SearchProgress& progress) {
  if (b.evaluations < 1) throw UsageError("the budget must allow at least 1 evaluation");
  SearchTrace t;
  auto reached = [&] { return b.optimum && t.best >= 0 && t.steps[t.best].objective <= *b.optimum * (1 + b.within); };
  auto out_of_time = [&] { return b.seconds > 0 && t.spent_s >= b.seconds; };
  std::size_t next_first = 0;
  t.stopped = "budget";
  while (static_cast<int>(t.steps.size()) < b.evaluations) {
    if (reached()) { t.stopped = "target"; break; }
    if (out_of_time()) { t.stopped = "time"; break; }
    if (b.stop && b.stop()) { t.stopped = "cancelled"; break; }
    std::optional<Config> c;
    while (next_first < first.size() && !c) {
      const Config& x = first[next_first++];
      bool seen = false;
      for (const Step& st : t.steps) seen |= st.config == x;
      if (!seen && s.space().contains(x)) c = x;
    }
    if (!c) c = s.ask();
    if (!c) { t.stopped = "exhausted"; break; }
    const Outcome o = f(*c);
    s.tell(*c, o.objective);
    Step st{*c, o.objective, o.cost_s,
            t.best >= 0 ? t.steps[t.best].best : std::numeric_limits<double>::infinity()};
    if (o.objective && (t.best < 0 || *o.objective < *t.steps[t.best].objective)) {
      st.best = *o.objective;
      t.best = static_cast<int>(t.steps.size());
    }
    t.spent_s += o.cost_s;
    t.steps.push_back(std::move(st));
    if (progress) progress(t);
  }
  if (t.stopped == "budget" && reached()) t.stopped = "target";
  return t;
}

}  // namespace kforge
