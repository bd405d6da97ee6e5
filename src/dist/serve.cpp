// An evaluating rank: runs each job rank 0 sends through the one `eval` path, sending a
// heartbeat while it runs so that rank 0 can tell a slow evaluation from a dead rank.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <future>
#include <string>

#include "dist/job.hpp"
#include "dist/wire.hpp"
#include "kforge/dist.hpp"
#include "kforge/util.hpp"

namespace kforge::dist {
namespace {

constexpr auto kHeartbeat = std::chrono::milliseconds(500);

// Rank 0 ended without stopping this rank (killed under mpirun --enable-recovery): leave.
[[noreturn]] void rank0_is_gone(int rank) {
  std::fprintf(stderr, "kforge: rank %d: rank 0 is gone; stopping\n", rank);
  std::fflush(stderr);
  _exit(3);
}

// A message to rank 0, without blocking forever if rank 0 is gone (a large message waits
// for its receive to be posted).
void tell_rank0(int rank, Tag tag, const nlohmann::json& body) {
  Outbox out;
  out.post(0, tag, body);
  while (!out.drain(1.0))
    if (rank0_gone()) rank0_is_gone(rank);
}

}  // namespace

int Session::serve() {
  BackendCache backends;
  Backoff wait;
  int received = 0;
  auto last_check = Clock::now();
  for (;;) {
    std::optional<Message> m = try_receive(0);
    if (!m) {
      if (seconds_since(last_check) > 1) {
        if (rank0_gone()) rank0_is_gone(rank_);
        last_check = Clock::now();
      }
      wait.idle();
      continue;
    }
    wait.reset();
    if (m->tag == kTagStop) {
      finished_ = true;
      if (!m->body.value("finalize", true)) {  // a rank was lost: MPI_Finalize would wait for it
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(0);
      }
      MPI_Finalize();
      return 0;
    }
    if (m->tag == kTagOverlap) {  // a collective of its own, until rank 0 ends it
      follow_overlap(m->body);
      continue;
    }
    if (m->tag != kTagJob) continue;
    const std::uint64_t ticket = m->body.value("ticket", std::uint64_t{0});
    if (fault_due(rank_, ++received)) raise(SIGKILL);
    const auto t0 = Clock::now();
    nlohmann::json reply;
    try {
      const Job job = Job::from_json(m->body);
      Backend* backend = job.isolate ? nullptr : &backends.get(job.request);
      // The evaluation runs on its own thread; this one alone speaks MPI (MPI_THREAD_FUNNELED).
      auto running = std::async(std::launch::async, [&] { return run_job(job, backend); });
      while (running.wait_for(kHeartbeat) != std::future_status::ready) {
        if (rank0_gone()) rank0_is_gone(rank_);
        tell_rank0(rank_, kTagHeartbeat, {{"ticket", ticket}});
      }
      reply = {{"ticket", ticket}, {"result", running.get().to_json()}, {"seconds", seconds_since(t0)}};
    } catch (const std::exception& e) {
      reply = error_json(ticket, e);
    }
    tell_rank0(rank_, kTagDone, reply);
  }
}

}  // namespace kforge::dist
