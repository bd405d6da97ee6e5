// conv2d: direct 2-D convolution (cross-correlation, as in every deep-learning framework), NCHW:
// x (N,C,H,W), w (K,C,R,S), y (N,K,P,Q). The math, checks and reference are conv2d_problem.hpp's
// (shared with the blocked layout, conv2d_nchw8c_problem.cpp); this file is the layout.
#include "conv2d_problem.hpp"

namespace kforge {
namespace {

struct Nchw {
  static std::string name() { return "conv2d"; }
  static std::string description() {
    return "direct 2-D convolution, NCHW: x (N,C,H,W) * w (K,C,R,S) -> y (N,K,P,Q), "
           "stride, pad, dil";
  }
  using Dims = conv2d_layout::Dims;
  static std::int64_t xi(const Dims& d, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return ((n * d.C + c) * d.H + h) * d.W + w;
  }
  static std::int64_t wi(const Dims& d, std::int64_t k, std::int64_t c, std::int64_t r, std::int64_t s) {
    return ((k * d.C + c) * d.R + r) * d.S + s;
  }
  static std::int64_t yi(const Dims& d, std::int64_t n, std::int64_t k, std::int64_t p, std::int64_t q) {
    return ((n * d.K + k) * d.P + p) * d.Q + q;
  }
  static void check(const Sizes&) {}
  static Sizes default_sizes() { return conv2d_layout::resnet_conv2x(); }
  // x as rows of W (image rows: zero rows, zero columns, identical rows), w as rows of S (a
  // filter's rows), as a problem file's "matrix" tensors take them (examples/problems/conv2d.json
  // is its twin); y stays as drawn.
  static std::vector<std::int64_t> structured_rows(const Sizes& s) { return {s.at("W"), s.at("S"), -1}; }
  // The special kernels come first: library_kernel picks the first spec whose "applies" holds,
  // so C = 1 (conv2d_c1) wins over R = S = 1 (conv2d_1x1), and the general kernel takes the rest.
  static std::vector<std::string> kernel_specs() {
    return {"kernels/conv2d/conv2d_c1_cpu.json",     "kernels/conv2d/conv2d_1x1_cpu.json",
            "kernels/conv2d/conv2d_cpu.json",        "kernels/conv2d/conv2d_c1_opencl.json",
            "kernels/conv2d/conv2d_1x1_opencl.json", "kernels/conv2d/conv2d_opencl.json",
            "kernels/conv2d/conv2d_c1_cuda.json",    "kernels/conv2d/conv2d_1x1_cuda.json",
            "kernels/conv2d/conv2d_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_conv2d_problem() { return std::make_shared<conv2d_layout::Conv2dProblem<Nchw>>(); }

}  // namespace kforge
