// PerfModel: XGBoost trees over configuration features, predicting log(time). The file is JSON:
// kforge's header (feature names, interval, provenance) with XGBoost's own JSON model inside,
// so a model is readable, diffable and loads on any XGBoost >= 1.7.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "kforge/error.hpp"
#include "kforge/predict.hpp"
#include "kforge/replay.hpp"
#include "kforge/space.hpp"

#ifdef KFORGE_WITH_XGBOOST
#include <xgboost/c_api.h>
#endif

namespace kforge {

namespace {
constexpr int kFormat = 1;
[[noreturn, maybe_unused]] void no_xgboost() {  // used only without XGBoost
  throw UsageError("this kforge was built without XGBoost: install libxgboost-dev (tools/install-deps) and reconfigure");
}
}  // namespace

#ifdef KFORGE_WITH_XGBOOST
namespace {
void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("XGBoost ") + what + ": " + XGBGetLastError());
}
struct Matrix {
  DMatrixHandle h = nullptr;
  Matrix(const std::vector<float>& data, std::size_t rows, std::size_t cols) {
    check(XGDMatrixCreateFromMat(data.data(), rows, cols, std::nanf(""), &h), "matrix");
  }
  ~Matrix() { if (h) XGDMatrixFree(h); }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
};
}  // namespace

struct PerfModel::Booster {
  BoosterHandle h = nullptr;
  ~Booster() { if (h) XGBoosterFree(h); }
};
#else
struct PerfModel::Booster {};
#endif

PerfModel::PerfModel() = default;
PerfModel::~PerfModel() { delete booster_; }
PerfModel::PerfModel(PerfModel&& o) noexcept
    : booster_(o.booster_), names_(std::move(o.names_)), res_lo_(o.res_lo_), res_hi_(o.res_hi_), info_(std::move(o.info_)) {
  o.booster_ = nullptr;
}
PerfModel& PerfModel::operator=(PerfModel&& o) noexcept {
  if (this != &o) {
    delete booster_;
    booster_ = o.booster_;
    o.booster_ = nullptr;
    names_ = std::move(o.names_);
    res_lo_ = o.res_lo_;
    res_hi_ = o.res_hi_;
    info_ = std::move(o.info_);
  }
  return *this;
}

namespace {

// Rows as a dense float matrix in the model's feature order; a missing feature is an error.
std::vector<float> matrix_of(const std::vector<Features>& rows, const std::vector<std::string>& names) {
  std::vector<float> data(rows.size() * names.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Features& f = rows[r];
    if (f.names == names) {  // the common case: the same space
      for (std::size_t c = 0; c < names.size(); ++c) data[r * names.size() + c] = static_cast<float>(f.values[c]);
      continue;
    }
    std::map<std::string, double> by;
    for (std::size_t i = 0; i < f.names.size(); ++i) by[f.names[i]] = f.values[i];
    std::string missing;
    for (std::size_t c = 0; c < names.size(); ++c) {
      auto it = by.find(names[c]);
      if (it == by.end()) missing += (missing.empty() ? "" : ", ") + names[c];
      else data[r * names.size() + c] = static_cast<float>(it->second);
    }
    if (!missing.empty())
      throw UsageError("the model needs features that were not given: " + missing +
                       " (pass every parameter the model was trained on, e.g. --params NAME=V,...)");
  }
  return data;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto i = static_cast<std::size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

}  // namespace

PerfModel PerfModel::train(const std::vector<Features>& rows, const std::vector<double>& time_ms, const ModelOptions& o) {
#ifndef KFORGE_WITH_XGBOOST
  (void)rows, (void)time_ms, (void)o;
  no_xgboost();
#else
  if (rows.size() != time_ms.size()) throw UsageError("training rows and times differ in number");
  if (rows.size() < 5) throw UsageError("a model needs at least 5 configurations with a recorded time, got " + std::to_string(rows.size()));
  if (o.kind != "gbt" && o.kind != "forest") throw UsageError("unknown model kind '" + o.kind + "': use gbt or forest");
  PerfModel m;
  m.names_ = rows.front().names;
  const std::vector<float> data = matrix_of(rows, m.names_);
  std::vector<float> label(time_ms.size());
  for (std::size_t i = 0; i < time_ms.size(); ++i) {
    if (!(time_ms[i] > 0)) throw UsageError("training times must be positive");
    label[i] = static_cast<float>(std::log(time_ms[i]));
  }
  Matrix x(data, rows.size(), m.names_.size());
  check(XGDMatrixSetFloatInfo(x.h, "label", label.data(), label.size()), "labels");
  m.booster_ = new Booster;
  check(XGBoosterCreate(&x.h, 1, &m.booster_->h), "create");
  auto set = [&](const char* k, const std::string& v) { check(XGBoosterSetParam(m.booster_->h, k, v.c_str()), k); };
  set("objective", "reg:squarederror");
  set("tree_method", "hist");
  set("max_depth", std::to_string(o.depth));
  set("nthread", std::to_string(o.threads));
  set("seed", std::to_string(o.seed));
  set("verbosity", "0");
  int rounds = o.trees;
  if (o.kind == "forest") {  // XGBoost's random forest: one round of many randomized trees
    set("num_parallel_tree", std::to_string(o.trees));
    set("subsample", "0.8");
    set("colsample_bynode", "0.8");
    set("eta", "1");
    set("max_depth", std::to_string(std::max(o.depth, 10)));
    rounds = 1;
  } else {
    set("eta", std::to_string(o.learning_rate));
  }
  for (int i = 0; i < rounds; ++i) check(XGBoosterUpdateOneIter(m.booster_->h, i, x.h), "training");
  m.info_ = {{"kind", o.kind}, {"trees", o.trees}, {"depth", o.depth}, {"rows", rows.size()}, {"target", "log(time_ms)"}};

  if (o.interval && rows.size() >= 25) {  // out-of-fold residuals of 5-fold cross-validation
    ModelOptions inner = o;
    inner.interval = false;
    std::vector<std::size_t> idx(rows.size());
    std::iota(idx.begin(), idx.end(), 0);
    SearchRng rng(o.seed);
    for (std::size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng.below(i)]);
    std::vector<double> res;
    for (int k = 0; k < 5; ++k) {
      std::vector<Features> tr, te;
      std::vector<double> ttr, tte;
      for (std::size_t i = 0; i < idx.size(); ++i)
        (static_cast<int>(i % 5) == k ? te : tr).push_back(rows[idx[i]]),
            (static_cast<int>(i % 5) == k ? tte : ttr).push_back(time_ms[idx[i]]);
      const std::vector<double> p = train(tr, ttr, inner).predict_log(te);
      for (std::size_t i = 0; i < p.size(); ++i) res.push_back(std::log(tte[i]) - p[i]);
    }
    m.res_lo_ = quantile(res, 0.1);
    m.res_hi_ = quantile(res, 0.9);
    m.info_["interval"] = {{"kind", "80% of 5-fold out-of-fold log residuals (10%..90% quantiles)"},
                           {"log_lo", m.res_lo_}, {"log_hi", m.res_hi_}};
  }
  return m;
#endif
}

std::vector<double> PerfModel::predict_log(const std::vector<Features>& rows) const {
#ifndef KFORGE_WITH_XGBOOST
  (void)rows;
  no_xgboost();
#else
  if (!booster_) throw UsageError("the model is empty: train or load one first");
  if (rows.empty()) return {};
  const std::vector<float> data = matrix_of(rows, names_);
  Matrix x(data, rows.size(), names_.size());
  bst_ulong len = 0;
  const float* out = nullptr;
  check(XGBoosterPredict(booster_->h, x.h, 0, 0, 0, &len, &out), "prediction");
  return std::vector<double>(out, out + len);
#endif
}

Prediction PerfModel::predict(const Features& f) const {
  const double l = predict_log({f}).at(0);
  return {std::exp(l), std::exp(l + res_lo_), std::exp(l + res_hi_)};
}

std::vector<double> PerfModel::predict_space(const Space& s) const {
  std::vector<Features> rows;
  rows.reserve(s.size());
  for (std::uint64_t r = 0; r < s.size(); ++r) rows.push_back(config_features(s, s.at(r)));
  return predict_log(rows);
}

void PerfModel::save(const std::string& path) const {
#ifndef KFORGE_WITH_XGBOOST
  (void)path;
  no_xgboost();
#else
  if (!booster_) throw UsageError("the model is empty: nothing to save");
  bst_ulong len = 0;
  const char* buf = nullptr;
  check(XGBoosterSaveModelToBuffer(booster_->h, R"({"format": "json"})", &len, &buf), "save");
  nlohmann::json j{{"kforge_model", kFormat}, {"features", names_}, {"res_lo", res_lo_}, {"res_hi", res_hi_},
                   {"info", info_}, {"xgboost", nlohmann::json::parse(std::string(buf, len))}};
  std::ofstream out(path);
  if (!out) throw UsageError("cannot write the model file " + path);
  out << j.dump() << "\n";
#endif
}

PerfModel PerfModel::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot open the model file " + path + " (train one with `kforge predict --train ... --out FILE`)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw UsageError("the model file " + path + " is not JSON (" + e.what() + "): train it again with `kforge predict --train`");
  }
  if (!j.is_object() || j.value("kforge_model", 0) != kFormat || !j.contains("features") || !j.contains("xgboost"))
    throw UsageError("the model file " + path + " is not a kforge model (format " + std::to_string(kFormat) +
                     "): train it again with `kforge predict --train`");
#ifndef KFORGE_WITH_XGBOOST
  no_xgboost();
#else
  PerfModel m;
  try {
    m.names_ = j["features"].get<std::vector<std::string>>();
    m.res_lo_ = j.value("res_lo", 0.0);
    m.res_hi_ = j.value("res_hi", 0.0);
    m.info_ = j.value("info", nlohmann::json::object());
  } catch (const std::exception& e) {
    throw UsageError("the model file " + path + " has a malformed header (" + e.what() + ")");
  }
  const std::string text = j["xgboost"].dump();
  m.booster_ = new Booster;
  check(XGBoosterCreate(nullptr, 0, &m.booster_->h), "create");
  if (XGBoosterLoadModelFromBuffer(m.booster_->h, text.data(), text.size()) != 0)
    throw UsageError("the model file " + path + " holds no readable XGBoost model: " + XGBGetLastError());
  return m;
#endif
}

Dataset dataset(const RecordedSpace& r) {
  Dataset d;
  for (std::uint64_t i = 0; i < r.space.size(); ++i)
    if (r.time_ms[i] && *r.time_ms[i] > 0) {
      d.rows.push_back(config_features(r.space, r.space.at(i)));
      d.time_ms.push_back(*r.time_ms[i]);
    }
  return d;
}

PerfModel PerfModel::train(const RecordedSpace& r, const ModelOptions& o) {
  const Dataset d = dataset(r);
  PerfModel m = train(d.rows, d.time_ms, o);
  m.info_["source"] = {{"file", r.path}, {"device", r.device}, {"kernel", r.kernel}};
  return m;
}

std::vector<FoldScore> cross_validate(const Dataset& d, int folds, const ModelOptions& o) {
  if (folds < 2 || static_cast<std::size_t>(folds) > d.rows.size())
    throw UsageError("cross-validation needs 2..rows folds");
  std::vector<std::size_t> idx(d.rows.size());
  std::iota(idx.begin(), idx.end(), 0);
  SearchRng rng(o.seed);
  for (std::size_t i = idx.size(); i > 1; --i) std::swap(idx[i - 1], idx[rng.below(i)]);
  ModelOptions inner = o;
  inner.interval = false;
  std::vector<FoldScore> out;
  for (int k = 0; k < folds; ++k) {
    Dataset tr, te;
    for (std::size_t i = 0; i < idx.size(); ++i) {
      Dataset& to = static_cast<int>(i % static_cast<std::size_t>(folds)) == k ? te : tr;
      to.rows.push_back(d.rows[idx[i]]);
      to.time_ms.push_back(d.time_ms[idx[i]]);
    }
    const std::vector<double> p = PerfModel::train(tr.rows, tr.time_ms, inner).predict_log(te.rows);
    std::vector<double> pt(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) pt[i] = std::exp(p[i]);
    out.push_back({mape(pt, te.time_ms), spearman(pt, te.time_ms)});
  }
  return out;
}

}  // namespace kforge
