// lazy_reduce gradients: for L = sum_i G_i sum_j f(x_i, y_j) b_j (G: the upstream gradient of
// the sum's output, as autograd's backward receives it), with X (N,D), Y (M,D), B (M), G (N):
//   wrt x  OUT (N,D) = G_i sum_j b_j sum_k df/dt_k * dt_k/dx_i     (a reduction over j)
//   wrt y  OUT (M,D) = b_j sum_i G_i sum_k df/dt_k * dt_k/dy_j     (a reduction over i)
//   wrt b  OUT (M)   = sum_i G_i f(x_i, y_j)                       (the plain sum over i)
// with the pair terms' gradients d sqdist/dx = 2(x - y), d dot/dx = y (and x <-> y for y).
// For L = sum_i G_i log sum_j exp f(x_i, y_j) (logsumexp), with X, Y, LSE (N), G (N):
//   wrt x  OUT (N,D) = G_i sum_j softmax_ij sum_k df/dt_k * dt_k/dx_i
//   wrt y  OUT (M,D) = sum_i G_i softmax_ij sum_k df/dt_k * dt_k/dy_j,  softmax_ij = exp(f_ij - LSE_i)
// the sum's kernel with a per-pair weight. LSE is the forward's output, an input as KeOps'
// backward receives it: the instance carries the true lse of its X and Y (condition_inputs), so
// the kernels need no first pass over the points and the y-gradient no second reduction.
// df/dt_k is Formula::derivative (symbolic, src/core/formula_grad.cpp); the reference evaluates
// it in double, the kernels get it emitted as C. The pair terms are symmetric in x and y, so a
// gradient in y is the gradient-in-x kernel with the two point sets' roles swapped.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/util.hpp"
#include "grad.hpp"

namespace kforge {
namespace {

class LazyGrad final : public Problem {
 public:
  LazyGrad(std::string name, const std::string& formula, char wrt, const std::string& reduce, Scalars trial_values)
      : name_(std::move(name)), f_(Formula::parse(formula)), wrt_(wrt), lse_(reduce == "logsumexp"),
        trial_(std::move(trial_values)) {
    check_lazy_scalar_names(f_);
    if (reduce != "sum" && reduce != "logsumexp")
      throw UsageError("problem '" + name_ + "': kforge has gradients of the sum and logsumexp reductions only (not " +
                       reduce + ")");
    if (lse_ && wrt_ == 'b')
      throw UsageError("problem '" + name_ + "': logsumexp has no weights b to differentiate: use grad_x or grad_y");
    if (wrt_ != 'b')
      for (std::size_t k = 0; k < f_.terms().size(); ++k) g_.push_back(f_.derivative(static_cast<int>(k)));
  }
  std::string name() const override { return name_; }
  std::string description() const override {
    return fmt::format("gradient in {} of sum_i G_i {}, f = {}{}", wrt_ == 'b' ? "B" : wrt_ == 'x' ? "X" : "Y",
                       lse_ ? "log sum_j exp f (LSE: the forward's)" : "sum_j f b_j", f_.text(),
                       g_.empty() ? "" : "; df/dt0 = " + g_[0].text());
  }
  std::vector<std::string> size_names() const override { return {"N", "M", "D"}; }
  Sizes default_sizes() const override { return {{"N", 4096}, {"M", 4096}, {"D", 3}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"Y", Role::in}, {lse_ ? "LSE" : "B", Role::in}, {"G", Role::in}, {"OUT", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return f_.scalar_names(); }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N"), M = s.at("M"), D = s.at("D");
    switch (t) {
      case 0: return N * D;
      case 1: return M * D;
      case 2: return lse_ ? N : M;
      case 3: return N;
      default: return wrt_ == 'x' ? N * D : wrt_ == 'y' ? M * D : M;
    }
  }
  Scalars scalars_for_trial(int trial) const override {
    Scalars s;
    for (const auto& n : f_.scalar_names()) {
      const auto it = trial_.find(n + std::to_string(trial % 2));
      s[n] = it != trial_.end() ? it->second : 1.0;
    }
    return s;
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("D") > 4096) throw UsageError("size D=" + std::to_string(s.at("D")) + " is above 4096, the kernels' limit");
  }
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;
  void condition_inputs(Instance& in, std::uint64_t seed, int trial) const override;
  // LSE moves by 1 (every softmax weight of its row scaled by e): the default perturbation
  // (2 + 2|v| toward the other sign) would make exp(f - lse) overflow wherever lse is large.
  void perturb(Instance& in, std::size_t t, std::size_t i) const override {
    if (!lse_ || t != 2) return Problem::perturb(in, t, i);
    std::vector<double> moved{in.tensors[t][i] + 1};
    round_to(in.dtype, moved);
    in.tensors[t][i] = moved[0];
  }
  double reduction_length(const Sizes&) const override { return 1; }  // the magnitude carries it
  // Structured inputs (struct8), where f is the library's Gaussian (gauss_sum_grad, or a user's
  // lazy_reduce:grad_<x|y|b>:sum:exp(-sqdist(x,y)/s)): the weights B and G element-wise (equal,
  // alternating, subnormal, -0.0 weights; near_overflow). The points stay as drawn (as
  // gauss_sum's). near_overflow scales B and G to sqrt(max / (4 L)), L = 32 max(N, M): an output
  // is at most max(N, M) |b| |G| |df/dx|, and |df/dx| <= sqrt(2/s) e^-1/2 <= 27 for s >= 0.001,
  // so it stays below max / 4.
  // logsumexp's gradients declare none: a pattern on X or Y after conditioning would leave LSE
  // stale, and on LSE (its own near_overflow) would overflow exp(f - lse).
  std::vector<std::int64_t> structured_rows(const Sizes&) const override {
    if (lse_ || !is_library_gaussian(f_)) return {};
    return {-1, -1, 0, 0, -1};
  }
  double near_overflow_length(const Sizes& s) const override {
    return 32.0 * static_cast<double>(std::max(s.at("N"), s.at("M")));
  }
  // Per pair: the terms (2 D + 8, as the sums count them), the derivative (8) and the D
  // coordinates' chain and accumulation (4 D); the gradient in b is the sum's 2 D + 10;
  // logsumexp's softmax weight adds 4 (the subtraction, exp as one, the product with the weight,
  // the formula's rest counted with the terms).
  double flops(const Sizes& s) const override {
    const double D = static_cast<double>(s.at("D"));
    const double per = wrt_ == 'b' ? 2 * D + 10 : 6 * D + 16 + (lse_ ? 4 : 0);
    return per * static_cast<double>(s.at("N")) * static_cast<double>(s.at("M"));
  }
  double bytes(const Sizes& s, DType t) const override {
    double e = 0;
    for (std::size_t k = 0; k < 5; ++k) e += static_cast<double>(tensor_elements(k, s));
    return e * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override;

 private:
  std::string generated_prefix() const;

  std::string name_;
  Formula f_;
  char wrt_;
  bool lse_;  // the logsumexp reduction's gradient (else the sum's)
  std::vector<Formula> g_;  // df/dt_k for each pair term (none for the gradient in b)
  Scalars trial_;
};

// Rows p are the output's points (X for x, Y for y and b), q the other set, summed over; wr
// and wc the row's and the summed point's weights. Error scales in units of the fp32 roundoff,
// as the sum's (problem.cpp): per pair and coordinate, v = sum_k g_k c_k with c the term's
// gradient (2(p - q): one rounding; q: exact) has error sum_k (err(g_k)|c_k| + |g_k| err(c_k) +
// 2 |g_k c_k|) (the products' roundings); the weighted sum over q adds (Q + 3) |wc v| per pair,
// the row weight one more rounding.
//
// logsumexp: the pair's weight is wc * w, w = exp(f - lse) with lse the input (exact: the
// reference uses the very fp32 value the kernel reads). The kernels clamp the exponent at 0
// (w <= 1, as a softmax weight is: lse >= max_j f, so the clamp changes nothing but rounding,
// and no exp overflows whatever f's error). Their exponent errs by d = u (err_f + |f - lse| + 2)
// (f's error, the subtraction's rounding, exp's 2 ulps), so their w lies in
// [exp(min(f - lse - d, 0)), exp(min(f - lse + d, 0))]: about w (err_f + |f - lse| + 2) u
// where d is small, and anywhere in [0, 1] where it is not (wide inputs: |f| ~ 1e12, whose fp32
// value is off by more than 1; no fp32 kernel knows the softmax there). Plus one rounding for
// the product with wc and 2^-126 absolute where exp falls below the normal range (flushed;
// 2^-102 in units of u). Where d is small the bound is the sum's with weights that sum to 1
// per row, about (M + 3) max|v| u, plus f's error carried through exp.
void LazyGrad::reference(const Instance& in, std::vector<std::vector<double>>& out,
                         std::vector<std::vector<double>>& mag) const {
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M");
  const int D = static_cast<int>(in.sizes.at("D"));
  const bool by_x = wrt_ == 'x';
  const auto& P = in.tensors[by_x ? 0 : 1];
  const auto& Q = in.tensors[by_x ? 1 : 0];
  // The weights (null: 1). logsumexp: G weighs the rows of X, whichever side they are on.
  const std::vector<double>* wr = &in.tensors[by_x ? 3 : 2];
  const std::vector<double>* wc = &in.tensors[by_x ? 2 : 3];
  if (lse_) wr = by_x ? &in.tensors[3] : nullptr, wc = by_x ? nullptr : &in.tensors[3];
  const auto& lse = in.tensors[2];
  const std::int64_t rows = by_x ? N : M, inner = by_x ? M : N;
  const int width = wrt_ == 'b' ? 1 : D;
  std::vector<double> y(static_cast<std::size_t>(rows * width)), m(y.size());
  const auto& terms = f_.terms();
  parallel_for(rows, [&](std::int64_t r0, std::int64_t r1) {
    std::vector<double> s(static_cast<std::size_t>(width)), a(s.size()), sub(s.size());
    std::vector<Formula::Value> g(terms.size());
    for (std::int64_t r = r0; r < r1; ++r) {
      std::fill(s.begin(), s.end(), 0.0), std::fill(a.begin(), a.end(), 0.0);
      std::fill(sub.begin(), sub.end(), 0.0);
      const double* p = &P[r * D];
      const double wrow = wrt_ == 'b' || !wr ? 1.0 : (*wr)[r];
      for (std::int64_t j = 0; j < inner; ++j) {
        const double* q = &Q[j * D];
        double w = wc ? (*wc)[j] : 1.0, w_err = 0;  // the pair's weight and its error scale
        if (wrt_ == 'b') {
          const auto f = f_.eval(p, q, D, in.scalars);
          s[0] += f.v * w;
          a[0] += f.err * std::fabs(w) + static_cast<double>(inner + 1) * std::fabs(f.v * w);
          if (std::fabs(f.v * w) < 0x1p-126) sub[0] += 1;
          continue;
        }
        if (lse_) {
          const auto f = f_.eval(p, q, D, in.scalars);
          const double x = f.v - lse[by_x ? r : j], sm = std::exp(x), dx = 0x1p-24 * (f.err + std::fabs(x) + 2);
          const double dev = std::max(std::fabs(std::exp(std::min(x + dx, 0.0)) - sm),
                                      std::fabs(sm - std::exp(std::min(x - dx, 0.0))));
          w_err = std::fabs(w) * (dev * 0x1p24 + sm + 0x1p-102);
          w *= sm;
        }
        for (std::size_t k = 0; k < terms.size(); ++k) g[k] = g_[k].eval(p, q, D, in.scalars);
        for (int d = 0; d < D; ++d) {
          double v = 0, err = 0;
          for (std::size_t k = 0; k < terms.size(); ++k) {
            const bool sq = terms[k] == Formula::Term::sqdist;
            const double c = sq ? 2 * (p[d] - q[d]) : q[d];
            v += g[k].v * c;
            err += g[k].err * std::fabs(c) + std::fabs(g[k].v * c) * (sq ? 3 : 2);
          }
          s[d] += w * v;
          a[d] += std::fabs(w) * (err + static_cast<double>(inner + 3) * std::fabs(v)) + w_err * std::fabs(v);
          if (std::fabs(w * v) < 0x1p-126 || std::fabs(wrow * w * v) < 0x1p-126) sub[d] += 1;
        }
      }
      // A product below fp32's normal range rounds on the subnormal grid: up to 2^-150
      // absolute each (2^-126 in units of u), whatever order a kernel multiplies the pair's
      // factors in (up to 3 such roundings a pair), scaled by the row weight where it is applied
      // last. Only pairs with a subnormal product count (structured inputs' subnormal weights).
      const double w = wrow;
      for (int d = 0; d < width; ++d) {
        y[r * width + d] = w * s[d];
        m[r * width + d] = 2 * (std::fabs(w) * a[d] + std::fabs(w * s[d]) + 3 * sub[d] * 0x1p-126 * std::max(1.0, std::fabs(w)));
      }
    }
  });
  out = tensor_list(std::move(y));
  mag = tensor_list(std::move(m));
}

// logsumexp: LSE_i = the true log sum_j exp f(x_i, y_j) of this instance's X and Y (in double,
// shifted by the row's max), rounded to fp32: what the forward reduction gives the backward.
void LazyGrad::condition_inputs(Instance& in, std::uint64_t, int) const {
  if (!lse_) return;
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M");
  const int D = static_cast<int>(in.sizes.at("D"));
  auto& lse = in.tensors[2];
  parallel_for(N, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<double> f(static_cast<std::size_t>(M));
    for (std::int64_t i = i0; i < i1; ++i) {
      double mx = -std::numeric_limits<double>::infinity(), s = 0;
      for (std::int64_t j = 0; j < M; ++j)
        f[j] = f_.eval(&in.tensors[0][i * D], &in.tensors[1][j * D], D, in.scalars).v, mx = std::max(mx, f[j]);
      for (std::int64_t j = 0; j < M; ++j) s += std::exp(f[j] - mx);
      lse[i] = mx + std::log(s);
    }
  });
  round_to(in.dtype, lse);
}

std::string LazyGrad::generated_prefix() const {
  std::string p = fmt::format("// Generated by kforge: the gradient in {} of the {} of formula '{}'.\n", wrt_,
                              lse_ ? "logsumexp" : "sum", f_.text());
  for (std::size_t k = 0; k < g_.size(); ++k) p += fmt::format("// df/dt{} = {}\n", k, g_[k].text());
  p += fmt::format("#define LZ_WRT {}\n#define LZ_RED {}\n", wrt_ == 'x' ? 0 : wrt_ == 'y' ? 1 : 2, lse_ ? 1 : 0);
  for (std::size_t k = 0; k < 2; ++k)
    p += fmt::format("#define LZ_G{}(t0, t1) ({})\n", k, k < g_.size() ? g_[k].emit_c() : "0.0f");
  return p + formula_defines(f_);
}

// As the sum's (problem.cpp): the family's gradient specs with the generated source, written
// once per formula under the cache folder; the grid covers the output's rows.
std::vector<std::string> LazyGrad::kernel_specs() const {
  return write_generated_specs("lazy_grad", name_, generated_prefix(), [this](nlohmann::json& spec) {
    if (wrt_ == 'x') return;
    std::string grid = spec["grid"][0];
    grid.replace(grid.find("(N,"), 3, "(M,");
    spec["grid"][0] = grid;
  });
}

}  // namespace

std::shared_ptr<Problem> make_lazy_grad_problem(std::string name, const std::string& formula, char wrt,
                                                const std::string& reduce, Scalars trial_values) {
  return std::make_shared<LazyGrad>(std::move(name), formula, wrt, reduce, std::move(trial_values));
}

}  // namespace kforge
