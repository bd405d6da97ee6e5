#pragma once
// `kforge tune`'s search options beyond the basic ones, and `kforge tune --replay`: a strategy
// run against a recorded Kernel Tuner cache file instead of a backend.
#include <CLI/CLI.hpp>
#include <string>

#include "kforge/tune.hpp"

namespace kforge::cli {

struct TuneExtras {
  std::string replay;             // a Kernel Tuner cache file: replay instead of running
  std::string record;             // write the evaluations as a Kernel Tuner cache file
  std::string restrict_values;    // "NAME=V1|V2,..." keeps only these values
  std::string descriptors;        // MAP-Elites: "P1,P2"
  std::string acquisition = "ei";
  double time_limit_s = 0;
  double target_pct = -1;         // replay: stop within this % of the recorded optimum
  int repeat = 1;                 // replay: seeds seed..seed+repeat-1, summarized
  std::string prior;              // bayes: a performance model (kforge predict --train) as prior
  std::string objective = "time"; // time, energy or edp (kforge/tune.hpp)
};

void add_tune_extras(CLI::App& cmd, TuneExtras& x);
// The strategy options the extras name (descriptors, acquisition); throws UsageError.
StrategyOptions strategy_options(const TuneExtras& x);
// Runs the replay and prints it; returns the exit code.
int run_replay(const TuneExtras& x, const std::string& strategy, int budget, std::uint64_t seed, bool json);
// Writes `results` as a Kernel Tuner cache file at `path`.
void write_record(const std::string& path, const KernelSpec& k, const Sizes& sizes, const std::string& device,
                  const std::vector<EvalResult>& results);
// ", minimizing energy (model)" for the summary line of a tune that does not minimize time:
// says whether this machine's energy figures are measured or modelled.
[[nodiscard]] std::string objective_note(const std::string& objective, Backend& backend);
// Each winner's energy per run, labelled measured or model, and its energy-delay product.
void print_energy(const std::vector<EvalResult>& winners, const std::string& objective);
// "mapelites archive" etc. for humans: one line or a small grid per strategy report.
void print_strategy_report(const std::string& strategy, const nlohmann::json& report);

}  // namespace kforge::cli
