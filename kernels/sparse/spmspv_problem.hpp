#pragma once
// spmspv: sparse matrix times sparse vector, sparse result.
//
// Formats. A (M,K) arrives in CSC (col_ptr (K+1), row_idx (NNZ), values (NNZ)), each column's
// row indices ascending (validated; the kernels binary-search them): y = A x is the sum of the
// columns x selects, so a kernel reads only those columns (CSR would make it read every row, as
// SpMV). The vector x is XNNZ (index, value) pairs, indices strictly ascending
// (x_idx, x_val). The result is a dense value array with a structural mask:
//
//   y_mask[r] = 1 if row r of A has an entry in some column x_idx[q], else 0
//   y[r]      = Σ_{q : A[r, x_idx[q]] stored} A[r, x_idx[q]] · x_val[q]   (0 where y_mask[r] = 0)
//
// so which entries the sparse result holds is exact (a structural entry whose sum cancels to
// 0 is still an entry, as in GraphBLAS), and the check compares the mask exactly and each value
// against a bound of its own number of terms. Writing y and y_mask is O(M) whatever x's
// density: the price of a result the protocol can poison and check element by element (a
// compacted index list would be written in full for the same reason).
//
// x's pattern: XNNZ distinct indices drawn with a seed, always holding the first column that
// has entries (so no instance's result is empty); XNNZ <= K. Even trials store one explicit
// zero in x, so the result holds entries whose value is 0.
#include <Eigen/Sparse>
#include <memory>

#include "sparse_problem.hpp"

namespace kforge::sparse_family {

class Spmspv final : public SparseProblem {
 public:
  enum { kValues = 2, kXIdx, kXVal, kY, kYMask };
  std::string name() const override { return "spmspv"; }
  std::string description() const override {
    return "y = A x, A sparse (M,K) in CSC (col_ptr, row_idx, values; NNZ entries), x sparse (x_idx ascending, "
           "x_val; XNNZ entries), indices int32; y (M) dense values and y_mask (M) 1 where row r meets "
           "a column of x, else 0 (y 0 there); scalar pattern picks A's generator";
  }
  std::vector<std::string> size_names() const override { return {"M", "K", "NNZ", "XNNZ"}; }
  // 90% sparse, x 1% dense.
  Sizes default_sizes() const override { return {{"M", 1024}, {"K", 1024}, {"NNZ", 104858}, {"XNNZ", 10}}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"col_ptr", Role::in, DType::int32}, {"row_idx", Role::in, DType::int32}, {"values", Role::in}, {"x_idx", Role::in, DType::int32},
            {"x_val", Role::in},   {"y", Role::out},      {"y_mask", Role::out}};
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kPtr: return s.at("K") + 1;
      case kIdx:
      case kValues: return s.at("NNZ");
      case kXIdx:
      case kXVal: return s.at("XNNZ");
      default: return s.at("M");
    }
  }
  void check_sizes(const Sizes& s) const override {
    SparseProblem::check_sizes(s);
    if (s.at("XNNZ") > s.at("K"))
      throw UsageError("size XNNZ=" + std::to_string(s.at("XNNZ")) + " must be at most K=" + std::to_string(s.at("K")) +
                       " (x holds distinct indices of its K entries)");
  }

  // A's structure (base), then x's indices: a seeded sample holding A's first nonempty column,
  // whose first entry and x's value there are made nonzero.
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    SparseProblem::condition_inputs(inst, seed, trial);
    const std::int64_t K = inst.sizes.at("K"), xnnz = inst.sizes.at("XNNZ");
    const auto& cp = inst.tensors[kPtr];
    std::int64_t first = 0;
    while (first < K && cp[first + 1] == 0) ++first;
    auto idx = sparse::sample_indices(K, xnnz, mix64(seed ^ (0x5c7ull + trial)));
    if (first < K && !std::binary_search(idx.begin(), idx.end(), first)) {
      idx[random_bits(seed, 0x5c8, trial) % idx.size()] = first;
      std::sort(idx.begin(), idx.end());
    }
    auto& xi = inst.tensors[kXIdx];
    auto& xv = inst.tensors[kXVal];
    for (std::int64_t q = 0; q < xnnz; ++q) {
      xi[q] = static_cast<double>(idx[q]);
      if (idx[q] == first && xv[q] == 0) xv[q] = 1;
    }
    // Even trials store an explicit zero in x (its last entry, unless that is the first column):
    // the rows only that column meets are entries of the result with value 0, so a kernel that
    // takes the mask from y != 0 fails.
    const std::int64_t last = xnnz - 1;
    if (trial % 2 == 0 && xnnz >= 2 && idx[last] != first) xv[last] = 0;
  }
  // x's indices move to an index not yet in x between their neighbours (x stays ascending); where
  // none is free, x's value moves instead. The structure and the values as the base does.
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    if (t != kXIdx) return SparseProblem::perturb(inst, t, i);
    auto& xi = inst.tensors[kXIdx];
    const auto n = static_cast<std::int64_t>(xi.size());
    const auto q = static_cast<std::int64_t>(i % xi.size());
    const double lo = q > 0 ? xi[q - 1] + 1 : 0, hi = q + 1 < n ? xi[q + 1] - 1 : inst.sizes.at("K") - 1;
    for (double c = lo; c <= hi; ++c)
      if (c != xi[q]) return void(xi[q] = c);
    Problem::perturb(inst, kXVal, static_cast<std::size_t>(q));
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_structure(in);
    const std::int64_t M = in.sizes.at("M"), K = in.sizes.at("K"), xnnz = in.sizes.at("XNNZ");
    sparse::validate_sparse_vector(name(), "x_idx", in.tensors[kXIdx].data(), xnnz, K);
    const auto &cp = in.tensors[kPtr], &ri = in.tensors[kIdx], &v = in.tensors[kValues], &xi = in.tensors[kXIdx],
               &xv = in.tensors[kXVal];
    std::vector<double> y(M, 0.0), m(M, 0.0), mask(M, 0.0);
    for (std::int64_t q = 0; q < xnnz; ++q) {
      const auto j = static_cast<std::int64_t>(xi[q]);
      for (auto p = static_cast<std::int64_t>(cp[j]); p < cp[j + 1]; ++p) {
        const auto r = static_cast<std::int64_t>(ri[p]);
        y[r] += v[p] * xv[q];
        m[r] += std::fabs(v[p] * xv[q]);
        mask[r] = 1;
      }
    }
    out = tensor_list(std::move(y), std::move(mask));
    mag = tensor_list(std::move(m), std::vector<double>(M, 0.0));
  }
  // y[r] sums the terms its row meets (at least 1); the mask is exact.
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const std::int64_t M = in.sizes.at("M"), xnnz = in.sizes.at("XNNZ");
    const auto &cp = in.tensors[kPtr], &ri = in.tensors[kIdx], &xi = in.tensors[kXIdx];
    std::vector<double> n(M, 1.0), terms(M, 0.0);
    for (std::int64_t q = 0; q < xnnz; ++q) {
      const auto j = static_cast<std::int64_t>(xi[q]);
      for (auto p = static_cast<std::int64_t>(cp[j]); p < cp[j + 1]; ++p) terms[static_cast<std::int64_t>(ri[p])] += 1;
    }
    for (std::int64_t r = 0; r < M; ++r) n[r] = std::max(1.0, terms[r]);
    return tensor_list(std::move(n), std::vector<double>(M, 1.0));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("XNNZ")); }
  // Structured inputs: A's values and x's values element-wise (all equal, alternating signs,
  // subnormal, near overflow: y[r] sums at most XNNZ products, negative zero: every value -0.0,
  // so x holds only zeros and the result is its structural mask with zero values); the
  // structures (col_ptr, row_idx, x_idx) stay the generator's.
  std::vector<std::int64_t> structured_rows(const Sizes&) const override { return {-1, -1, 0, -1, 0, -1, -1}; }
  // The entries x selects: NNZ * XNNZ / K of them on average (exact for a uniform pattern's
  // expectation; the sizes alone cannot say more), a multiply and an add each.
  double flops(const Sizes& s) const override { return 2.0 * touched(s); }
  // x, its columns' two pointers and their entries (index and value) read once; y and y_mask
  // written once.
  double bytes(const Sizes& s, DType t) const override {
    const double xnnz = s.at("XNNZ"), M = s.at("M");
    return (4 * xnnz + 2 * touched(s) + 2 * M) * dtype_size(t);
  }

  // Eigen's column-major SparseMatrix times a SparseVector (a sparse result; one thread).
  std::function<void()> baseline(const Instance& in, int threads) const override {
    (void)threads;
    const std::int64_t M = in.sizes.at("M"), K = in.sizes.at("K"), xnnz = in.sizes.at("XNNZ");
    using Sp = Eigen::SparseMatrix<float, Eigen::ColMajor, int>;
    using Vec = Eigen::SparseVector<float, Eigen::ColMajor, int>;
    auto A = std::make_shared<Sp>(M, K);
    std::vector<Eigen::Triplet<float, int>> trip;
    const auto &cp = in.tensors[kPtr], &ri = in.tensors[kIdx], &v = in.tensors[kValues];
    for (std::int64_t j = 0; j < K; ++j)
      for (auto p = static_cast<std::int64_t>(cp[j]); p < cp[j + 1]; ++p)
        trip.emplace_back(static_cast<int>(ri[p]), static_cast<int>(j), static_cast<float>(v[p]));
    A->setFromTriplets(trip.begin(), trip.end());
    auto x = std::make_shared<Vec>(K);
    for (std::int64_t q = 0; q < xnnz; ++q)
      x->insertBack(static_cast<int>(in.tensors[kXIdx][q])) = static_cast<float>(in.tensors[kXVal][q]);
    auto y = std::make_shared<Vec>(M);
    return [A, x, y] { *y = *A * *x; };
  }
  std::string baseline_name() const override { return "eigen_sparse_vector"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/spmspv_cpu.json", "kernels/sparse/spmspv_opencl.json", "kernels/sparse/spmspv_cuda.json"};
  }

 protected:
  std::vector<std::string> width_names() const override { return {}; }
  bool column_major() const override { return true; }
  bool ascending_lines() const override { return true; }
  int values_tensor() const override { return kValues; }
  void ensure_nonzero_product(Instance& in, std::int64_t, std::int64_t) const override {
    auto& v = in.tensors[kValues][0];  // the first stored entry: the first nonempty column's first
    if (v == 0) v = 1;
  }

 private:
  static double touched(const Sizes& s) {
    return static_cast<double>(s.at("NNZ")) * static_cast<double>(s.at("XNNZ")) / static_cast<double>(s.at("K"));
  }
};

}  // namespace kforge::sparse_family
