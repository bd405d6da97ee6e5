// lazy_reduce gradients of the min and kmin reductions: for L = sum_i sum_k G_ik v_ik, v_ik the
// k-th smallest f(x_i, y_j) over j (min: K = 1), with X (N,D), Y (M,D), IDX (N,K), G (N,K):
//   wrt x  OUT (N,D) = sum_k G_ik sum_t df/dt_t(x_i, y_IDX_ik) dt_t/dx_i
//   wrt y  OUT (M,D) = sum_{(i,k): IDX_ik = j} G_ik sum_t df/dt_t(x_i, y_j) dt_t/dy_j
// The gradient flows through the selected j only. IDX is the forward's indices, an input as
// autograd's backward of torch.min / topk receives them (and KeOps' min backward its argmin):
// the instance carries the true k smallest of its X and Y (condition_inputs: ascending, ties by
// the lower index, as the forward's reference orders them), so a tie is the forward's to
// resolve, and at whichever tied j the forward named, the gradient there is the right one.
// With IDX given the x-gradient is O(N K D), no reduction over j, and the y-gradient a scatter.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/util.hpp"
#include "grad.hpp"

namespace kforge {
namespace {

class LazyMinGrad final : public Problem {
 public:
  LazyMinGrad(std::string name, const std::string& formula, char wrt, bool kmin)
      : name_(std::move(name)), f_(Formula::parse(formula)), wrt_(wrt), kmin_(kmin) {
    check_lazy_scalar_names(f_);
    if (wrt_ == 'b')
      throw UsageError("problem '" + name_ + "': " + (kmin_ ? "kmin" : "min") +
                       " has no weights b to differentiate: use grad_x or grad_y");
    for (std::size_t k = 0; k < f_.terms().size(); ++k) g_.push_back(f_.derivative(static_cast<int>(k)));
  }
  std::string name() const override { return name_; }
  std::string description() const override {
    return fmt::format("gradient in {} of sum_i G_i . {} over j of f (IDX: the forward's), f = {}; df/dt0 = {}",
                       wrt_ == 'x' ? "X" : "Y", kmin_ ? "the K smallest" : "min", f_.text(), g_[0].text());
  }
  std::vector<std::string> size_names() const override {
    if (kmin_) return {"N", "M", "D", "K"};
    return {"N", "M", "D"};
  }
  Sizes default_sizes() const override {
    Sizes s{{"N", 4096}, {"M", 4096}, {"D", 3}};
    if (kmin_) s["K"] = 10;
    return s;
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"Y", Role::in}, {"IDX", Role::in}, {"G", Role::in}, {"OUT", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return f_.scalar_names(); }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N"), M = s.at("M"), D = s.at("D"), K = kmin_ ? s.at("K") : 1;
    switch (t) {
      case 0: return N * D;
      case 1: return M * D;
      case 2:
      case 3: return N * K;
      default: return wrt_ == 'x' ? N * D : M * D;
    }
  }
  Scalars scalars_for_trial(int) const override {
    Scalars s;
    for (const auto& n : f_.scalar_names()) s[n] = 1.0;
    return s;
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("M") > (1 << 24))
      throw UsageError("size M=" + std::to_string(s.at("M")) + " is too large: indices are fp32, exact up to 16777216");
    if (s.at("D") > 4096) throw UsageError("size D=" + std::to_string(s.at("D")) + " is above 4096, the kernels' limit");
    if (kmin_ && (s.at("K") > 64 || s.at("K") > s.at("M")))
      throw UsageError("size K=" + std::to_string(s.at("K")) + " must be at most 64 and at most M");
  }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;
  void condition_inputs(Instance& in, std::uint64_t seed, int trial) const override;
  // IDX moves to the next point (a valid index, so the kernel's read stays in range); the
  // default perturbation would make it negative.
  void perturb(Instance& in, std::size_t t, std::size_t i) const override {
    if (t != 2) return Problem::perturb(in, t, i);
    in.tensors[t][i] = std::fmod(in.tensors[t][i] + 1, static_cast<double>(in.sizes.at("M")));
  }
  double reduction_length(const Sizes&) const override { return 1; }  // the magnitude carries it
  // Per selected pair: the terms (2 D + 8, as the sums count them), the derivative (8) and the
  // chain and accumulation (4 D). The y-gradient's scan of IDX per block of rows is not counted.
  double flops(const Sizes& s) const override {
    const double D = static_cast<double>(s.at("D")), K = kmin_ ? static_cast<double>(s.at("K")) : 1.0;
    return (6 * D + 16) * static_cast<double>(s.at("N")) * K;
  }
  double bytes(const Sizes& s, DType t) const override {
    double e = 0;
    for (std::size_t k = 0; k < 5; ++k) e += static_cast<double>(tensor_elements(k, s));
    return e * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override;

 private:
  std::string name_;
  Formula f_;
  char wrt_;
  bool kmin_;
  std::vector<Formula> g_;  // df/dt_k for each pair term
};

// As the sum's gradient (grad_problem.cpp), in units of fp32's u: per selected pair and
// coordinate, v = sum_t g_t c_t errs by sum_t (err(g_t)|c_t| + |g_t| err(c_t) + 2|g_t c_t|);
// the weighted sum of a row's n contributions (K for x; for y, how many (i,k) name j) adds
// (n + 3) |G v| each. The rows p are the output's points, q the selected ones.
void LazyMinGrad::reference(const Instance& in, std::vector<std::vector<double>>& out,
                            std::vector<std::vector<double>>& mag) const {
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M"), K = kmin_ ? in.sizes.at("K") : 1;
  const int D = static_cast<int>(in.sizes.at("D"));
  const bool by_x = wrt_ == 'x';
  const auto& X = in.tensors[0];
  const auto& Y = in.tensors[1];
  const auto& idx = in.tensors[2];
  const auto& G = in.tensors[3];
  const std::int64_t rows = by_x ? N : M;
  std::vector<double> y(static_cast<std::size_t>(rows * D), 0.0), a(y.size(), 0.0), sub(y.size(), 0.0);
  std::vector<double> count(static_cast<std::size_t>(rows), 0.0);
  for (std::int64_t e = 0; e < N * K; ++e) count[by_x ? e / K : static_cast<std::int64_t>(idx[e])] += 1;
  const auto& terms = f_.terms();
  std::vector<Formula::Value> g(terms.size());
  for (std::int64_t e = 0; e < N * K; ++e) {
    const std::int64_t i = e / K, j = static_cast<std::int64_t>(idx[e]), r = by_x ? i : j;
    const double* p = by_x ? &X[i * D] : &Y[j * D];
    const double* q = by_x ? &Y[j * D] : &X[i * D];
    const double w = G[e];
    for (std::size_t t = 0; t < terms.size(); ++t) g[t] = g_[t].eval(p, q, D, in.scalars);
    for (int d = 0; d < D; ++d) {
      double v = 0, err = 0;
      for (std::size_t t = 0; t < terms.size(); ++t) {
        const bool sq = terms[t] == Formula::Term::sqdist;
        const double c = sq ? 2 * (p[d] - q[d]) : q[d];
        v += g[t].v * c;
        err += g[t].err * std::fabs(c) + std::fabs(g[t].v * c) * (sq ? 3 : 2);
      }
      y[r * D + d] += w * v;
      a[r * D + d] += std::fabs(w) * (err + (count[r] + 3) * std::fabs(v));
      if (std::fabs(w * v) < 0x1p-126) sub[r * D + d] += 1;
    }
  }
  // A product below fp32's normal range rounds on the subnormal grid (2^-126 in units of u).
  for (std::size_t e = 0; e < y.size(); ++e) a[e] = 2 * (a[e] + std::fabs(y[e]) + 3 * sub[e] * 0x1p-126);
  out = tensor_list(std::move(y));
  mag = tensor_list(std::move(a));
}

// IDX_i = the K smallest f(x_i, y_j) in ascending order, ties by the lower index (the forward's
// reference order, problem.cpp), evaluated in double.
void LazyMinGrad::condition_inputs(Instance& in, std::uint64_t, int) const {
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M"), K = kmin_ ? in.sizes.at("K") : 1;
  const int D = static_cast<int>(in.sizes.at("D"));
  auto& idx = in.tensors[2];
  parallel_for(N, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<double> f(static_cast<std::size_t>(M));
    std::vector<std::int64_t> order(static_cast<std::size_t>(M));
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t j = 0; j < M; ++j) f[j] = f_.eval(&in.tensors[0][i * D], &in.tensors[1][j * D], D, in.scalars).v;
      std::iota(order.begin(), order.end(), std::int64_t{0});
      std::partial_sort(order.begin(), order.begin() + K, order.end(),
                        [&](auto a, auto b) { return f[a] < f[b] || (f[a] == f[b] && a < b); });
      for (std::int64_t k = 0; k < K; ++k) idx[i * K + k] = static_cast<double>(order[k]);
    }
  });
}

// The family's min-gradient specs with the generated source (as the sum's gradient,
// grad_problem.cpp); the grid covers the output's rows.
std::vector<std::string> LazyMinGrad::kernel_specs() const {
  std::string p = fmt::format("// Generated by kforge: the gradient in {} of the {} of formula '{}'.\n", wrt_,
                              kmin_ ? "kmin" : "min", f_.text());
  for (std::size_t k = 0; k < g_.size(); ++k) p += fmt::format("// df/dt{} = {}\n", k, g_[k].text());
  p += fmt::format("#define LZ_WRT {}\n", wrt_ == 'x' ? 0 : 1);
  // min has no size K (its kernels take one index per row).
  p += kmin_ ? "#define LZ_K_PARAM , int K\n" : "#define LZ_K_PARAM\n#define K 1\n";
  for (std::size_t k = 0; k < 2; ++k)
    p += fmt::format("#define LZ_G{}(t0, t1) ({})\n", k, k < g_.size() ? g_[k].emit_c() : "0.0f");
  p += formula_defines(f_);
  return write_generated_specs("lazy_grad_min", name_, p, [this](nlohmann::json& spec) {
    if (wrt_ == 'x') return;
    std::string grid = spec["grid"][0];
    grid.replace(grid.find("(N,"), 3, "(M,");
    spec["grid"][0] = grid;
  });
}

}  // namespace

std::shared_ptr<Problem> make_lazy_min_grad_problem(std::string name, const std::string& formula, char wrt, bool kmin) {
  return std::make_shared<LazyMinGrad>(std::move(name), formula, wrt, kmin);
}

}  // namespace kforge
