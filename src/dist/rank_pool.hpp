#pragma once
// Private: rank 0's evaluators, one slot per rank: its own (a thread of this process) and one
// per other rank (jobs sent over MPI). A job goes to the first free slot; a rank that stays
// silent too long while busy is taken for lost and its job goes to the next free slot.
#include <cstdint>
#include <deque>
#include <future>
#include <vector>

#include "dist/job.hpp"
#include "dist/wire.hpp"

namespace kforge::dist {

// KFORGE_RANK_SILENCE_S (default 10): seconds a busy rank may go without a heartbeat.
[[nodiscard]] double silence_seconds();

struct Completion {
  std::uint64_t ticket = 0;
  EvalResult result;
  int rank = 0;          // who evaluated it
  double seconds = 0;    // how long the evaluation took there
};

class RankPool {
 public:
  // `local`: rank 0's backend (null when every job is isolated: each worker makes its own);
  // `silence_s`: how long a busy rank may go without a heartbeat.
  RankPool(int ranks, Backend* local, double silence_s);
  ~RankPool();
  RankPool(const RankPool&) = delete;
  RankPool& operator=(const RankPool&) = delete;

  // Slots free for one more job: idle live slots less the jobs waiting for one.
  [[nodiscard]] int free_slots() const;
  // Jobs submitted and not yet returned by next().
  [[nodiscard]] int outstanding() const { return outstanding_; }
  void submit(Job job);
  // The next finished evaluation (blocks). Rethrows an evaluation's exception.
  Completion next();

 private:
  struct Slot {
    bool busy = false, lost = false;
    Job job;
    Clock::time_point last_heard;
  };
  void dispatch();
  void check_silence();
  std::optional<Completion> receive();

  Backend* local_;
  double silence_s_;
  std::vector<Slot> slots_;  // index = rank; slot 0 runs on local_future_
  std::future<EvalResult> local_future_;
  Clock::time_point local_started_;
  std::deque<Job> queue_;
  Outbox out_;
  int outstanding_ = 0;
  int handed_to_ranks_ = 0;  // jobs sent to other ranks (fault injection counts them)
};

}  // namespace kforge::dist
