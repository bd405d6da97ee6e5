#pragma once
// gnn_attention: graph attention, GAT-style edge softmax over a graph's adjacency pattern, as
// three steps that a kernel fuses: SDDMM (a score per edge), a softmax over each row's edges,
// SpMM (the weighted sum of the neighbours' values).
//
//   s_p   = scale · Q[r,:] · K[c_p,:]                 for the edges p of row r (SDDMM)
//   α_p   = exp(s_p - max_row) / Σ_row exp(s - max)   (softmax over row r's edges)
//   out[r,:] = Σ_p α_p · V[c_p,:]                     (SpMM; 0 for a row without edges)
//
// A square CSR pattern S (M nodes), Q and K (M,D), V and out (M,N). The scores come from a dot
// product of node features (the "graph transformer" form of GAT's attention); GAT's additive
// score LeakyReLU(a·[Wh_r || Wh_c]) is the same computation with D = 2 and a different score.
//
// Bound: attention's first-order analysis (include/kforge/softmax_bound.hpp) per row, over the
// row's own edges: each score's error (its D-term dot product and the scale) carried through
// softmax's conditioning, plus the online softmax's own roundings over the row's n edges; past
// E·u > 0.1 the convex hull 2·max|v|. In units of u: reduction_length 1.
#include <Eigen/Sparse>
#include <cmath>
#include <limits>
#include <memory>

#include "kforge/softmax_bound.hpp"
#include "sparse_problem.hpp"

namespace kforge::sparse_family {

class GnnAttention final : public SparseProblem {
 public:
  enum { kQ = 2, kK, kV, kOut };
  std::string name() const override { return "gnn_attention"; }
  std::string description() const override {
    return "graph attention over a square CSR pattern (row_ptr, col_idx; M nodes, NNZ edges, int32 "
           "indices): out[r] = sum over r's edges of softmax_row(scale * Q[r] . K[c]) * V[c]; Q, K (M,D), V, out (M,N); "
           "SDDMM, row softmax and SpMM in one kernel; scalar pattern picks the generator";
  }
  std::vector<std::string> size_names() const override { return {"M", "D", "N", "NNZ"}; }
  Sizes default_sizes() const override { return {{"M", 1024}, {"D", 32}, {"N", 64}, {"NNZ", 16384}}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"row_ptr", Role::in, DType::int32}, {"col_idx", Role::in, DType::int32}, {"Q", Role::in},
            {"K", Role::in},       {"V", Role::in},       {"out", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {"pattern", "scale"}; }
  // 0.375 is 1/sqrt of no head size a kernel might assume.
  Scalars scalars_for_trial(int trial) const override {
    return {{"pattern", pattern_for_trial(trial)}, {"scale", trial % 2 == 0 ? 0.125 : 0.375}};
  }
  // scale 0: every edge weighs the same (the mean of the neighbours); 1: unscaled scores.
  std::vector<Scalars> special_scalars() const override { return {{{"scale", 0.0}}, {{"scale", 1.0}}}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kPtr: return s.at("M") + 1;
      case kIdx: return s.at("NNZ");
      case kQ:
      case kK: return s.at("M") * s.at("D");
      default: return s.at("M") * s.at("N");
    }
  }

  // The pattern (SparseProblem), then Q and K scaled by a power of two (exact) so that |q|, |k|
  // <= 4: scores stay where softmax is not a step function of rounding (as attention's).
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    SparseProblem::condition_inputs(inst, seed, trial);
    for (int t : {kQ, kK}) {
      auto& x = inst.tensors[t];
      double mx = 0;
      for (double v : x) mx = std::max(mx, std::fabs(v));
      if (mx <= 4) continue;
      const double f = std::ldexp(1.0, -static_cast<int>(std::ceil(std::log2(mx / 4))));
      for (double& v : x) v *= f;
    }
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_structure(in);
    const std::int64_t M = in.sizes.at("M"), D = in.sizes.at("D"), N = in.sizes.at("N");
    const double scale = in.scalars.at("scale");
    const auto &rp = in.tensors[kPtr], &ci = in.tensors[kIdx], &Q = in.tensors[kQ], &K = in.tensors[kK],
               &V = in.tensors[kV];
    std::vector<double> o(M * N, 0.0), m(M * N, 0.0);
    parallel_for(M, [&](std::int64_t r0, std::int64_t r1) {
      std::vector<double> s, err;
      for (std::int64_t r = r0; r < r1; ++r) {
        const auto p0 = static_cast<std::int64_t>(rp[r]), n = static_cast<std::int64_t>(rp[r + 1]) - p0;
        s.assign(n, 0.0);
        err.assign(n, 0.0);
        for (std::int64_t p = 0; p < n; ++p) {
          const auto c = static_cast<std::int64_t>(ci[p0 + p]);
          double dot = 0, abs_dot = 0;
          for (std::int64_t d = 0; d < D; ++d) {
            dot += Q[r * D + d] * K[c * D + d];
            abs_dot += std::fabs(Q[r * D + d] * K[c * D + d]);
          }
          s[p] = scale * dot;
          err[p] = std::fabs(scale) * (static_cast<double>(D) + kExtraScoreUlps) * abs_dot;
        }
        // a row without edges: out = 0 with a zero bound, so exactly 0
        softmax_weighted_sum(s, err, n, N, [&](std::int64_t p) { return &V[static_cast<std::int64_t>(ci[p0 + p]) * N]; },
                             &o[r * N], &m[r * N]);
      }
    });
    out = tensor_list(std::move(o));
    mag = tensor_list(std::move(m));
  }
  // The magnitude is already an error bound in units of u (see reference()).
  double reduction_length(const Sizes&) const override { return 1; }
  // Structured inputs, as attention's: Q and K matrices of rows of D (a zero row of Q or K makes
  // a row's scores all equal: uniform weights; every pattern but near_overflow keeps |q|, |k| <=
  // 4), V of rows of N. near_overflow scales V alone, to max / (4 M): an online-softmax kernel's
  // unnormalized sum over a row's edges (up to M in the dense_row pattern, weights <= 1) stays
  // finite, as attention's is scaled by S.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {-1, -1, s.at("D"), s.at("D"), s.at("N"), -1};
  }
  double near_overflow_length(const Sizes& s) const override { return static_cast<double>(s.at("M")); }
  bool near_overflow_scales(std::size_t t) const override { return t == kV; }
  // A multiply-add per edge and feature in the scores (D) and in the sum (N); exp not counted.
  double flops(const Sizes& s) const override {
    return 2.0 * static_cast<double>(s.at("NNZ")) * static_cast<double>(s.at("D") + s.at("N"));
  }
  // The pattern, Q, K, V and out once each.
  double bytes(const Sizes& s, DType t) const override {
    const double M = static_cast<double>(s.at("M"));
    return bytes_structure(s, false) + (2 * M * s.at("D") + 2 * M * s.at("N")) * dtype_size(t);
  }

  // What a C++ user writes with Eigen (one thread): the scores edge by edge (SDDMM), the softmax
  // row by row into the values of the adjacency, then sparse x dense for the sum.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    (void)threads;
    const std::int64_t M = in.sizes.at("M"), D = in.sizes.at("D"), N = in.sizes.at("N");
    using Sp = Eigen::SparseMatrix<float, Eigen::RowMajor, int>;
    using Dense = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    auto A = std::make_shared<Sp>(M, M);
    std::vector<Eigen::Triplet<float, int>> trip;
    const auto &rp = in.tensors[kPtr], &ci = in.tensors[kIdx];
    for (std::int64_t r = 0; r < M; ++r)
      for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p)
        trip.emplace_back(static_cast<int>(r), static_cast<int>(ci[p]), 0.0f);
    A->setFromTriplets(trip.begin(), trip.end());
    A->makeCompressed();
    auto copy = [&](int t, std::int64_t cols) {
      auto x = std::make_shared<Dense>(M, cols);
      for (std::int64_t i = 0; i < M * cols; ++i) x->data()[i] = static_cast<float>(in.tensors[t][i]);
      return x;
    };
    auto Qm = copy(kQ, D), Km = copy(kK, D), Vm = copy(kV, N);
    auto out = std::make_shared<Dense>(M, N);
    const auto scale = static_cast<float>(in.scalars.at("scale"));
    return [A, Qm, Km, Vm, out, scale] {
      for (Eigen::Index r = 0; r < A->outerSize(); ++r) {
        float mx = -std::numeric_limits<float>::infinity(), sum = 0;
        for (Sp::InnerIterator it(*A, r); it; ++it) {
          it.valueRef() = scale * Qm->row(r).dot(Km->row(it.col()));
          mx = std::max(mx, it.value());
        }
        for (Sp::InnerIterator it(*A, r); it; ++it) sum += it.valueRef() = std::exp(it.value() - mx);
        for (Sp::InnerIterator it(*A, r); it; ++it) it.valueRef() /= sum;
      }
      out->noalias() = *A * *Vm;
    };
  }
  std::string baseline_name() const override { return "eigen_sddmm_softmax_spmm"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/gnn_attention_cpu.json", "kernels/sparse/gnn_attention_opencl.json",
            "kernels/sparse/gnn_attention_cuda.json"};
  }

 protected:
  std::vector<std::string> width_names() const override { return {"D", "N"}; }
  std::string cols_name() const override { return "M"; }
  void ensure_nonzero_product(Instance& in, std::int64_t, std::int64_t c) const override {
    auto& v = in.tensors[kV][c * in.sizes.at("N")];
    if (v == 0) v = 1;
  }

 private:
  // What a correct fp32 kernel may get wrong, in units of fp32's roundoff u (as attention's).
  static constexpr double kExtraScoreUlps = 4;  // the scale's product, then s - max
};

}  // namespace kforge::sparse_family
