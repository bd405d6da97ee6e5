// `kforge db export --format json|csv`: every column of the selected evaluations.
#include <fmt/format.h>

#include "kforge/store.hpp"

namespace kforge {
namespace {

// RFC 4180: quoted when it holds a comma, a quote or a line break; quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : ""; }

}  // namespace

std::string export_json(const std::vector<StoredEvaluation>& es) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& e : es) a.push_back(e.to_json());
  return a.dump(2) + "\n";
}

std::string export_csv(const std::vector<StoredEvaluation>& es) {
  std::string out =
      "id,run_id,problem,sizes,dtype,kernel,source_hash,params,backend,device,fingerprint,"
      "disposition,error,compile_s,median_s,min_s,mean_s,stdev_s,repetitions,baseline_name,"
      "baseline_median_s,gflops,sol_fraction,started,finished,samples\n";
  for (const auto& e : es) {
    const std::vector<std::string> fields = {
        std::to_string(e.id), std::to_string(e.run_id), e.key.problem, e.key.sizes, e.key.dtype,
        e.kernel, e.key.source_hash, e.key.params, e.key.backend, e.device, e.key.fingerprint,
        e.disposition, e.error, fmt::format("{}", e.compile_s), number(e.median_s), number(e.min_s),
        number(e.mean_s), number(e.stdev_s), std::to_string(e.samples.size()), e.baseline_name,
        number(e.baseline_median_s), number(e.gflops), number(e.sol_fraction), e.started, e.finished,
        nlohmann::json(e.samples).dump()};
    for (std::size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + csv_field(fields[i]);
    out += "\n";
  }
  return out;
}

}  // namespace kforge
