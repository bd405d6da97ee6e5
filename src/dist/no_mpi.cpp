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

std::vector<EvalResult> evaluate_all(const std::vector<EvalRequest>& requests, const std::vector<bool>& isolate,
                                     Backend& local, const std::function<void(int)>& progress) {
  std::vector<EvalResult> out;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    out.push_back(isolate[i] ? evaluate_isolated(requests[i]) : evaluate(requests[i], local));
    if (progress) progress(static_cast<int>(i + 1));
  }
  return out;
}

void evaluate_isolated_each(const std::vector<EvalRequest>& requests, const IsolationLimits& limits,
                            const std::function<void(std::size_t, EvalResult, const std::string&)>& done) {
  for (std::size_t i = 0; i < requests.size(); ++i) done(i, evaluate_isolated(requests[i], limits), "rank 0");
}

OverlapResult run_overlap(const OverlapOptions&) {
  throw UsageError("this kforge was built without MPI: kforge overlap (ag_gemm, gemm_rs, moe_dist, gnn_dist, kernel_kmeans_dist) needs it (install libopenmpi-dev and rebuild)");
}

TuneResult tune(const EvalRequest& base, Backend& backend, const TuneOptions& o, const TuneProgress& progress) {
  return kforge::tune(base, backend, o, progress);
}

}  // namespace kforge::dist
