// cartpole: `envs` classic cart-pole environments (gym's CartPole physics: Euler steps of tau =
// 0.02 s, termination at |x| > 2.4 or |theta| > 12 degrees, automatic reset), each driven for
// `steps` steps by the linear policy  action = (w . obs + b > 0).
//   tensors: state0 (envs,4) in, resets (steps,envs,4) in, policy (5) in = (w0..w3, b),
//            obs (steps,envs,4) out, action (steps,envs) out, reward (steps,envs) out,
//            done (steps,envs) out.
// Step t of env e: action from the current state, one Euler step, reward 1, done if the new
// state is out of bounds; obs[t] is the state the next step starts from (resets[t][e] when
// done, as gym's vector envs return the reset observation), so obs[steps-1] is the final state
// and a run of `steps` steps is the same as `steps` runs of one step chained through obs.
//
// Precision. The reference is the same simulator in double. Rounding errors grow along a
// trajectory (the upright pole is unstable), so `magnitude` carries a first-order error scale
// propagated through the step's Jacobian: m' = |D| m + 2 * (the step's own absolute terms),
// restarting at 0 on reset (a reset copies exact input values). A policy decision or a
// termination test whose margin is within the bound could go either way in a right kernel;
// condition_inputs redraws the start and reset states of every environment that comes that
// close, so actions and done flags must match exactly. See README.md for the horizon.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "kforge/verify.hpp"

namespace kforge {
namespace {

constexpr double kGravity = 9.8, kMassCart = 1.0, kMassPole = 0.1, kTotalMass = 1.1;
constexpr double kHalfLength = 0.5, kPoleMassLength = 0.05, kForce = 10.0, kTau = 0.02;
constexpr double kXLimit = 2.4, kThetaLimit = 12 * 2 * M_PI / 360;
constexpr double kStartSpread = 0.05;  // gym's reset: each state variable uniform in ±0.05
constexpr int kAttempts = 64;          // redraws of an environment too close to a threshold

using State = std::array<double, 4>;  // x, x_dot, theta, theta_dot

// One Euler step of gym's CartPole; `abs_terms` gets the same arithmetic over absolute values.
template <class Real>
std::array<Real, 4> physics(const std::array<Real, 4>& s, bool push_right, State* abs_terms = nullptr) {
  const Real force = push_right ? Real(kForce) : Real(-kForce);
  const Real c = std::cos(s[2]), sn = std::sin(s[2]);
  const Real temp = (force + Real(kPoleMassLength) * s[3] * s[3] * sn) / Real(kTotalMass);
  const Real den = Real(kHalfLength) * (Real(4.0 / 3.0) - Real(kMassPole) * c * c / Real(kTotalMass));
  const Real theta_acc = (Real(kGravity) * sn - c * temp) / den;
  const Real x_acc = temp - Real(kPoleMassLength) * theta_acc * c / Real(kTotalMass);
  if (abs_terms) {
    const double at = (kForce + kPoleMassLength * s[3] * s[3] * std::fabs(sn)) / kTotalMass;
    const double ath = (kGravity * std::fabs(sn) + std::fabs(c) * at) / den;
    const double ax = at + kPoleMassLength * ath * std::fabs(c) / kTotalMass;
    *abs_terms = {std::fabs(s[0]) + kTau * std::fabs(s[1]), std::fabs(s[1]) + kTau * ax,
                  std::fabs(s[2]) + kTau * std::fabs(s[3]), std::fabs(s[3]) + kTau * ath};
  }
  return {s[0] + Real(kTau) * s[1], s[1] + Real(kTau) * x_acc, s[2] + Real(kTau) * s[3],
          s[3] + Real(kTau) * theta_acc};
}

template <class Real>
bool out_of_bounds(const std::array<Real, 4>& s) {
  return s[0] < Real(-kXLimit) || s[0] > Real(kXLimit) || s[2] < Real(-kThetaLimit) ||
         s[2] > Real(kThetaLimit);
}

class CartPole final : public Problem {
 public:
  std::string name() const override { return "cartpole"; }
  std::string description() const override {
    return "cart-pole envs stepped `steps` times under a linear policy, with auto-reset";
  }
  std::vector<std::string> size_names() const override { return {"envs", "steps"}; }
  Sizes default_sizes() const override { return {{"envs", 1024}, {"steps", 100}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp64}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"state0", Role::in}, {"resets", Role::in},  {"policy", Role::in},
            {"obs", Role::out},   {"action", Role::out}, {"reward", Role::out},
            {"done", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("envs"), K = s.at("steps");
    switch (t) {
      case 0: return N * 4;
      case 1: case 3: return K * N * 4;
      case 2: return 5;
      default: return K * N;
    }
  }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }

  void check_sizes(const Sizes& s) const override {
    for (const char* n : {"envs", "steps"})
      if (s.at(n) < 1 || s.at(n) > (1LL << 30))
        throw UsageError(std::string("size ") + n + "=" + std::to_string(s.at(n)) + " must be in [1, 2^30]");
    if (s.at("envs") * s.at("steps") * 4 > (1LL << 31) - 1)
      throw UsageError("sizes envs*steps*4=" + std::to_string(s.at("envs") * s.at("steps") * 4) +
                       " must fit in a 32-bit int (the kernel ABI)");
  }

  // Start and reset states as gym draws them (uniform in ±0.05, exact in fp32); one
  // environment in 7 starts at the track's edge moving out, so every instance terminates and
  // resets at step 0, and one in 11 (from the sixth) with the pole 0.6 rad over. Policy
  // weights uniform in [-1, 1] (bias in ±0.1): a mix of policies that balance for a while and
  // policies that drop the pole at once.
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    const std::int64_t N = inst.sizes.at("envs");
    auto& w = inst.tensors[2];
    for (int j = 0; j < 5; ++j)
      w[j] = static_cast<float>((2 * random_unit(seed, 500 + trial, j) - 1) * (j == 4 ? 0.1 : 1.0));
    for (std::int64_t e = 0; e < N; ++e) draw_env(inst, e, seed ^ (0x9e3779b9ull * (trial + 1)), 0);
    redraw_ambiguous(inst, seed, -1);
  }

  // A reset state matters only where an episode ends: a changed resets[] element is moved to
  // the nearest one the reference uses (same variable), so the output must follow.
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    std::int64_t keep = -1;
    const std::int64_t N = inst.sizes.at("envs");
    if (t == 1) {
      std::vector<std::vector<double>> out, mag;
      reference(inst, out, mag);
      const auto& done = out[3];
      const std::size_t n = done.size();
      for (std::size_t k = 0; k < n; ++k)
        if (done[(i / 4 + k) % n] != 0) {
          i = ((i / 4 + k) % n) * 4 + i % 4;
          break;
        }
      keep = static_cast<std::int64_t>(i / 4) % N;
    } else if (t == 0) {
      keep = static_cast<std::int64_t>(i / 4);
    }
    Problem::perturb(inst, t, i);
    redraw_ambiguous(inst, 0x5eedull + i, keep);
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    simulate(in, &out, &mag, nullptr);
  }

  // The longest chain of roundings behind one step's update (about 20 operations, sin and cos
  // counted at a few ulps each); the magnitude carries the steps before it.
  double reduction_length(const Sizes&) const override { return 32; }
  // About 60 operations per environment step, counting sin and cos at 10 each.
  double flops(const Sizes& s) const override { return 60.0 * s.at("envs") * s.at("steps"); }
  // Start states and policy read, every output written; a reset state is read only where an
  // episode ends, so the resets tensor is not counted.
  double bytes(const Sizes& s, DType t) const override {
    const double N = s.at("envs"), K = s.at("steps");
    return (4 * N + 5 + 7 * K * N) * dtype_size(t);
  }

  // The peer: how a CPU gym steps, one environment after another through the plain scalar step
  // (in float for fp32), environments shared among the threads.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    const std::int64_t N = in.sizes.at("envs"), K = in.sizes.at("steps");
    auto t = std::make_shared<std::vector<std::vector<float>>>();
    for (const auto& v : in.tensors) t->emplace_back(v.begin(), v.end());
    const int all = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    const int n = static_cast<int>(std::min<std::int64_t>(all, N));
    return [t, N, K, n] {
      auto share = [&](int worker) {
        for (std::int64_t e = worker; e < N; e += n) gym_loop(*t, N, K, e);
      };
      std::vector<std::thread> pool;
      for (int w = 1; w < n; ++w) pool.emplace_back(share, w);
      share(0);
      for (auto& th : pool) th.join();
    };
  }
  std::string baseline_name() const override { return "gym_loop_O3"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/cartpole/cartpole_cpu.json", "kernels/cartpole/cartpole_opencl.json",
            "kernels/cartpole/cartpole_cuda.json"};
  }

 private:
  static void gym_loop(std::vector<std::vector<float>>& t, std::int64_t N, std::int64_t K, std::int64_t e) {
    const auto& w = t[2];
    std::array<float, 4> s{t[0][e * 4], t[0][e * 4 + 1], t[0][e * 4 + 2], t[0][e * 4 + 3]};
    for (std::int64_t k = 0; k < K; ++k) {
      const std::int64_t i = k * N + e;
      const bool right = w[0] * s[0] + w[1] * s[1] + w[2] * s[2] + w[3] * s[3] + w[4] > 0;
      s = physics(s, right);
      const bool done = out_of_bounds(s);
      if (done) s = {t[1][i * 4], t[1][i * 4 + 1], t[1][i * 4 + 2], t[1][i * 4 + 3]};
      for (int j = 0; j < 4; ++j) t[3][i * 4 + j] = s[j];
      t[4][i] = right, t[5][i] = 1.0f, t[6][i] = done;
    }
  }

  static double uniform_start(std::uint64_t seed, std::uint64_t stream, std::uint64_t idx) {
    return static_cast<float>((2 * random_unit(seed, stream, idx) - 1) * kStartSpread);
  }

  // Fresh start and reset states for environment e (attempt > 0: a redraw).
  void draw_env(Instance& inst, std::int64_t e, std::uint64_t seed, int attempt) const {
    const std::int64_t N = inst.sizes.at("envs"), K = inst.sizes.at("steps");
    const std::uint64_t stream = 1000 + 16 * static_cast<std::uint64_t>(attempt);
    auto& s0 = inst.tensors[0];
    const double side = (e / 7) % 2 ? -1.0 : 1.0;
    if (e % 7 == 0) {  // at the edge, moving out: x' = 2.39 + 0.02 > 2.4 at step 0
      s0[e * 4] = static_cast<float>(side * 2.39), s0[e * 4 + 1] = side;
      s0[e * 4 + 2] = uniform_start(seed, stream, e * 4 + 2), s0[e * 4 + 3] = 0;
    } else if (e % 11 == 5) {  // the pole far over (34 degrees): ends at step 0, and a kernel
      for (int j = 0; j < 4; ++j) s0[e * 4 + j] = uniform_start(seed, stream, e * 4 + j);
      s0[e * 4 + 2] = static_cast<float>(side * 0.6);  // computes that step's sin and cos out of small-angle range
    } else {
      for (int j = 0; j < 4; ++j) s0[e * 4 + j] = uniform_start(seed, stream, e * 4 + j);
    }
    for (std::int64_t k = 0; k < K; ++k)
      for (int j = 0; j < 4; ++j) {
        const std::int64_t i = (k * N + e) * 4 + j;
        inst.tensors[1][i] = uniform_start(seed, stream + 1, i);
      }
  }

  // Redraws every environment (but `keep`) whose trajectory comes within the bound of a
  // decision, until none does or kAttempts are spent. $KFORGE_CARTPOLE_STATS prints how many.
  void redraw_ambiguous(Instance& inst, std::uint64_t seed, std::int64_t keep) const {
    std::vector<std::int64_t> bad;
    simulate(inst, nullptr, nullptr, &bad);
    if (std::getenv("KFORGE_CARTPOLE_STATS")) {
      std::vector<std::vector<double>> out, mag;
      simulate(inst, &out, &mag, nullptr);
      double ends = 0;
      for (const double d : out[3]) ends += d;
      std::fprintf(stderr, "cartpole: %zu of %lld environments redrawn; mean episode %.1f steps\n",
                   bad.size(), static_cast<long long>(inst.sizes.at("envs")),
                   static_cast<double>(out[3].size()) / std::max(ends, 1.0));
    }
    for (int attempt = 1; attempt <= kAttempts; ++attempt) {
      std::erase(bad, keep);
      if (bad.empty()) return;
      for (const std::int64_t e : bad) draw_env(inst, e, seed, attempt);
      std::vector<std::int64_t> still;
      simulate(inst, nullptr, nullptr, &still, &bad);  // only the redrawn ones
      bad = std::move(still);
    }
    // Failing that (a policy that balances the pole for the whole run, its decisions chattering
    // around 0), the environment starts and resets at the track's edge: episodes of one step.
    std::erase(bad, keep);
    const std::int64_t N = inst.sizes.at("envs"), K = inst.sizes.at("steps");
    for (const std::int64_t e : bad) {
      const double side = e % 2 ? -1.0 : 1.0;
      const double edge[4] = {static_cast<float>(side * 2.39), side, 0, 0};
      for (int j = 0; j < 4; ++j) {
        inst.tensors[0][e * 4 + j] = edge[j];
        for (std::int64_t k = 0; k < K; ++k) inst.tensors[1][(k * N + e) * 4 + j] = edge[j];
      }
    }
  }

  // The reference simulator in double. Fills out/mag when given; lists in `ambiguous` the
  // environments (of `only`, or all) where a right kernel in the instance's dtype could decide
  // differently.
  void simulate(const Instance& in, std::vector<std::vector<double>>* out,
                std::vector<std::vector<double>>* mag, std::vector<std::int64_t>* ambiguous,
                const std::vector<std::int64_t>* only = nullptr) const {
    const std::int64_t N = in.sizes.at("envs"), K = in.sizes.at("steps");
    const auto &s0 = in.tensors[0], &resets = in.tensors[1], &w = in.tensors[2];
    const double u = unit_roundoff(in.dtype);
    std::vector<double> obs, act, rew, done, m_obs, zeros;
    if (out) obs.resize(K * N * 4), act.resize(K * N), rew.resize(K * N), done.resize(K * N);
    if (mag) m_obs.resize(K * N * 4), zeros.assign(K * N, 0.0);
    const ErrorBound bound_of(*this, in);
    auto bound = [&](double ref, double m) { return 2 * bound_of(ref, m); };
    auto near = [&](double v, double limit, double b) {  // |v| vs limit within b (+ the limit's rounding)
      return std::fabs(std::fabs(v) - limit) <= b + 2 * u * limit;
    };
    const std::int64_t count = only ? static_cast<std::int64_t>(only->size()) : N;
    std::vector<char> flagged(count, 0);
    parallel_for(count, [&](std::int64_t n0, std::int64_t n1) {  // environments are independent
    for (std::int64_t n = n0; n < n1; ++n) {
      const std::int64_t e = only ? (*only)[n] : n;
      State s{s0[e * 4], s0[e * 4 + 1], s0[e * 4 + 2], s0[e * 4 + 3]};
      State m{0, 0, 0, 0};  // error scale of s: exact inputs
      bool is_ambiguous = false;
      for (std::int64_t k = 0; k < K && !(ambiguous && is_ambiguous); ++k) {
        const std::int64_t i = k * N + e;
        double v = w[4], v_abs = std::fabs(w[4]), v_err = 0;
        for (int j = 0; j < 4; ++j) {
          v += w[j] * s[j], v_abs += std::fabs(w[j] * s[j]);
          v_err += std::fabs(w[j]) * bound(s[j], m[j]);
        }
        const bool right = v > 0;
        if (std::fabs(v) <= v_err + 16 * u * v_abs) is_ambiguous = true;
        State terms;
        const State next = physics(s, right, &terms);
        State m_next;
        propagate(s, right, m, terms, m_next);
        const bool d = out_of_bounds(next);
        if (near(next[0], kXLimit, bound(next[0], m_next[0])) ||
            near(next[2], kThetaLimit, bound(next[2], m_next[2])))
          is_ambiguous = true;
        s = d ? State{resets[i * 4], resets[i * 4 + 1], resets[i * 4 + 2], resets[i * 4 + 3]} : next;
        m = d ? State{0, 0, 0, 0} : m_next;
        if (out) {
          for (int j = 0; j < 4; ++j) obs[i * 4 + j] = s[j];
          act[i] = right, rew[i] = 1.0, done[i] = d;
        }
        if (mag)
          for (int j = 0; j < 4; ++j) m_obs[i * 4 + j] = m[j];
      }
      flagged[n] = is_ambiguous;
    }
    });
    if (ambiguous)
      for (std::int64_t n = 0; n < count; ++n)
        if (flagged[n]) ambiguous->push_back(only ? (*only)[n] : n);
    if (out) *out = tensor_list(std::move(obs), std::move(act), std::move(rew), std::move(done));
    if (mag) *mag = tensor_list(std::move(m_obs), zeros, zeros, zeros);
  }

  // m' = |D| m + 2 * terms, D the step's Jacobian by central differences (first order: the
  // kernel's trajectory stays within the bound of this one while no decision flips).
  static void propagate(const State& s, bool right, const State& m, const State& terms, State& m_next) {
    State acc{2 * terms[0], 2 * terms[1], 2 * terms[2], 2 * terms[3]};
    for (int j = 0; j < 4; ++j) {
      if (m[j] == 0) continue;
      const double h = 1e-6 * (1 + std::fabs(s[j]));
      State lo = s, hi = s;
      lo[j] -= h, hi[j] += h;
      const State a = physics(hi, right), b = physics(lo, right);
      for (int r = 0; r < 4; ++r) acc[r] += std::fabs((a[r] - b[r]) / (2 * h)) * m[j];
    }
    m_next = acc;
  }
};

}  // namespace

std::shared_ptr<Problem> make_cartpole_problem() { return std::make_shared<CartPole>(); }

}  // namespace kforge
