// `kforge db import`: a Kernel Tuner cache file into the store, one run, one transaction.
#include <fmt/format.h>

#include "kforge/util.hpp"
#include "store/internal.hpp"
#include "store/kerneltuner.hpp"

namespace kforge {
namespace kerneltuner {

std::string error_name(std::string_view disposition) {
  if (disposition == "invalid_config") return "InvalidConfig";
  if (disposition == "compile_error") return "CompilationFailedConfig";
  return "RuntimeFailedConfig";  // crashed, timeout, incorrect, not_supported
}

std::string disposition_of(std::string_view error_name) {
  if (error_name == "InvalidConfig") return "invalid_config";
  if (error_name == "CompilationFailedConfig") return "compile_error";
  return "crashed";
}

}  // namespace kerneltuner

namespace {

using ojson = nlohmann::ordered_json;

// A file Kernel Tuner was killed while writing lacks its closing braces, and may end in a comma
// or in half an entry: cut back to the end of the last whole entry and close the file there.
ojson parse_cache_text(const std::string& text, const std::string& file) {
  try {
    return ojson::parse(text);
  } catch (const std::exception& first) {
    std::string t = text;
    for (int tries = 0; tries < 8; ++tries) {
      const auto end = t.find_last_of('}');
      if (end == std::string::npos) break;
      t.resize(end + 1);
      for (const char* tail : {"}}", "}"})
        try {
          return ojson::parse(t + tail);
        } catch (const std::exception&) {
        }
      t.resize(end);  // that brace closed less than an entry: try the one before
    }
    throw StoreError("'" + file + "' is not a Kernel Tuner cache file (not JSON: " + first.what() + ")");
  }
}

const ojson& field(const ojson& j, const char* name, const std::string& file) {
  if (!j.contains(name))
    throw StoreError("'" + file + "' lacks the Kernel Tuner field '" + name + "'");
  return j.at(name);
}

// Kernel Tuner's problem_size names no dimensions; they become x, y, z as its grid does.
nlohmann::json sizes_of(const ojson& problem_size) {
  nlohmann::json s = nlohmann::json::object();
  static const char* kNames[] = {"x", "y", "z"};
  if (problem_size.is_number_integer()) s["x"] = problem_size.get<std::int64_t>();
  if (problem_size.is_array())
    for (std::size_t i = 0; i < problem_size.size(); ++i)
      if (problem_size[i].is_number_integer())
        s[i < 3 ? kNames[i] : fmt::format("d{}", i)] = problem_size[i].get<std::int64_t>();
  return s;
}

}  // namespace

KernelTunerImport import_kerneltuner(Store& s, const std::filesystem::path& file,
                                     std::string_view command) {
  const std::string name = file.string();
  ojson doc = parse_cache_text(read_file(file), name);
  if (!doc.is_object()) throw StoreError("'" + name + "' is not a Kernel Tuner cache file (not an object)");
  const ojson& keys = field(doc, "tune_params_keys", name);
  const ojson& cache = field(doc, "cache", name);
  if (!keys.is_array() || !cache.is_object())
    throw StoreError("'" + name + "': tune_params_keys must be a list and cache an object");

  ojson header = ojson::object();
  for (const auto& [k, v] : doc.items())
    if (k != "cache") header[k] = v;

  KernelTunerImport out;
  out.kernel = doc.value("kernel_name", file.stem().string());
  out.device = doc.value("device_name", std::string("unknown device"));
  // The key every entry is filed under: kforge's own, when the file is a kforge export.
  StoredEvaluation base;
  const ojson kf = doc.value("kforge", ojson::object());
  base.key.problem = kf.value("problem", out.kernel);
  base.key.sizes = canonical_json(kf.contains("sizes") ? nlohmann::json::parse(kf["sizes"].dump())
                                                        : sizes_of(doc.value("problem_size", ojson())));
  base.key.dtype = kf.value("dtype", "unknown");
  base.key.source_hash = kf.value("source_hash", hex64(hash64("kerneltuner:" + out.kernel)));
  base.key.backend = kf.value("backend", kerneltuner::kRecordedBackend);
  base.kernel = kf.value("kernel", out.kernel);
  base.device = kf.value("device", out.device);
  base.key.fingerprint = kf.value("fingerprint", machine_fingerprint(base.key.backend, base.device));
  const std::string now = store::utc_now();

  std::vector<StoredEvaluation> rows;
  rows.reserve(cache.size());
  for (const auto& [cache_key, entry] : cache.items()) {
    if (!entry.is_object()) throw StoreError("'" + name + "': cache entry '" + cache_key + "' is not an object");
    StoredEvaluation e = base;
    nlohmann::json params = nlohmann::json::object();
    for (const auto& k : keys) {
      const std::string pname = k.get<std::string>();
      if (!entry.contains(pname))
        throw StoreError("'" + name + "': cache entry '" + cache_key + "' lacks parameter '" + pname + "'");
      params[pname] = nlohmann::json::parse(entry[pname].dump());
    }
    e.key.params = canonical_json(params);
    ojson rest = ojson::object();
    for (const auto& [k, v] : entry.items())
      if (!params.contains(k)) rest[k] = v;
    e.extra = {{"key", cache_key}, {"entry", rest}};

    const ojson time = entry.value("time", ojson());
    if (time.is_number()) {
      e.disposition = "passed";
      e.median_s = time.get<double>() * 1e-3;
      for (const auto& t : entry.value("times", ojson::array()))
        if (t.is_number()) e.samples.push_back(t.get<double>() * 1e-3);
      const Timing t = summarize(e.samples.empty() ? std::vector<double>{*e.median_s} : e.samples);
      e.min_s = t.min_s;
      e.mean_s = t.mean_s;
      e.stdev_s = t.stdev_s;
      if (entry.contains("GFLOP/s") && entry["GFLOP/s"].is_number()) e.gflops = entry["GFLOP/s"].get<double>();
    } else {
      const std::string err = time.is_string() ? time.get<std::string>() : "no time recorded";
      e.disposition = kerneltuner::disposition_of(err);
      e.error = "Kernel Tuner: " + err;
      ++out.failed;
    }
    // kforge's own exports say exactly what failed.
    if (entry.contains("kforge_disposition")) e.disposition = entry["kforge_disposition"].get<std::string>();
    if (entry.contains("kforge_error")) e.error = entry["kforge_error"].get<std::string>();
    if (entry.contains("compile_time") && entry["compile_time"].is_number())
      e.compile_s = entry["compile_time"].get<double>() * 1e-3;
    e.started = e.finished = entry.contains("timestamp") && entry["timestamp"].is_string()
                                 ? entry["timestamp"].get<std::string>()
                                 : now;
    rows.push_back(std::move(e));
  }
  out.run_id = s.begin_run(command, base.key.fingerprint, ojson{{"kerneltuner", header}});
  s.record_all(out.run_id, rows);
  out.entries = rows.size();
  return out;
}

}  // namespace kforge
