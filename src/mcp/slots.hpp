#pragma once
// A counting semaphore that a waiter leaves when its call is cancelled: the server's cap on the
// calls that run kernels at once (`kforge mcp --jobs`).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kforge::mcp {

// At most n calls that run kernels at once (each may hold a worker with gigabytes of address
// space); the others wait here, and stop waiting when cancelled.
class Slots {
 public:
  explicit Slots(int n) : free_(n < 1 ? 1 : n) {}
  bool acquire(const std::atomic<bool>& cancelled) {
    std::unique_lock lock(mutex_);
    while (free_ == 0) {
      if (cancelled) return false;
      ready_.wait_for(lock, std::chrono::milliseconds(100));
    }
    --free_;
    return true;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      ++free_;
    }
    ready_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  int free_;
};

}  // namespace kforge::mcp
