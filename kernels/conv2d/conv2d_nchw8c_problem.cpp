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
  // x as rows of one image row of a channel block (W pixels x 8 channels), w as rows of one
  // (block, tap)'s 8x8 weights; y stays as drawn.
  static std::vector<std::int64_t> structured_rows(const Sizes& s) { return {s.at("W") * 8, 64, -1}; }
  static std::vector<std::string> kernel_specs() {
    return {"kernels/conv2d/conv2d_nchw8c_cpu.json", "kernels/conv2d/conv2d_nchw8c_opencl.json",
            "kernels/conv2d/conv2d_nchw8c_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_conv2d_nchw8c_problem() {
  return std::make_shared<conv2d_layout::Conv2dProblem<Nchw8c>>();
}

}  // namespace kforge
