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

// Fault injection for the tests: KFORGE_DIST_FAULT=kill:R:N makes rank R kill itself with
// SIGKILL on receiving its N-th job, as `kill -9` of that rank mid-evaluation would.
bool fault_due(int rank, int jobs_received) {
  const char* f = std::getenv("KFORGE_DIST_FAULT");
  if (!f || !*f) return false;
  const auto parts = split(f, ':');
  return parts.size() == 3 && parts[0] == "kill" && std::stoi(parts[1]) == rank &&
         std::stoi(parts[2]) == jobs_received;
}

}  // namespace

int Session::serve() {
  BackendCache backends;
  Backoff wait;
  int received = 0;
  for (;;) {
    std::optional<Message> m = try_receive(0);
    if (!m) { wait.idle(); continue; }
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
      while (running.wait_for(kHeartbeat) != std::future_status::ready)
        send_json(0, kTagHeartbeat, {{"ticket", ticket}});
      reply = {{"ticket", ticket}, {"result", running.get().to_json()}, {"seconds", seconds_since(t0)}};
    } catch (const std::exception& e) {
      reply = error_json(ticket, e);
    }
    send_json(0, kTagDone, reply);
  }
}

}  // namespace kforge::dist
