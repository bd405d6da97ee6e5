// The cpu thread pool's launch path: a launch ends when its last block is done, not when every
// worker has woken, so a worker that wakes late must claim nothing of a grid that has ended and
// never run a block of the next grid twice. Many back-to-back launches of small grids, with
// workers both spinning and asleep, each block counted.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "backend/cpu/thread_pool.hpp"

namespace kforge::cpu {
namespace {

TEST(CpuPool, EveryBlockRunsExactlyOnceAcrossBackToBackLaunches) {
  for (const int threads : {2, 3, 5}) {
    ThreadPool pool(threads);
    std::vector<std::atomic<int>> runs(64);
    std::uint64_t state = 0x9e3779b97f4a7c15ull * threads;
    for (int launch = 0; launch < 6000; ++launch) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const std::int64_t blocks = 2 + static_cast<std::int64_t>((state >> 33) % 40);
      for (auto& r : runs) r.store(0, std::memory_order_relaxed);
      pool.run(blocks, [&](std::int64_t b, int) { runs[static_cast<std::size_t>(b)].fetch_add(1); });
      for (std::int64_t b = 0; b < 64; ++b)
        ASSERT_EQ(runs[static_cast<std::size_t>(b)].load(), b < blocks ? 1 : 0)
            << "block " << b << " of " << blocks << ", launch " << launch << ", " << threads << " threads";
      // Now and then let the workers fall asleep, so the next launch wakes them late.
      if (launch % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
}

// A grid whose blocks wait for each other (a row barrier across size() blocks) still completes:
// every block claimed gets a thread, whether the workers were spinning or asleep.
TEST(CpuPool, BlocksThatWaitForEachOtherStillMeet) {
  ThreadPool pool(3);
  for (int launch = 0; launch < 200; ++launch) {
    std::atomic<int> arrived{0};
    pool.run(3, [&](std::int64_t, int) {
      arrived.fetch_add(1);
      while (arrived.load() < 3) std::this_thread::yield();
    });
    EXPECT_EQ(arrived.load(), 3);
    if (launch % 50 == 49) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Race probing's reversed schedule: the blocks held at once run last to first, so a kernel
// whose result depends on an earlier block finishing first is caught whatever the machine's
// load; blocks that wait for a lower-indexed one (a chained scan) still complete. The order gives
// way when no block finishes for 10 ms, which a heavily loaded host (17 threads on 2 cores at
// load 8) can cause by itself: so each launch may take up to three tries to come out exactly
// reversed (by chance, 1 in 17! per try).
TEST(CpuPool, TheReversedScheduleRunsTheWindowLastToFirst) {
  ThreadPool pool(17);
  pool.set_start_delays(0x1234567u, true);
  std::vector<std::int64_t> reversed(17);
  for (std::int64_t i = 0; i < 17; ++i) reversed[static_cast<std::size_t>(i)] = 16 - i;
  for (int launch = 0; launch < 3; ++launch) {
    std::vector<std::int64_t> order;
    for (int attempt = 0; attempt < 3 && order != reversed; ++attempt) {
      order.clear();
      std::mutex m;
      pool.run(17, [&](std::int64_t b, int) {
        std::lock_guard lock(m);
        order.push_back(b);
      });
      ASSERT_EQ(order.size(), 17u);
    }
    EXPECT_EQ(order, reversed) << "launch " << launch;
  }
}

TEST(CpuPool, TheReversedScheduleGivesWayToBlocksThatWaitForEarlierOnes) {
  ThreadPool pool(9);
  pool.set_start_delays(0x1234567u, true);
  std::vector<std::atomic<int>> carry(9);
  const auto t0 = std::chrono::steady_clock::now();
  pool.run(9, [&](std::int64_t b, int) {
    if (b > 0)
      while (carry[static_cast<std::size_t>(b - 1)].load() == 0) std::this_thread::yield();
    carry[static_cast<std::size_t>(b)].store(1);
  });
  for (const auto& c : carry) EXPECT_EQ(c.load(), 1);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
}

}  // namespace
}  // namespace kforge::cpu
