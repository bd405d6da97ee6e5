#pragma once
// spmm_bell: C = A * B with A in blocked-ELL (include/kforge/sparse.hpp, sparse::BlockedEll), the
// format cuSPARSE's blocked SpMM reads: BS x BS tiles, EC slots per block row, slot s of block
// row y holds block_col[y*EC + s] (a block column, or -1: padding, only after the tiles) and the
// tile values[(y*EC + s)*BS*BS ...] dense and row-major.
//
// Sizes M, K, N, NNZ, BS, EC. BS and EC are SIZES, not scalars or tunables: they fix the length
// of both structure tensors (block_col M/BS*EC, values M/BS*EC*BS^2), and kforge sizes tensors
// from sizes alone. The kernel receives BS as an argument and dispatches to a tile of that size
// compiled in (spmm_bell.cpp), so no tunable can disagree with the data.
//
// Generation: the `pattern` scalar's generator (as spmm: trial t uses pattern (t + 6) mod 7)
// draws min(NNZ, cells) nonzeros over (M, K); sparse::to_blocked_ell tiles them; a block row
// with more than EC tiles keeps its EC fullest ones (ties: the lower block column), so EC below
// the fullest block row's count stores fewer than NNZ nonzeros; EC above it pads every block row.
// Values are the instance's random draws on the pattern's cells, zeros on every other cell of a
// tile, past the ragged edge and in padding tiles.
//
// Reference: the stored matrix back to CSR (sparse::to_csr: the nonzero cells) and spmm's CSR
// product in double; each output row's bound follows that row's nonzeros (the tile's zero cells
// add exact zeros). FLOPs 2·NNZ·N: the nonzeros' products, not the zero cells a tile also holds
// (min(NNZ, EC slots' cells)). Bytes, the fewest that must move: the nonzeros' values, the
// fewest tiles' block columns that hold them (ceil(NNZ / BS^2)), B read once and C written once;
// neither a tile's zero cells nor padding slots count, so the format's waste shows as distance
// from the roofline.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "sparse_problem.hpp"

namespace kforge::sparse_family {

enum { kBellCol, kBellValues, kBellB, kBellC };

class SpmmBell final : public Problem {
 public:
  std::string name() const override { return "spmm_bell"; }
  std::string description() const override {
    return "C = A * B, A sparse (M,K) in blocked-ELL: BS x BS tiles, EC slots per block row (block_col: a block "
           "column or -1 padding after the tiles; values: the tiles dense, row-major), B dense (K,N), C (M,N); "
           "scalar pattern picks the generator, NNZ nonzeros";
  }
  std::vector<std::string> size_names() const override { return {"M", "K", "N", "NNZ", "BS", "EC"}; }
  // spmm's defaults (90% sparse) in 4x4 tiles; EC = K/BS holds every pattern untruncated.
  Sizes default_sizes() const override {
    return {{"M", 512}, {"K", 512}, {"N", 64}, {"NNZ", 26214}, {"BS", 4}, {"EC", 128}};
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"block_col", Role::in, DType::int32}, {"values", Role::in}, {"B", Role::in}, {"C", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {"pattern"}; }
  Scalars scalars_for_trial(int trial) const override {
    return {{"pattern", SparseProblem::pattern_for_trial(trial)}};
  }
  void check_scalars(const Scalars& s) const override {
    const double v = s.at("pattern");
    if (!(v >= 0 && v < sparse::kPatternCount && v == std::floor(v)))
      throw UsageError("scalar pattern=" + std::to_string(v) + " must be an integer in [0, " +
                       std::to_string(sparse::kPatternCount) + ") (0 uniform, 1 power_law, 2 banded, 3 block, "
                       "4 pruned, 5 empty_rows_cols, 6 dense_row)");
  }
  static std::int64_t block_rows(const Sizes& s) { return (s.at("M") + s.at("BS") - 1) / s.at("BS"); }
  static std::int64_t block_cols(const Sizes& s) { return (s.at("K") + s.at("BS") - 1) / s.at("BS"); }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    switch (t) {
      case kBellCol: return block_rows(s) * s.at("EC");
      case kBellValues: return block_rows(s) * s.at("EC") * s.at("BS") * s.at("BS");
      case kBellB: return s.at("K") * s.at("N");
      default: return s.at("M") * s.at("N");
    }
  }
  void check_sizes(const Sizes& s) const override {
    for (const auto& n : size_names())
      if (s.at(n) < 1 || s.at(n) >= (1LL << 31))
        throw UsageError("size " + n + "=" + std::to_string(s.at(n)) +
                         " must be in [1, 2^31) (indices and offsets are int32)");
    if (s.at("BS") > kMaxBlock)
      throw UsageError("size BS=" + std::to_string(s.at("BS")) + " must be at most " + std::to_string(kMaxBlock) +
                       " (the tile sizes spmm_bell kernels compile in); use BS=4 or 8");
    for (const auto& [what, n] : {std::pair<std::string, std::int64_t>{"M*N", s.at("M") * s.at("N")},
                                  {"K*N", s.at("K") * s.at("N")},
                                  {"(M/BS)*EC*BS*BS", tensor_elements(kBellValues, s)}})
      if (n > (1LL << 31) - 1)
        throw UsageError("sizes " + what + "=" + std::to_string(n) + " must fit in a 32-bit int (the kernel ABI)");
  }
  // spmm's measure (the product of M, K, N, NNZ): the tile sizes shape the work, not its amount.
  double fuzz_work(const Sizes& s) const override {
    return static_cast<double>(s.at("M")) * s.at("K") * s.at("N") * s.at("NNZ");
  }

  // The pattern, tiled and cut to EC slots; the random values kept on the pattern's cells only.
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    const Sizes& s = inst.sizes;
    const std::int64_t M = s.at("M"), K = s.at("K"), BS = s.at("BS"), EC = s.at("EC"), area = BS * BS;
    const auto pattern = static_cast<sparse::Pattern>(static_cast<int>(inst.scalars.at("pattern")));
    sparse::Csr a = sparse::generate(pattern, M, K, s.at("NNZ"), mix64(seed ^ (0x5ba75eull + trial)));
    a.values.assign(a.col_idx.size(), 1.0);  // 1 marks the pattern's cells
    const sparse::BlockedEll e = sparse::to_blocked_ell(a, BS);
    auto& col = inst.tensors[kBellCol];
    auto& val = inst.tensors[kBellValues];
    std::fill(col.begin(), col.end(), -1.0);
    for (std::int64_t br = 0; br < e.block_rows(); ++br) {
      std::vector<std::pair<std::int64_t, std::int64_t>> fullness;  // (-cells, slot): fullest first
      for (std::int64_t sl = 0; sl < e.ell_cols && e.block_col[br * e.ell_cols + sl] >= 0; ++sl) {
        const auto* t = &e.values[(br * e.ell_cols + sl) * area];
        fullness.emplace_back(-std::count(t, t + area, 1.0), sl);
      }
      std::sort(fullness.begin(), fullness.end());
      if (static_cast<std::int64_t>(fullness.size()) > EC) fullness.resize(EC);
      std::vector<std::int64_t> kept;
      for (const auto& f : fullness) kept.push_back(f.second);
      std::sort(kept.begin(), kept.end());  // slots ascend, so block columns ascend
      for (std::int64_t d = 0; d < EC; ++d) {
        double* out = &val[(br * EC + d) * area];
        if (d >= static_cast<std::int64_t>(kept.size())) {
          std::fill_n(out, area, 0.0);
          continue;
        }
        col[br * EC + d] = static_cast<double>(e.block_col[br * e.ell_cols + kept[d]]);
        const double* marks = &e.values[(br * e.ell_cols + kept[d]) * area];
        for (std::int64_t c = 0; c < area; ++c) out[c] = marks[c] == 1.0 ? (out[c] == 0 ? 1.0 : out[c]) : 0.0;
      }
    }
  }

  // The stored matrix as CSR, after checking it as kernels read it.
  sparse::Csr stored_csr(const Instance& in) const {
    const Sizes& s = in.sizes;
    const std::int64_t EC = s.at("EC"), KB = block_cols(s);
    const auto& col = in.tensors[kBellCol];
    sparse::BlockedEll e;
    e.rows = s.at("M"), e.cols = s.at("K"), e.block = s.at("BS"), e.ell_cols = EC;
    e.block_col.resize(col.size());
    for (std::size_t q = 0; q < col.size(); ++q) {
      const double v = col[q];
      const std::string at = "spmm_bell: block_col[" + std::to_string(q) + "]=" + fmt::format("{}", v);
      if (!std::isfinite(v) || v != std::floor(v) || v < -1 || v >= static_cast<double>(KB))
        throw UsageError(at + " must be an integer block column in [0, " + std::to_string(KB) + ") or -1 (padding)");
      if (q % EC > 0 && col[q - 1] == -1 && v != -1)
        throw UsageError(at + " follows padding in its block row (" + std::to_string(q / EC) +
                         "): kernels stop at the first -1; put every tile before the padding");
      e.block_col[q] = static_cast<std::int64_t>(v);
    }
    e.values = in.tensors[kBellValues];
    return sparse::to_csr(e);  // refuses a block column twice in a block row, naming the slots
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const sparse::Csr a = stored_csr(in);
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    std::vector<double> c(M * N, 0.0), m(M * N, 0.0);
    csr_times_dense(a, in.tensors[kBellB].data(), N, c, m);
    out = tensor_list(std::move(c));
    mag = tensor_list(std::move(m));
  }
  // Output row r sums its row's nonzeros (as spmm): a tile's zero cells add exact zeros.
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const sparse::Csr a = stored_csr(in);
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    std::vector<double> n(M * N);
    for (std::int64_t r = 0; r < M; ++r)
      std::fill_n(&n[r * N], N, std::max<double>(1.0, static_cast<double>(a.row_ptr[r + 1] - a.row_ptr[r])));
    return tensor_list(std::move(n));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("K")); }
  // Structured inputs: B a matrix of rows of N (zero rows, columns, identical and one-hot rows,
  // equal values, near overflow: an output row sums at most K products). The tiles' values stay
  // the generator's: their zero cells, the ragged edge past K and the padding tiles are the
  // format's structure, which an element-wise pattern would fill (all_equal would turn every
  // stored cell into a nonzero and write past K), so the values keep their drawn magnitudes
  // (normal draws, |v| < 6) and near_overflow's length is 8 K to leave room for them.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {-1, -1, s.at("N"), -1}; }
  double near_overflow_length(const Sizes& s) const override { return 8.0 * static_cast<double>(s.at("K")); }
  // The nonzeros the slots can hold at most.
  static double nonzeros(const Sizes& s) {
    return std::min({static_cast<double>(s.at("NNZ")), static_cast<double>(s.at("M")) * s.at("K"),
                     static_cast<double>(block_rows(s) * s.at("EC") * s.at("BS") * s.at("BS"))});
  }
  double flops(const Sizes& s) const override { return 2.0 * nonzeros(s) * s.at("N"); }
  double bytes(const Sizes& s, DType t) const override {
    const double nz = nonzeros(s), tiles = std::ceil(nz / static_cast<double>(s.at("BS") * s.at("BS")));
    return (tiles + nz + static_cast<double>(s.at("K") + s.at("M")) * s.at("N")) * dtype_size(t);
  }

  // Eigen's row-major SparseMatrix (the same matrix in CSR) times B, as spmm's baseline.
  std::function<void()> baseline(const Instance& in, int threads) const override;
  std::string baseline_name() const override { return "eigen_sparse"; }
  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/spmm_bell_cpu.json", "kernels/sparse/spmm_bell_opencl.json",
            "kernels/sparse/spmm_bell_cuda.json"};
  }

  // block_col: a tile moved to a block column its block row lacks (where a nonzero of it stays
  // inside K), or the last tile of a block row dropped to padding; values: a cell of a stored
  // tile inside the matrix (a zero cell becomes a nonzero); B: any element.
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    const Sizes& s = inst.sizes;
    const std::int64_t EC = s.at("EC"), BS = s.at("BS"), KB = block_cols(s), K = s.at("K"), M = s.at("M"),
                       area = BS * BS;
    auto& col = inst.tensors[kBellCol];
    const auto& val = inst.tensors[kBellValues];
    const auto slots = static_cast<std::int64_t>(col.size());
    auto inside = [&](std::int64_t q, std::int64_t bc) {  // a nonzero of slot q's tile lies inside at bc
      for (std::int64_t i2 = 0; i2 < BS && (q / EC) * BS + i2 < M; ++i2)
        for (std::int64_t j = 0; j < BS && bc * BS + j < K; ++j)
          if (val[q * area + i2 * BS + j] != 0) return true;
      return false;
    };
    if (t == kBellCol) {
      for (std::int64_t k = 0; k < slots; ++k) {
        const std::int64_t q = (static_cast<std::int64_t>(i) + k) % slots, row0 = q - q % EC;
        if (col[q] < 0 || !inside(q, static_cast<std::int64_t>(col[q]))) continue;
        for (std::int64_t d = 1; d < KB; ++d) {
          const std::int64_t bc = (static_cast<std::int64_t>(col[q]) + d) % KB;
          if (std::find(&col[row0], &col[row0] + EC, static_cast<double>(bc)) == &col[row0] + EC && inside(q, bc))
            return void(col[q] = static_cast<double>(bc));
        }
        if (q % EC == EC - 1 || col[q + 1] < 0) return void(col[q] = -1);  // the last tile becomes padding
      }
      return Problem::perturb(inst, kBellB, i % inst.tensors[kBellB].size());
    }
    if (t == kBellValues) {
      for (std::int64_t k = 0; k < static_cast<std::int64_t>(val.size()); ++k) {
        const std::int64_t c = (static_cast<std::int64_t>(i) + k) % static_cast<std::int64_t>(val.size()), q = c / area;
        const std::int64_t r = (q / EC) * BS + (c % area) / BS;
        if (col[q] >= 0 && r < M && static_cast<std::int64_t>(col[q]) * BS + c % BS < K)
          return Problem::perturb(inst, t, static_cast<std::size_t>(c));
      }
      return Problem::perturb(inst, kBellB, i % inst.tensors[kBellB].size());
    }
    Problem::perturb(inst, t, i);
  }

  static constexpr std::int64_t kMaxBlock = 16;
};

}  // namespace kforge::sparse_family
