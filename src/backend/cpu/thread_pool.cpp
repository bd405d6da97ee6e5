#include "backend/cpu/thread_pool.hpp"

namespace kforge::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this, i] { work(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
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
    std::lock_guard lock(mutex_);
    body_ = &body;
    blocks_ = blocks;
    next_.store(0);
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return busy_ == 0; });
  body_ = nullptr;
}

void ThreadPool::work(int worker) {
  std::uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    drain(worker);
    {
      std::lock_guard lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

}  // namespace kforge::cpu
