// How much arithmetic does this CPU hide under a memory stream?
//
// A memory-bound kernel that also computes (softmax's exp, a norm's divide, SiLU's exp and
// reciprocal) reaches the bandwidth roof only if its instructions run while the memory streams.
// This probe measures that overlap with nothing else in the way: y = f_k(x) over tensors well
// beyond the last-level cache, where f_k is a chain of k fused multiply-adds per element (eight
// independent vectors in flight, so the FMA units, not their latency, are the limit), on all cores.
// For each k it times
//   mem(k)  the kernel on the big tensors (the memory's time, if arithmetic were free, is mem(0))
//   cpu(k)  the same instructions on a slice hot in L2 (plain stores), scaled to the big tensors' size
// and prints cpu/mem = cpu(k) / mem(0), SOL = mem(0) / mem(k) and the two bounds it lies between:
// perfect overlap, mem(0) / max(mem(0), cpu(k)), and none, mem(0) / (mem(0) + cpu(k)).
// "hidden" is the fraction of the smaller of the two times that the machine overlapped:
// (mem(0) + cpu(k) - mem(k)) / min(mem(0), cpu(k)); 1 is perfect, 0 is none.
// A kernel with the same cpu/mem cannot expect a better SOL than this row: the probe is the
// simplest program with that much arithmetic per byte. CPU timings; medians over --rounds
// rounds, every k timed once per round (interleaved), spread as min..max.
//
// usage: overlap_probe [--rounds 5] [--mib SIZE_OF_ONE_TENSOR] [--nt] [--pf BYTES] [--threads T]
#include <CLI/CLI.hpp>
#include <immintrin.h>

#include "kforge/measure.hpp"
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

namespace {

typedef float vf __attribute__((vector_size(64), aligned(64)));
constexpr int kLanes = 16, kUnroll = 8, kStep = kLanes * kUnroll;

struct Options {
  int rounds = 5, threads = 0;
  long long mib = 0;  // one tensor; 0: from the last-level cache
  bool nt = false;
  long long pf = 0;  // software prefetch distance in bytes (0: the hardware's prefetchers alone)
};

void store_nt(float* p, vf v) {  // past the caches (p is 64-byte aligned)
#if defined(__AVX512F__)
  _mm512_stream_ps(p, (__m512)v);
#else
  const float* f = reinterpret_cast<const float*>(&v);
  for (int h = 0; h < kLanes; h += 8) _mm256_stream_ps(p + h, _mm256_loadu_ps(f + h));
#endif
}

// k chained FMAs on each of 8 independent vectors, [b, e) of x into y.
template <int K>
void span(const float* x, float* y, long long b, long long e, float c, float d, const Options& o) {
  const long long pf = o.pf / 4;
  for (long long j = b; j < e; j += kStep) {
    if (pf > 0)
      for (int u = 0; u < kUnroll; ++u) __builtin_prefetch(x + j + pf + u * kLanes, 0, 2);
    vf v[kUnroll];
    for (int u = 0; u < kUnroll; ++u) v[u] = *reinterpret_cast<const vf*>(x + j + u * kLanes);
    for (int i = 0; i < K; ++i)
      for (int u = 0; u < kUnroll; ++u) v[u] = v[u] * c + d;
    for (int u = 0; u < kUnroll; ++u) {
      if (o.nt) store_nt(y + j + u * kLanes, v[u]);
      else *reinterpret_cast<vf*>(y + j + u * kLanes) = v[u];
    }
  }
}

using SpanFn = void (*)(const float*, float*, long long, long long, float, float, const Options&);
template <int... K>
constexpr std::array<SpanFn, sizeof...(K)> spans(std::integer_sequence<int, K...>) {
  return {&span<K>...};
}
const std::vector<int> kChains = {0, 1, 2, 4, 8, 12, 16, 24, 32, 48, 64};
const auto kSpan = spans(std::make_integer_sequence<int, 65>{});

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds for `threads` threads, each running f_k over its share of n elements of (x, y),
// `reps` times over the same share (reps > 1: the hot-cache case).
double run(int k, const float* x, float* y, long long n, int reps, const Options& o) {
  const float c = 0.999f + 1e-7f * (float)(rand() % 3), d = 1e-3f;
  std::vector<std::thread> pool;
  const long long share = (n / o.threads) / kStep * kStep;
  const double t0 = now();
  for (int t = 0; t < o.threads; ++t)
    pool.emplace_back([&, t] {
      const long long b = t * share, e = t + 1 == o.threads ? n / kStep * kStep : b + share;
      for (int r = 0; r < reps; ++r) kSpan[k](x, y, b, e, c, d, o);
    });
  for (auto& th : pool) th.join();
  return now() - t0;
}

float* big(long long n) {  // 2 MiB pages, first touched by the threads that will use it
  const long long bytes = (n * 4 + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  auto* p = static_cast<float*>(std::aligned_alloc(2 << 20, bytes));
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"overlap_probe: how much arithmetic this CPU hides under a memory stream"};
  app.add_option("--rounds", o.rounds, "rounds (every k timed once per round)")->check(CLI::PositiveNumber);
  app.add_option("--mib", o.mib, "MiB per tensor (default: twice the last-level cache, 512 at least)");
  app.add_option("--threads", o.threads, "threads (default: all cores)");
  app.add_flag("--nt", o.nt, "non-temporal stores of y");
  app.add_option("--pf", o.pf, "software prefetch of x this many bytes ahead (0: none)");
  CLI11_PARSE(app, argc, argv);
  if (o.threads <= 0) o.threads = (int)std::max(1u, std::thread::hardware_concurrency());
  const long long llc = kforge::machine_info().llc_bytes;
  if (o.mib <= 0) o.mib = std::max(2 * llc, 512ll << 20) >> 20;
  const long long n = (o.mib << 20) / 4 / kStep * kStep;
  const long long hot = 16384 * o.threads;  // 64 KiB of x and of y per thread: hot in L2
  float* x = big(n);
  float* y = big(n);
  run(0, x, y, n, 1, o);  // first touch by the same threads
  for (long long i = 0; i < n; ++i) x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
  std::printf("overlap_probe: %d threads, x and y %lld MiB each (last-level cache %lld MiB), %s stores, "
              "prefetch %lld B, %d rounds\n",
              o.threads, o.mib, llc >> 20, o.nt ? "non-temporal" : "plain", o.pf, o.rounds);

  Options in_cache = o;  // plain stores: non-temporal ones would go to memory even here
  in_cache.nt = false;
  std::vector<std::vector<double>> mem(kChains.size()), cpu(kChains.size());
  for (int r = 0; r < o.rounds; ++r)
    for (size_t i = 0; i < kChains.size(); ++i) {
      mem[i].push_back(run(kChains[i], x, y, n, 1, o));
      const int reps = (int)std::max(1ll, n / hot / 4);
      cpu[i].push_back(run(kChains[i], x, y, hot, reps, in_cache) * (double)n / (double)(hot * reps));
    }
  const double mem0 = median(mem[0]);
  std::printf("mem(0) = %.2f ms: %.1f GB/s (read + write)\n\n", mem0 * 1e3, 8.0 * n / mem0 * 1e-9);
  std::printf("%4s %9s %9s %8s %6s %14s %8s %6s %7s\n", "k", "mem ms", "cpu ms", "cpu/mem", "SOL",
              "(min..max)", "perfect", "none", "hidden");
  for (size_t i = 0; i < kChains.size(); ++i) {
    const double m = median(mem[i]), c = median(cpu[i]);
    const auto [lo, hi] = std::minmax_element(mem[i].begin(), mem[i].end());
    const double hidden = (mem0 + c - m) / std::min(mem0, c);
    std::printf("%4d %9.2f %9.2f %8.2f %6.2f  (%.2f..%.2f) %8.2f %6.2f %7.2f\n", kChains[i], m * 1e3,
                c * 1e3, c / mem0, mem0 / m, mem0 / *hi, mem0 / *lo, mem0 / std::max(mem0, c),
                mem0 / (mem0 + c), i == 0 ? 1.0 : hidden);
  }
  std::free(x);
  std::free(y);
}
