// An evaluation as a stored row: its key, the conversion from and back to EvalResult, and the
// names a row is filed under (machine fingerprint, kernel source hash, canonical JSON).
#include <chrono>
#include <ctime>

#include <fmt/format.h>

#include "backend/kernel_includes.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"
#include "store/internal.hpp"

namespace kforge {

std::filesystem::path default_store_path() { return cache_dir() / "results.db"; }

std::string machine_fingerprint(std::string_view backend, std::string_view device) {
  return std::string(backend) + " | " + std::string(device);
}

std::string kernel_source_hash(const KernelSpec& k) {
  std::uint64_t h = hash64(lang_name(k.lang));
  h = hash64(std::string_view("\0", 1), h);
  h = hash64(k.entry, h);
  h = hash64(std::string_view("\0", 1), h);
  // The text the compiler sees: a change to a shared kernel header is a change to the kernel.
  // A header kforge lacks fails the compile later, with its message; here the raw text keys it.
  std::string text;
  try {
    text = expand_kernel_includes(k.source, k.source_path);
  } catch (const CompileError&) {
    text = k.source;
  }
  return hex64(hash64(text, h));
}

std::string canonical_json(const nlohmann::json& j) { return j.dump(); }  // std::map: sorted keys

EvalKey EvalKey::of(const EvalRequest& req, std::string_view fingerprint) {
  return {req.problem,
          canonical_json(req.sizes),
          std::string(dtype_name(req.dtype)),
          kernel_source_hash(req.kernel),
          canonical_json(req.kernel.resolve(req.params)),
          req.backend,
          std::string(fingerprint)};
}

StoredEvaluation StoredEvaluation::from(const EvalRequest& req, const EvalResult& r,
                                        std::string_view fingerprint) {
  StoredEvaluation e;
  e.key = EvalKey::of(req, fingerprint);
  e.kernel = r.kernel.empty() ? req.kernel.name : r.kernel;
  e.device = r.device;
  e.disposition = std::string(disposition_name(r.disposition));
  e.error = r.error;
  e.compile_s = r.compile_s;
  if (r.verify) e.verify = r.verify->to_json();
  e.verification = verification_level(req);
  if (r.timing) {
    e.median_s = r.timing->median_s;
    e.min_s = r.timing->min_s;
    e.mean_s = r.timing->mean_s;
    e.stdev_s = r.timing->stdev_s;
    e.samples = r.timing->samples;
    e.gflops = r.gflops;
  }
  if (r.baseline) {
    e.baseline_name = r.baseline_name;
    e.baseline_median_s = r.baseline->median_s;
  }
  if (r.roofline) e.sol_fraction = r.roofline->sol_fraction;
  e.result = r.to_json();
  e.result.erase("samples");  // kept once, in the samples column
  return e;
}

EvalResult StoredEvaluation::to_result() const {
  nlohmann::json j = result;
  if (j.empty() || !j.contains("disposition")) {  // an imported row: rebuild from the columns
    j = {{"problem", key.problem}, {"kernel", kernel},     {"backend", key.backend},
         {"device", device},       {"sizes", sizes()},    {"dtype", key.dtype},
         {"params", params()},     {"disposition", disposition}, {"compile_s", compile_s},
         {"error", error}};
    if (gflops) j["gflops"] = *gflops;
  }
  if (!samples.empty()) j["samples"] = samples;
  else if (median_s && disposition == "passed") j["samples"] = std::vector<double>{*median_s};
  try {
    return EvalResult::from_json(j);
  } catch (const std::exception& ex) {
    throw StoreError(fmt::format("stored evaluation {} ({} {}) cannot be read back as a kforge result: {}",
                                 id, key.problem, key.params, ex.what()));
  }
}

nlohmann::json StoredEvaluation::to_json() const {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  return {{"id", id},
          {"run_id", run_id},
          {"problem", key.problem},
          {"sizes", sizes()},
          {"dtype", key.dtype},
          {"kernel", kernel},
          {"source_hash", key.source_hash},
          {"params", params()},
          {"backend", key.backend},
          {"device", device},
          {"fingerprint", key.fingerprint},
          {"disposition", disposition},
          {"error", error},
          {"compile_s", compile_s},
          {"verify", verify},
          {"verification", verification},
          {"median_s", opt(median_s)},
          {"min_s", opt(min_s)},
          {"mean_s", opt(mean_s)},
          {"stdev_s", opt(stdev_s)},
          {"repetitions", samples.size()},
          {"samples", samples},
          {"baseline_name", baseline_name},
          {"baseline_median_s", opt(baseline_median_s)},
          {"gflops", opt(gflops)},
          {"sol_fraction", opt(sol_fraction)},
          {"started", started},
          {"finished", finished},
          {"extra", nlohmann::json::parse(extra.dump())}};
}

nlohmann::json RunInfo::to_json() const {
  return {{"id", id},
          {"started", started},
          {"command", command},
          {"fingerprint", fingerprint},
          {"kforge_version", kforge_version},
          {"meta", nlohmann::json::parse(meta.dump())},
          {"evaluations", evaluations},
          {"passed", passed},
          {"best_median_s", best_median_s ? nlohmann::json(*best_median_s) : nlohmann::json()}};
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

}  // namespace kforge
