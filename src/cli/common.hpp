#pragma once
// What the commands share: options that name a problem instance and a backend, output in
// human tables or JSON, and the exit codes (0 passed, 1 a kernel failed a gate, 2 bad usage).
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge::cli {

inline constexpr int kExitPassed = 0, kExitFailedGate = 1, kExitUsage = 2;

// Options every evaluating command takes.
struct InstanceOptions {
  std::string problem;
  std::string backends = "cpu";  // comma-separated, or "all"
  std::string sizes;             // "M=..,N=..,K=.."
  std::string scalars;           // "gamma=0.99,lambda=0.95"
  std::string dtype = "fp32";
  std::string params;            // "NAME=V,..."
  int threads = 0;
  int trials = 0;      // 0: the mode's default
  bool quick = false;  // the quick verification protocol (tuning's default)
  bool bitwise = false;  // the kernel claims bitwise determinism (repeats compared bit for bit)
  // Thorough verification's index_width check: 1 on (--index-width), 0 off (--no-index-width),
  // -1 the command's default (on for `eval`'s outside sources, off for the library's kernels,
  // which index in 64 bits and would pay seconds per gemm verdict).
  int index_width = -1;
  std::uint64_t seed = 0x6b666f726765ull;
  bool json = false;
  // `lazy_reduce --formula F --reduce R` names the problem "lazy_reduce:R:F" (kernels/lazy_reduce).
  std::string formula, reduce = "sum";
  // With --formula: `--grad x|y|b` names its sum's gradient "lazy_reduce:grad_<x|y|b>:sum:F".
  std::string grad;
  void add_to(CLI::App& app, bool problem_positional = true);
};

// The backends named by `spec` ("all": every backend this build has that can run here).
std::vector<std::string> backend_list(const std::string& spec);
// A request for `kernel` of the problem, filled from the options; throws UsageError.
EvalRequest make_request(const InstanceOptions& o, const Problem& p, const KernelSpec& kernel,
                         const std::string& backend);

// Prints results as a table, or as one JSON document (an object for one, an array for more).
void print_results(const std::vector<EvalResult>& results, bool json, bool bench);
int exit_code(const std::vector<EvalResult>& results);

std::string format_sizes(const Sizes& s);
std::string format_params(const ParamValues& p);
std::string format_scalars(const Scalars& s);  // "  scalars gamma=0.9", or "" when none is fixed

// A one-line progress bar on stderr, only when stderr is a terminal.
void progress(const std::string& what, int done, int total);

}  // namespace kforge::cli
