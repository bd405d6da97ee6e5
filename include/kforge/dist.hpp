#pragma once
// Distributed tuning over MPI ranks: rank 0 owns the search (the strategy's ask/tell) and the
// results store; every rank, rank 0 included, evaluates configurations through the one `eval`
// path (evaluate, or evaluate_isolated in a kforge-worker). Rank 0 hands a configuration to
// each rank as it becomes free and reassigns the evaluation of a rank that went silent.
//
// Started without mpirun (or built without MPI) there is one rank and nothing changes.
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/tune.hpp"

namespace kforge::dist {

// The MPI world of this process. MPI is initialized only when mpirun (or another PMI launcher)
// started the process, so a plain `kforge ...` never touches MPI.
class Session {
 public:
  Session(int& argc, char**& argv);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  [[nodiscard]] int rank() const { return rank_; }
  [[nodiscard]] int size() const { return size_; }
  // Started by mpirun (or another PMI launcher), even as a world of one rank.
  [[nodiscard]] bool launched() const { return mpi_; }

  // Ranks other than 0: evaluate what rank 0 sends until it says stop. Returns the exit code.
  int serve();
  // Rank 0, at the end of the command: tells the other ranks to stop, then finalizes MPI.
  // After a rank was lost OpenMPI 4.1 cannot finalize (MPI_Finalize waits for the dead rank),
  // so the survivors then flush and leave without it. Returns `code`, or does not return.
  int finish(int code);

 private:
  int rank_ = 0, size_ = 1;
  bool mpi_ = false, finished_ = false;
};

// The session of this process (null before main made one): tune() asks it for the world.
[[nodiscard]] Session* current();
// More than one rank to evaluate on.
[[nodiscard]] bool active();

// tune() (kforge/tune.hpp) spread over the ranks: the same strategy, budget, store hooks and
// result. Evaluations complete in any order; a strategy whose proposals do not depend on the
// objectives (brute, random) evaluates exactly the configurations a one-rank run evaluates.
// Set KFORGE_RANK_SILENCE_S (default 10) to the seconds after which a busy rank that sent no
// heartbeat is taken for dead and its evaluation handed to another rank.
[[nodiscard]] TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o,
                              const TuneProgress& progress = {});

// Independent evaluations (a suite's problems) spread over the ranks, each through the one eval
// path (`isolate[i]`: in a kforge-worker, as a problem file's code must be); results in the
// order of `requests`. One rank: evaluated one after the other, as without MPI. Ranks on one
// host time their kernels at the same time: give each --threads 1, or one rank per node.
[[nodiscard]] std::vector<EvalResult> evaluate_all(const std::vector<EvalRequest>& requests,
                                                   const std::vector<bool>& isolate, Backend& local,
                                                   const std::function<void(int done)>& progress = {});

// A batch of untrusted candidates (`kforge agent` under mpirun) spread over the ranks: each
// request is evaluated in a kforge-worker under `limits`, exactly as evaluate_isolated() does,
// on the first rank that is free (rank 0 too), one evaluation per rank at a time; a crash or a
// hang is that candidate's verdict, never a rank's death. `done(i, result, where)` is called on
// this thread as each evaluation ends (any order; `i` indexes `requests`; `where` is "rank R").
// A rank silent for KFORGE_RANK_SILENCE_S while busy is taken for lost and its candidate goes to
// another rank.
// One rank (or no MPI): evaluated one after the other.
void evaluate_isolated_each(
    const std::vector<EvalRequest>& requests, const IsolationLimits& limits,
    const std::function<void(std::size_t i, EvalResult result, const std::string& where)>& done);

// Overlapped multi-rank GEMMs (docs/overlap.md), collective over every rank of the session:
//   ag_gemm  C[:, cols_r] = alpha * allgather(A row blocks) * B[:, cols_r] + beta * C[:, cols_r]
//   gemm_rs  C[rows_r, :] = alpha * reduce_scatter(A[:, k_r] * B[k_r, :]) + beta * C[rows_r, :]
// each in two forms: serial (all communication, then the compute) and overlapped (blocks split
// into `chunks` row chunks, each computed as it arrives, or sent as soon as it is computed).
// The transfers can go through an emulated link (a latency and a bandwidth per sending rank,
// applied on top of MPI's own transfer; ranks on one host), stated as such in the result.
struct OverlapOptions {
  std::string problem = "ag_gemm";  // or "gemm_rs"
  Sizes sizes;                      // M, N, K of the whole GEMM
  int chunks = 0;                   // row chunks per block; 0: chosen from the measured rates
  double link_latency_s = 5e-6;     // emulated link: per message
  // emulated link per sending rank; 0: MPI's own transfers only. The default gives a CPU rank
  // (~25 GFLOP/s) the bytes per FLOP of an NVLink GPU (450 GB/s over ~50 TFLOP/s: 0.009).
  double link_bytes_per_s = 0.25e9;
  int rounds = 3;                   // timed rounds, serial and overlapped in turn
  int trials = 2;                   // verification: trials per distribution
  std::uint64_t seed = 0;
  std::string fault;                // tests only: "drop_chunk" makes the overlapped form skip one
  [[nodiscard]] nlohmann::json to_json() const;
  static OverlapOptions from_json(const nlohmann::json& j);
};

struct OverlapForm {
  std::string name;              // "serial", "overlapped"
  int chunks = 1;
  double time_s = 0;             // median over rounds of the slowest rank's time
  double compute_s = 0;          // median of the slowest rank's compute (GEMM and sums)
  double exposed_s = 0;          // median of the largest time - compute over ranks
  std::vector<double> times_s;   // per round
};

struct OverlapResult {
  nlohmann::json options;
  int ranks = 1;
  bool verified = false;
  std::string failure;            // the first failed verification, in words
  int runs_checked = 0;           // verification runs compared with the reference (both forms)
  double worst_bound_ratio = 0;
  std::vector<Sizes> shapes;      // the shapes verified
  std::string link;               // the link, in words ("emulated: ...", or "MPI shared memory")
  std::string chunk_choice;       // how `chunks` was chosen
  OverlapForm serial, overlapped;
  double overlap_efficiency = 0;  // 1 - exposed_overlapped / exposed_serial
  double percent_of_ideal = 0;    // max(compute, communication) / overlapped time
  // moe_dist, gnn_dist: exact transfer counts per rank at the timed shape ("names",
  // "per_rank", "expected_per_rank", "context"); empty for the GEMMs.
  nlohmann::json counts;
  [[nodiscard]] nlohmann::json to_json() const;
};

// moe_dist and gnn_dist (src/dist/moe_dist.cpp, gnn_dist.cpp) run through the same options and
// result: the MoE layer with experts spread over ranks (one-sided puts of the routed tokens
// only, against MPI_Alltoallv) and GNN aggregation over a row-partitioned graph (remote rows
// fetched while local ones are summed, against fetch-then-compute); their "serial" form is
// the baseline, "overlapped" the overlapped form, `sizes` the moe_grouped_gemm / gnn_aggregate
// sizes, and `counts` their exact transfer counts (checked against the routing / the graph).
//
// Rank 0: verifies both forms against the double reference (the gemm problem's, at the
// requested sizes and a few odd shapes, every input distribution), then times them. Every other
// rank takes part through serve(). Throws UsageError on bad options (exit 2).
[[nodiscard]] OverlapResult run_overlap(const OverlapOptions& o);

}  // namespace kforge::dist
