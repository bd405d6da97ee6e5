#include "backend/cpu/thread_pool.hpp"

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
  for (std::int64_t b = next_.fetch_add(1); b < blocks_; b = next_.fetch_add(1)) (*body_)(b, worker);
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
