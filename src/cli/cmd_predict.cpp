// `kforge predict`: train a performance model (--train) from a recorded space or the store,
// predict one configuration's time with its interval, or rank a space's configurations (--rank).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cli/store_options.hpp"
#include "predict/store_data.hpp"
#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/store.hpp"
#include "kforge/util.hpp"

namespace kforge::cli {
namespace {

struct Opts {
  std::string problem, sizes, params, model, space, db, out, kernel, backend, lang = "cpp", dtype = "fp32";
  bool train = false, rank = false, best = false, json = false;
  int top = 10, cv = 0, representatives = 0, neighbours = 0;
  std::uint64_t seed = 1;
  ModelOptions mo;
};

// The data to train on: a Kernel Tuner cache file, or the store's evaluations of one problem
// exported as one (the same shape, so both train the same way).
RecordedSpace training_space(const Opts& o) {
  if (!o.space.empty()) return RecordedSpace::load(o.space);
  if (o.problem.empty()) throw UsageError("--train needs --space CACHE.json, or --db DB with a PROBLEM");
  const Store store(store_path(o.db), Store::Mode::read_only);
  StoreQuery q;
  q.problem = o.problem;
  q.backend = o.backend;
  q.kernel = o.kernel;
  const auto es = store.evaluations(q);
  if (es.empty()) throw UsageError("the store " + store_path(o.db).string() + " has no evaluations of " + o.problem);
  return RecordedSpace::from_json(nlohmann::json::parse(export_kerneltuner(store, es)), store_path(o.db).string());
}

// Across sizes: PROBLEM with --space A.json,B.json,... (a list: kforge's records, which carry their
// sizes): every row gets the problem's features at its space's sizes, so the model learns how
// time, and the best configuration, move with size (`predict PROBLEM --sizes S --best`).
int run_train_sized(const Opts& o) {
  const auto problem = find_problem(o.problem);
  const DType dtype = parse_dtype(o.dtype);
  Dataset d;
  nlohmann::json sources = nlohmann::json::array();
  for (const std::string& raw : split(o.space, ',')) {
    const std::string path = trim(raw);
    if (path.empty()) continue;
    const RecordedSpace r = RecordedSpace::load(path);
    if (r.sizes.empty())
      throw UsageError(path + " does not say its sizes (kforge's `tune --record` files do); train on it without a "
                       "PROBLEM for a model of that one size");
    const Sizes sizes = problem->resolve_sizes(r.sizes);
    const Dataset part = sized_dataset(r, problem_features(*problem, sizes, dtype));
    d.rows.insert(d.rows.end(), part.rows.begin(), part.rows.end());
    d.time_ms.insert(d.time_ms.end(), part.time_ms.begin(), part.time_ms.end());
    sources.push_back({{"file", path}, {"sizes", format_sizes(sizes)}, {"configurations", part.rows.size()}});
  }
  if (sources.size() < 2)
    throw UsageError("--train across sizes needs two or more recorded spaces: --space A.json,B.json (one per size)");
  PerfModel m = PerfModel::train(d.rows, d.time_ms, o.mo);
  m.annotate("source", {{"problem", problem->name()}, {"dtype", o.dtype}, {"spaces", sources}});
  m.save(o.out);
  nlohmann::json doc{{"model", o.out}, {"info", m.info()}, {"features", m.feature_names()}};
  if (o.cv > 0)
    for (const auto& f : cross_validate(d, o.cv, o.mo)) doc["cv"].push_back({{"mape", f.mape}, {"spearman", f.spearman}});
  if (o.json) { fmt::print("{}\n", doc.dump(2)); return kExitPassed; }
  fmt::print("trained a {} model of log(time) on {} configurations of {} at {} sizes, {} features -> {}\n", o.mo.kind,
             d.rows.size(), problem->name(), sources.size(), m.feature_names().size(), o.out);
  for (std::size_t k = 0; doc.contains("cv") && k < doc["cv"].size(); ++k)
    fmt::print("  fold {}: MAPE {:.1f}%, Spearman {:.3f}\n", k + 1, 100 * doc["cv"][k]["mape"].get<double>(),
               doc["cv"][k]["spearman"].get<double>());
  return kExitPassed;
}

// PROBLEM --train --db with passed evaluations at two or more sizes: the rows straight from the
// store (sizes, parameters, median times), the problem's features at each row's sizes joined with
// the configuration's, as run_train_sized builds them from records. One size: the path below.
std::optional<int> run_train_store_sized(const Opts& o) {
  const auto problem = find_problem(o.problem);
  const Store store(store_path(o.db), Store::Mode::read_only);
  StoreQuery q;
  q.problem = o.problem;
  q.backend = o.backend;
  q.kernel = o.kernel;
  const StoreDataset sd = store_dataset(*problem, parse_dtype(o.dtype), store.evaluations(q));
  if (sd.sizes.size() < 2) return std::nullopt;
  PerfModel m = PerfModel::train(sd.data.rows, sd.data.time_ms, o.mo);
  nlohmann::json sizes = nlohmann::json::array();
  for (const Sizes& s : sd.sizes) sizes.push_back(format_sizes(s));
  m.annotate("source", {{"problem", problem->name()}, {"dtype", o.dtype}, {"store", store_path(o.db).string()},
                        {"sizes", sizes}, {"evaluations", sd.data.rows.size()}});
  m.save(o.out);
  nlohmann::json doc{{"model", o.out}, {"info", m.info()}, {"features", m.feature_names()},
                     {"sizes", sizes}, {"rows", sd.data.rows.size()}, {"skipped", sd.skipped}};
  if (o.cv > 0)
    for (const auto& f : cross_validate(sd.data, o.cv, o.mo)) doc["cv"].push_back({{"mape", f.mape}, {"spearman", f.spearman}});
  if (o.json) { fmt::print("{}\n", doc.dump(2)); return kExitPassed; }
  fmt::print("trained a {} model of log(time) on {} stored evaluations of {} at {} sizes ({} left out: not passed, "
             "untimed or another dtype), {} features -> {}\n", o.mo.kind, sd.data.rows.size(), problem->name(),
             sd.sizes.size(), sd.skipped, m.feature_names().size(), o.out);
  for (std::size_t k = 0; doc.contains("cv") && k < doc["cv"].size(); ++k)
    fmt::print("  fold {}: MAPE {:.1f}%, Spearman {:.3f}\n", k + 1, 100 * doc["cv"][k]["mape"].get<double>(),
               doc["cv"][k]["spearman"].get<double>());
  return kExitPassed;
}

int run_train(const Opts& o) {
  if (o.out.empty()) throw UsageError("--train needs --out MODEL.json");
  if (!o.problem.empty() && o.space.find(',') != std::string::npos) return run_train_sized(o);
  if (!o.problem.empty() && o.space.empty())
    if (const auto done = run_train_store_sized(o)) return *done;
  const RecordedSpace r = training_space(o);
  const Dataset d = dataset(r);
  const PerfModel m = PerfModel::train(r, o.mo);
  m.save(o.out);
  nlohmann::json doc{{"model", o.out}, {"info", m.info()}, {"features", m.feature_names()}};
  if (o.cv > 0) {
    const std::vector<FoldScore> folds = cross_validate(d, o.cv, o.mo);
    for (const auto& f : folds) doc["cv"].push_back({{"mape", f.mape}, {"spearman", f.spearman}});
  }
  if (o.json) { fmt::print("{}\n", doc.dump(2)); return kExitPassed; }
  fmt::print("trained a {} model of log(time) on {} configurations of {} ({}), {} features -> {}\n", o.mo.kind,
             d.rows.size(), r.kernel.empty() ? r.path : r.kernel, r.device.empty() ? "?" : r.device,
             m.feature_names().size(), o.out);
  if (doc.contains("cv"))
    for (std::size_t k = 0; k < doc["cv"].size(); ++k)
      fmt::print("  fold {}: MAPE {:.1f}%, Spearman {:.3f}\n", k + 1, 100 * doc["cv"][k]["mape"].get<double>(),
                 doc["cv"][k]["spearman"].get<double>());
  return kExitPassed;
}

// The space to rank: a recorded one (its recorded times shown beside), or a library kernel's at
// --sizes (a model trained across sizes predicts at those sizes: parameter prediction).
int run_rank(const Opts& o, const PerfModel& m) {
  std::optional<RecordedSpace> rec;
  Space space;
  std::vector<double> p;
  std::string where;  // " at M=..,N=.." for a library kernel's space
  if (!o.space.empty()) {
    rec = RecordedSpace::load(o.space);
    space = rec->space;
    p = m.predict_space(space);
  } else {
    if (o.problem.empty()) throw UsageError(std::string(o.best ? "--best" : "--rank") + " needs a PROBLEM (or --space CACHE.json)");
    const auto problem = find_problem(o.problem);
    const Sizes sizes = problem->resolve_sizes(parse_assignments(o.sizes));
    space = Space::from_kernel(library_kernel(*problem, parse_lang(o.lang), sizes), sizes);
    where = " at " + format_sizes(sizes);
    if (space.size() == 0) throw UsageError("the kernel of " + problem->name() + " has no valid configuration at " + format_sizes(sizes));
    if (knows_sizes(m)) {
      p = predict_space_at(m, problem_features(*problem, sizes, parse_dtype(o.dtype)), space);
    } else {
      if (o.best && !o.json)
        fmt::print("note: {} was trained at one size (no size features): it ranks as at that size\n", o.model);
      p = m.predict_space(space);
    }
  }
  std::vector<std::size_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  idx.resize(std::min<std::size_t>(idx.size(), static_cast<std::size_t>(std::max(o.top, 1))));
  nlohmann::json doc = nlohmann::json::array();
  for (std::size_t r : idx) {
    nlohmann::json e{{"config", space.label(space.at(r))}, {"predicted_ms", std::exp(p[r])}};
    if (rec && rec->time_ms[r]) e["recorded_ms"] = *rec->time_ms[r];
    doc.push_back(e);
  }
  if (o.json) { fmt::print("{}\n", doc.dump(2)); return kExitPassed; }
  fmt::print("{} configurations{}, the {} predicted fastest:\n{:>4} {:>12}{} configuration\n", space.size(), where, idx.size(), "#",
             "predicted ms", rec ? fmt::format(" {:>12}", "recorded ms") : "");
  for (std::size_t i = 0; i < doc.size(); ++i)
    fmt::print("{:>4} {:>12.4g}{} {}\n", i + 1, doc[i]["predicted_ms"].get<double>(),
               rec ? (doc[i].contains("recorded_ms") ? fmt::format(" {:>12.4g}", doc[i]["recorded_ms"].get<double>())
                                                     : fmt::format(" {:>12}", "failed"))
                   : "",
               doc[i]["config"].get<std::string>());
  return kExitPassed;
}

// One configuration: --params, completed by the library kernel's defaults when a PROBLEM is given.
int run_one(const Opts& o, const PerfModel& m) {
  if (o.params.empty() && o.problem.empty()) throw UsageError("predict needs --params NAME=V,... (or a PROBLEM), --rank or --train");
  std::vector<std::pair<std::string, double>> named;
  if (!o.problem.empty()) {
    const auto problem = find_problem(o.problem);
    const Sizes sizes = problem->resolve_sizes(parse_assignments(o.sizes));
    for (const auto& [k, v] : library_kernel(*problem, parse_lang(o.lang), sizes).resolve(parse_assignments(o.params)))
      named.emplace_back(k, static_cast<double>(v));
  } else {
    for (const auto& [k, v] : parse_assignments(o.params)) named.emplace_back(k, static_cast<double>(v));
  }
  const Prediction p = m.predict(param_features(named));
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"predicted_ms", p.time_ms}, {"interval_ms", {p.lo_ms, p.hi_ms}},
                                      {"interval", m.info().value("interval", nlohmann::json())}}.dump(2));
    return kExitPassed;
  }
  fmt::print("predicted {:.4g} ms (80% interval {:.4g} .. {:.4g} ms, from cross-validation residuals)\n", p.time_ms,
             p.lo_ms, p.hi_ms);
  return kExitPassed;
}

// Kernel similarity on a recorded space: k representatives (with the estimate of the total
// time they give, against the recorded total), or the nearest neighbours of --params.
int run_similarity(const Opts& o) {
  if (o.space.empty()) throw UsageError("--representatives and --neighbours need --space CACHE.json");
  const RecordedSpace r = RecordedSpace::load(o.space);
  const Dataset d = dataset(r);
  if (d.rows.empty()) throw UsageError(o.space + " has no configuration with a recorded time");
  const Embedding e = embed(d.rows);
  std::vector<std::string> labels;  // the configurations with a time, in the data set's order
  for (std::size_t k = 0; k < r.space.size(); ++k)
    if (r.time_ms[k]) labels.push_back(r.space.label(r.space.at(k)));
  nlohmann::json doc;
  if (o.representatives > 0) {
    const Representatives rep = representatives(e, static_cast<std::size_t>(o.representatives), o.seed);
    const double truth = std::accumulate(d.time_ms.begin(), d.time_ms.end(), 0.0);
    const double estimate = estimate_total(rep, d.time_ms);
    for (std::size_t i = 0; i < rep.members.size(); ++i)
      doc["representatives"].push_back({{"config", labels[rep.members[i]]}, {"weight", rep.weights[i]},
                                        {"recorded_ms", d.time_ms[rep.members[i]]}});
    doc["estimated_total_ms"] = estimate;
    doc["recorded_total_ms"] = truth;
    doc["relative_error"] = estimate / truth - 1;
  } else {
    std::vector<std::pair<std::string, double>> named;
    for (const auto& [k, v] : parse_assignments(o.params)) named.emplace_back(k, static_cast<double>(v));
    const Features f = param_features(named);
    std::optional<std::size_t> at;
    for (std::size_t i = 0; i < d.rows.size() && !at; ++i)
      if (d.rows[i].values == f.values && d.rows[i].names == f.names) at = i;
    if (!at) throw UsageError("--params is not a configuration of " + o.space + " with a recorded time (give every parameter)");
    for (std::size_t i : nearest(e, e.points[*at], static_cast<std::size_t>(o.neighbours) + 1))
      if (i != *at) doc["neighbours"].push_back({{"config", labels[i]}, {"recorded_ms", d.time_ms[i]}});
  }
  if (o.json) { fmt::print("{}\n", doc.dump(2)); return kExitPassed; }
  for (const auto& x : doc.value("representatives", nlohmann::json::array()))
    fmt::print("  x{:<6} {:>12.4g} ms  {}\n", x["weight"].get<std::size_t>(), x["recorded_ms"].get<double>(),
               x["config"].get<std::string>());
  for (const auto& x : doc.value("neighbours", nlohmann::json::array()))
    fmt::print("  {:>12.4g} ms  {}\n", x["recorded_ms"].get<double>(), x["config"].get<std::string>());
  if (doc.contains("estimated_total_ms"))
    fmt::print("total time estimated from {} runs: {:.6g} ms; recorded: {:.6g} ms ({:+.1f}%)\n",
               doc["representatives"].size(), doc["estimated_total_ms"].get<double>(), doc["recorded_total_ms"].get<double>(),
               100 * doc["relative_error"].get<double>());
  return kExitPassed;
}

}  // namespace

void add_predict(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand("predict", "predict a configuration's time from a model; train a model; rank a space");
  auto o = std::make_shared<Opts>();
  cmd->add_option("problem", o->problem, "a problem (its library kernel's defaults fill --params; with --train --db: "
                                          "the problem whose stored evaluations train, across sizes where they hold two or more)");
  cmd->add_option("--params,-p", o->params, "the configuration, e.g. block_size_x=32,tile_size_x=2");
  cmd->add_option("--sizes,-s", o->sizes, "sizes of the PROBLEM");
  cmd->add_option("--model,-m", o->model, "the model file (from --train)");
  cmd->add_flag("--train", o->train, "train a model and write it to --out");
  cmd->add_flag("--rank", o->rank, "rank the configurations of --space or of the PROBLEM's kernel by predicted time");
  cmd->add_option("--space", o->space, "a recorded space (Kernel Tuner cache JSON): train on it, or rank it; "
                  "PROBLEM --train --space A.json,B.json: train across sizes on kforge's records of several sizes");
  cmd->add_flag("--best", o->best, "PROBLEM --sizes S: the configuration predicted fastest at those sizes "
                "(a model trained across sizes predicts sizes never tuned)");
  cmd->add_option("--dtype", o->dtype, "the element type the size features count bytes in")->capture_default_str();
  add_db_option(*cmd, o->db);
  cmd->add_option("--backend,-b", o->backend, "--train --db: only this backend's evaluations");
  cmd->add_option("--kernel", o->kernel, "--train --db: only this kernel's evaluations");
  cmd->add_option("--kernel-lang", o->lang, "whose library kernel: cpp, opencl or cuda")->capture_default_str();
  cmd->add_option("--out,-o", o->out, "--train: write the model here");
  cmd->add_option("--kind", o->mo.kind, "--train: gbt (gradient-boosted trees) or forest (random forest)")
      ->check(CLI::IsMember({"gbt", "forest"}))->capture_default_str();
  cmd->add_option("--trees", o->mo.trees, "--train: trees (boosting rounds, or the forest's size)")->capture_default_str();
  cmd->add_option("--cv", o->cv, "--train: also report k-fold cross-validation (e.g. 5)");
  cmd->add_option("--top", o->top, "--rank: how many to print")->capture_default_str();
  cmd->add_option("--representatives", o->representatives, "with --space: K configurations that stand for the "
                  "whole space (stratified over K clusters of similar ones), and the total time they estimate");
  cmd->add_option("--neighbours", o->neighbours, "with --space and --params: the N most similar configurations");
  cmd->add_option("--seed", o->seed, "--representatives: the clustering's and the draws' seed")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o, &code] {
    if (o->train) { code = run_train(*o); return; }
    if (o->representatives > 0 || o->neighbours > 0) { code = run_similarity(*o); return; }
    if (o->model.empty()) throw UsageError("predict needs --model FILE (train one with --train --space CACHE.json --out FILE)");
    const PerfModel m = PerfModel::load(o->model);
    if (o->best) o->top = 1;
    code = o->rank || o->best ? run_rank(*o, m) : run_one(*o, m);
  });
}

}  // namespace kforge::cli
