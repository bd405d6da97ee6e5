#pragma once
// Private to src/dist: the partition of the overlapped multi-rank GEMMs (overlap.cpp) and the
// model of one rank's timeline that chooses their split from measured rates. No MPI here, so
// the tests can check the model on its own (tests/dist/overlap_model_test.cpp).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace kforge::dist::overlap {

// Part `i` of `parts` near-equal parts of n items: [begin, begin + size).
struct Part {
  std::int64_t begin = 0, size = 0;
};
inline Part part(std::int64_t n, int parts, int i) {
  const std::int64_t b = n * i / parts, e = n * (i + 1) / parts;
  return {b, e - b};
}
// Chunk `s` of `chunks` of a part (its rows), as absolute rows.
inline Part chunk(Part p, int chunks, int s) {
  const Part c = part(p.size, chunks, s);
  return {p.begin + c.begin, c.size};
}

// A sending rank's emulated link: messages leave in the order they are sent, each occupying the
// link for bytes / bandwidth, and arrive `latency` after they left it. Times in seconds from the
// start of the run. Without a bandwidth the link adds nothing (MPI's own transfer only).
struct Link {
  double latency_s = 0, bytes_per_s = 0, free_at = 0;
  [[nodiscard]] bool emulated() const { return bytes_per_s > 0; }
  // The arrival time of a message of `bytes` handed to the link at `now`.
  double send(double now, double bytes) {
    if (!emulated()) return 0;
    free_at = std::max(now, free_at) + bytes / bytes_per_s;
    return free_at + latency_s;
  }
};

// What the model needs: the rank's GEMM rate and per-call cost, the link.
struct Rates {
  double flops_per_s = 1e10;
  double call_s = 2e-6;  // a GEMM call's fixed cost
  double latency_s = 0, bytes_per_s = 0;
};

inline double gemm_s(const Rates& r, double m, double n, double k) {
  return m <= 0 || n <= 0 ? 0 : r.call_s + 2 * m * n * k / r.flops_per_s;
}

// The overlapped form's time on one rank of a symmetric run (every block the same size), with
// `chunks` chunks per block: ag_gemm computes its own rows, then each remote chunk in arrival
// order; gemm_rs computes the other ranks' chunks first (each sent when done) and its own
// last, then adds what arrived.
inline double predicted_overlapped_s(const std::string& problem, int ranks, int chunks, double M, double N, double K,
                                     const Rates& r) {
  const double mb = M / ranks, mc = mb / chunks;
  Link link{r.latency_s, r.bytes_per_s};
  double t = 0, last_arrival = 0;
  if (problem == "ag_gemm") {
    const double nb = N / ranks;
    std::vector<double> arrivals;  // a sender's chunks, chunk-major over its peers; all senders alike
    for (int s = 0; s < chunks; ++s)
      for (int d = 1; d < ranks; ++d) arrivals.push_back(link.send(0, mc * K * 4));
    t = gemm_s(r, mb, nb, K);
    std::sort(arrivals.begin(), arrivals.end());
    for (const double a : arrivals) t = std::max(t, a) + gemm_s(r, mc, nb, K);
    return t;
  }
  const double kb = K / ranks;
  for (int d = 1; d < ranks; ++d)
    for (int s = 0; s < chunks; ++s) {
      t += gemm_s(r, mc, N, kb);
      last_arrival = std::max(last_arrival, link.send(t, mc * N * 4));
    }
  t += chunks * gemm_s(r, mc, N, kb);  // its own rows
  return std::max(t, last_arrival);
}

// The split with the smallest predicted time among 1, 2, 4, ... 64 chunks (no more chunks than
// a block has rows); ties go to fewer chunks.
inline int choose_chunks(const std::string& problem, int ranks, double M, double N, double K, const Rates& r) {
  int best = 1;
  double best_s = std::numeric_limits<double>::infinity();
  for (int c = 1; c <= 64 && c <= std::max(1.0, M / ranks); c *= 2) {
    const double s = predicted_overlapped_s(problem, ranks, c, M, N, K, r);
    if (s < best_s * (1 - 1e-9)) best_s = s, best = c;
  }
  return best;
}

}  // namespace kforge::dist::overlap
