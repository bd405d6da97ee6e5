// The MPI world: initialized only under a launcher, so a plain `kforge` never touches MPI.
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "dist/wire.hpp"
#include "kforge/dist.hpp"

namespace kforge::dist {
namespace {

Session* g_session = nullptr;
std::set<int> g_lost;
pid_t g_rank0_pid = 0;  // rank 0's process when it runs on this host, else 0

// Where rank 0 runs, broadcast once at start, so that a rank on the same host can see that
// rank 0 is gone (mpirun --enable-recovery keeps the job alive when rank 0 dies, and the ranks
// would wait for work forever).
void learn_where_rank0_runs(int rank) {
  struct {
    char host[256];
    long pid;
  } where{};
  if (rank == 0) {
    gethostname(where.host, sizeof where.host - 1);
    where.pid = static_cast<long>(getpid());
  }
  MPI_Bcast(where.host, sizeof where.host, MPI_CHAR, 0, MPI_COMM_WORLD);
  MPI_Bcast(&where.pid, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  char here[256] = {};
  gethostname(here, sizeof here - 1);
  if (rank != 0 && std::string_view(here) == std::string_view(where.host)) g_rank0_pid = static_cast<pid_t>(where.pid);
}

// mpirun (OpenMPI), and the PMI launchers of Slurm and MPICH, say so in the environment.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (const char* s = std::getenv(v); s && *s) return true;
  return false;
}

}  // namespace

void note_lost_rank(int rank) { g_lost.insert(rank); }
bool rank_lost(int rank) { return g_lost.count(rank) != 0; }
int lost_ranks() { return static_cast<int>(g_lost.size()); }
bool rank0_gone() { return g_rank0_pid > 0 && kill(g_rank0_pid, 0) != 0 && errno == ESRCH; }

Session* current() { return g_session; }
bool active() { return g_session && g_session->size() > 1; }

Session::Session(int& argc, char**& argv) {
  g_session = this;
  if (!launched_by_mpi()) return;
  // Only the main thread calls MPI; rank 0 evaluates on a second thread that never does.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  mpi_ = true;
  // A failed call returns an error code instead of aborting every rank.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  learn_where_rank0_runs(rank_);
  if (provided < MPI_THREAD_FUNNELED && rank_ == 0)
    fmt::print(stderr, "kforge: warning: this MPI offers no thread support; evaluating on rank 0 may misbehave\n");
}

Session::~Session() {
  if (mpi_ && !finished_) MPI_Finalize();
  g_session = nullptr;
}

int Session::finish(int code) {
  if (!mpi_ || finished_) return code;
  finished_ = true;
  Outbox out;
  for (int r = 1; r < size_; ++r)
    if (!rank_lost(r)) out.post(r, kTagStop, {{"finalize", lost_ranks() == 0}});
  // A rank that died while idle is noticed here: its stop never completes.
  for (int r = 1; r < size_; ++r)
    if (!rank_lost(r) && !out.drain(5, r)) note_lost_rank(r);
  if (lost_ranks() > 0) {
    // OpenMPI 4.1's MPI_Finalize waits for every rank, the dead one too: leave without it.
    // Every evaluation is already committed to the store (SQLite, one transaction each).
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
  }
  MPI_Finalize();
  return code;
}

}  // namespace kforge::dist
