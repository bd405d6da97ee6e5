// Bayesian optimization: a Gaussian process (Matérn 5/2, ARD) over the normalized parameter
// indices models log(objective); the next configuration maximizes an acquisition over a
// candidate set, in turn a global one and a local one. Global: every untried configuration when
// there are few, else a random sample plus the neighbours of the best observations. Local: the
// untried neighbours of the best observation only, a trust region of radius one. The local
// steps are what a good annealer does well, climbing the landscape's slopes, but chosen by the
// model; on recorded GPU spaces they cut the evaluations to reach 5% of the optimum by 2-4x,
// and on small spaces (tens to hundreds of configurations) by a further 20-35%
// (bench/strategies_results.md).
//
// Acquisitions: expected improvement (EI), probability of improvement (PI) and lower
// confidence bound (LCB). Their exploration factor follows the observed spread: lambda, the
// coefficient of variation of the objectives seen, sets EI/PI's margin and LCB's width, so a
// space with large differences is explored more. The portfolio is GP-Hedge (Hoffman et al.
// 2011): each acquisition nominates a point, one is picked with softmax probabilities of the
// acquisitions' gains, and every nominee's gain grows by how good the refitted model thinks it
// was. A failed configuration enters the model at the worst objective seen (it is never
// better than anything that worked, and it does not drag the mean into nonsense), and the
// guard never proposes it again.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "kforge/error.hpp"
#include "kforge/gp.hpp"
#include "tune/strategies.hpp"

namespace kforge::strategies {
namespace {

enum Acq { kEI, kPI, kLCB, kAcqs };

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }
double normal_pdf(double z) { return 0.3989422804014327 * std::exp(-0.5 * z * z); }

class Bayes final : public Strategy {
 public:
  Bayes(const Space& s, std::uint64_t seed, const StrategyOptions& o)
      : Strategy(s, seed), init_(std::clamp(o.budget / 10, 5, 12)) {
    // A space small enough to score every candidate needs few random samples to start the model.
    if (s.size() <= kAllBelow) init_ = std::min(init_, 6);
    if (o.acquisition == "ei") fixed_ = kEI;
    else if (o.acquisition == "pi") fixed_ = kPI;
    else if (o.acquisition == "lcb") fixed_ = kLCB;
    else if (o.acquisition != "portfolio")
      throw UsageError("unknown acquisition '" + o.acquisition + "': use ei, pi, lcb or portfolio");
    if (o.prior) {
      prior_ = o.prior(s);
      if (prior_.size() != s.size())
        throw UsageError("the prior predicts " + std::to_string(prior_.size()) + " configurations, the space has " +
                         std::to_string(s.size()));
      by_prior_.resize(prior_.size());
      for (std::size_t i = 0; i < by_prior_.size(); ++i) by_prior_[i] = i;
      std::stable_sort(by_prior_.begin(), by_prior_.end(), [&](std::size_t a, std::size_t b) { return prior_[a] < prior_[b]; });
    }
  }
  std::string name() const override { return "bayes"; }

  nlohmann::json report() const override {
    nlohmann::json j{{"initial_samples", init_}, {"model_proposals", model_steps_}};
    j["length_scales"] = gp_.hyper().length;
    if (!prior_.empty()) j["prior"] = true;
    j["acquisition_gains"] = {{"ei", gains_[kEI]}, {"pi", gains_[kPI]}, {"lcb", gains_[kLCB]}};
    j["acquisition_picks"] = {{"ei", picks_[kEI]}, {"pi", picks_[kPI]}, {"lcb", picks_[kLCB]}};
    return j;
  }

 protected:
  std::optional<Config> propose() override {
    if (static_cast<int>(history().size()) < init_ || valid_ < 2) {
      if (prior_.empty()) return spread_sample();
      std::vector<Config> top = best_predicted(1);  // with a prior, the initial design trusts it
      return top.empty() ? std::nullopt : std::optional<Config>(std::move(top.front()));
    }
    fit();
    std::vector<Config> cands = candidates();
    if (cands.empty()) return std::nullopt;
    Eigen::MatrixXd Xs(static_cast<Eigen::Index>(cands.size()), static_cast<Eigen::Index>(space_.dims()));
    for (std::size_t i = 0; i < cands.size(); ++i) row(Xs, i, cands[i]);
    Eigen::VectorXd mu, var;
    gp_.predict(Xs, mu, var);
    for (std::size_t i = 0; i < cands.size(); ++i) mu(static_cast<Eigen::Index>(i)) += prior_of(cands[i]);

    // The exploration factor follows the spread of what was observed.
    const double lambda = std::clamp(cv_, 0.01, 1.0);
    const double xi = (0.01 + 0.1 * lambda) * y_std_, kappa = 0.5 + 2.0 * lambda;
    std::array<int, kAcqs> pick{0, 0, 0};
    std::array<double, kAcqs> top;
    top.fill(-std::numeric_limits<double>::infinity());
    for (Eigen::Index i = 0; i < mu.size(); ++i) {
      const double sd = std::sqrt(std::max(var(i), 1e-18)), imp = y_best_ - mu(i) - xi, z = imp / sd;
      const std::array<double, kAcqs> a{imp * normal_cdf(z) + sd * normal_pdf(z), normal_cdf(z),
                                        -(mu(i) - kappa * sd)};
      for (int k = 0; k < kAcqs; ++k)
        if (a[k] > top[k]) { top[k] = a[k]; pick[k] = static_cast<int>(i); }
    }
    int chosen = fixed_;
    if (fixed_ < 0) {
      // GP-Hedge: softmax over the gains.
      const double mx = *std::max_element(gains_.begin(), gains_.end());
      std::array<double, kAcqs> p;
      double sum = 0;
      for (int k = 0; k < kAcqs; ++k) sum += p[k] = std::exp(kEta * (gains_[k] - mx));
      double u = rng_.unit() * sum;
      chosen = kAcqs - 1;
      for (int k = 0; k < kAcqs; ++k)
        if ((u -= p[k]) < 0) { chosen = k; break; }
    }
    for (int k = 0; k < kAcqs; ++k) nominees_[k] = cands[pick[k]];
    have_nominees_ = true;
    ++picks_[chosen];
    ++model_steps_;
    return cands[pick[chosen]];
  }

  void observe(const Config&, std::optional<double> f) override {
    if (f) ++valid_;
  }

 private:
  static constexpr double kEta = 1.0;

  void row(Eigen::MatrixXd& X, std::size_t i, const Config& c) const {
    const std::vector<double> x = space_.normalized(c);
    for (std::size_t d = 0; d < x.size(); ++d) X(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(d)) = x[d];
  }

  // Random, but spread: of a few random untried configurations, the farthest from the tried.
  std::optional<Config> spread_sample() {
    std::optional<Config> best;
    double best_d = -1;
    for (int t = 0; t < 10; ++t) {
      auto c = random_untried();
      if (!c) break;
      const std::vector<double> x = space_.normalized(*c);
      double dmin = std::numeric_limits<double>::infinity();
      for (const Observation& o : history()) {
        const std::vector<double> y = space_.normalized(o.config);
        double d = 0;
        for (std::size_t k = 0; k < x.size(); ++k) d += (x[k] - y[k]) * (x[k] - y[k]);
        dmin = std::min(dmin, d);
      }
      if (dmin > best_d) { best_d = dmin; best = c; }
    }
    return best;
  }

  void fit() {
    const auto& h = history();
    double worst = -std::numeric_limits<double>::infinity(), sum = 0, sum2 = 0, ls = 0, ls2 = 0;
    y_best_ = std::numeric_limits<double>::infinity();
    int nv = 0;
    for (const Observation& o : h)
      if (o.objective) {
        const double v = std::log(std::max(*o.objective, 1e-300));
        worst = std::max(worst, v);
        y_best_ = std::min(y_best_, v);
        sum += *o.objective;
        sum2 += *o.objective * *o.objective;
        ls += v;
        ls2 += v * v;
        ++nv;
      }
    auto y_of = [&](std::size_t i) { return h[i].objective ? std::log(std::max(*h[i].objective, 1e-300)) : worst; };
    // The model sees every observation while they are few; past kMaxModel, the best ones and
    // the most recent ones, so a long run stays fast (the Cholesky is cubic).
    std::vector<std::size_t> use(h.size());
    for (std::size_t i = 0; i < h.size(); ++i) use[i] = i;
    if (h.size() > kMaxModel) {
      std::vector<std::size_t> by_y = use;
      std::stable_sort(by_y.begin(), by_y.end(), [&](std::size_t a, std::size_t b) { return y_of(a) < y_of(b); });
      std::vector<char> keep(h.size(), 0);
      for (std::size_t i = 0; i < kMaxModel * 3 / 5; ++i) keep[by_y[i]] = 1;
      for (std::size_t i = h.size(), n = 0; i-- > 0 && n < kMaxModel * 2 / 5;)
        if (!keep[i]) keep[i] = 1, ++n;
      use.clear();
      for (std::size_t i = 0; i < h.size(); ++i)
        if (keep[i]) use.push_back(i);
    }
    const auto n = static_cast<Eigen::Index>(use.size());
    Eigen::MatrixXd X(n, static_cast<Eigen::Index>(space_.dims()));
    Eigen::VectorXd y(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      row(X, static_cast<std::size_t>(i), h[use[i]].config);
      y(i) = y_of(use[i]) - prior_of(h[use[i]].config);  // the GP models the prior's error
    }
    const double mean = sum / nv;
    cv_ = mean > 0 ? std::sqrt(std::max(0.0, sum2 / nv - mean * mean)) / mean : 0.0;
    y_std_ = std::sqrt(std::max(1e-12, ls2 / nv - (ls / nv) * (ls / nv)));
    const auto seen = static_cast<Eigen::Index>(h.size());
    const bool optimize = seen <= 30 || seen - last_opt_ >= (seen <= 100 ? 5 : 10);
    if (optimize) last_opt_ = seen;
    gp_.fit(X, y, optimize);
    if (have_nominees_) {  // GP-Hedge: reward each nominee by the refitted mean (lower is better)
      Eigen::MatrixXd Xn(kAcqs, static_cast<Eigen::Index>(space_.dims()));
      for (int k = 0; k < kAcqs; ++k) row(Xn, k, nominees_[k]);
      Eigen::VectorXd mu, var;
      gp_.predict(Xn, mu, var);
      for (int k = 0; k < kAcqs; ++k) mu(k) += prior_of(nominees_[k]);
      for (int k = 0; k < kAcqs; ++k) gains_[k] += -(mu(k) - y_best_) / y_std_;
    }
  }

  // The observations that worked, best first.
  std::vector<const Observation*> ranked_observations() const {
    std::vector<const Observation*> good;
    for (const Observation& o : history())
      if (o.objective) good.push_back(&o);
    std::sort(good.begin(), good.end(), [](auto* a, auto* b) { return *a->objective < *b->objective; });
    return good;
  }

  std::vector<Config> candidates() {
    std::vector<Config> out;
    std::set<Config> seen;
    if (model_steps_ % 2 == 1) {  // a local step: the best observation's untried neighbours
      for (const Observation* g : ranked_observations()) {
        for (Config& c : space_.neighbours(g->config, Neighbourhood::hamming))
          if (!tried(c) && seen.insert(c).second) out.push_back(std::move(c));
        if (!out.empty()) return out;  // all tried: the next best one's
      }
    }
    if (space_.size() - tried_count() <= kAllBelow) {  // few left: score every one
      for (std::uint64_t r = 0; r < space_.size(); ++r) {
        Config c = space_.at(r);
        if (!tried(c)) out.push_back(std::move(c));
      }
      return out;
    }
    for (int i = 0; i < kSample * 3 && static_cast<int>(out.size()) < kSample; ++i) {
      auto c = random_untried();
      if (c && seen.insert(*c).second) out.push_back(std::move(*c));
    }
    for (Config& c : best_predicted(kPriorCandidates))
      if (seen.insert(c).second) out.push_back(std::move(c));
    // Neighbours of the best few observations.
    const std::vector<const Observation*> good = ranked_observations();
    for (std::size_t i = 0; i < std::min<std::size_t>(5, good.size()); ++i)
      for (Config& c : space_.neighbours(good[i]->config, Neighbourhood::hamming))
        if (!tried(c) && seen.insert(c).second) out.push_back(std::move(c));
    return out;
  }

  // The prior's log(objective) of a configuration; 0 without a prior (the GP's own mean then).
  double prior_of(const Config& c) const {
    if (prior_.empty()) return 0.0;
    const auto r = space_.rank(c);
    return r ? prior_[*r] : 0.0;
  }
  // The `n` best-predicted untried configurations (none without a prior); one at least when
  // anything is untried, so the initial design can always take it.
  std::vector<Config> best_predicted(std::size_t n) {
    std::vector<Config> out;
    for (std::size_t i = 0; i < by_prior_.size() && out.size() < n; ++i) {
      Config c = space_.at(by_prior_[i]);
      if (!tried(c)) out.push_back(std::move(c));
    }
    if (out.empty() && !prior_.empty()) {
      if (auto c = random_untried()) out.push_back(std::move(*c));
    }
    return out;
  }

  static constexpr std::size_t kPriorCandidates = 200;
  static constexpr std::uint64_t kAllBelow = 2500;
  static constexpr std::size_t kMaxModel = 250;
  static constexpr int kSample = 1500;
  int init_, fixed_ = -1, valid_ = 0, model_steps_ = 0;
  Eigen::Index last_opt_ = 0;
  GaussianProcess gp_;
  double y_best_ = 0, y_std_ = 1, cv_ = 0;
  std::array<double, kAcqs> gains_{0, 0, 0};
  std::array<int, kAcqs> picks_{0, 0, 0};
  std::array<Config, kAcqs> nominees_;
  bool have_nominees_ = false;
  std::vector<double> prior_;          // by rank
  std::vector<std::size_t> by_prior_;  // ranks, best-predicted first
};

}  // namespace

std::unique_ptr<Strategy> bayes(const Space& s, std::uint64_t seed, const StrategyOptions& o) {
  return std::make_unique<Bayes>(s, seed, o);
}

}  // namespace kforge::strategies
