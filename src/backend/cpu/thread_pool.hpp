#pragma once
// A fixed set of worker threads that runs a grid of blocks: blocks are handed out one at a time
// from an atomic counter, so uneven blocks balance themselves. The calling thread works too.
//
// Promise (kernels rely on it): blocks start in increasing index order, and a block starts only
// after every lower-indexed block has been claimed by a running thread. So a block may wait for
// lower-indexed ones (the chained scan's carry) without deadlock; consecutive blocks that wait
// for each other (the row barrier of a softmax row split across blocks) must be no more than
// size() of them.
//
// Launch latency: a thread that waits (a worker for the next grid, the caller for the last
// block) spins for a short while before it sleeps on a condition variable, so back-to-back
// launches (a timing loop, a tuner) do not pay a futex wake-up and a context switch each: for
// kernels of a few microseconds that wake-up was most of the time. A grid of one block runs on
// the calling thread alone. A launch ends when its last block is done, not when every worker
// has woken: blocks are claimed with tickets that carry the grid's generation, so a worker that
// wakes after its grid has ended claims nothing (before, the caller waited for every worker to
// wake and find the grid empty, which on a busy machine cost a time slice for a few-microsecond
// grid that the caller had already run alone).
//
// Race probing (verification): with start delays on, each block, once claimed, waits before it
// runs (a seeded pseudo-random time, or until the next block has finished), so the order in
// which blocks actually run and overlap changes while the claim order, and so the promise
// above, is kept.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kforge::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  [[nodiscard]] int size() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls body(block, worker) for every block in [0, blocks); returns when all are done.
  void run(std::int64_t blocks, const std::function<void(std::int64_t, int)>& body);
  // 0: blocks run as soon as they are claimed (the ordinary schedule); else the seed of the
  // start delays. Set between launches only.
  // `reverse`: the first size() blocks of a grid run in reverse order instead, each after the
  // next one has finished (the order gives way when nothing finishes for 10 ms).
  void set_start_delays(std::uint64_t seed, bool reverse = false) {
    delay_seed_ = seed;
    reverse_ = reverse;
  }

 private:
  using Body = std::function<void(std::int64_t, int)>;
  void work(int worker);
  void drain(int worker, std::uint64_t generation, const Body* body, std::int64_t blocks);
  // The next block of grid `generation`, or -1 when it has none left or another grid began.
  std::int64_t claim(std::uint64_t generation, std::int64_t blocks);
  void delay_start(std::int64_t block, std::uint64_t generation) const;

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<const Body*> body_{nullptr};
  std::atomic<std::int64_t> blocks_{0};
  // (generation mod 2^32) << 32 | the next unclaimed block: a claim is a compare-exchange that
  // fails once the grid has moved on.
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<std::uint64_t> generation_{0};  // changed (under mutex_) for each grid
  std::atomic<std::int64_t> done_blocks_{0};  // of this grid, finished
  bool stop_ = false;
  std::uint64_t delay_seed_ = 0;
  bool reverse_ = false;
  // reverse_: finished_[b] holds the generation of the last grid whose block b (< size()) finished
  std::unique_ptr<std::atomic<std::uint64_t>[]> finished_;
};

}  // namespace kforge::cpu
