// The JSON of the overlapped multi-rank GEMMs' options and results (kforge/dist.hpp), apart
// from the MPI code so that a build without MPI still has it.
#include "kforge/dist.hpp"

namespace kforge::dist {

nlohmann::json OverlapOptions::to_json() const {
  return {{"problem", problem}, {"sizes", sizes},   {"chunks", chunks}, {"link_latency_s", link_latency_s},
          {"link_bytes_per_s", link_bytes_per_s}, {"rounds", rounds}, {"trials", trials},
          {"seed", seed},       {"fault", fault}};
}

OverlapOptions OverlapOptions::from_json(const nlohmann::json& j) {
  OverlapOptions o;
  o.problem = j.at("problem").get<std::string>();
  o.sizes = j.at("sizes").get<Sizes>();
  o.chunks = j.at("chunks").get<int>();
  o.link_latency_s = j.at("link_latency_s").get<double>();
  o.link_bytes_per_s = j.at("link_bytes_per_s").get<double>();
  o.rounds = j.at("rounds").get<int>();
  o.trials = j.at("trials").get<int>();
  o.seed = j.at("seed").get<std::uint64_t>();
  o.fault = j.at("fault").get<std::string>();
  return o;
}

nlohmann::json OverlapResult::to_json() const {
  auto form = [](const OverlapForm& f) {
    return nlohmann::json{{"name", f.name},           {"chunks", f.chunks},       {"time_s", f.time_s},
                          {"compute_s", f.compute_s}, {"exposed_s", f.exposed_s}, {"times_s", f.times_s}};
  };
  nlohmann::json shapes_json = nlohmann::json::array();
  for (const auto& s : shapes) shapes_json.push_back(s);
  return {{"options", options},
          {"ranks", ranks},
          {"verified", verified},
          {"failure", failure},
          {"runs_checked", runs_checked},
          {"worst_bound_ratio", worst_bound_ratio},
          {"shapes", shapes_json},
          {"link", link},
          {"chunk_choice", chunk_choice},
          {"serial", form(serial)},
          {"overlapped", form(overlapped)},
          {"overlap_efficiency", overlap_efficiency},
          {"percent_of_ideal", percent_of_ideal},
          {"counts", counts}};
}

}  // namespace kforge::dist
