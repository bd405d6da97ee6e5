// conv2d_nchw8c: the conv2d convolution (conv2d_problem.hpp: same sizes, math, reference loops,
// error bound, FLOPs and bytes) with channels in blocks of 8, the layout oneDNN's AVX2 direct
// convolution runs on:
//   x  nChw8c   (N, C/8, H, W, 8):          x[n][c/8][h][w][c%8]
//   w  OIhw8i8o (K/8, C/8, R, S, 8, 8):     w[k/8][c/8][r][s][c%8][k%8]
//   y  nChw8c   (N, K/8, P, Q, 8):          y[n][k/8][p][q][k%8]
// So the 8 filters of a block are one 32-byte vector of w and the 8 channels of a pixel one
// vector of y: a kernel vectorizes over filters (broadcast input values, aligned weight
// vectors) instead of along the output row. C and K must be multiples of 8 (no padding lanes).
#include "conv2d_problem.hpp"

namespace kforge {
namespace {

struct Nchw8c {
  static std::string name() { return "conv2d_nchw8c"; }
  static std::string description() {
    return "direct 2-D convolution, channels blocked by 8 (oneDNN's nChw8c): x (N,C/8,H,W,8) * "
           "w (K/8,C/8,R,S,8c,8k) -> y (N,K/8,P,Q,8), stride, pad, dil; C, K multiples of 8";
  }
  using Dims = conv2d_layout::Dims;
  static std::int64_t xi(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return (((n * (d.C / 8) + c / 8) * d.H + h) * d.W + w) * 8 + c % 8;
  }
  static std::int64_t wi(const Dims& d, std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) {
    return ((((k / 8) * (d.C / 8) + c / 8) * d.R + r) * d.S + s) * 64 + (c % 8) * 8 + k % 8;
  }
  static std::int64_t yi(const Dims& d, std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t q) {
    return (((n * (d.K / 8) + k / 8) * d.P + p) * d.Q + q) * 8 + k % 8;
  }
  static void check(const Sizes& s) {
    for (const char* n : {"C", "K"})
      if (s.at(n) % 8 != 0)
        throw UsageError("size " + std::string(n) + "=" + std::to_string(s.at(n)) +
                         " must be a multiple of 8 (conv2d_nchw8c blocks channels by 8); use conv2d "
                         "(NCHW) for other channel counts");
  }
  static Sizes default_sizes() { return conv2d_layout::resnet_conv2x(); }
  // x as rows of one image row of a channel block (W pixels x 8 channels), w as rows of one
  // (block, tap)'s 8x8 weights; y stays as drawn.
  static std::vector<std::int64_t> structured_rows(const Sizes& s) { return {s.at("W") * 8, 64, -1}; }
  static std::vector<std::string> kernel_specs() {
    return {"kernels/conv2d/conv2d_nchw8c_cpu.json", "kernels/conv2d/conv2d_nchw8c_opencl.json",
            "kernels/conv2d/conv2d_nchw8c_cuda.json"};
  }
};

struct Nchw8cXplain {
  static std::string name() { return "conv2d_nchw8c_xplain"; }
  static std::string description() {
    return "direct 2-D convolution, x plain, filters and y blocked by 8 (for C < 8): x (N,C,H,W) * "
           "w (K/8,C,R,S,8k) -> y (N,K/8,P,Q,8), stride, pad, dil; K a multiple of 8";
  }
  using Dims = conv2d_layout::Dims;
  static std::int64_t xi(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return ((n * d.C + c) * d.H + h) * d.W + w;
  }
  static std::int64_t wi(const Dims& d, std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) {
    return ((((k / 8) * d.C + c) * d.R + r) * d.S + s) * 8 + k % 8;
  }
  static std::int64_t yi(const Dims& d, std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t q) {
    return Nchw8c::yi(d, n, k, p, q);
  }
  static void check(const Sizes& s) {
    if (s.at("K") % 8 != 0)
      throw UsageError("size K=" + std::to_string(s.at("K")) +
                       " must be a multiple of 8 (conv2d_nchw8c_xplain blocks filters by 8); use conv2d "
                       "(NCHW) for other filter counts");
  }
  // ResNet-50's first layer (C = 3, 7x7, stride 2) at batch 1: the layer this layout is for.
  static Sizes default_sizes() {
    return {{"N", 1}, {"C", 3}, {"H", 224}, {"W", 224}, {"K", 64}, {"R", 7}, {"S", 7},
            {"stride", 2}, {"pad", 3}, {"dil", 1}};
  }
  // x as image rows, w as rows of one (block, channel, tap)'s 8 filters... of a filter row's S taps.
  static std::vector<std::int64_t> structured_rows(const Sizes& s) { return {s.at("W"), s.at("S") * 8, -1}; }
  static std::vector<std::string> kernel_specs() {
    return {"kernels/conv2d/conv2d_nchw8c_xplain_cpu.json", "kernels/conv2d/conv2d_nchw8c_xplain_opencl.json",
            "kernels/conv2d/conv2d_nchw8c_xplain_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_conv2d_nchw8c_problem() {
  return std::make_shared<conv2d_layout::Conv2dProblem<Nchw8c>>();
}
std::shared_ptr<Problem> make_conv2d_nchw8c_xplain_problem() {
  return std::make_shared<conv2d_layout::Conv2dProblem<Nchw8cXplain>>();
}

}  // namespace kforge
