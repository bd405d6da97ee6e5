#pragma once
// The part every problem of the sparse family shares (kernels/sparse/problem.cpp): fp32 only,
// the `pattern` scalar, the compressed structure as inputs 0 and 1 (pointers, indices) with its
// generator, validation and perturbation, and the size checks.
//
// The structure is compressed along an "outer" size: CSR (outer M rows, inner K columns) for
// spmm, sddmm and fusedmm; CSC (outer K columns, inner M rows) for spmspv, whose kernels walk
// the columns its sparse vector selects. Either way the pattern is generated over A's rows (M)
// and columns (K), so `power_law` means long rows and `dense_row` a dense row in every problem;
// CSC is its transpose. Pointers and indices are int32 tensors (TensorSpec::storage), whatever
// the values' dtype: NNZ may pass 2^24, which fp32 could not count exactly.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kforge/util.hpp"

namespace kforge::sparse_family {

enum { kPtr, kIdx };  // every sparse problem's first two tensors

// spmm's reference: c += A B and m += |A| |B| in double, A (rows) in CSR given by its arrays (the
// kernels' float-stored indices or sparse::Csr's), B (.., N) row-major; rows in parallel.
template <class Ptr, class Idx, class Val>
void csr_times_dense(std::int64_t rows, const Ptr* rp, const Idx* ci, const Val* v, const double* B, std::int64_t N,
                     std::vector<double>& c, std::vector<double>& m) {
  parallel_for(rows, [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r)
      for (auto p = static_cast<std::int64_t>(rp[r]); p < static_cast<std::int64_t>(rp[r + 1]); ++p) {
        const double a = v[p], abs_a = std::fabs(a);
        const double* b = &B[static_cast<std::int64_t>(ci[p]) * N];
        for (std::int64_t j = 0; j < N; ++j) {
          c[r * N + j] += a * b[j];
          m[r * N + j] += abs_a * std::fabs(b[j]);
        }
      }
  });
}
inline void csr_times_dense(const sparse::Csr& a, const double* B, std::int64_t N, std::vector<double>& c,
                            std::vector<double>& m) {
  csr_times_dense(a.rows, a.row_ptr.data(), a.col_idx.data(), a.values.data(), B, N, c, m);
}

class SparseProblem : public Problem {
 public:
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<std::string> scalar_names() const override { return {"pattern"}; }
  Scalars scalars_for_trial(int trial) const override { return {{"pattern", pattern_for_trial(trial)}}; }
  // Trial t uses pattern (t + 6) mod 7: trial 1, the one `bench` times, is `uniform`.
  static double pattern_for_trial(int trial) {
    return static_cast<double>((trial + sparse::kPatternCount - 1) % sparse::kPatternCount);
  }
  void check_scalars(const Scalars& s) const override {
    const double v = s.at("pattern");
    if (!(v >= 0 && v < sparse::kPatternCount && v == std::floor(v)))
      throw UsageError("scalar pattern=" + std::to_string(v) + " must be an integer in [0, " +
                       std::to_string(sparse::kPatternCount) + ") (0 uniform, 1 power_law, 2 banded, 3 block, "
                       "4 pruned, 5 empty_rows_cols, 6 dense_row)");
  }
  void check_sizes(const Sizes& s) const override {
    for (const auto& n : size_names())
      if (s.at(n) < 1 || s.at(n) >= (1LL << 31))
        throw UsageError("size " + n + "=" + std::to_string(s.at(n)) +
                         " must be in [1, 2^31) (indices and offsets are int32)");
    const std::int64_t M = s.at("M"), K = s.at(cols_name());
    for (const auto& w : width_names()) {
      const std::int64_t W = s.at(w);
      for (const auto& [what, n] : {std::pair{"M*" + w, M * W}, {cols_name() + "*" + w, K * W}})
        if (n > (1LL << 31) - 1)
          throw UsageError("sizes " + what + "=" + std::to_string(n) + " must fit in a 32-bit int (the kernel ABI)");
    }
  }

  // The pattern's structure into the pointers and indices (unused entries point at index 0);
  // then the problem makes one product through the first nonzero nonzero, so no pattern's
  // output is all zero.
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    const std::int64_t M = inst.sizes.at("M"), K = inst.sizes.at(cols_name()), nnz = inst.sizes.at("NNZ");
    const auto pattern = static_cast<sparse::Pattern>(static_cast<int>(inst.scalars.at("pattern")));
    sparse::Csr a = sparse::generate(pattern, M, K, nnz, mix64(seed ^ (0x5ba75eull + trial)));
    if (column_major()) a = sparse::transpose(a);
    auto& ptr = inst.tensors[kPtr];
    auto& idx = inst.tensors[kIdx];
    for (std::int64_t o = 0; o <= a.rows; ++o) ptr[o] = static_cast<double>(a.row_ptr[o]);
    std::fill(idx.begin(), idx.end(), 0.0);
    for (std::int64_t p = 0; p < a.nnz(); ++p) idx[p] = static_cast<double>(a.col_idx[p]);
    std::int64_t first = 0;
    while (first < a.rows && a.row_ptr[first + 1] == 0) ++first;
    if (a.nnz() > 0) ensure_nonzero_product(inst, first, a.col_idx[0]);
  }

  // A structure change that stays valid: a pointer moved by one (an entry changes its row, or
  // column in CSC) where the moved index is new to its line, or an index moved to one its line
  // lacks; otherwise a data input moves instead.
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    if (t != kPtr && t != kIdx) return perturb_data(inst, t, i);
    const std::int64_t outer = inst.sizes.at(outer_name()), inner = inst.sizes.at(inner_name());
    auto& ptr = inst.tensors[kPtr];
    auto& idx = inst.tensors[kIdx];
    const auto nnz = static_cast<std::int64_t>(ptr[outer]);
    auto in_line = [&](std::int64_t o, double c) {
      for (auto p = static_cast<std::int64_t>(ptr[o]); p < ptr[o + 1]; ++p)
        if (idx[p] == c) return true;
      return false;
    };
    if (t == kPtr) {
      for (std::int64_t k = 0; k < outer - 1; ++k) {
        const std::int64_t o = 1 + (static_cast<std::int64_t>(i) + k) % (outer - 1);
        const auto at = static_cast<std::int64_t>(ptr[o]);
        // with ascending lines the moved entry must fall between its new neighbours: both moves
        // need the last of o-1 below the first of o (or one of them empty)
        const bool keeps_order = !ascending_lines() || ptr[o - 1] == at || at == ptr[o + 1] || idx[at - 1] < idx[at];
        if (ptr[o - 1] < at && keeps_order && !in_line(o, idx[at - 1])) return void(ptr[o] = at - 1);  // last of o-1 joins o
        if (at < ptr[o + 1] && keeps_order && !in_line(o - 1, idx[at])) return void(ptr[o] = at + 1);  // first of o joins o-1
      }
    } else if (nnz > 0) {
      const auto p = static_cast<std::int64_t>(i) % nnz;
      const auto o = static_cast<std::int64_t>(
                         std::upper_bound(ptr.begin(), ptr.begin() + outer + 1, static_cast<double>(p)) - ptr.begin()) - 1;
      // ascending lines: only an index strictly between the entry's neighbours in its line
      const double lo = ascending_lines() && p > ptr[o] ? idx[p - 1] : -1;
      const double hi = ascending_lines() && p + 1 < ptr[o + 1] ? idx[p + 1] : static_cast<double>(inner);
      for (std::int64_t k = 1; k < inner; ++k) {
        const double c = static_cast<double>((static_cast<std::int64_t>(idx[p]) + k) % inner);
        if (c > lo && c < hi && !in_line(o, c)) return void(idx[p] = c);
      }
    }
    perturb_data(inst, kIdx + 1, i);
  }

  // The structure's bytes: the pointers and the indices, plus the values when `with_values`.
  double bytes_structure(const Sizes& s, bool with_values = true) const {
    return (static_cast<double>(s.at(outer_name())) + 1 + (with_values ? 2.0 : 1.0) * static_cast<double>(s.at("NNZ"))) * 4;
  }

 protected:
  // The dense widths whose products with M and K index the kernel's arrays (spmm: N).
  [[nodiscard]] virtual std::vector<std::string> width_names() const = 0;
  // CSC (spmspv) rather than CSR.
  [[nodiscard]] virtual bool column_major() const { return false; }
  // Each line's indices must ascend (the kernels binary-search them): validated, and kept so by
  // perturbation. The generators always give ascending lines.
  [[nodiscard]] virtual bool ascending_lines() const { return false; }
  // A's columns: K, or M for a square matrix (a graph's adjacency: gnn_aggregate).
  [[nodiscard]] virtual std::string cols_name() const { return "K"; }
  [[nodiscard]] std::string outer_name() const { return column_major() ? cols_name() : "M"; }
  [[nodiscard]] std::string inner_name() const { return column_major() ? "M" : cols_name(); }
  // Makes the data inputs nonzero where they meet the first nonzero: outer line o, inner index c.
  virtual void ensure_nonzero_product(Instance& inst, std::int64_t o, std::int64_t c) const = 0;
  // A data tensor's element changed; structure perturbations fall back to tensor t here.
  void perturb_data(Instance& inst, std::size_t t, std::size_t i) const {
    const auto used = static_cast<std::size_t>(inst.tensors[kPtr][inst.sizes.at(outer_name())]);
    // an unused values entry changes nothing: move a used one instead
    if (values_tensor() == static_cast<int>(t) && used > 0) i %= used;
    Problem::perturb(inst, t, i % inst.tensors[t].size());
  }
  [[nodiscard]] virtual int values_tensor() const { return -1; }
  void check_structure(const Instance& in) const {
    sparse::validate_csr(name(), in.tensors[kPtr].data(), in.tensors[kIdx].data(), in.sizes.at(outer_name()),
                         in.sizes.at(inner_name()), in.sizes.at("NNZ"), column_major(), ascending_lines());
  }
};

}  // namespace kforge::sparse_family
