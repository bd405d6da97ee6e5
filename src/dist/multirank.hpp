#pragma once
// Private to src/dist: the driver shared by the overlapped multi-rank problems that are built on
// a library problem's instance and reference (moe_dist on moe_grouped_gemm, gnn_dist on
// gnn_aggregate). Rank 0 broadcasts a small command (sizes, seed, trial, form); every rank
// builds the same instance from the seed (no input is broadcast), runs its part, and rank 0
// gathers the output rows, the timings and the exact transfer counts, then verifies the output
// with the problem's own double reference and compare(), and the counts against what it
// computes on its own from the instance.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "dist/overlap_model.hpp"
#include "dist/wire.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "kforge/verify.hpp"

namespace kforge::dist::multirank {

// What rank 0 asks of every rank for one run (broadcast as bytes).
struct Command {
  int run = 0;        // 0: leave the loop
  int form = 0;       // 0: the baseline (communicate, then compute), 1: overlapped
  int chunks = 1;     // overlapped form: chunks per peer
  int gather = 0;     // send the output to rank 0
  int trial = 0, distribution = 0;
  std::uint64_t seed = 0;
  std::int64_t sizes[8] = {};  // in the order of the problem's size_names()
  double link_latency_s = 0, link_bytes_per_s = 0;
  int fault = 0;      // 1: drop_chunk (rank 0's overlapped form skips a piece of work)
};

// One rank's part of one run.
struct RankOutput {
  std::vector<float> rows;            // this rank's output rows (part(rows, ranks, rank) x cols)
  std::vector<std::int64_t> counts;   // exact transfer counts, App::count_names() order
  double total_s = 0, compute_s = 0;  // from the start barrier; compute: GEMMs, sums, packing
};

// A problem distributed over ranks. Its output is row-partitioned: rank r owns rows
// overlap::part(output_rows, ranks, r), each of output_cols floats.
class App {
 public:
  virtual ~App() = default;
  [[nodiscard]] virtual std::string name() const = 0;                 // "moe_dist"
  [[nodiscard]] virtual std::shared_ptr<Problem> problem() const = 0;  // the single-rank problem
  [[nodiscard]] virtual std::string baseline_name() const = 0;        // "alltoallv"
  [[nodiscard]] virtual std::string overlapped_name() const = 0;      // "one_sided"
  [[nodiscard]] virtual Scalars fixed_scalars(int trial) const { (void)trial; return {}; }
  [[nodiscard]] virtual std::vector<int> trials() const = 0;          // verified trials
  [[nodiscard]] virtual int timed_trial() const = 0;
  [[nodiscard]] virtual std::vector<Sizes> odd_shapes(int ranks) const = 0;
  virtual void check(const Sizes& s) const = 0;  // limits of the distributed form (UsageError)
  [[nodiscard]] virtual std::int64_t output_rows(const Sizes& s) const = 0;
  [[nodiscard]] virtual std::int64_t output_cols(const Sizes& s) const = 0;
  [[nodiscard]] virtual std::vector<std::string> count_names() const = 0;
  // The counts every rank must report, worked out from the instance alone (per rank).
  [[nodiscard]] virtual std::vector<std::vector<std::int64_t>> expected_counts(const Instance& in, int ranks) const = 0;
  // The same for one form (0 baseline, 1 overlapped), where the forms move different amounts.
  [[nodiscard]] virtual std::vector<std::vector<std::int64_t>> expected_counts_of_form(const Instance& in, int ranks,
                                                                                     int form) const {
    (void)form;
    return expected_counts(in, ranks);
  }
  // Facts about the instance that put the counts in proportion (e.g. all routed pairs).
  [[nodiscard]] virtual nlohmann::json count_context(const Instance& in, int ranks) const = 0;
  // This rank's part of one run, collective over MPI_COMM_WORLD (ranks == 1: no MPI calls).
  [[nodiscard]] virtual RankOutput run(const Command& c, const Instance& in, int rank, int ranks) const = 0;
  // The gathered output (output_rows x output_cols) as the problem's out and inout tensors, for
  // compare(); may adjust `ref` (a problem with alternative answers). Default: the one output.
  virtual void outputs(const Instance& in, const std::vector<float>& rows, KernelOutput& got,
                       std::vector<std::vector<double>>& ref) const {
    (void)in, (void)ref;
    got.tensors = {std::vector<double>(rows.begin(), rows.end())};
    got.unwritten = {std::vector<bool>(rows.size(), false)};
  }
};

// Rank 0 (run_overlap) and every other rank (follow_overlap) for one App.
[[nodiscard]] OverlapResult lead(const App& app, const OverlapOptions& o);
void follow(const App& app, const OverlapOptions& o);

// ---- helpers for the apps' rank code ------------------------------------------------------

[[nodiscard]] inline bool mpi_on() {
  int on = 0;
  MPI_Initialized(&on);
  return on != 0;
}
// An MPI call that failed (the world's error handler returns codes): a clear error.
inline void mpi_check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}
[[nodiscard]] inline double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
// Until `at` seconds after t0 (an emulated arrival): sleeps most of the way, then spins.
inline void wait_until(Clock::time_point t0, double at) {
  for (double left; (left = at - seconds(t0)) > 0;)
    if (left > 100e-6) std::this_thread::sleep_for(std::chrono::duration<double>(left - 50e-6));
}
// A rank waiting on its peers in a polling loop: a few yields, then sleeps that grow to 200 us.
// Ranks may share cores (--oversubscribe, a loaded host): a rank that spins takes the core from
// the rank whose data it waits for.
class Idle {
 public:
  void reset() { polls_ = 0; }
  void wait() {
    if (++polls_ <= 16) return std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(200, 10 * (polls_ - 16))));
  }

 private:
  int polls_ = 0;
};

// The rank that owns item i of n split into `parts` near-equal parts (overlap::part's inverse).
[[nodiscard]] inline int owner_of(std::int64_t i, std::int64_t n, int parts) {
  int r = static_cast<int>((i * parts) / std::max<std::int64_t>(n, 1));
  while (r > 0 && overlap::part(n, parts, r).begin > i) --r;
  while (r + 1 < parts && overlap::part(n, parts, r + 1).begin <= i) ++r;
  return r;
}

}  // namespace kforge::dist::multirank
