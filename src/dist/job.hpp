#pragma once
// Private: one evaluation handed to a rank, and how any rank runs it (the one `eval` path:
// evaluate() in this process, or evaluate_isolated() in a kforge-worker, as tune() would).
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"

namespace kforge::dist {

struct Job {
  std::uint64_t ticket = 0;  // rank 0's number for it; a reassigned job keeps its ticket
  EvalRequest request;
  bool isolate = false;
  IsolationLimits limits;    // an isolated job's worker limits (kforge agent sets its own)
  [[nodiscard]] nlohmann::json to_json() const;
  static Job from_json(const nlohmann::json& j);
};

// A rank's backends, made on first use and kept (their compiled modules are cached in them).
class BackendCache {
 public:
  Backend& get(const EvalRequest& req);

 private:
  std::map<std::string, std::unique_ptr<Backend>> made_;
};

// `backend` may be null for an isolated job (the worker makes its own); a job that is not
// isolated needs one.
[[nodiscard]] EvalResult run_job(const Job& job, Backend* backend);

// An exception thrown by an evaluation, carried to rank 0 and thrown again there with its kind
// (a problem's fault or bad usage exit 2, as in a one-rank run).
[[nodiscard]] nlohmann::json error_json(std::uint64_t ticket, const std::exception& e);
[[noreturn]] void rethrow_error(const nlohmann::json& j, int rank);

// Fault injection for the tests: KFORGE_DIST_FAULT=kill:R:N makes rank R kill itself with
// SIGKILL as `kill -9` would: a rank above 0 on receiving its N-th job (its evaluation in
// flight is lost), rank 0 on handing out its N-th job to another rank.
[[nodiscard]] bool fault_due(int rank, int jobs);

}  // namespace kforge::dist
