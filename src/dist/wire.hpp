#pragma once
// Private: the messages between rank 0 and the evaluating ranks. Every message is a JSON text
// on MPI_COMM_WORLD; the tag says what it is. Receives are polled (MPI_Iprobe and a short
// sleep) rather than blocking, because OpenMPI spins in a blocking receive and an idle rank
// would then steal a core from the ranks that are timing kernels.
#include <mpi.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::dist {

enum Tag : int {
  kTagJob = 1,        // 0 -> r: {"ticket", "request", "isolate"}
  kTagStop = 2,       // 0 -> r: {"finalize": bool}
  kTagHeartbeat = 3,  // r -> 0: {"ticket"} while an evaluation runs
  kTagDone = 4,       // r -> 0: {"ticket", "result", "seconds"} or {"ticket", "error", "kind"}
  kTagOverlap = 5,    // 0 -> r: OverlapOptions: join the collective runs of overlap.cpp
};

struct Message {
  int source = -1;
  int tag = 0;
  nlohmann::json body;
};

// Rank 0's sends: non-blocking, so that a message to a rank that died never blocks rank 0
// (a large message waits for the receiver to post its receive).
class Outbox {
 public:
  Outbox() = default;
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox();
  void post(int dest, Tag tag, const nlohmann::json& body);
  // Completes what it can; true when nothing is pending.
  bool progress();
  // Waits up to `timeout_s` for every send to `dest` (any rank: -1) to complete.
  bool drain(double timeout_s, int dest = -1);

 private:
  struct Pending {
    MPI_Request request;
    int dest;
    std::string text;
  };
  std::vector<Pending*> pending_;
};

// The next message from `source` (MPI_ANY_SOURCE for any), if one has arrived.
[[nodiscard]] std::optional<Message> try_receive(int source = MPI_ANY_SOURCE);

// Sleeps between polls: short after activity, up to a few milliseconds when idle.
class Backoff {
 public:
  void idle();
  void reset() { wait_us_ = 50; }

 private:
  int wait_us_ = 50;
};

using Clock = std::chrono::steady_clock;
[[nodiscard]] inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A rank's part in run_overlap (overlap.cpp): runs what rank 0 broadcasts until it says stop.
void follow_overlap(const nlohmann::json& options);

// Ranks rank 0 took for lost (session.cpp): after one, MPI_Finalize cannot be called.
void note_lost_rank(int rank);
[[nodiscard]] bool rank_lost(int rank);
[[nodiscard]] int lost_ranks();
// A rank on rank 0's host: rank 0's process no longer exists (false where it cannot tell).
[[nodiscard]] bool rank0_gone();

}  // namespace kforge::dist
