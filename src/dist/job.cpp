#include "dist/job.hpp"

#include <cstdlib>
#include <stdexcept>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge::dist {

nlohmann::json Job::to_json() const {
  return {{"ticket", ticket}, {"request", request.to_json()}, {"isolate", isolate},
          {"limits", {{"timeout_s", limits.timeout_s}, {"memory_bytes", limits.memory_bytes},
                      {"sandbox", limits.sandbox}}}};
}

Job Job::from_json(const nlohmann::json& j) {
  Job job{j.at("ticket").get<std::uint64_t>(), EvalRequest::from_json(j.at("request")), j.value("isolate", false), {}};
  if (const auto l = j.find("limits"); l != j.end()) {
    job.limits.timeout_s = l->value("timeout_s", job.limits.timeout_s);
    job.limits.memory_bytes = l->value("memory_bytes", job.limits.memory_bytes);
    job.limits.sandbox = l->value("sandbox", job.limits.sandbox);
  }
  return job;
}

Backend& BackendCache::get(const EvalRequest& req) {
  const std::string key = req.backend + "/" + std::to_string(req.backend_options.threads) + "/" +
                          std::to_string(req.backend_options.device_index);
  auto& b = made_[key];
  if (!b) b = make_backend(req.backend, req.backend_options);
  return *b;
}

EvalResult run_job(const Job& job, Backend* backend) {
  return job.isolate || !backend ? evaluate_isolated(job.request, job.limits) : evaluate(job.request, *backend);
}

bool fault_due(int rank, int jobs) {
  const char* f = std::getenv("KFORGE_DIST_FAULT");
  if (!f || !*f) return false;
  const auto parts = split(f, ':');
  try {
    return parts.size() == 3 && parts[0] == "kill" && std::stoi(parts[1]) == rank && std::stoi(parts[2]) == jobs;
  } catch (const std::exception&) {
    return false;  // not a fault this build knows: none
  }
}

nlohmann::json error_json(std::uint64_t ticket, const std::exception& e) {
  const char* kind = dynamic_cast<const ProblemError*>(&e)  ? "problem"
                     : dynamic_cast<const UsageError*>(&e) ? "usage"
                                                           : "other";
  return {{"ticket", ticket}, {"error", e.what()}, {"kind", kind}};
}

void rethrow_error(const nlohmann::json& j, int rank) {
  const std::string kind = j.value("kind", "other");
  const std::string what = j.value("error", std::string("unknown error"));
  if (kind == "problem") throw ProblemError(what);
  if (kind == "usage") throw UsageError(what);
  throw std::runtime_error("rank " + std::to_string(rank) + ": " + what);
}

}  // namespace kforge::dist
