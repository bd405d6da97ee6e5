// Parameter prediction for sizes never tuned, on the CPU backend: the regret of the
// configuration a model predicts fastest at a held-out size, against reusing the nearest tuned
// size's winner. CPU timings are CPU timings: the figures describe this machine.
//
// Per family, a small space (a few values of the parameters that size moves, the rest at their
// defaults) is timed exhaustively at every size, `--rounds` times, the rounds interleaved
// (round, size, configuration). Per round and per held-out size (interior sizes only: trees do
// not extrapolate), a gbt model of log(time) is trained on the other sizes' rows (the problem's
// features at its sizes joined with the configuration's) and picks the fastest predicted
// configuration at the held-out size; "nearest" takes the winner of the tuned size nearest in
// log2 of the sizes. Regret = that configuration's time / the fastest time at the held-out size,
// both from the same round's exhaustive timing (so regret >= 1). The table shows the median
// over rounds and the spread (min..max).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/predict.hpp"
#include "kforge/problem.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"
#include "kforge/measure.hpp"

namespace {

using namespace kforge;

struct Family {
  std::string problem, restrict_spec;
  std::vector<Sizes> sizes;
};

// gemm: the cache blocks decide how many blocks the 2 threads share and how the tiles fit;
// softmax: rows per block and the split of a row decide the same, with M x N fixed at 2^20.
std::vector<Family> families(const std::string& which) {
  std::vector<Family> out;
  if (which.find("gemm") != std::string::npos) {
    Family f{"gemm", "MC=48|96|192,NC=128|512|2048,KC=128|384", {}};
    for (std::int64_t n : {64, 96, 128, 192, 256, 384, 512}) f.sizes.push_back({{"M", n}, {"N", n}, {"K", n}});
    out.push_back(f);
  }
  if (which.find("softmax") != std::string::npos) {
    Family f{"softmax", "ROWS=1|4|16|64,SPLIT=1|4|64", {}};
    for (std::int64_t m = 16; m <= 16384; m *= 2) f.sizes.push_back({{"M", m}, {"N", (1 << 20) / m}});
    out.push_back(f);
  }
  return out;
}

std::string sizes_text(const Sizes& s) {
  std::string t;
  for (const auto& [k, v] : s) t += fmt::format("{}{}={}", t.empty() ? "" : ",", k, v);
  return t;
}

std::string params_text(const ParamValues& p, const ParamValues& shown) {
  std::string t;
  for (const auto& [k, v] : p)
    if (shown.count(k)) t += fmt::format("{}{}={}", t.empty() ? "" : ",", k, v);
  return t;
}

std::string spread(const std::vector<double>& v) {
  if (v.empty()) return "-";
  return fmt::format("{:.3f} ({:.3f}..{:.3f})", median_of(v), *std::min_element(v.begin(), v.end()),
                     *std::max_element(v.begin(), v.end()));
}

Features row_of(const Problem& p, const Sizes& s, const ParamValues& c) {
  std::vector<std::pair<std::string, double>> named;
  for (const auto& [k, v] : c) named.emplace_back(k, static_cast<double>(v));
  return join(problem_features(p, s, DType::fp32), param_features(named));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"regret of predicted parameters at sizes never tuned, against the nearest tuned size's winner"};
  int rounds = 3, threads = 2;
  std::string which = "gemm,softmax", json_path;
  app.add_option("--rounds", rounds, "exhaustive timings of every size")->capture_default_str();
  app.add_option("--threads", threads, "cpu backend threads")->capture_default_str();
  app.add_option("--families", which, "gemm, softmax or both")->capture_default_str();
  app.add_option("--json", json_path, "write every round's times and picks here");
  CLI11_PARSE(app, argc, argv);

  auto backend = make_backend("cpu", {.threads = threads});
  nlohmann::json doc = nlohmann::json::array();
  fmt::print("| family | held-out sizes | model's pick (round 1) | regret: model | nearest's pick (round 1) | regret: nearest |\n"
             "|---|---|---|---:|---|---:|\n");
  for (const Family& f : families(which)) {
    const auto problem = find_problem(f.problem);
    const std::size_t ns = f.sizes.size();
    // The configurations valid at each size, and their times: [round][size][config].
    std::vector<std::vector<ParamValues>> configs(ns);
    std::vector<KernelSpec> kernels(ns);
    ParamValues shown;  // the parameters the family varies, for the table
    for (const auto& item : split(f.restrict_spec, ',')) shown[item.substr(0, item.find('='))] = 0;
    for (std::size_t s = 0; s < ns; ++s) {
      const KernelSpec k = library_kernel(*problem, Lang::cpp, problem->resolve_sizes(f.sizes[s]));
      std::string spec = f.restrict_spec;  // every other parameter at its default
      for (const Param& p : k.params)
        if (!shown.count(p.name))
          spec += fmt::format(",{}={}", p.name, k.defaults.count(p.name) ? k.defaults.at(p.name) : p.values.front());
      kernels[s] = restrict_space(k, spec);
      configs[s] = valid_configs(kernels[s], problem->resolve_sizes(f.sizes[s]));
    }
    using Times = std::vector<std::vector<std::optional<double>>>;
    std::vector<Times> t(rounds, Times(ns));
    for (int r = 0; r < rounds; ++r)
      for (std::size_t s = 0; s < ns; ++s) {
        for (const ParamValues& c : configs[s]) {
          EvalRequest req;
          req.problem = f.problem;
          req.kernel = kernels[s];
          req.sizes = problem->resolve_sizes(f.sizes[s]);
          req.params = c;
          req.backend = "cpu";
          req.backend_options.threads = threads;
          req.verify.thorough = false;
          req.verify.trials = 1;
          req.bench = true;
          req.measure.min_time_s = 0.05;
          req.measure.max_time_s = 0.5;
          const EvalResult e = evaluate(req, *backend);
          t[r][s].push_back(e.passed() && e.timing ? std::optional<double>(e.timing->median_s * 1e3) : std::nullopt);
        }
        fmt::print(stderr, "{} round {} size {} done\n", f.problem, r + 1, sizes_text(f.sizes[s]));
      }
    auto best_of = [&](int r, std::size_t s) {
      std::optional<std::size_t> b;
      for (std::size_t i = 0; i < configs[s].size(); ++i)
        if (t[r][s][i] && (!b || *t[r][s][i] < *t[r][s][*b])) b = i;
      return b;
    };
    std::vector<double> all_model, all_nearest;
    for (std::size_t h = 1; h + 1 < ns; ++h) {
      std::vector<double> reg_model, reg_nearest;
      std::string pick_model, pick_nearest;
      for (int r = 0; r < rounds; ++r) {
        const auto truth = best_of(r, h);
        if (!truth) continue;
        Dataset d;
        std::vector<Sizes> tuned;
        std::vector<std::size_t> tuned_index;
        for (std::size_t s = 0; s < ns; ++s) {
          if (s == h) continue;
          tuned.push_back(f.sizes[s]);
          tuned_index.push_back(s);
          for (std::size_t i = 0; i < configs[s].size(); ++i)
            if (t[r][s][i]) {
              d.rows.push_back(row_of(*problem, problem->resolve_sizes(f.sizes[s]), configs[s][i]));
              d.time_ms.push_back(*t[r][s][i]);
            }
        }
        ModelOptions mo;
        mo.interval = false;
        const PerfModel m = PerfModel::train(d.rows, d.time_ms, mo);
        std::vector<Features> rows;
        for (const ParamValues& c : configs[h]) rows.push_back(row_of(*problem, problem->resolve_sizes(f.sizes[h]), c));
        const std::size_t pm = argmin(m.predict_log(rows));
        // A configuration that failed at the held-out size counts as infinitely slow.
        const double best_ms = *t[r][h][*truth];
        reg_model.push_back(t[r][h][pm] ? *t[r][h][pm] / best_ms : std::numeric_limits<double>::infinity());
        const std::size_t near = tuned_index[nearest_size(tuned, f.sizes[h])];
        const auto near_best = best_of(r, near);
        double rn = std::numeric_limits<double>::infinity();
        std::string near_text = "none";
        if (near_best) {
          const ParamValues& c = configs[near][*near_best];
          near_text = params_text(c, shown);
          const auto at = std::find(configs[h].begin(), configs[h].end(), c);
          if (at != configs[h].end() && t[r][h][at - configs[h].begin()]) rn = *t[r][h][at - configs[h].begin()] / best_ms;
        }
        reg_nearest.push_back(rn);
        if (r == 0) pick_model = params_text(configs[h][pm], shown), pick_nearest = near_text;
        doc.push_back({{"family", f.problem}, {"sizes", sizes_text(f.sizes[h])}, {"round", r + 1},
                       {"best", params_text(configs[h][*truth], shown)}, {"best_ms", best_ms},
                       {"model_pick", params_text(configs[h][pm], shown)}, {"model_regret", reg_model.back()},
                       {"nearest_size", sizes_text(f.sizes[near])}, {"nearest_pick", near_text},
                       {"nearest_regret", rn}});
      }
      all_model.insert(all_model.end(), reg_model.begin(), reg_model.end());
      all_nearest.insert(all_nearest.end(), reg_nearest.begin(), reg_nearest.end());
      fmt::print("| {} | {} | {} | {} | {} | {} |\n", f.problem, sizes_text(f.sizes[h]), pick_model, spread(reg_model),
                 pick_nearest, spread(reg_nearest));
    }
    auto geo = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += std::log(x);
      return v.empty() ? 0.0 : std::exp(s / static_cast<double>(v.size()));
    };
    fmt::print("| {} | all held-out sizes, geometric mean over sizes and rounds | | {:.3f} | | {:.3f} |\n", f.problem,
               geo(all_model), geo(all_nearest));
  }
  if (!json_path.empty()) std::ofstream(json_path) << doc.dump(1) << "\n";
  return 0;
}
