// The cpu backend's hooks for verification: the floating-point control state a kernel leaves
// changed is reported and put back (the `fp_environment` check), and the race-probing
// schedules (more threads than cores, shuffled block starts) keep the thread pool's promise:
// every block runs once, and a block that waits for the one before it never deadlocks.
#include <gtest/gtest.h>

#include <xmmintrin.h>

#include <string>
#include <vector>

#include "kforge/backend.hpp"

namespace kforge {
namespace {

constexpr const char* kSetsFtz = R"(
#include <xmmintrin.h>
static void body(const kf_ctx&, float* X) { _mm_setcsr(_mm_getcsr() | 0x8040); X[0] = 1; }
KF_KERNEL(probe, body))";

constexpr const char* kRestoresFtz = R"(
#include <xmmintrin.h>
static void body(const kf_ctx&, float* X) {
  const unsigned saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040);
  X[0] = 1;
  _mm_setcsr(saved);
}
KF_KERNEL(probe, body))";

// Block b waits until block b-1 has finished (a chained carry), then counts itself and records
// the order in which blocks finished.
constexpr const char* kChain = R"(
#include <thread>
static void body(const kf_ctx& c, int* runs, int* order, int* done) {
  const long long b = c.block_idx.x;
  if (b > 0)
    while (!__atomic_load_n(&done[b - 1], __ATOMIC_ACQUIRE)) std::this_thread::yield();
  __atomic_fetch_add(&runs[b], 1, __ATOMIC_RELAXED);
  order[b] = c.workers;
  __atomic_store_n(&done[b], 1, __ATOMIC_RELEASE);
}
KF_KERNEL(probe, body))";

double run_one(Backend& b, Module& m, std::int64_t blocks, std::vector<Buffer*> bufs) {
  std::vector<Arg> args;
  for (Buffer* x : bufs) args.push_back(Arg::buf(*x));
  LaunchGeometry g;
  g.grid.x = blocks;
  return b.run(m, g, args);
}

TEST(CpuFpEnvironment, AChangedControlWordIsReportedAndPutBack) {
  auto b = make_backend("cpu", {.threads = 2});
  auto x = b->alloc(64);
  const unsigned before = _mm_getcsr();
  auto bad = b->compile(kSetsFtz, "probe", {});
  for (std::int64_t blocks : {1, 7}) {  // one block runs on the calling thread, more on the pool too
    run_one(*b, *bad, blocks, {x.get()});
    const std::string change = b->launch_fp_environment_change();
    EXPECT_NE(change.find("flush-to-zero"), std::string::npos) << change;
    EXPECT_NE(change.find("denormals-are-zero"), std::string::npos) << change;
    EXPECT_EQ(_mm_getcsr() & ~0x3fu, before & ~0x3fu) << "the calling thread's MXCSR was not restored";
  }
  auto good = b->compile(kRestoresFtz, "probe", {});
  run_one(*b, *good, 7, {x.get()});
  EXPECT_EQ(b->launch_fp_environment_change(), "");
  // A kernel that restores it, after one that did not: the workers were put back too.
  volatile float tiny = 1e-40f;
  EXPECT_NE(tiny * 1.0f, 0.0f) << "flush-to-zero still on in this thread";
}

TEST(CpuSchedule, VariantsRunEveryBlockOnceWithoutDeadlock) {
  auto b = make_backend("cpu", {.threads = 2});
  auto m = b->compile(kChain, "probe", {});
  constexpr int kBlocks = 64;  // above the 2n+1 and 4n+3 threads of the variants
  for (int variant = 0; variant <= 4; ++variant) {
    const std::string what = b->set_schedule(variant, 42);
    EXPECT_FALSE(what.empty());
    std::vector<int> zeros(kBlocks, 0);
    auto runs = b->alloc(sizeof(int) * kBlocks), order = b->alloc(sizeof(int) * kBlocks),
         done = b->alloc(sizeof(int) * kBlocks);
    for (Buffer* x : {runs.get(), order.get(), done.get()}) b->write(*x, zeros.data(), sizeof(int) * kBlocks);
    run_one(*b, *m, kBlocks, {runs.get(), order.get(), done.get()});
    std::vector<int> got(kBlocks), workers(kBlocks);
    b->read(*runs, got.data(), sizeof(int) * kBlocks);
    b->read(*order, workers.data(), sizeof(int) * kBlocks);
    for (int i = 0; i < kBlocks; ++i) ASSERT_EQ(got[i], 1) << "block " << i << " under " << what;
    // Never fewer threads than the ordinary schedule; more than it in variants 1, 3 and 4.
    EXPECT_GE(workers[0], 2) << what;
    if (variant == 1 || variant == 3) EXPECT_GT(workers[0], 2) << what;
  }
  EXPECT_EQ(b->set_schedule(0, 0), "the ordinary schedule");
  EXPECT_NE(b->device().find("(2 threads)"), std::string::npos) << b->device();
}

}  // namespace
}  // namespace kforge
