#pragma once
// Distributed tuning over MPI ranks: rank 0 owns the search (the strategy's ask/tell) and the
// results store; every rank, rank 0 included, evaluates configurations through the one `eval`
// path (evaluate, or evaluate_isolated in a kforge-worker). Rank 0 hands a configuration to
// each rank as it becomes free and reassigns the evaluation of a rank that went silent.
//
// Started without mpirun (or built without MPI) there is one rank and nothing changes.
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

}  // namespace kforge::dist
