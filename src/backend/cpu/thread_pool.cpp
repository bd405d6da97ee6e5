#include "backend/cpu/thread_pool.hpp"

#include <algorithm>
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

ThreadPool::ThreadPool(int threads) {
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

void ThreadPool::drain(int worker) {
  for (std::int64_t b = next_.fetch_add(1); b < blocks_; b = next_.fetch_add(1)) {
    if (delay_seed_ != 0) delay_start(b);
    (*body_)(b, worker);
  }
}

// About 128 blocks per launch sleep 0..1.5 ms each (whatever the grid's size, so a big grid is
// not slowed much: 0.1 s of sleep spread over the threads at most); the others give up their
// core once. Sleeping hands the core to another thread, which is what reorders blocks when there
// are more threads than cores; delays longer than a small block's work let a later block of
// the grid start and finish before an earlier one.
void ThreadPool::delay_start(std::int64_t block) const {
  std::uint64_t h = (delay_seed_ ^ (static_cast<std::uint64_t>(block) * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  if (reverse_) {  // the first 128 blocks: 1.5 ms down to 0 as the index grows, plus jitter
    const std::int64_t ramp = std::min<std::int64_t>(blocks_, 128);
    if (block < ramp)
      std::this_thread::sleep_for(std::chrono::microseconds((ramp - block) * 1500 / ramp + (h >> 20) % 100));
    else std::this_thread::yield();
    return;
  }
  const std::uint64_t slots = static_cast<std::uint64_t>(std::max<std::int64_t>(blocks_, 128));
  if (h % slots < 128) std::this_thread::sleep_for(std::chrono::microseconds((h >> 20) % 1500));
  else std::this_thread::yield();
}

void ThreadPool::run(std::int64_t blocks, const std::function<void(std::int64_t, int)>& body) {
  if (blocks == 1) {  // nothing to share: waking the workers and waiting for them costs more
    body(0, 0);       // (a whole time slice when the machine is busy) than a small block
    return;
  }
  {
    std::lock_guard lock(mutex_);  // a sleeping worker checks generation_ under it: no lost wake-up
    body_ = &body;
    blocks_ = blocks;
    next_.store(0);
    busy_.store(static_cast<int>(workers_.size()));
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain(0);
  if (!spin_until([this] { return busy_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [this] { return busy_.load() == 0; });
  }
  body_ = nullptr;
}

void ThreadPool::work(int worker) {
  std::uint64_t seen = 0;
  while (true) {
    if (!spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    {
      std::lock_guard lock(mutex_);  // the grid's fields were written under it
      if (stop_) return;
      seen = generation_.load();
    }
    drain(worker);
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);  // the caller may be about to sleep: wake it under the lock
      done_.notify_one();
    }
  }
}

}  // namespace kforge::cpu
