#include "backend/cpu/thread_pool.hpp"

#include <algorithm>
#include <stdexcept>
#include <chrono>
#include <thread>

namespace kforge::cpu {
namespace {

// Spins until `ready()` or about `budget` has passed; true if it became ready. Long enough to
// cover the gap between two launches of a timing loop, short enough that an idle pool gives
// its cores back almost at once.
template <class Ready>
bool spin_until(Ready ready, std::chrono::microseconds budget = std::chrono::microseconds(100)) {
  const auto end = std::chrono::steady_clock::now() + budget;
  for (int i = 1;; ++i) {
    if (ready()) return true;
    // Yield, not just pause: on a loaded machine the thread we wait for may share our core.
    std::this_thread::yield();
    if (i % 16 == 0 && std::chrono::steady_clock::now() > end) return ready();
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : finished_(std::make_unique<std::atomic<std::uint64_t>[]>(threads)) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

std::int64_t ThreadPool::claim(std::uint64_t generation, std::int64_t blocks) {
  std::uint64_t t = ticket_.load(std::memory_order_acquire);
  while (true) {
    if ((t >> 32) != (generation & 0xffffffffu) || static_cast<std::int64_t>(t & 0xffffffffu) >= blocks) return -1;
    if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      return static_cast<std::int64_t>(t & 0xffffffffu);
  }
}

void ThreadPool::drain(int worker, std::uint64_t generation, const Body* body, std::int64_t blocks) {
  for (std::int64_t b = claim(generation, blocks); b >= 0; b = claim(generation, blocks)) {
    if (delay_seed_ != 0) delay_start(b, generation);
    (*body)(b, worker);
    if (reverse_ && b < size()) finished_[b].store(generation, std::memory_order_release);
    if (done_blocks_.fetch_add(1, std::memory_order_acq_rel) + 1 == blocks) {
      std::lock_guard lock(mutex_);  // the caller may be about to sleep: wake it under the lock
      done_.notify_one();
    }
  }
}

// Shuffled: about 128 blocks per launch sleep 0..1.5 ms each (whatever the grid's size, so a
// big grid is not slowed much: 0.1 s of sleep spread over the threads at most); the others give
// up their core once. Sleeping hands the core to another thread, which is what reorders blocks
// when there are more threads than cores; delays longer than a small block's work let a later
// block of the grid start and finish before an earlier one.
//
// Reversed: the first size() blocks, all claimed at once (one per thread), run last to first:
// each waits until the next one has finished. Sleeps alone (falling with the index) left the
// order to the scheduler, and on a loaded machine a race between the two halves of a grid
// still slipped through now and then. A wait ends early when no block of the grid has finished
// for 10 ms: a block may itself wait for a lower-indexed one (a chained scan's carry), and then
// the order gives way instead of deadlocking.
void ThreadPool::delay_start(std::int64_t block, std::uint64_t generation) const {
  std::uint64_t h = (delay_seed_ ^ (static_cast<std::uint64_t>(block) * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  if (reverse_) {
    const std::int64_t window = std::min<std::int64_t>(blocks_.load(std::memory_order_relaxed), size());
    if (block + 1 >= window) return;
    using clock = std::chrono::steady_clock;
    std::int64_t done = done_blocks_.load(std::memory_order_acquire);
    auto progress = clock::now();
    while (finished_[block + 1].load(std::memory_order_acquire) != generation) {
      std::this_thread::sleep_for(std::chrono::microseconds(20 + (h >> 20) % 20));
      const std::int64_t now_done = done_blocks_.load(std::memory_order_acquire);
      if (now_done != done) done = now_done, progress = clock::now();
      else if (clock::now() - progress > std::chrono::milliseconds(10)) return;
    }
    return;
  }
  const std::uint64_t slots = static_cast<std::uint64_t>(std::max<std::int64_t>(blocks_.load(std::memory_order_relaxed), 128));
  if (h % slots < 128) std::this_thread::sleep_for(std::chrono::microseconds((h >> 20) % 1500));
  else std::this_thread::yield();
}

void ThreadPool::run(std::int64_t blocks, const std::function<void(std::int64_t, int)>& body) {
  if (blocks == 1) {  // nothing to share: waking the workers and waiting for them costs more
    body(0, 0);       // (a whole time slice when the machine is busy) than a small block
    return;
  }
  if (blocks >= (std::int64_t{1} << 32)) throw std::length_error("a grid of 2^32 blocks or more");
  std::uint64_t generation;
  {
    std::lock_guard lock(mutex_);  // a sleeping worker checks generation_ under it: no lost wake-up
    generation = generation_.load() + 1;
    body_.store(&body, std::memory_order_relaxed);
    blocks_.store(blocks, std::memory_order_relaxed);
    done_blocks_.store(0, std::memory_order_relaxed);
    ticket_.store((generation & 0xffffffffu) << 32, std::memory_order_release);
    generation_.store(generation, std::memory_order_release);
  }
  wake_.notify_all();
  drain(0, generation, &body, blocks);
  if (!spin_until([&] { return done_blocks_.load(std::memory_order_acquire) == blocks; })) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return done_blocks_.load() == blocks; });
  }
}

void ThreadPool::work(int worker) {
  std::uint64_t seen = 0;
  while (true) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    const Body* body;
    std::int64_t blocks;
    {
      std::lock_guard lock(mutex_);  // the grid's fields were written under it
      if (stop_) return;
      seen = generation_.load();
      body = body_.load(std::memory_order_relaxed);
      blocks = blocks_.load(std::memory_order_relaxed);
    }
    // If the grid `seen` has already ended, its tickets are gone and this claims nothing (the
    // body pointer is then never called); if it runs, the grid cannot end before this block.
    drain(worker, seen, body, blocks);
  }
}

}  // namespace kforge::cpu
