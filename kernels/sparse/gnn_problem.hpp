#pragma once
// gnn_aggregate: one GNN layer's neighbourhood aggregation over a graph's adjacency pattern.
//
// The graph: a square CSR pattern S (M nodes; row r lists the nodes c whose messages r
// receives), H (M,N) node features, out (M,N). The scalar `kind` picks the aggregation:
//
//   0 GCN normalized sum (Kipf & Welling's D^-1/2 (A + I) D^-1/2 H), d_i = 1 + row i's nonzeros:
//       out[r,:] = H[r,:] / d_r + Σ_{p in row r} H[c_p,:] / sqrt(d_r · d_{c_p})
//   1 GraphSAGE mean: out[r,:] = (1 / len_r) Σ_{p in row r} H[c_p,:]   (0 for a row with none)
//
// The weights come from the structure alone (row_ptr gives every degree), so no value array
// travels. Trials alternate: trial 1 (the one `bench` times) GCN, trials 0 and 2 the mean.
// Bound: a sum of n terms w·H with each weight w within a few ulps (sqrt and a division; OpenCL
// allows 3 and 2.5): γ_n · Σ|w||H| with n = the row's terms + 10.
#include <Eigen/Sparse>
#include <memory>

#include "sparse_problem.hpp"

namespace kforge::sparse_family {

class GnnAggregate final : public SparseProblem {
 public:
  enum { kH = 2, kOut };
  std::string name() const override { return "gnn_aggregate"; }
  std::string description() const override {
    return "one GNN aggregation over a square CSR pattern (row_ptr, col_idx; M nodes, NNZ edges, int32 "
           "indices), H (M,N), out (M,N); scalar kind: 0 GCN normalized sum H[r]/d_r + sum H[c]/sqrt(d_r d_c), "
           "d = 1 + row length; 1 GraphSAGE mean; scalar pattern picks the generator";
  }
  std::vector<std::string> size_names() const override { return {"M", "N", "NNZ"}; }
  Sizes default_sizes() const override { return {{"M", 1024}, {"N", 64}, {"NNZ", 16384}}; }  // 16 edges a node
  std::vector<TensorSpec> tensors() const override {
    return {{"row_ptr", Role::in, DType::int32}, {"col_idx", Role::in, DType::int32}, {"H", Role::in}, {"out", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {"pattern", "kind"}; }
  Scalars scalars_for_trial(int trial) const override {
    return {{"pattern", pattern_for_trial(trial)}, {"kind", trial % 2 == 1 ? 0.0 : 1.0}};
  }
  void check_scalars(const Scalars& s) const override {
    SparseProblem::check_scalars(s);
    const double kind = s.at("kind");
    if (kind != 0 && kind != 1)
      throw UsageError("scalar kind=" + std::to_string(kind) + " must be 0 (GCN normalized sum) or 1 (GraphSAGE mean)");
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kPtr: return s.at("M") + 1;
      case kIdx: return s.at("NNZ");
      default: return s.at("M") * s.at("N");
    }
  }

  // The weight of the message from c into r, and of r's own term (GCN only; 0 for the mean).
  static double weight(bool gcn, double len_r, double len_c) {
    return gcn ? 1 / std::sqrt((1 + len_r) * (1 + len_c)) : 1 / len_r;
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_structure(in);
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const bool gcn = in.scalars.at("kind") == 0;
    const auto &rp = in.tensors[kPtr], &ci = in.tensors[kIdx], &H = in.tensors[kH];
    std::vector<double> o(M * N, 0.0), m(M * N, 0.0);
    parallel_for(M, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r) {
        const double len_r = rp[r + 1] - rp[r];
        auto add = [&](std::int64_t c, double w) {
          for (std::int64_t j = 0; j < N; ++j) {
            o[r * N + j] += w * H[c * N + j];
            m[r * N + j] += w * std::fabs(H[c * N + j]);
          }
        };
        if (gcn) add(r, 1 / (1 + len_r));
        for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p) {
          const auto c = static_cast<std::int64_t>(ci[p]);
          add(c, weight(gcn, len_r, rp[c + 1] - rp[c]));
        }
      }
    });
    out = tensor_list(std::move(o));
    mag = tensor_list(std::move(m));
  }
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const auto& rp = in.tensors[kPtr];
    std::vector<double> n(M * N);
    for (std::int64_t r = 0; r < M; ++r) std::fill_n(&n[r * N], N, rp[r + 1] - rp[r] + 1 + 10);
    return tensor_list(std::move(n));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("M") + 11); }
  // Structured inputs: H a matrix of rows of N (a zero row is a node with no message, identical
  // rows make every neighbour's message the same, one-hot rows a single active feature); the
  // graph stays the generator's. near_overflow scales H to max / (4 (M + 11)): a mean kernel
  // that sums a row's up to M messages before dividing stays finite.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {-1, -1, s.at("N"), -1}; }
  // A multiply and an add per edge and feature (GCN's self term and the weights not counted).
  double flops(const Sizes& s) const override { return 2.0 * s.at("NNZ") * s.at("N"); }
  // The pattern, H and out once each.
  double bytes(const Sizes& s, DType t) const override {
    return bytes_structure(s, false) + 2.0 * static_cast<double>(s.at("M")) * s.at("N") * dtype_size(t);
  }

  // What a C++ user writes with Eigen (one thread): the normalized adjacency built once as a
  // row-major SparseMatrix (its weights are a property of the graph), then sparse x dense.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    (void)threads;
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const bool gcn = in.scalars.at("kind") == 0;
    using Sp = Eigen::SparseMatrix<float, Eigen::RowMajor, int>;
    using Dense = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    auto A = std::make_shared<Sp>(M, M);
    std::vector<Eigen::Triplet<float, int>> trip;
    const auto &rp = in.tensors[kPtr], &ci = in.tensors[kIdx];
    for (std::int64_t r = 0; r < M; ++r) {
      const double len_r = rp[r + 1] - rp[r];
      if (gcn) trip.emplace_back(static_cast<int>(r), static_cast<int>(r), static_cast<float>(1 / (1 + len_r)));
      for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p) {
        const auto c = static_cast<std::int64_t>(ci[p]);
        trip.emplace_back(static_cast<int>(r), static_cast<int>(c), static_cast<float>(weight(gcn, len_r, rp[c + 1] - rp[c])));
      }
    }
    A->setFromTriplets(trip.begin(), trip.end());  // a stored diagonal and the self term sum, as A + I
    auto H = std::make_shared<Dense>(M, N);
    for (std::int64_t i = 0; i < M * N; ++i) H->data()[i] = static_cast<float>(in.tensors[kH][i]);
    auto out = std::make_shared<Dense>(M, N);
    return [A, H, out] { out->noalias() = *A * *H; };
  }
  std::string baseline_name() const override { return "eigen_normalized_adjacency"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/gnn_aggregate_cpu.json", "kernels/sparse/gnn_aggregate_opencl.json",
            "kernels/sparse/gnn_aggregate_cuda.json",
            // the density-adaptive kernel (a path per row tile, hubs edge-parallel) after gnn_aggregate.cpu: not the default
            "kernels/sparse/gnn_aggregate_adaptive_cpu.json"};
  }

 protected:
  std::vector<std::string> width_names() const override { return {"N"}; }
  std::string cols_name() const override { return "M"; }
  void ensure_nonzero_product(Instance& in, std::int64_t, std::int64_t c) const override {
    auto& h = in.tensors[kH][c * in.sizes.at("N")];
    if (h == 0) h = 1;
  }
};

}  // namespace kforge::sparse_family
