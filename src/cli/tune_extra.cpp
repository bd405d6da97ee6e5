// `kforge tune`'s strategy options, recording to and replaying from Kernel Tuner cache files.
#include "cli/tune_extra.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>

#include "cli/common.hpp"
#include "eval/energy_plan.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {

void add_tune_extras(CLI::App& cmd, TuneExtras& x) {
  cmd.add_option("--replay", x.replay, "replay a recorded Kernel Tuner cache file instead of running a backend");
  cmd.add_option("--record", x.record, "write every evaluation as a Kernel Tuner cache file (replayable)");
  cmd.add_option("--restrict", x.restrict_values, "search only these values, e.g. MR=6|8,NC=256|512");
  cmd.add_option("--time-limit", x.time_limit_s, "stop after this many seconds of evaluation (recorded time in a replay)");
  cmd.add_option("--target", x.target_pct, "replay: stop once within this percent of the recorded optimum");
  cmd.add_option("--descriptors", x.descriptors, "mapelites: the two parameters of the archive, e.g. MWG,NWG");
  cmd.add_option("--acquisition", x.acquisition, "bayes: ei, pi, lcb or portfolio")->capture_default_str();
  cmd.add_option("--prior", x.prior, "bayes: a model from `kforge predict --train` as the search's prior");
  cmd.add_option("--objective", x.objective, "what to minimize: time, energy (joules per run: measured by RAPL where "
                 "readable, by NVML on the cuda backend ($KFORGE_NVML_LIBRARY: the library's path), else a "
                 "model, labelled) or edp (energy x time)")
      ->check(CLI::IsMember({"time", "energy", "edp"}))
      ->capture_default_str();
  cmd.add_option("--repeat", x.repeat, "replay: run seeds seed..seed+N-1 and summarize")->capture_default_str();
}

StrategyOptions strategy_options(const TuneExtras& x) {
  StrategyOptions o;
  if (!trim(x.descriptors).empty()) {
    for (const auto& d : split(x.descriptors, ',')) o.descriptors.push_back(trim(d));
    if (o.descriptors.size() != 2) throw UsageError("--descriptors needs two parameter names, e.g. MWG,NWG");
  }
  o.acquisition = x.acquisition;
  if (!x.prior.empty()) {  // loaded now, so a bad file fails before any evaluation
    auto model = std::make_shared<PerfModel>(PerfModel::load(x.prior));
    o.prior = [model](const Space& s) { return model->predict_space(s); };
  }
  return o;
}

void write_record(const std::string& path, const KernelSpec& k, const Sizes& sizes, const std::string& device,
                  const std::vector<EvalResult>& results) {
  std::ofstream out(path);
  if (!out) throw UsageError("cannot write the record file " + path);
  // One entry per line, like Kernel Tuner's own files, so they diff and grep well.
  nlohmann::json j = kernel_tuner_cache(k, sizes, device, results);
  const nlohmann::json cache = j["cache"];
  j.erase("cache");
  std::string head = j.dump();
  head.pop_back();  // the closing brace
  out << head << ",\n\"cache\": {\n";
  bool first = true;
  for (const auto& [key, e] : cache.items()) {
    out << (first ? "" : ",\n") << nlohmann::json(key).dump() << ": " << e.dump();
    first = false;
  }
  out << "\n}\n}\n";  // Kernel Tuner checks for this ending to tell a closed file
}

std::string objective_note(const std::string& objective, Backend& backend) {
  if (objective == "time") return "";
  return fmt::format(", minimizing {} (energy {})", objective, plan_energy(backend).describe());
}

void print_energy(const std::vector<EvalResult>& winners, const std::string& objective) {
  for (const auto& w : winners) {
    if (w.verify)  // a device counter that could not measure this result (eval/evaluate.cpp)
      for (const CheckResult& c : w.verify->checks)
        if (c.name == "energy") fmt::print("{:<7} {}: {}\n", w.backend, objective, c.detail);
    if (!w.energy || !w.timing) continue;
    fmt::print("{:<7} {}: {:.4g} J per run, energy x time {:.4g} J*s  [{}: {}]\n", w.backend, objective,
               w.energy->joules, w.energy->joules * w.timing->median_s, w.energy->source, w.energy->detail);
  }
}

void print_strategy_report(const std::string& strategy, const nlohmann::json& report) {
  if (strategy == "mapelites" && report.contains("cells") && report["descriptors"].size() == 2) {
    const std::string a = report["descriptors"][0], b = report["descriptors"][1];
    std::vector<std::string> rows, cols;
    std::map<std::pair<std::string, std::string>, double> cell;
    for (const auto& c : report["cells"]) {
      const std::string r = c[a], k = c[b];
      if (std::find(rows.begin(), rows.end(), r) == rows.end()) rows.push_back(r);
      if (std::find(cols.begin(), cols.end(), k) == cols.end()) cols.push_back(k);
      cell[{r, k}] = c["objective"];
    }
    fmt::print("MAP-Elites archive: best objective per cell ({} down, {} across), {} cells filled\n", a, b,
               cell.size());
    fmt::print("{:>10}", a + "\\" + b);
    for (const auto& k : cols) fmt::print(" {:>10}", k);
    fmt::print("\n");
    for (const auto& r : rows) {
      fmt::print("{:>10}", r);
      for (const auto& k : cols) {
        auto it = cell.find({r, k});
        if (it == cell.end()) fmt::print(" {:>10}", "-");
        else fmt::print(" {:>10.4g}", it->second);
      }
      fmt::print("\n");
    }
  } else if (strategy == "bayes" && report.contains("acquisition_picks")) {
    fmt::print("bayes: {} model-guided proposals; acquisitions picked {}\n", report["model_proposals"].dump(),
               report["acquisition_picks"].dump());
  }
}

namespace {

std::string evals_text(int n) { return n < 0 ? std::string("never") : std::to_string(n); }

}  // namespace

int run_replay(const TuneExtras& x, const std::string& strategy, int budget, std::uint64_t seed, bool json) {
  if (x.objective != "time")
    throw UsageError("--objective " + x.objective + " with --replay: a recorded space holds times only; use --objective time");
  const RecordedSpace r = RecordedSpace::load(x.replay);
  if (x.repeat < 1) throw UsageError("--repeat must be at least 1");
  Budget b;
  b.evaluations = budget;
  b.seconds = x.time_limit_s;
  if (x.target_pct >= 0) {
    b.optimum = r.optimum_ms;
    b.within = x.target_pct / 100.0;
  }
  const StrategyOptions so = strategy_options(x);
  std::vector<ReplayResult> runs;
  for (int i = 0; i < x.repeat; ++i) runs.push_back(replay(r, strategy, b, seed + i, so));

  const nlohmann::json space{{"file", r.path},          {"device", r.device},
                             {"kernel", r.kernel},       {"configurations", r.space.size()},
                             {"failed", r.failed},       {"optimum_ms", r.optimum_ms}};
  std::vector<double> ratios, to5, to1;
  for (const auto& run : runs) {
    ratios.push_back(run.ratio > 0 ? run.ratio : 1e300);
    to5.push_back(run.to_within_5 < 0 ? 1e300 : run.to_within_5);
    to1.push_back(run.to_within_1 < 0 ? 1e300 : run.to_within_1);
  }
  if (json) {
    nlohmann::json doc{{"space", space}, {"strategy", strategy}, {"budget", budget}};
    if (runs.size() == 1) {
      doc["result"] = runs[0].to_json(r.space);
    } else {
      doc["runs"] = nlohmann::json::array();
      for (const auto& run : runs) {
        auto j = run.to_json(r.space);
        j.erase("trace");
        doc["runs"].push_back(j);
      }
      doc["median_ratio_to_optimum"] = median_of(ratios);
    }
    fmt::print("{}\n", doc.dump(2));
    return kExitPassed;
  }
  fmt::print("replay {}: {} on {}, {} configurations ({} failed), optimum {:.4g} ms\n", r.path, r.kernel,
             r.device.empty() ? "?" : r.device, r.space.size(), r.failed, r.optimum_ms);
  if (runs.size() == 1) {
    const ReplayResult& run = runs[0];
    fmt::print("strategy {}, budget {}, seed {}: {} evaluations (stopped: {}), {:.1f} s of recorded time\n", strategy,
               budget, seed, run.trace.steps.size(), run.trace.stopped, run.trace.spent_s);
    if (run.trace.best < 0) {
      fmt::print("no configuration passed\n");
      return kExitFailedGate;
    }
    fmt::print("best {:.4g} ms = {:.4f}x the optimum  [{}]\n", run.best_ms, run.ratio,
               r.space.label(run.trace.steps[run.trace.best].config));
    fmt::print("evaluations to within 5% of the optimum: {}, within 1%: {}\n", evals_text(run.to_within_5),
               evals_text(run.to_within_1));
    print_strategy_report(strategy, run.report);
    return kExitPassed;
  }
  auto med = [](const std::vector<double>& v) {
    const double m = median_of(v);
    return m >= 1e299 ? std::string("never") : fmt::format("{:.4g}", m);
  };
  fmt::print("strategy {}, budget {}, seeds {}..{}: median best/optimum {}, median evaluations to within 5%: {}, "
             "within 1%: {}\n",
             strategy, budget, seed, seed + x.repeat - 1, med(ratios), med(to5), med(to1));
  return kExitPassed;
}

}  // namespace kforge::cli
