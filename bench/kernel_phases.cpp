// Where a cpu library kernel's time goes, by ablation (this VM has no PMU): the kernel compiled
// several times, each with phases taken out through a define the kernel reads (KF_ABLATE in
// gemm, moe and conv2d's 1x1 kernels: see each source), timed in alternation on the same inputs,
// round by round. The time a variant saves over the first (the full kernel) is what the phases
// it leaves out cost; "of gap" puts that against the first's distance from the measured fp32
// peak (`kforge ceilings`), so the rows of a split add up to the gap. The variants' outputs are
// wrong on purpose: the full kernel is the one `kforge verify` checks.
//
//   build/bench/kernel_phases --problem gemm --sizes M=2048,N=2048,K=2048 --scalar beta=0 \
//       full: "no packing:KF_ABLATE=1" "no C:KF_ABLATE=2"
//
// A variant is LABEL:NAME=VALUE,... where a NAME the kernel's spec has is a parameter over its
// defaults (checked against its values) and a NAME starting KF_ a plain define. A round's figure is
// the median of at least --min-calls calls and 0.2 s. With --threads 1 the clock is the calling
// thread's CPU time (the launch runs on it), which a loaded host disturbs far less than wall
// time, and "of peak" is against the one-thread peak; with more threads it is wall time.
#include <time.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/measure.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "bench_host.hpp"
#include "tensor_upload.hpp"

namespace {

using namespace kforge;

struct Variant {
  std::string label;
  std::shared_ptr<Module> module;
  LaunchGeometry geometry;
  std::vector<double> seconds;  // per round
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"a cpu library kernel against variants of itself with phases taken out (KF_ABLATE), interleaved"};
  std::string problem_name, sizes_text, kernel_name, params_text, source_file;
  std::vector<std::string> scalar_texts, variant_texts;
  int rounds = 7, min_calls = 3, threads = 0, trial = 1;
  app.add_option("--problem", problem_name, "problem, e.g. gemm")->required();
  app.add_option("--sizes", sizes_text, "sizes, NAME=VALUE,... (the problem's defaults for the rest)")->required();
  app.add_option("--kernel", kernel_name, "which cpu library kernel of the problem (default: the problem's first)");
  app.add_option("--source", source_file, "the kernel's source from this file instead of the library's (an edit, an older version)");
  app.add_option("--params", params_text, "parameters over the spec's defaults for every variant, e.g. MR=6");
  app.add_option("--scalar", scalar_texts, "a scalar's value, NAME=VALUE (repeatable; default: the timing trial's)");
  app.add_option("--trial", trial, "the input trial (moe: 1 skewed routing, 0 balanced)")->capture_default_str();
  app.add_option("--rounds", rounds, "interleaved rounds")->capture_default_str();
  app.add_option("--min-calls", min_calls, "calls per variant per round, at least (and 0.2 s)")->capture_default_str();
  app.add_option("--threads", threads, "cpu backend threads (0: all cores)")->capture_default_str();
  app.add_option("variants", variant_texts, "LABEL:NAME=VALUE,... (the first is the reference, usually 'full:')")
      ->required();
  CLI11_PARSE(app, argc, argv);

  try {
    auto backend = make_backend("cpu", {.threads = threads});
    const auto problem = find_problem(problem_name);
    Sizes given;
    for (const auto& [k, v] : parse_assignments(sizes_text)) given[k] = v;
    const Sizes sizes = problem->resolve_sizes(given);
    problem->check_sizes(sizes);
    const KernelSpec spec =
        kernel_name.empty() ? library_kernel(*problem, Lang::cpp, sizes) : library_kernel_named(*problem, Lang::cpp, {kernel_name});
    std::string source = spec.source;
    if (!source_file.empty()) {
      std::ifstream in(source_file);
      if (!in) throw UsageError("--source " + source_file + ": cannot read it (give a kernel source file)");
      std::stringstream text;
      text << in.rdbuf();
      source = text.str();
    }
    const ParamValues common = params_text.empty() ? ParamValues{} : parse_assignments(params_text);

    std::vector<Variant> vs;
    for (const auto& text : variant_texts) {
      const auto colon = text.find(':');
      if (colon == std::string::npos)
        throw UsageError("variant '" + text + "': give LABEL:NAME=VALUE,... (or LABEL: for the kernel as it is)");
      ParamValues over = common;
      Defines extra;
      if (colon + 1 < text.size())
        for (const auto& [k, v] : parse_assignments(text.substr(colon + 1))) {
          const bool is_param = std::any_of(spec.params.begin(), spec.params.end(), [&](const auto& p) { return p.name == k; });
          if (is_param)
            over[k] = v;
          else if (k.rfind("KF_", 0) == 0)  // a define the kernel reads (KF_ABLATE): no typo check possible
            extra.emplace_back(k, std::to_string(v));
          else
            throw UsageError("variant '" + text + "': " + k + " is neither a parameter of " + spec.name +
                             " nor a KF_ define (KF_ABLATE=N)");
        }
      const ParamValues params = spec.resolve(over);
      if (const auto why = spec.check(params, sizes)) throw UsageError("variant '" + text + "': " + *why);
      Defines d = defines_for(params, DType::fp32);
      d.insert(d.end(), extra.begin(), extra.end());
      vs.push_back({text.substr(0, colon), backend->compile(source, spec.entry, d, source_file.empty() ? spec.source_path : source_file),
                    spec.geometry(params, sizes), {}});
    }

    Scalars fixed;
    for (const auto& s : scalar_texts) {
      const auto eq = s.find('=');
      if (eq == std::string::npos) throw UsageError("--scalar '" + s + "': give NAME=VALUE, e.g. beta=0");
      fixed[s.substr(0, eq)] = std::stod(s.substr(eq + 1));
    }
    const Instance inst = problem->make_instance(sizes, DType::fp32, Distribution::normal, 0x5eed, trial, fixed);
    std::vector<std::unique_ptr<Buffer>> bufs;
    std::vector<Arg> args;
    for (std::size_t t = 0; t < inst.tensors.size(); ++t) {
      bufs.push_back(bench::upload(*backend, *problem, inst, t));
      args.push_back(Arg::buf(*bufs.back()));
    }
    for (const auto& n : problem->size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
    for (const auto& n : problem->scalar_names()) args.push_back(Arg::f(static_cast<float>(inst.scalars.at(n))));

    const bool cpu_clock = threads == 1;
    const Ceilings roofs = ceilings(*backend);
    const double peak = cpu_clock && roofs.one.compute.fp32 > 0 ? roofs.one.compute.fp32 : roofs.flops_for(DType::fp32);
    const double flops = problem->flops(sizes);
    for (auto& v : vs) backend->run(*v.module, v.geometry, args);  // warm: pages, scratch, threads
    for (int r = 0; r < rounds; ++r)
      for (auto& v : vs) {
        std::vector<double> s;
        const double start = bench::clock_s(cpu_clock);
        while (static_cast<int>(s.size()) < min_calls || bench::clock_s(cpu_clock) - start < 0.2) {
          const double t0 = bench::clock_s(cpu_clock);
          backend->run(*v.module, v.geometry, args);
          s.push_back(bench::clock_s(cpu_clock) - t0);
        }
        v.seconds.push_back(median_of(s));
      }

    fmt::print("{} ({}) {}, {} thread(s), {}, trial {}; fp32 peak {:.1f} GFLOP/s; {} rounds\n", problem_name,
               spec.name, sizes_text, threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency()),
               cpu_clock ? "thread CPU time" : "wall time", trial, peak * 1e-9, rounds);
    fmt::print("{:<34} {:>9} {:>17} {:>8} {:>8} {:>18} {:>8}\n", "variant", "ms", "(min..max)", "GFLOP/s", "of peak",
               "first / this", "of gap");
    const double t0 = median_of(vs[0].seconds), t_peak = flops / peak;
    for (const auto& v : vs) {
      std::vector<double> ratio;
      for (int r = 0; r < rounds; ++r) ratio.push_back(vs[0].seconds[r] / v.seconds[r]);
      const auto [lo, hi] = std::minmax_element(v.seconds.begin(), v.seconds.end());
      const auto [rlo, rhi] = std::minmax_element(ratio.begin(), ratio.end());
      const double t = median_of(v.seconds);
      fmt::print("{:<34} {:>9.2f} {:>7.2f}..{:<8.2f} {:>8.1f} {:>8.2f} {:>6.3f} ({:.2f}..{:.2f}) {:>7.2f}\n", v.label,
                 t * 1e3, *lo * 1e3, *hi * 1e3, flops / t * 1e-9, flops / t / peak, median_of(ratio), *rlo, *rhi,
                 (t0 - t) / (t0 - t_peak));
    }
    fmt::print("(ms: the median round; first / this: per round, median (min..max); of gap: (first's time - this "
               "one's) over (first's time - the time at the peak, {:.2f} ms); load average {})\n",
               t_peak * 1e3, bench::load_average());
  } catch (const UsageError& e) {
    fmt::print(stderr, "kernel_phases: {}\n", e.what());
    return 2;
  } catch (const CompileError& e) {  // a variant's defines that the kernel does not compile with
    fmt::print(stderr, "kernel_phases: {}\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {  // std::stod / stoll on a value that is not a number
    fmt::print(stderr, "kernel_phases: a value is not a number ({}): give NAME=NUMBER\n", e.what());
    return 2;
  }
  return 0;
}
