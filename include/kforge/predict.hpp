#pragma once
// Prediction without running: features that need no hardware, a tree model of log(time) trained
// from a recorded space (a Kernel Tuner cache file, or the store exported as one), saved to a
// file and loaded at prediction time, and its cross-validated error.
//
// The model is XGBoost's (gradient-boosted trees, or a random forest through num_parallel_tree);
// it is built when libxgboost-dev is found (KFORGE_WITH_XGBOOST). Without it, features and
// cross-validation metrics still work and training or loading a model throws UsageError.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/dtype.hpp"
#include "kforge/problem.hpp"
#include "kforge/space.hpp"

namespace kforge {

struct RecordedSpace;

// Named numbers, in a fixed order.
struct Features {
  std::vector<std::string> names;
  std::vector<double> values;
  void add(const std::string& name, double v) { names.push_back(name); values.push_back(v); }
  [[nodiscard]] nlohmann::json to_json() const;
};

// Every parameter's value, plus derived ones where the parameter names allow: threads per block
// (block_size_x*y*z; CLBlast's MDIMC*NDIMC), tile area (tile_size_x*y; MWG*NWG), work per thread
// (tile area over threads, CLBlast) and the product of all vector widths (VWM*VWN).
[[nodiscard]] Features config_features(const Space& space, const Config& c);
[[nodiscard]] Features param_features(const std::vector<std::pair<std::string, double>>& params);
// Sizes, FLOPs, bytes, arithmetic intensity, reduction length and dtype (its bytes per element).
[[nodiscard]] Features problem_features(const Problem& p, const Sizes& s, DType t);
// The instruction mix of an x86-64 disassembly (`objdump -d --no-show-raw-insn`, AT&T syntax),
// its .text only: instructions, vector ones, vector FMAs, loads and stores (memory operands
// read, or written in the destination place), branches, calls, instructions per register width
// and the widest vector width used (bits). Static counts, not executed ones.
[[nodiscard]] Features instruction_mix(const std::string& disassembly);
// The instruction mix of a PTX module, static counts of the body of `.entry ENTRY` (the whole
// module, with ptx_whole_module = 1, when there is no entry of that name, e.g. a C++-linkage
// one): instructions, fma, global and shared loads and stores, vector (.v2/.v4) accesses,
// barriers, branches, special functions (ex2, rcp, sqrt, ...), atomics.
[[nodiscard]] Features ptx_instruction_mix(const std::string& ptx, const std::string& entry);
// The code features of a compiled object: objdump -d of the cpu backend's cached .so (throws
// UsageError without objdump), or the PTX mix of a cuda kernel's cached .ptx for `entry`.
[[nodiscard]] Features object_code_features(const std::string& object_file, const std::string& entry = {});

struct Prediction {
  double time_ms = 0, lo_ms = 0, hi_ms = 0;  // median guess and its interval (see PerfModel)
};

struct ModelOptions {
  std::string kind = "gbt";  // gbt: gradient-boosted trees; forest: a random forest
  int trees = 300, depth = 6, threads = 1;  // one thread: the host is shared, and results repeat
  double learning_rate = 0.1;
  std::uint64_t seed = 1;
  bool interval = true;  // 5-fold out-of-fold residuals give the interval (five more fits)
};

// A model of log(time) over a kernel's configuration features.
// The interval is [10%, 90%] quantiles of the out-of-fold log residuals of 5-fold cross-validation
// on the training set, applied around the prediction: an 80% interval for a configuration drawn
// like the training ones, not a per-point uncertainty.
class PerfModel {
 public:
  PerfModel();
  ~PerfModel();
  PerfModel(PerfModel&&) noexcept;
  PerfModel& operator=(PerfModel&&) noexcept;

  // Rows of features (names the same for every row) and times in ms (> 0). Throws UsageError
  // when fewer than 5 rows are given or the build has no XGBoost.
  static PerfModel train(const std::vector<Features>& rows, const std::vector<double>& time_ms,
                         const ModelOptions& o = {});
  // Every configuration of the space that has a recorded time.
  static PerfModel train(const RecordedSpace& r, const ModelOptions& o = {});
  // Throws UsageError naming the file when it is missing, unreadable or not a kforge model.
  static PerfModel load(const std::string& path);
  void save(const std::string& path) const;

  // Throws UsageError naming the missing features when `f` lacks one the model was trained on.
  [[nodiscard]] std::vector<double> predict_log(const std::vector<Features>& rows) const;
  [[nodiscard]] Prediction predict(const Features& f) const;
  // Predicted log(time) of every configuration of the space, by rank (for priors and --rank).
  [[nodiscard]] std::vector<double> predict_space(const Space& s) const;

  [[nodiscard]] const std::vector<std::string>& feature_names() const { return names_; }
  [[nodiscard]] const nlohmann::json& info() const { return info_; }  // kind, rows, interval, source
  void annotate(const std::string& key, nlohmann::json v) { info_[key] = std::move(v); }  // saved with it

 private:
  struct Booster;
  Booster* booster_ = nullptr;
  std::vector<std::string> names_;
  double res_lo_ = 0, res_hi_ = 0;  // log-residual quantiles of the interval
  nlohmann::json info_;
};

// Rank correlation (Spearman, ties averaged) and mean absolute percentage error.
[[nodiscard]] double spearman(const std::vector<double>& a, const std::vector<double>& b);
[[nodiscard]] double mape(const std::vector<double>& predicted, const std::vector<double>& truth);

// Features and recorded times of every configuration of a recorded space that has a time.
struct Dataset {
  std::vector<Features> rows;
  std::vector<double> time_ms;
};
[[nodiscard]] Dataset dataset(const RecordedSpace& r);

struct FoldScore {
  double mape = 0, spearman = 0;
};
// k-fold cross-validation within one data set (folds shuffled by `seed`): one score per fold.
[[nodiscard]] std::vector<FoldScore> cross_validate(const Dataset& d, int folds, const ModelOptions& o);

// Kernel similarity. An embedding of feature rows (configurations of one kernel, or any rows
// with the same feature names): each feature log-scaled where all its values are positive, then
// standardized; distances are Euclidean there. No time is looked at.
struct Embedding {
  std::vector<std::string> names;
  std::vector<std::vector<double>> points;  // one per row
};
[[nodiscard]] Embedding embed(const std::vector<Features>& rows);
// The `k` rows nearest `point` (a point of the embedding), nearest first.
[[nodiscard]] std::vector<std::size_t> nearest(const Embedding& e, const std::vector<double>& point, std::size_t k);
// k representatives: k clusters in the embedding (k-means++ seeding by `seed`, Lloyd's
// iterations), and from each cluster one member drawn at random, weighted by the cluster's size:
// stratified sampling, so the estimated total is unbiased and, where similar configurations
// take similar times, closer than k random draws. Fewer than k when the rows have fewer
// distinct points.
struct Representatives {
  std::vector<std::size_t> members;  // row indices
  std::vector<std::size_t> weights;  // rows each one stands for; they sum to the rows
};
[[nodiscard]] Representatives representatives(const Embedding& e, std::size_t k, std::uint64_t seed);
// The whole set's total time estimated from the representatives' times: sum of time x weight.
[[nodiscard]] double estimate_total(const Representatives& r, const std::vector<double>& time);

// Parameter prediction for sizes never tuned (src/predict/sizes.cpp). A model trained on
// several sizes' evaluations, each row the problem's features at its sizes followed by the
// configuration's, predicts every configuration of the space at a new size; the fastest
// predicted is the choice. Trees cannot extrapolate: sizes inside the tuned range predict best.
[[nodiscard]] Features join(const Features& a, const Features& b);
// Rows of every configuration of `r` with a time, each `problem` (the features of r's sizes)
// joined with the configuration's.
[[nodiscard]] Dataset sized_dataset(const RecordedSpace& r, const Features& problem);
// Predicted log(time) of every configuration of `space` (by rank) at the sizes `problem` describes.
[[nodiscard]] std::vector<double> predict_space_at(const PerfModel& m, const Features& problem, const Space& space);
// The rank of the configuration predicted fastest (the first of equals).
[[nodiscard]] std::size_t argmin(const std::vector<double>& v);
// The baseline of parameter prediction: the index of the tuned size nearest `target`, Euclidean
// over log2 of every size (a size missing on one side counts as 1). Throws when `tuned` is empty.
[[nodiscard]] std::size_t nearest_size(const std::vector<Sizes>& tuned, const Sizes& target);
// Whether the model was trained with problem features (sizes), i.e. can tell sizes apart.
[[nodiscard]] bool knows_sizes(const PerfModel& m);

}  // namespace kforge
