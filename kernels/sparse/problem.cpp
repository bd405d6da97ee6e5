// The sparse family: spmm (CSR A times dense B) and sddmm (dense A times dense B^T, sampled at a
// CSR pattern) here; fusedmm (SDDMM then SpMM in one kernel, fusedmm_problem.hpp) and spmspv
// (CSC matrix times sparse vector, spmspv_problem.hpp), gnn_aggregate (GCN normalized sum and
// GraphSAGE mean over a graph, gnn_problem.hpp), gnn_attention (SDDMM, row softmax and SpMM:
// graph attention, gnn_attention_problem.hpp); what they share (the structure inputs,
// the pattern scalar, validation, perturbation) in sparse_problem.hpp. fp32 only; the pointers and
// indices are int32 tensors (TensorSpec::storage).
//
// The sparse structure is an input the problem generates: NNZ (a size) is the length of col_idx
// and values; the pattern is the scalar `pattern` (include/kforge/sparse.hpp's numbering), set
// per verification trial so the protocol's trials and fuzzed shapes walk every generator
// (uniform, power-law, banded, block, pruned, empty rows and columns, one dense row), and fixed
// by the user with `--scalar pattern=K`. A pattern holds min(NNZ, cells it allows) nonzeros;
// entries past row_ptr[M] are unused (kernels never read them; sddmm writes 0 there). Timed
// runs use trial 1, the uniform pattern. Kernels receive `pattern` as an argument and ignore it.
//
//   spmm:  C[r, :] = Σ_{p in row r} values[p] · B[col_idx[p], :]     B (K,N), C (M,N)
//   sddmm: out[p]  = A[r, :] · B[col_idx[p], :]  for p in row r       A (M,D), B (K,D), out (NNZ)
//
// The error bound of spmm follows each output row's reduction length (its nonzeros), not K:
// a row with 3 nonzeros gets a 3-term bound (Problem::reduction_lengths).
#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>

#include "fusedmm_problem.hpp"
#include "gnn_attention_problem.hpp"
#include "gnn_problem.hpp"
#include "sparse_problem.hpp"
#include "spmm_bell_problem.hpp"
#include "spmspv_problem.hpp"

namespace kforge {
namespace {

using sparse_family::SparseProblem;
constexpr int kRowPtr = sparse_family::kPtr, kColIdx = sparse_family::kIdx;

// ---- spmm -------------------------------------------------------------------------------------
enum { kSpmmValues = 2, kSpmmB, kSpmmC };

class Spmm final : public SparseProblem {
 public:
  std::string name() const override { return "spmm"; }
  std::string description() const override {
    return "C = A * B, A sparse (M,K) in CSR (row_ptr, col_idx, values; NNZ entries, pointers and indices int32), "
           "B dense (K,N), C (M,N); scalar pattern picks the generator";
  }
  std::vector<std::string> size_names() const override { return {"M", "K", "N", "NNZ"}; }
  // 90% sparse, small enough that `kforge suite` verifies it in seconds on PoCL too.
  Sizes default_sizes() const override { return {{"M", 512}, {"K", 512}, {"N", 64}, {"NNZ", 26214}}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"row_ptr", Role::in, DType::int32}, {"col_idx", Role::in, DType::int32}, {"values", Role::in}, {"B", Role::in}, {"C", Role::out}};
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kRowPtr: return s.at("M") + 1;
      case kColIdx:
      case kSpmmValues: return s.at("NNZ");
      case kSpmmB: return s.at("K") * s.at("N");
      default: return s.at("M") * s.at("N");
    }
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_structure(in);
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const auto &rp = in.tensors[kRowPtr], &ci = in.tensors[kColIdx], &v = in.tensors[kSpmmValues],
               &B = in.tensors[kSpmmB];
    std::vector<double> c(M * N, 0.0), m(M * N, 0.0);
    sparse_family::csr_times_dense(M, rp.data(), ci.data(), v.data(), B.data(), N, c, m);
    out = tensor_list(std::move(c));
    mag = tensor_list(std::move(m));
  }
  // Output row r sums its row's nonzeros: that many products and additions, at least 1.
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const auto& rp = in.tensors[kRowPtr];
    std::vector<double> n(M * N);
    for (std::int64_t r = 0; r < M; ++r) std::fill_n(&n[r * N], N, std::max(1.0, rp[r + 1] - rp[r]));
    return tensor_list(std::move(n));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("K")); }
  // Structured inputs: the values element-wise (all equal, alternating signs, subnormal, -0.0,
  // near overflow: an output row sums at most K of them), B a matrix of rows of N (zero rows are
  // keys that contribute nothing, zero columns, identical and one-hot rows); the structure
  // (row_ptr, col_idx) stays the generator's.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {-1, -1, 0, s.at("N"), -1};
  }
  // NNZ nonzeros (exact when the pattern holds them all: every pattern while NNZ <= its cells).
  double flops(const Sizes& s) const override { return 2.0 * s.at("NNZ") * s.at("N"); }
  // The structure, B and C once each (B's rows all read: at 70-99% sparsity every column is hit).
  double bytes(const Sizes& s, DType t) const override {
    return bytes_structure(s) + static_cast<double>(s.at("K") + s.at("M")) * s.at("N") * dtype_size(t);
  }

  // The library a C++ user has at hand: Eigen's row-major SparseMatrix times a dense matrix.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    (void)threads;  // Eigen's sparse x dense product runs on one thread
    const std::int64_t M = in.sizes.at("M"), K = in.sizes.at("K"), N = in.sizes.at("N");
    using Sp = Eigen::SparseMatrix<float, Eigen::RowMajor, int>;
    using Dense = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    auto A = std::make_shared<Sp>(M, K);
    std::vector<Eigen::Triplet<float, int>> trip;
    const auto &rp = in.tensors[kRowPtr], &ci = in.tensors[kColIdx], &v = in.tensors[kSpmmValues];
    for (std::int64_t r = 0; r < M; ++r)
      for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p)
        trip.emplace_back(static_cast<int>(r), static_cast<int>(ci[p]), static_cast<float>(v[p]));
    A->setFromTriplets(trip.begin(), trip.end());
    auto B = std::make_shared<Dense>(K, N);
    for (std::int64_t i = 0; i < K * N; ++i) B->data()[i] = static_cast<float>(in.tensors[kSpmmB][i]);
    auto C = std::make_shared<Dense>(M, N);
    return [A, B, C] { C->noalias() = *A * *B; };
  }
  std::string baseline_name() const override { return "eigen_sparse"; }

  std::vector<std::string> kernel_specs() const override {
    // spmm_adaptive.cpu (a path per row tile from its density) after spmm.cpu: not the default.
    return {"kernels/sparse/spmm_cpu.json", "kernels/sparse/spmm_opencl.json", "kernels/sparse/spmm_cuda.json",
            "kernels/sparse/spmm_adaptive_cpu.json"};
  }

 protected:
  std::vector<std::string> width_names() const override { return {"N"}; }
  int values_tensor() const override { return kSpmmValues; }
  void ensure_nonzero_product(Instance& in, std::int64_t, std::int64_t c) const override {
    auto& v = in.tensors[kSpmmValues];
    if (v[0] == 0) v[0] = 1;
    auto& b = in.tensors[kSpmmB][c * in.sizes.at("N")];
    if (b == 0) b = 1;
  }
};

// ---- sddmm ------------------------------------------------------------------------------------
enum { kSddmmA = 2, kSddmmB, kSddmmOut };

class Sddmm final : public SparseProblem {
 public:
  std::string name() const override { return "sddmm"; }
  std::string description() const override {
    return "out[p] = A[r,:] . B[col_idx[p],:] for each nonzero p of row r of a CSR pattern (row_ptr, col_idx; "
           "NNZ entries, pointers and indices int32), A (M,D), B (K,D); out (NNZ), 0 past row_ptr[M]; "
           "scalar pattern picks the generator";
  }
  std::vector<std::string> size_names() const override { return {"M", "K", "D", "NNZ"}; }
  Sizes default_sizes() const override { return {{"M", 512}, {"K", 512}, {"D", 64}, {"NNZ", 26214}}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"row_ptr", Role::in, DType::int32}, {"col_idx", Role::in, DType::int32}, {"A", Role::in}, {"B", Role::in}, {"out", Role::out}};
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kRowPtr: return s.at("M") + 1;
      case kColIdx: return s.at("NNZ");
      case kSddmmA: return s.at("M") * s.at("D");
      case kSddmmB: return s.at("K") * s.at("D");
      default: return s.at("NNZ");
    }
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_structure(in);
    const std::int64_t M = in.sizes.at("M"), D = in.sizes.at("D"), nnz = in.sizes.at("NNZ");
    const auto &rp = in.tensors[kRowPtr], &ci = in.tensors[kColIdx], &A = in.tensors[kSddmmA],
               &B = in.tensors[kSddmmB];
    std::vector<double> o(nnz, 0.0), m(nnz, 0.0);
    parallel_for(M, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t r = r0; r < r1; ++r)
        for (auto p = static_cast<std::int64_t>(rp[r]); p < rp[r + 1]; ++p) {
          const double* a = &A[r * D];
          const double* b = &B[static_cast<std::int64_t>(ci[p]) * D];
          for (std::int64_t d = 0; d < D; ++d) {
            o[p] += a[d] * b[d];
            m[p] += std::fabs(a[d] * b[d]);
          }
        }
    });
    out = tensor_list(std::move(o));
    mag = tensor_list(std::move(m));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("D")); }
  // Structured inputs: A and B matrices of rows of D (a zero row of A or B makes sampled dot
  // products exactly zero; identical rows make a row's outputs equal); the pattern stays the
  // generator's.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {-1, -1, s.at("D"), s.at("D"), -1};
  }
  double flops(const Sizes& s) const override { return 2.0 * s.at("NNZ") * s.at("D"); }
  // The pattern, A and B once, out written once.
  double bytes(const Sizes& s, DType t) const override {
    return bytes_structure(s, false) +
           (static_cast<double>(s.at("M") + s.at("K")) * s.at("D") + s.at("NNZ")) * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/sddmm_cpu.json", "kernels/sparse/sddmm_opencl.json", "kernels/sparse/sddmm_cuda.json"};
  }

 protected:
  std::vector<std::string> width_names() const override { return {"D"}; }
  void ensure_nonzero_product(Instance& in, std::int64_t r, std::int64_t c) const override {
    auto& a = in.tensors[kSddmmA][r * in.sizes.at("D")];
    auto& b = in.tensors[kSddmmB][c * in.sizes.at("D")];
    if (a == 0) a = 1;
    if (b == 0) b = 1;
  }
};

}  // namespace

// spmm_bell's baseline: Eigen on the same matrix in CSR (the library a user has at hand).
std::function<void()> sparse_family::SpmmBell::baseline(const Instance& in, int threads) const {
  (void)threads;  // Eigen's sparse x dense product runs on one thread
  const sparse::Csr a = stored_csr(in);
  const std::int64_t K = in.sizes.at("K"), N = in.sizes.at("N");
  using Sp = Eigen::SparseMatrix<float, Eigen::RowMajor, int>;
  using Dense = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto A = std::make_shared<Sp>(a.rows, a.cols);
  std::vector<Eigen::Triplet<float, int>> trip;
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (auto p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p)
      trip.emplace_back(static_cast<int>(r), static_cast<int>(a.col_idx[p]), static_cast<float>(a.values[p]));
  A->setFromTriplets(trip.begin(), trip.end());
  auto B = std::make_shared<Dense>(K, N);
  for (std::int64_t i = 0; i < K * N; ++i) B->data()[i] = static_cast<float>(in.tensors[sparse_family::kBellB][i]);
  auto C = std::make_shared<Dense>(a.rows, N);
  return [A, B, C] { C->noalias() = *A * *B; };
}

std::shared_ptr<Problem> make_spmm_bell_problem() { return std::make_shared<sparse_family::SpmmBell>(); }
std::shared_ptr<Problem> make_spmm_problem() { return std::make_shared<Spmm>(); }
std::shared_ptr<Problem> make_sddmm_problem() { return std::make_shared<Sddmm>(); }
std::shared_ptr<Problem> make_fusedmm_problem() { return std::make_shared<sparse_family::Fusedmm>(); }
std::shared_ptr<Problem> make_spmspv_problem() { return std::make_shared<sparse_family::Spmspv>(); }
std::shared_ptr<Problem> make_gnn_aggregate_problem() { return std::make_shared<sparse_family::GnnAggregate>(); }
std::shared_ptr<Problem> make_gnn_attention_problem() { return std::make_shared<sparse_family::GnnAttention>(); }

}  // namespace kforge
