// A batch of `kforge agent` candidates over the ranks: each candidate is one isolated job (a
// kforge-worker under the agent's limits) handed to the first free rank, rank 0 included, so
// a rank that finishes early takes the next candidate and uneven candidates balance. The
// results come back to the caller (rank 0's agent loop) one at a time as they end; the caller
// alone journals them and answers the proposer.
#include <string>

#include "dist/rank_pool.hpp"
#include "kforge/dist.hpp"

namespace kforge::dist {

void evaluate_isolated_each(const std::vector<EvalRequest>& requests, const IsolationLimits& limits,
                            const std::function<void(std::size_t, EvalResult, const std::string&)>& done) {
  if (requests.empty()) return;
  const Session* world = current();
  // No backend on rank 0: every job runs in a worker, which makes its own.
  RankPool pool(world ? world->size() : 1, nullptr, silence_seconds());
  for (std::size_t i = 0; i < requests.size(); ++i) pool.submit(Job{i, requests[i], true, limits});
  while (pool.outstanding() > 0) {
    Completion c = pool.next();
    done(c.ticket, std::move(c.result), "rank " + std::to_string(c.rank));
  }
}

}  // namespace kforge::dist
