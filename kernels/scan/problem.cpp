// scan: first-order linear recurrences over (batch, time) and the reinforcement-learning
// credit-assignment estimators, which are all one reverse linear scan x_t = a_t·x_{t±1} + c_t with
// per-step coefficients (see README.md). Tensors are row-major (batch, time); a per-sequence
// bootstrap value has shape (batch). fp32 storage and arithmetic.
//
// Each problem's reference is the plain loop a practitioner writes, in double; its `magnitude`
// is the same loop over absolute values (|a|, |b|, |r|, |V|, ...), which bounds the rounding
// error of ANY evaluation order of the recurrence (the products of a's are its conditioning).
#include <algorithm>
#include <cmath>
#include <thread>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// What a tensor holds decides how its random draws are conditioned and perturbed.
enum class Kind {
  data,     // plain values (rewards, values, b)
  coef,     // a recurrence coefficient, |a| <= 1 so the recurrence stays stable
  flag,     // done flags: exactly 0 or 1
  ratio,    // importance ratio pi/mu > 0
  prob,     // a probability in [0, 1]
  boot,     // per-sequence bootstrap value, shape (batch)
  out,
};

struct Tensor {
  std::string name;
  Kind kind;
};

// γ, λ and the clip thresholds: a kernel receives them as float, so the reference uses the
// same float values. Outside their range they make no estimator: refused with exit 2.
double checked_scalar(const std::string& name, double v) {
  const bool clip = name == "rho_bar" || name == "c_bar";
  if (!(v >= 0) || (!clip && v > 1) || !std::isfinite(v))
    throw UsageError("scalar " + name + "=" + std::to_string(v) + " must be in " +
                     (clip ? "[0, inf)" : "[0, 1]"));
  return v;
}
double checked_scalar(const Instance& in, const std::string& name) {
  return checked_scalar(name, in.scalars.at(name));
}

// The shared shape of every problem of the family: sizes batch and time, fp32, tensors
// described by kind, checked scalars, a bound that grows with the sequence length.
class ScanProblem : public Problem {
 public:
  ScanProblem(std::string name, std::string description, std::vector<Tensor> tensors,
              std::vector<std::string> scalars, double flops_per_step)
      : name_(std::move(name)), description_(std::move(description)),
        tensors_(std::move(tensors)), scalars_(std::move(scalars)), flops_(flops_per_step) {}

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  std::vector<std::string> size_names() const override { return {"batch", "time"}; }
  Sizes default_sizes() const override { return {{"batch", 256}, {"time", 1024}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    std::vector<TensorSpec> t;
    for (const auto& x : tensors_) t.push_back({x.name, x.kind == Kind::out ? Role::out : Role::in});
    return t;
  }
  std::vector<std::string> scalar_names() const override { return scalars_; }
  void check_scalars(const Scalars& s) const override {
    for (const auto& [name, v] : s) (void)checked_scalar(name, v);
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    return tensors_[t].kind == Kind::boot ? s.at("batch") : s.at("batch") * s.at("time");
  }
  void check_sizes(const Sizes& s) const override {
    for (const char* n : {"batch", "time"})
      if (s.at(n) < 1 || s.at(n) > (1LL << 30))
        throw UsageError(std::string("size ") + n + "=" + std::to_string(s.at(n)) +
                         " must be in [1, 2^30]");
    // batch*time may pass 2^31: the sizes travel as int, every offset s * time + t is formed in
    // 64 bits (the library's kernels, cpu, OpenCL and CUDA), and the index_width check asks for it.
  }
  // The index_width check (docs/verification.md): every (batch, time) tensor past 2^31 elements,
  // batch = 2^16 + 1 sequences of time = 2^15 steps (sequence 2^16 starts at flat index 2^31,
  // where s * time in int wraps), the last two sequences live. Sequences are independent, and a
  // sequence of zeros (coefficients, data, flags, ratios, probabilities and its bootstrap value
  // all 0) gives the same output for every sequence (0 for every estimator here), as the check
  // requires. The output (fp32, the family's only dtype) is written whole: 8 GiB, or its proxy.
  // Other sizes (scan.nstep's n) as requested.
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    WideIndexShape w{default_sizes(), {}};
    for (const auto& [k, v] : requested) w.sizes[k] = v;
    w.sizes["batch"] = (1 << 16) + 1, w.sizes["time"] = 1 << 15;
    w.live = w.sizes;
    w.live["batch"] = 2;
    return w;
  }
  // Trials walk the corners practitioners use: γ = 1 with λ = 1 (undiscounted Monte Carlo),
  // λ = 0 (one-step TD), and typical values; thresholds clip some ratios and not others.
  std::map<std::string, double> scalars_for_trial(int trial) const override {
    static const double kTrials[4][4] = {
        {0.99, 0.95, 1.0, 1.0}, {1.0, 1.0, 2.0, 1.5}, {0.9, 0.0, 0.5, 0.75}, {0.5, 0.5, 1.0, 1.0}};
    const double* v = kTrials[trial % 4];
    std::map<std::string, double> all = {{"gamma", v[0]}, {"lambda", v[1]}, {"rho_bar", v[2]},
                                         {"c_bar", v[3]}};
    std::map<std::string, double> out;
    for (const auto& n : scalars_) out[n] = static_cast<float>(all.at(n));
    return out;
  }

  // gamma = 0 (each step sees only itself), where the estimator has a discount; the trials
  // already take 1, 0.99, 0.9 and 0.5, and lambda 0 and 1.
  std::vector<Scalars> special_scalars() const override {
    if (std::find(scalars_.begin(), scalars_.end(), "gamma") == scalars_.end()) return {};
    return {{{"gamma", 0.0}}};
  }
  // Plain data (rewards, values, b) as rows of time, bootstrap values element-wise; coefficients,
  // flags, ratios and probabilities are conditioned and stay as drawn.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    std::vector<std::int64_t> rows;
    for (const auto& x : tensors_)
      rows.push_back(x.kind == Kind::data ? s.at("time") : x.kind == Kind::boot ? 0 : -1);
    return rows;
  }

  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    for (std::size_t t = 0; t < tensors_.size(); ++t) {
      auto& v = inst.tensors[t];
      for (std::size_t i = 0; i < v.size(); ++i) {
        switch (tensors_[t].kind) {
          case Kind::coef:  // |a| > 1 scaled by a power of two into [0.5, 1): exact
            if (std::fabs(v[i]) > 1) v[i] = std::ldexp(v[i], -std::ilogb(v[i]) - 1);
            break;
          case Kind::flag:  // an episode ends at about one step in 16
            v[i] = random_unit(seed, 7000 + 1000 * static_cast<std::uint64_t>(trial) + t, i) < 1.0 / 16;
            break;
          case Kind::ratio:  // exp of a uniform draw in [-1.5, 1.5]: both sides of the clips
            v[i] = static_cast<float>(std::exp(3 * random_unit(seed, 8000 + t, i) - 1.5));
            break;
          case Kind::prob:
            v[i] = static_cast<float>(random_unit(seed, 9000 + t, i));
            break;
          default: break;
        }
      }
    }
  }
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    double& v = inst.tensors[t][i];
    switch (tensors_[t].kind) {
      case Kind::flag: v = 1 - v; break;
      case Kind::coef: v = v >= 0 ? v - 0.5 : v + 0.5; break;
      case Kind::ratio: v = static_cast<float>(v < 1 ? v * 3 : v / 3); break;
      case Kind::prob: v = v < 0.5 ? v + 0.5 : v - 0.5; break;
      default: Problem::perturb(inst, t, i);
    }
  }

  // Products of up to `time` coefficients and sums of up to `time` terms, in any association
  // order, plus the few operations that form each step's coefficients.
  double reduction_length(const Sizes& s) const override { return 2.0 * s.at("time") + 8; }
  double flops(const Sizes& s) const override {
    return flops_ * static_cast<double>(s.at("batch")) * s.at("time");
  }
  double bytes(const Sizes& s, DType t) const override {
    double n = 0;
    for (std::size_t i = 0; i < tensors_.size(); ++i) n += tensor_elements(i, s);
    return n * dtype_size(t);
  }

  // The peer: the same plain loop in float, compiled -O3 into kforge, one sequence after
  // another along time; sequences shared among the threads (all cores, as the kernel).
  std::function<void()> baseline(const Instance& in, int threads) const override {
    auto data = std::make_shared<std::vector<std::vector<float>>>();
    for (const auto& t : in.tensors) data->emplace_back(t.begin(), t.end());
    auto scalars = std::make_shared<std::map<std::string, float>>();
    for (const auto& [k, v] : in.scalars) (*scalars)[k] = static_cast<float>(v);
    const std::int64_t B = in.sizes.at("batch"), T = in.sizes.at("time");
    const int all = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    const int n = static_cast<int>(std::min<std::int64_t>(all, B));  // no idle threads to start
    return [this, data, scalars, B, T, n] {
      auto share = [&](int w) {
        for (std::int64_t b = w; b < B; b += n) loop_f32(*data, *scalars, b, T);
      };
      std::vector<std::thread> pool;
      for (int w = 1; w < n; ++w) pool.emplace_back(share, w);
      share(0);
      for (auto& th : pool) th.join();
    };
  }
  std::string baseline_name() const override { return "loop_O3"; }

  std::vector<std::string> kernel_specs() const override {
    const std::string stem = "kernels/scan/" + name_.substr(name_.find('.') + 1);
    return {stem + "_cpu.json", stem + "_opencl.json", stem + "_cuda.json"};
  }

 protected:
  // The practitioner's loop in float over sequence b, for the baseline.
  virtual void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>& s,
                        std::int64_t b, std::int64_t T) const = 0;

 private:
  std::string name_, description_;
  std::vector<Tensor> tensors_;
  std::vector<std::string> scalars_;
  double flops_;
};

// Runs `body(b)` for every sequence b on all cores (the references are loops per sequence).
template <class F>
void each_sequence(const Instance& in, F body) {
  parallel_for(in.sizes.at("batch"), [&](std::int64_t b0, std::int64_t b1) {
    for (std::int64_t b = b0; b < b1; ++b) body(b);
  });
}

std::vector<std::vector<double>> zeros(const Instance& in) {
  return {std::vector<double>(in.sizes.at("batch") * in.sizes.at("time"), 0.0)};
}

// ---- x[t] = a[t]·x[t-1] + b[t] (forward, x[-1] = 0) or a[t]·x[t+1] + b[t] (reverse) ----------
class Linear final : public ScanProblem {
 public:
  explicit Linear(bool reverse)
      : ScanProblem(reverse ? "scan.linear_rev" : "scan.linear",
                    reverse ? "x[t] = a[t]*x[t+1] + b[t], x[time] = 0, a, b, x (batch,time)"
                            : "x[t] = a[t]*x[t-1] + b[t], x[-1] = 0, a, b, x (batch,time)",
                    {{"a", Kind::coef}, {"b", Kind::data}, {"x", Kind::out}}, {}, 2),
        reverse_(reverse) {}
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time");
    const auto &a = in.tensors[0], &b = in.tensors[1];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      double x = 0, m = 0;
      for (std::int64_t k = 0; k < T; ++k) {
        const std::int64_t i = s * T + (reverse_ ? T - 1 - k : k);
        x = a[i] * x + b[i];
        m = std::fabs(a[i]) * m + std::fabs(b[i]);
        out[0][i] = x, mag[0][i] = m;
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>&,
                std::int64_t s, std::int64_t T) const override {
    const float *a = &t[0][s * T], *b = &t[1][s * T];
    float* x = &t[2][s * T];
    float h = 0;
    if (reverse_)
      for (std::int64_t k = T - 1; k >= 0; --k) x[k] = h = a[k] * h + b[k];
    else
      for (std::int64_t k = 0; k < T; ++k) x[k] = h = a[k] * h + b[k];
  }

 private:
  bool reverse_;
};

// ---- discounted return with episode ends: G[t] = r[t] + γ(1-done[t])G[t+1], G[time] = boot ----
class DiscountedReturn final : public ScanProblem {
 public:
  DiscountedReturn()
      : ScanProblem("scan.discounted_return",
                    "G[t] = r[t] + gamma*(1-done[t])*G[t+1], G[time] = boot; r, done, G (batch,time)",
                    {{"r", Kind::data}, {"done", Kind::flag}, {"boot", Kind::boot}, {"ret", Kind::out}},
                    {"gamma"}, 4) {}
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time");
    const double gamma = checked_scalar(in, "gamma");
    const auto &r = in.tensors[0], &done = in.tensors[1], &boot = in.tensors[2];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      double g = boot[s], m = std::fabs(boot[s]);
      for (std::int64_t t = T - 1; t >= 0; --t) {
        const std::int64_t i = s * T + t;
        g = r[i] + gamma * (1 - done[i]) * g;
        m = std::fabs(r[i]) + gamma * (1 - done[i]) * m;
        out[0][i] = g, mag[0][i] = m;
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>& sc,
                std::int64_t s, std::int64_t T) const override {
    const float *r = &t[0][s * T], *done = &t[1][s * T];
    float* ret = &t[3][s * T];
    const float gamma = sc.at("gamma");
    float g = t[2][s];
    for (std::int64_t k = T - 1; k >= 0; --k) ret[k] = g = r[k] + gamma * (1 - done[k]) * g;
  }
};

// ---- GAE(λ): δ[t] = r[t] + γ(1-done[t])V[t+1] - V[t], A[t] = δ[t] + γλ(1-done[t])A[t+1] -------
// ---- TD(λ) λ-return: G[t] = r[t] + γ(1-done[t])((1-λ)V[t+1] + λG[t+1]), G[time] = boot --------
// V[time] is boot. Same inputs; `lambda_return` picks which.
class ValueEstimator final : public ScanProblem {
 public:
  explicit ValueEstimator(bool lambda_return)
      : ScanProblem(lambda_return ? "scan.td_lambda" : "scan.gae",
                    lambda_return
                        ? "lambda-return G[t] = r + gamma*(1-done)*((1-lambda)*V[t+1] + lambda*G[t+1]), V[time] = G[time] = boot"
                        : "GAE advantages A[t] = delta[t] + gamma*lambda*(1-done[t])*A[t+1], delta = r + gamma*(1-done)*V[t+1] - V[t], V[time] = boot",
                    {{"r", Kind::data}, {"v", Kind::data}, {"done", Kind::flag},
                     {"boot", Kind::boot}, {lambda_return ? "ret" : "adv", Kind::out}},
                    {"gamma", "lambda"}, 8),
        lambda_return_(lambda_return) {}
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time");
    const double gamma = checked_scalar(in, "gamma"), lambda = checked_scalar(in, "lambda");
    const auto &r = in.tensors[0], &v = in.tensors[1], &done = in.tensors[2], &boot = in.tensors[3];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      double next_v = boot[s];
      double x = lambda_return_ ? boot[s] : 0, m = std::fabs(x);
      for (std::int64_t t = T - 1; t >= 0; --t) {
        const std::int64_t i = s * T + t;
        const double nonterminal = 1 - done[i];
        if (lambda_return_) {
          x = r[i] + gamma * nonterminal * ((1 - lambda) * next_v + lambda * x);
          m = std::fabs(r[i]) + gamma * nonterminal * ((1 - lambda) * std::fabs(next_v) + lambda * m);
        } else {
          const double delta = r[i] + gamma * nonterminal * next_v - v[i];
          x = delta + gamma * lambda * nonterminal * x;
          m = std::fabs(r[i]) + gamma * nonterminal * std::fabs(next_v) + std::fabs(v[i]) +
              gamma * lambda * nonterminal * m;
        }
        next_v = v[i];
        out[0][i] = x, mag[0][i] = m;
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>& sc,
                std::int64_t s, std::int64_t T) const override {
    const float *r = &t[0][s * T], *v = &t[1][s * T], *done = &t[2][s * T];
    float* out = &t[4][s * T];
    const float gamma = sc.at("gamma"), lambda = sc.at("lambda");
    float next_v = t[3][s], x = lambda_return_ ? next_v : 0;
    for (std::int64_t k = T - 1; k >= 0; --k) {
      const float nonterminal = 1 - done[k];
      if (lambda_return_)
        x = r[k] + gamma * nonterminal * ((1 - lambda) * next_v + lambda * x);
      else
        x = r[k] + gamma * nonterminal * next_v - v[k] + gamma * lambda * nonterminal * x;
      out[k] = x;
      next_v = v[k];
    }
  }

 private:
  bool lambda_return_;
};

// ---- V-trace (IMPALA): vs[t] = V[t] + δ[t] + γ(1-done[t])·c[t]·(vs[t+1] - V[t+1]) -------------
// δ[t] = ρ[t](r[t] + γ(1-done[t])V[t+1] - V[t]), ρ = min(ρ̄, ratio), c = λ·min(c̄, ratio), V[time] = boot.
class VTrace final : public ScanProblem {
 public:
  VTrace()
      : ScanProblem("scan.vtrace",
                    "V-trace targets vs[t] = V[t] + delta[t] + gamma*(1-done[t])*c[t]*(vs[t+1]-V[t+1]), "
                    "rho = min(rho_bar, ratio), c = lambda*min(c_bar, ratio)",
                    {{"r", Kind::data}, {"v", Kind::data}, {"done", Kind::flag}, {"boot", Kind::boot},
                     {"ratio", Kind::ratio}, {"vs", Kind::out}},
                    {"gamma", "lambda", "rho_bar", "c_bar"}, 12) {}
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time");
    const double gamma = checked_scalar(in, "gamma"), lambda = checked_scalar(in, "lambda");
    const double rho_bar = checked_scalar(in, "rho_bar"), c_bar = checked_scalar(in, "c_bar");
    const auto &r = in.tensors[0], &v = in.tensors[1], &done = in.tensors[2], &boot = in.tensors[3],
               &ratio = in.tensors[4];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      double next_v = boot[s], acc = 0, m = 0;  // acc = vs[t+1] - V[t+1]
      for (std::int64_t t = T - 1; t >= 0; --t) {
        const std::int64_t i = s * T + t;
        const double discount = gamma * (1 - done[i]);
        const double rho = std::min(rho_bar, ratio[i]), c = lambda * std::min(c_bar, ratio[i]);
        acc = rho * (r[i] + discount * next_v - v[i]) + discount * c * acc;
        m = rho * (std::fabs(r[i]) + discount * std::fabs(next_v) + std::fabs(v[i])) + discount * c * m;
        next_v = v[i];
        out[0][i] = v[i] + acc, mag[0][i] = std::fabs(v[i]) + m;
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>& sc,
                std::int64_t s, std::int64_t T) const override {
    const float *r = &t[0][s * T], *v = &t[1][s * T], *done = &t[2][s * T], *ratio = &t[4][s * T];
    float* vs = &t[5][s * T];
    const float gamma = sc.at("gamma"), lambda = sc.at("lambda"), rho_bar = sc.at("rho_bar"),
                c_bar = sc.at("c_bar");
    float next_v = t[3][s], acc = 0;
    for (std::int64_t k = T - 1; k >= 0; --k) {
      const float discount = gamma * (1 - done[k]);
      acc = std::min(rho_bar, ratio[k]) * (r[k] + discount * next_v - v[k]) +
            discount * lambda * std::min(c_bar, ratio[k]) * acc;
      next_v = v[k];
      vs[k] = v[k] + acc;
    }
  }
};

// ---- Retrace(λ) and Tree Backup TB(λ): off-policy Q targets with traces c -----------------------
// Q'[t] = r[t] + γ(1-done[t])·(E_π Q[t+1] + c[t+1]·(Q'[t+1] - Q[t+1])), c = λ·min(1, π/μ) for
// Retrace, c = λ·π(a|s) for TB(λ); the last step bootstraps on E_π Q[time] = boot.
class OffPolicyQ final : public ScanProblem {
 public:
  explicit OffPolicyQ(bool tree_backup)
      : ScanProblem(tree_backup ? "scan.tree_backup" : "scan.retrace",
                    std::string("Q targets Q'[t] = r + gamma*(1-done)*(EQ[t+1] + c[t+1]*(Q'[t+1]-Q[t+1])), ") +
                        (tree_backup ? "c = lambda*pi (TB(lambda))" : "c = lambda*min(1, ratio) (Retrace)") +
                        ", EQ[time] = boot",
                    {{"r", Kind::data}, {"q", Kind::data}, {"eq", Kind::data}, {"done", Kind::flag},
                     {"boot", Kind::boot}, {tree_backup ? "pi" : "ratio", tree_backup ? Kind::prob : Kind::ratio},
                     {"qret", Kind::out}},
                    {"gamma", "lambda"}, 8),
        tree_backup_(tree_backup) {}
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time");
    const double gamma = checked_scalar(in, "gamma"), lambda = checked_scalar(in, "lambda");
    const auto &r = in.tensors[0], &q = in.tensors[1], &eq = in.tensors[2], &done = in.tensors[3],
               &boot = in.tensors[4], &w = in.tensors[5];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      double next = 0, m = 0;  // Q'[t+1] and its magnitude
      for (std::int64_t t = T - 1; t >= 0; --t) {
        const std::int64_t i = s * T + t;
        const double discount = gamma * (1 - done[i]);
        if (t == T - 1) {
          next = r[i] + discount * boot[s];
          m = std::fabs(r[i]) + discount * std::fabs(boot[s]);
        } else {
          const double c = lambda * (tree_backup_ ? w[i + 1] : std::min(1.0, w[i + 1]));
          next = r[i] + discount * (eq[i + 1] + c * (next - q[i + 1]));
          m = std::fabs(r[i]) + discount * (std::fabs(eq[i + 1]) + c * (m + std::fabs(q[i + 1])));
        }
        out[0][i] = next, mag[0][i] = m;
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>& t, const std::map<std::string, float>& sc,
                std::int64_t s, std::int64_t T) const override {
    const float *r = &t[0][s * T], *q = &t[1][s * T], *eq = &t[2][s * T], *done = &t[3][s * T],
                *w = &t[5][s * T];
    float* qret = &t[6][s * T];
    const float gamma = sc.at("gamma"), lambda = sc.at("lambda");
    float next = r[T - 1] + gamma * (1 - done[T - 1]) * t[4][s];
    qret[T - 1] = next;
    for (std::int64_t k = T - 2; k >= 0; --k) {
      const float c = lambda * (tree_backup_ ? w[k + 1] : std::min(1.0f, w[k + 1]));
      qret[k] = next = r[k] + gamma * (1 - done[k]) * (eq[k + 1] + c * (next - q[k + 1]));
    }
  }

 private:
  bool tree_backup_;
};

// ---- n-step return: G[t] = Σ_{k<h} γ^k·Π(1-done)·r[t+k] + γ^h·Π(1-done)·V[t+h], h = min(n, time-t) --
// A sum over a sliding window, not a first-order recurrence (see README.md): its kernels read
// each window directly. V[time] = boot. Size n is the lookahead.
class NStep final : public ScanProblem {
 public:
  NStep()
      : ScanProblem("scan.nstep",
                    "n-step return G[t] = sum_{k<h} gamma^k*prod(1-done)*r[t+k] + gamma^h*prod(1-done)*V[t+h], "
                    "h = min(n, time-t), V[time] = boot",
                    {{"r", Kind::data}, {"v", Kind::data}, {"done", Kind::flag}, {"boot", Kind::boot},
                     {"ret", Kind::out}},
                    {"gamma"}, 0) {}
  std::vector<std::string> size_names() const override { return {"batch", "time", "n"}; }
  Sizes default_sizes() const override { return {{"batch", 256}, {"time", 1024}, {"n", 5}}; }
  void check_sizes(const Sizes& s) const override {
    ScanProblem::check_sizes(s);
    if (s.at("n") < 1 || s.at("n") > (1 << 20))
      throw UsageError("size n=" + std::to_string(s.at("n")) + " (the lookahead) must be in [1, 2^20]");
  }
  double reduction_length(const Sizes& s) const override {
    return 2.0 * static_cast<double>(std::min(s.at("n"), s.at("time"))) + 8;
  }
  double flops(const Sizes& s) const override {
    return 4.0 * static_cast<double>(s.at("batch")) * s.at("time") * std::min(s.at("n"), s.at("time"));
  }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("time"), n = in.sizes.at("n");
    const double gamma = checked_scalar(in, "gamma");
    const auto &r = in.tensors[0], &v = in.tensors[1], &done = in.tensors[2], &boot = in.tensors[3];
    out = zeros(in), mag = zeros(in);
    each_sequence(in, [&](std::int64_t s) {
      for (std::int64_t t = 0; t < T; ++t) {
        const std::int64_t h = std::min(n, T - t);
        double g = 0, m = 0, discount = 1;
        for (std::int64_t k = 0; k < h; ++k) {
          g += discount * r[s * T + t + k];
          m += discount * std::fabs(r[s * T + t + k]);
          discount *= gamma * (1 - done[s * T + t + k]);
        }
        const double v_end = t + h < T ? v[s * T + t + h] : boot[s];
        out[0][s * T + t] = g + discount * v_end;
        mag[0][s * T + t] = m + discount * std::fabs(v_end);
      }
    });
  }

 protected:
  void loop_f32(std::vector<std::vector<float>>&, const std::map<std::string, float>&,
                std::int64_t, std::int64_t) const override {}

 public:
  // The peer needs n, so it is its own loop over the windows, in float.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    auto t = std::make_shared<std::vector<std::vector<float>>>();
    for (const auto& x : in.tensors) t->emplace_back(x.begin(), x.end());
    const std::int64_t B = in.sizes.at("batch"), T = in.sizes.at("time"), n = in.sizes.at("n");
    const float gamma = static_cast<float>(in.scalars.at("gamma"));
    const int all = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    const int workers = static_cast<int>(std::min<std::int64_t>(all, B));
    return [t, B, T, n, gamma, workers] {
      auto share = [&](int w) {
        for (std::int64_t s = w; s < B; s += workers) {
          const float *r = &(*t)[0][s * T], *v = &(*t)[1][s * T], *done = &(*t)[2][s * T];
          float* ret = &(*t)[4][s * T];
          for (std::int64_t i = 0; i < T; ++i) {
            const std::int64_t h = std::min(n, T - i);
            float g = 0, discount = 1;
            for (std::int64_t k = 0; k < h; ++k) {
              g += discount * r[i + k];
              discount *= gamma * (1 - done[i + k]);
            }
            ret[i] = g + discount * (i + h < T ? v[i + h] : (*t)[3][s]);
          }
        }
      };
      std::vector<std::thread> pool;
      for (int w = 1; w < workers; ++w) pool.emplace_back(share, w);
      share(0);
      for (auto& th : pool) th.join();
    };
  }
};

}  // namespace

std::shared_ptr<Problem> make_scan_problem(const std::string& name) {
  if (name == "scan.linear") return std::make_shared<Linear>(false);
  if (name == "scan.linear_rev") return std::make_shared<Linear>(true);
  if (name == "scan.discounted_return") return std::make_shared<DiscountedReturn>();
  if (name == "scan.gae") return std::make_shared<ValueEstimator>(false);
  if (name == "scan.td_lambda") return std::make_shared<ValueEstimator>(true);
  if (name == "scan.vtrace") return std::make_shared<VTrace>();
  if (name == "scan.retrace") return std::make_shared<OffPolicyQ>(false);
  if (name == "scan.tree_backup") return std::make_shared<OffPolicyQ>(true);
  if (name == "scan.nstep") return std::make_shared<NStep>();
  throw UsageError("no scan problem named " + name);
}

}  // namespace kforge
