// Stopping criteria: when a measurement has enough samples. The noise criterion follows
// nvbench's stdrel; the fixed-count one serves scripted runs that want exactly N samples.
#include <algorithm>
#include <cmath>
#include <deque>

#include "kforge/measure.hpp"

namespace kforge {
namespace {

// Running mean and variance (Welford), so each sample costs O(1).
class RunningStats {
 public:
  void add(double x) {
    ++n_;
    const double d = x - mean_;
    mean_ += d / static_cast<double>(n_);
    m2_ += d * (x - mean_);
  }
  [[nodiscard]] long n() const { return n_; }
  [[nodiscard]] double rel_stdev() const {
    if (n_ < 2 || mean_ <= 0) return n_ < 2 ? 1.0 : 0.0;
    return std::sqrt(m2_ / static_cast<double>(n_ - 1)) / mean_;
  }

 private:
  long n_ = 0;
  double mean_ = 0, m2_ = 0;
};

class NoiseCriterion final : public StoppingCriterion {
 public:
  explicit NoiseCriterion(const MeasureOptions& o) : o_(o) {}

  void add(double sample_s) override {
    stats_.add(sample_s);
    if (stats_.n() >= std::max(2, o_.min_repetitions)) {
      history_.push_back(stats_.rel_stdev());
      if (history_.size() > kWindow) history_.pop_front();
    }
  }

  bool done(double elapsed_s) override {
    const double noise = stats_.rel_stdev();
    met_ = stats_.n() >= 2 && noise <= o_.target_rel_stdev;
    if (elapsed_s >= o_.max_time_s && stats_.n() >= 1) return stop("timeout");
    if (stats_.n() >= o_.max_repetitions) return stop("max repetitions");
    if (stats_.n() < o_.min_repetitions || elapsed_s < o_.min_time_s) return false;
    if (met_) return stop("noise target met");
    if (history_.size() == kWindow && !improving()) return stop("noise stopped improving");
    return false;
  }

  bool noise_target_met() const override { return met_; }
  std::string reason() const override { return reason_; }

 private:
  static constexpr std::size_t kWindow = 32;

  bool stop(const char* why) {
    reason_ = why;
    return true;
  }

  // The least-squares slope of the recent noise values, extrapolated over the window: still
  // improving while that predicts a fall of more than 5% of the current noise.
  [[nodiscard]] bool improving() const {
    const double n = static_cast<double>(history_.size());
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (std::size_t i = 0; i < history_.size(); ++i) {
      const double x = static_cast<double>(i), y = history_[i];
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
    }
    const double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    return slope * n < -0.05 * history_.back();
  }

  MeasureOptions o_;
  RunningStats stats_;
  std::deque<double> history_;
  bool met_ = false;
  std::string reason_;
};

class FixedCountCriterion final : public StoppingCriterion {
 public:
  FixedCountCriterion(int n, double target) : n_(n), target_(target) {}
  void add(double sample_s) override { stats_.add(sample_s); }
  bool done(double) override { return stats_.n() >= n_; }
  bool noise_target_met() const override { return stats_.n() >= 2 && stats_.rel_stdev() <= target_; }
  std::string reason() const override { return "fixed count of " + std::to_string(n_); }

 private:
  int n_;
  double target_;
  RunningStats stats_;
};

}  // namespace

std::unique_ptr<StoppingCriterion> noise_criterion(const MeasureOptions& o) {
  return std::make_unique<NoiseCriterion>(o);
}

std::unique_ptr<StoppingCriterion> fixed_count_criterion(int n, double target) {
  return std::make_unique<FixedCountCriterion>(std::max(1, n), target);
}

std::unique_ptr<StoppingCriterion> make_criterion(const MeasureOptions& o) {
  if (o.repetitions > 0) return fixed_count_criterion(o.repetitions, o.target_rel_stdev);
  return noise_criterion(o);
}

}  // namespace kforge
