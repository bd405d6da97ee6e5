// EvalRequest and EvalResult as JSON: the worker protocol and the `--json` output.
#include <nlohmann/json.hpp>

#include "kforge/evaluate.hpp"

namespace kforge {

nlohmann::json EvalRequest::to_json() const {
  nlohmann::json dists = nlohmann::json::array();
  for (Distribution d : verify.distributions) dists.push_back(distribution_name(d));
  return {{"problem", problem},
          {"problem_file", problem_file},
          {"kernel", kernel.to_json(true)},
          {"sizes", sizes},
          {"scalars", scalars},
          {"dtype", dtype_name(dtype)},
          {"params", params},
          {"backend", backend},
          {"threads", backend_options.threads},
          {"device_index", backend_options.device_index},
          {"verify", {{"thorough", verify.thorough}, {"trials", verify.trials}, {"distributions", dists},
                      {"seed", verify.seed}, {"fuzz_shapes", verify.fuzz_shapes},
                      {"determinism_runs", verify.determinism_runs}, {"bitwise_repeats", verify.bitwise_repeats},
                      {"index_width", verify.index_width}, {"tsan", verify.tsan}}},
          {"tsan_build", backend_options.tsan},
          {"bench", bench},
          {"measure", {{"warmup", measure.warmup}, {"min_repetitions", measure.min_repetitions},
                       {"max_repetitions", measure.max_repetitions}, {"min_time_s", measure.min_time_s},
                       {"max_time_s", measure.max_time_s}, {"target_rel_stdev", measure.target_rel_stdev},
                       {"repetitions", measure.repetitions}, {"cold", measure.cold},
                       {"roof_now", measure.roof_now}}},
          {"baseline", baseline}};
}

EvalRequest EvalRequest::from_json(const nlohmann::json& j) {
  EvalRequest r;
  r.problem = j.at("problem");
  r.problem_file = j.value("problem_file", std::string());
  const auto& k = j.at("kernel");
  r.kernel = KernelSpec::from_json_with_source(k, k.at("source_text").get<std::string>());
  r.kernel.source_path = k.value("source", std::string());
  r.sizes = j.at("sizes").get<Sizes>();
  r.scalars = j.value("scalars", Scalars{});
  r.dtype = parse_dtype(j.at("dtype").get<std::string>());
  r.params = j.at("params").get<ParamValues>();
  r.backend = j.at("backend");
  r.backend_options.threads = j.value("threads", 0);
  r.backend_options.device_index = j.value("device_index", 0);
  const auto& v = j.at("verify");
  r.verify.trials = v.at("trials");
  r.verify.seed = v.at("seed");
  r.verify.thorough = v.value("thorough", true);
  r.verify.fuzz_shapes = v.value("fuzz_shapes", r.verify.fuzz_shapes);
  r.verify.determinism_runs = v.value("determinism_runs", r.verify.determinism_runs);
  r.verify.bitwise_repeats = v.value("bitwise_repeats", r.verify.bitwise_repeats);
  r.verify.index_width = v.value("index_width", r.verify.index_width);
  r.verify.tsan = v.value("tsan", false);
  r.backend_options.tsan = j.value("tsan_build", false);
  r.verify.distributions.clear();
  for (const auto& d : v.at("distributions")) r.verify.distributions.push_back(parse_distribution(d.get<std::string>()));
  r.bench = j.at("bench");
  const auto& m = j.at("measure");
  r.measure = {m.at("warmup"), m.at("min_repetitions"), m.at("max_repetitions"),
               m.at("min_time_s"), m.at("max_time_s"), m.at("target_rel_stdev"),
               m.value("repetitions", 0), m.value("cold", false), m.value("roof_now", false)};
  r.baseline = j.at("baseline");
  return r;
}

// The compiler's figures under "resources", the unknown ones (-1) left out.
nlohmann::json resources_json(const CompilerResources& r) {
  nlohmann::json j = {{"reported_by", r.reported_by}};
  const auto put = [&j](const char* name, long long v) {
    if (v >= 0) j[name] = v;
  };
  put("registers", r.registers);
  put("spill_store_bytes", r.spill_store_bytes);
  put("spill_load_bytes", r.spill_load_bytes);
  put("stack_bytes", r.stack_bytes);
  put("shared_bytes", r.shared_bytes);
  put("private_bytes", r.private_bytes);
  put("barriers", r.barriers);
  put("max_block_threads", r.max_block_threads);
  return j;
}

namespace {
CompilerResources resources_from_json(const nlohmann::json& j) {
  CompilerResources r;
  r.reported_by = j.value("reported_by", "");
  r.registers = j.value("registers", -1);
  r.spill_store_bytes = j.value("spill_store_bytes", -1LL);
  r.spill_load_bytes = j.value("spill_load_bytes", -1LL);
  r.stack_bytes = j.value("stack_bytes", -1LL);
  r.shared_bytes = j.value("shared_bytes", -1LL);
  r.private_bytes = j.value("private_bytes", -1LL);
  r.barriers = j.value("barriers", -1);
  r.max_block_threads = j.value("max_block_threads", -1LL);
  return r;
}
}  // namespace

nlohmann::json EvalResult::to_json() const {
  nlohmann::json j = {{"problem", problem},     {"kernel", kernel},   {"backend", backend},
                      {"device", device},       {"sizes", sizes},     {"dtype", dtype_name(dtype)},
                      {"params", params},       {"disposition", disposition_name(disposition)},
                      {"compiled", compiled},   {"compile_s", compile_s}};
  if (!scalars.empty()) j["scalars"] = scalars;
  if (!passed()) j["error"] = error;
  if (!compile_log.empty()) j["compile_log"] = compile_log;
  if (resources.known()) j["resources"] = resources_json(resources);
  if (verify) j["verify"] = verify->to_json();
  if (timing) {
    j["median_s"] = timing->median_s;
    j["min_s"] = timing->min_s;
    j["mean_s"] = timing->mean_s;
    j["stdev_s"] = timing->stdev_s;
    j["repetitions"] = timing->repetitions();
    j["noise_target_met"] = timing->noise_target_met;
    j["max_s"] = timing->max_s;
    j["rel_stdev"] = timing->rel_stdev();
    j["mad_s"] = timing->mad_s;
    j["outliers"] = timing->outliers;
    j["stop_reason"] = timing->stop_reason;
    j["samples"] = timing->samples;
    j["gflops"] = gflops;
    j["gbytes_s"] = gbytes_s;
  }
  if (energy) j["energy"] = energy->to_json();
  if (roofline) {
    j["sol_fraction"] = roofline->sol_fraction;
    j["bound"] = roofline->bound;
    j["arithmetic_intensity"] = roofline->arithmetic_intensity;
    j["t_sol_s"] = roofline->t_sol_s;
    j["memory_roof"] = roofline->memory_roof;
    if (roofline->score) j["sol_score"] = *roofline->score;
  }
  if (!roof_remeasured.empty()) j["roof_remeasured"] = roof_remeasured;
  if (roofline_now && bandwidth_now) {
    j["roof_now"] = {{"sol_fraction", roofline_now->sol_fraction},
                     {"t_sol_s", roofline_now->t_sol_s},
                     {"bound", roofline_now->bound},
                     {"memory_roof", roofline_now->memory_roof},
                     {"GBs", bandwidth_now->to_json()},
                     {"before_after_ratio", roof_now_change}};
  }
  if (baseline) {
    j["baseline"] = {{"name", baseline_name}, {"median_s", baseline->median_s},
                     {"min_s", baseline->min_s}, {"stdev_s", baseline->stdev_s},
                     {"repetitions", baseline->repetitions()}, {"samples", baseline->samples}};
    j["speedup_vs_baseline"] = speedup();
  }
  return j;
}

EvalResult EvalResult::from_json(const nlohmann::json& j) {
  EvalResult r;
  r.problem = j.value("problem", "");
  r.kernel = j.value("kernel", "");
  r.backend = j.value("backend", "");
  r.device = j.value("device", "");
  r.sizes = j.value("sizes", Sizes{});
  r.scalars = j.value("scalars", Scalars{});
  r.dtype = parse_dtype(j.value("dtype", "fp32"));
  r.params = j.value("params", ParamValues{});
  r.disposition = parse_disposition(j.at("disposition").get<std::string>());
  r.error = j.value("error", "");
  r.compile_log = j.value("compile_log", "");
  r.compile_s = j.value("compile_s", 0.0);
  r.compiled = j.value("compiled", false);
  if (j.contains("resources")) r.resources = resources_from_json(j.at("resources"));
  if (j.contains("verify")) r.verify = VerifyReport::from_json(j.at("verify"));
  if (j.contains("samples")) {
    r.timing = summarize(j.at("samples").get<std::vector<double>>());
    r.timing->noise_target_met = j.value("noise_target_met", false);
    r.timing->stop_reason = j.value("stop_reason", "");
    r.gflops = j.value("gflops", 0.0);
    r.gbytes_s = j.value("gbytes_s", 0.0);
  }
  if (j.contains("energy")) r.energy = Energy::from_json(j.at("energy"));
  if (j.contains("sol_fraction")) {
    r.roofline.emplace();
    r.roofline->sol_fraction = j.at("sol_fraction");
    r.roofline->bound = j.at("bound");
    r.roofline->arithmetic_intensity = j.at("arithmetic_intensity");
    r.roofline->t_sol_s = j.value("t_sol_s", 0.0);
    r.roofline->memory_roof = j.value("memory_roof", "");
    if (j.contains("sol_score")) r.roofline->score = j.at("sol_score").get<double>();
  }
  r.roof_remeasured = j.value("roof_remeasured", "");
  if (j.contains("roof_now")) {
    const auto& n = j.at("roof_now");
    r.roofline_now.emplace();
    r.roofline_now->sol_fraction = n.at("sol_fraction");
    r.roofline_now->t_sol_s = n.value("t_sol_s", 0.0);
    r.roofline_now->bound = n.value("bound", "");
    r.roofline_now->memory_roof = n.value("memory_roof", "");
    r.bandwidth_now = Bandwidth::from_json(n.at("GBs"));
    r.roof_now_change = n.value("before_after_ratio", 1.0);
  }
  if (j.contains("baseline")) {
    r.baseline_name = j.at("baseline").at("name");
    r.baseline = summarize(j.at("baseline").at("samples").get<std::vector<double>>());
  }
  return r;
}

}  // namespace kforge
