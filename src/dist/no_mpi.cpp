// kforge built without MPI: one rank, and tune() as always.
#include "kforge/dist.hpp"
#include "kforge/error.hpp"

namespace kforge::dist {
namespace {
Session* g_session = nullptr;
}

Session::Session(int&, char**&) { g_session = this; }
Session::~Session() { g_session = nullptr; }
int Session::serve() { return 0; }
int Session::finish(int code) { return code; }
Session* current() { return g_session; }
bool active() { return false; }

OverlapResult run_overlap(const OverlapOptions&) {
  throw UsageError("this kforge was built without MPI: the multi-rank GEMMs need it (install libopenmpi-dev and rebuild)");
}

TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o, const TuneProgress& progress) {
  return kforge::tune(base, backend, o, progress);
}

}  // namespace kforge::dist
