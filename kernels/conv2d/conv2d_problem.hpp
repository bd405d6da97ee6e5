// The conv2d problems: one convolution, several memory layouts. Everything but the layout (the
// sizes and their checks, the reference's loops, the error bound, FLOPs and bytes) is here once;
// a layout (problem.cpp: NCHW, conv2d_nchw8c_problem.cpp: nChw8c) supplies the name, the index
// of each tensor element, any extra size rule and its kernels.
//   y[n,k,p,q] = sum_{c,r,s} x[n, c, p*stride - pad + r*dil, q*stride - pad + s*dil] * w[k,c,r,s]
// with x read as zero outside its H x W image, P = (H + 2*pad - dil*(R-1) - 1) / stride + 1 (Q
// likewise with W, S). One stride, padding and dilation for both spatial dimensions. fp32, or
// fp16/bf16 storage with fp32 accumulation.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge::conv2d_layout {

// A ResNet-50 3x3 layer (conv2_x) at batch 1: what a user tunes first, and quick to verify.
inline Sizes resnet_conv2x() {
  return {{"N", 1}, {"C", 64}, {"H", 56}, {"W", 56}, {"K", 64}, {"R", 3}, {"S", 3},
          {"stride", 1}, {"pad", 1}, {"dil", 1}};
}

// Output extent along one dimension; < 1 when the (dilated) window does not fit.
inline std::int64_t out_extent(std::int64_t in, std::int64_t window, const Sizes& s) {
  return (in + 2 * s.at("pad") - s.at("dil") * (window - 1) - 1) / s.at("stride") + 1;
}

// The logical extents of one instance.
struct Dims {
  std::int64_t N, C, H, W, K, R, S, P, Q;
  explicit Dims(const Sizes& s)
      : N(s.at("N")), C(s.at("C")), H(s.at("H")), W(s.at("W")), K(s.at("K")), R(s.at("R")),
        S(s.at("S")), P(out_extent(H, R, s)), Q(out_extent(W, S, s)) {}
};

// `L` is a layout: a struct with
//   static std::string name(), description();
//   static std::int64_t xi(const Dims&, n, c, h, w), wi(const Dims&, k, c, r, s),
//                       yi(const Dims&, n, k, p, q)   the element's offset in x, w, y;
//   static void check(const Sizes&)                    extra rules (throws UsageError);
//   static std::vector<std::int64_t> structured_rows(const Sizes&);
//   static std::vector<std::string> kernel_specs();
//   static Sizes default_sizes();
template <class L>
class Conv2dProblem final : public Problem {
 public:
  std::string name() const override { return L::name(); }
  std::string description() const override { return L::description(); }
  std::vector<std::string> size_names() const override {
    return {"N", "C", "H", "W", "K", "R", "S", "stride", "pad", "dil"};
  }
  Sizes default_sizes() const override { return L::default_sizes(); }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"x", Role::in}, {"w", Role::in}, {"y", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  // Every layout holds exactly the logical elements (a blocked layout's sizes are multiples of
  // its block: no padding lanes).
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N"), C = s.at("C"), K = s.at("K");
    if (t == 0) return N * C * s.at("H") * s.at("W");
    if (t == 1) return K * C * s.at("R") * s.at("S");
    return N * K * out_extent(s.at("H"), s.at("R"), s) * out_extent(s.at("W"), s.at("S"), s);
  }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return L::structured_rows(s); }

  // Padding may be 0; the window must fit the padded image at least once.
  void check_sizes(const Sizes& s) const override {
    for (const char* n : {"N", "C", "H", "W", "K", "R", "S", "stride", "dil"})
      if (s.at(n) < 1)
        throw UsageError("size " + std::string(n) + "=" + std::to_string(s.at(n)) + " must be at least 1");
    if (s.at("pad") < 0)
      throw UsageError("size pad=" + std::to_string(s.at("pad")) + " must be at least 0");
    for (const auto& [in, win, out] : {std::tuple{"H", "R", "P"}, std::tuple{"W", "S", "Q"}})
      if (out_extent(s.at(in), s.at(win), s) < 1)
        throw UsageError(std::string("output size ") + out + " < 1: the window " + win + "=" +
                         std::to_string(s.at(win)) + " (dil=" + std::to_string(s.at("dil")) +
                         ") does not fit " + in + "=" + std::to_string(s.at(in)) + " with pad=" +
                         std::to_string(s.at("pad")) + "; make " + in + " or pad larger");
    L::check(s);
    // Every index the kernels form is an int; keep each tensor below 2^31 elements.
    for (std::size_t t = 0; t < 3; ++t)
      if (tensor_elements(t, s) >= (std::int64_t{1} << 31))
        throw UsageError("tensor " + tensors()[t].name + " would have 2^31 or more elements; use smaller sizes");
  }

  // The index_width check (docs/verification.md): x past 2^31 elements, split along N images,
  // the last two live. A zero image gives a zero output image (no bias), as the check requires.
  // Kept cheap: K = 8 filters and windows that touch every input element once (1x1, or 3x3 at
  // stride 3, pad 0), so the work is 2K = 16 operations per input element (34 GFLOP, seconds),
  // and C large, so y (K/C of x at 1x1, K/9C at 3x3/3) stays small enough to be written and
  // compared whole. The window follows the request (R = S = 1 picks the 1x1 kernels, whose
  // "applies" must keep holding); C = 2048 at 4x4 makes an image exactly 2^15 elements, so
  // image 2^16 starts at flat index 2^31, where n * C * H * W in int wraps; at 3x3 an image is
  // 128 x 15 x 15 and the last image starts past 2^31. conv2d at C = 1 (conv2d_c1 applies only
  // there, and its y would be as large as x) declares none. C and K stay multiples of 8 (nChw8c).
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    const auto at = [&](const char* n, std::int64_t d) {
      const auto it = requested.find(n);
      return it == requested.end() ? d : it->second;
    };
    if (L::name() == "conv2d" && at("C", 64) == 1) return {};
    const bool one = at("R", 3) == 1 && at("S", 3) == 1;
    const std::int64_t C = one ? 2048 : 128, HW = one ? 4 : 15, image = C * HW * HW;
    const std::int64_t N = ((std::int64_t{1} << 31) + image - 1) / image + 1;  // (N-1) images reach 2^31
    WideIndexShape w;
    w.sizes = {{"N", N},         {"C", C},           {"H", HW}, {"W", HW},  {"K", 8},
               {"R", one ? 1 : 3}, {"S", one ? 1 : 3}, {"stride", one ? 1 : 3}, {"pad", 0}, {"dil", 1}};
    w.live = w.sizes;
    w.live["N"] = 2;
    return w;
  }

  // Plain loops in double over the logical indices; the layout only maps each (n, c, h, w),
  // (k, c, r, s), (n, k, p, q) to its offset, so every layout shares these loops.
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const Sizes& s = in.sizes;
    const Dims d(s);
    const std::int64_t st = s.at("stride"), pad = s.at("pad"), dil = s.at("dil");
    const auto &x = in.tensors[0], &w = in.tensors[1];
    std::vector<double> y(d.N * d.K * d.P * d.Q, 0.0), m(d.N * d.K * d.P * d.Q, 0.0);
    // Each (n, k) output plane is independent: the planes are shared among the cores.
    parallel_for(d.N * d.K, [&](std::int64_t b0, std::int64_t b1) {
      for (std::int64_t nk = b0; nk < b1; ++nk) {
        const std::int64_t n = nk / d.K, k = nk % d.K;
        for (std::int64_t c = 0; c < d.C; ++c)
          for (std::int64_t r = 0; r < d.R; ++r)
            for (std::int64_t t = 0; t < d.S; ++t) {
              const double wv = w[L::wi(d, k, c, r, t)], aw = std::fabs(wv);
              for (std::int64_t p = 0; p < d.P; ++p) {
                const std::int64_t h = p * st - pad + r * dil;
                if (h < 0 || h >= d.H) continue;
                for (std::int64_t q = 0; q < d.Q; ++q) {
                  const std::int64_t v = q * st - pad + t * dil;
                  if (v < 0 || v >= d.W) continue;
                  const double xv = x[L::xi(d, n, c, h, v)];
                  const std::int64_t o = L::yi(d, n, k, p, q);
                  y[o] += xv * wv;
                  m[o] += std::fabs(xv) * aw;
                }
              }
            }
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes& s) const override {
    return static_cast<double>(s.at("C") * s.at("R") * s.at("S"));
  }
  double flops(const Sizes& s) const override {
    return 2.0 * static_cast<double>(tensor_elements(2, s)) * s.at("C") * s.at("R") * s.at("S");
  }
  double bytes(const Sizes& s, DType t) const override {
    double e = 0;
    for (std::size_t i = 0; i < 3; ++i) e += static_cast<double>(tensor_elements(i, s));
    return e * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override { return L::kernel_specs(); }
};

}  // namespace kforge::conv2d_layout
