#pragma once
// Sparse matrix formats and seeded pattern generators, shared by the sparse kernel family
// (kernels/sparse/), its tests and bench/spmm_vs_peers.cpp.
//
// Formats: CSR (row_ptr, col_idx, values) and COO (row, col, value triplets), with conversions.
// Duplicate (row, col) pairs are refused with an error naming them; so are row pointers that
// decrease and column indices out of range (validate_csr), so a malformed user input never
// reaches a kernel.
//
// Generators fill an exact number of nonzeros (min(nnz, what the pattern allows)) in one of
// kPatternCount shapes; the same seed gives the same pattern.
#include <cstdint>
#include <string>
#include <vector>

namespace kforge::sparse {

struct Csr {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> row_ptr;  // (rows + 1): row r is row_ptr[r] .. row_ptr[r+1]
  std::vector<std::int64_t> col_idx;  // (nnz)
  std::vector<double> values;         // (nnz)
  [[nodiscard]] std::int64_t nnz() const { return row_ptr.empty() ? 0 : row_ptr.back(); }
};

struct Coo {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> row, col;  // (nnz)
  std::vector<double> values;          // (nnz)
};

// Blocked-ELL (cuSPARSE's blocked ELLPACK): A cut into `block` x `block` tiles; each of the
// ceil(rows / block) block rows keeps the same number `ell_cols` of slots (the most nonzero
// tiles any block row has), each slot a tile's block column (ascending within the block row) or
// -1 (padding, after the tiles) and the tile's values, dense and row-major: zeros where A has
// none, and past A's ragged last block row / column. A kernel reads it with no row pointer and
// each tile's values contiguous; it pays for the zeros its tiles hold (fill() says how many).
struct BlockedEll {
  std::int64_t rows = 0, cols = 0, block = 1, ell_cols = 0;
  std::vector<std::int64_t> block_col;  // (block_rows() * ell_cols): a tile's block column, or -1
  std::vector<double> values;           // (block_rows() * ell_cols * block * block)
  [[nodiscard]] std::int64_t block_rows() const { return block > 0 ? (rows + block - 1) / block : 0; }
  // The stored cells that are nonzero, as a fraction of all stored cells (1 when none stored).
  [[nodiscard]] double fill() const;
};

// CSR to blocked-ELL with `block` x `block` tiles (throws UsageError for block < 1). Every CSR
// entry lands in its tile, explicit zeros included (as 0: a tile has no structure of its own).
[[nodiscard]] BlockedEll to_blocked_ell(const Csr& a, std::int64_t block);
// Blocked-ELL to CSR: every nonzero cell of the stored tiles inside the matrix, columns
// ascending. CSR -> blocked-ELL -> CSR gives the same matrix back when A stores no explicit
// zero (an explicit zero comes back absent). Throws UsageError naming a slot whose block column
// is out of range, repeated in its block row, or whose values array has the wrong length.
[[nodiscard]] Csr to_csr(const BlockedEll& a);

// COO (any order) to CSR with columns ascending in each row; throws UsageError naming the first
// duplicate (row, col) pair or an index out of range.
[[nodiscard]] Csr to_csr(const Coo& a);
[[nodiscard]] Coo to_coo(const Csr& a);
[[nodiscard]] std::vector<double> to_dense(const Csr& a);  // (rows, cols) row-major
// The transpose: CSR of A^T, which is A in CSC (column pointers, row indices ascending per column).
[[nodiscard]] Csr transpose(const Csr& a);

// Checks a CSR structure given as the kernels receive it (indices stored in floats, `nnz_cap`
// entries of col_idx allocated): row_ptr[0] = 0, never decreasing, row_ptr[rows] <= nnz_cap,
// every index an integer, columns in [0, cols), no column twice in a row. Throws UsageError
// naming the tensor, the index and the fix. `what` prefixes the message (the problem's name).
// `csc`: the same structure compressed by columns (col_ptr, row_idx; `rows` are then A's
// columns and `cols` its rows), named so in the messages. `ascending`: each line's indices must
// also ascend strictly (for kernels that binary-search them).
void validate_csr(const std::string& what, const double* row_ptr, const double* col_idx,
                  std::int64_t rows, std::int64_t cols, std::int64_t nnz_cap, bool csc = false,
                  bool ascending = false);

// Checks a sparse vector as kernels receive it (spmspv's x: `n` indices stored in floats):
// every index an integer in [0, length), strictly ascending (so none twice). Throws UsageError
// naming the tensor `name`, the position and the fix.
void validate_sparse_vector(const std::string& what, const std::string& name, const double* idx,
                            std::int64_t n, std::int64_t length);

// `n` distinct indices of [0, range), ascending, seeded (a sparse vector's pattern).
[[nodiscard]] std::vector<std::int64_t> sample_indices(std::int64_t range, std::int64_t n, std::uint64_t seed);

// The patterns. Each trial of the verification protocol uses pattern trial % kPatternCount.
enum class Pattern : int {
  uniform = 0,      // every cell equally likely
  power_law = 1,    // row lengths ~ 1/rank (Zipf), rows shuffled
  banded = 2,       // each row's nonzeros contiguous around the scaled diagonal
  block = 3,        // 4-row groups share column blocks of 4
  pruned = 4,       // the largest-magnitude cells of a random dense matrix
  empty_rows_cols = 5,  // even rows and odd columns empty (row 0 empty when rows > 1)
  dense_row = 6,    // one row fully dense, the rest uniform
};
inline constexpr int kPatternCount = 7;
[[nodiscard]] const char* pattern_name(Pattern p);
// Throws UsageError listing the names when `name` is not one.
[[nodiscard]] Pattern pattern_from_name(const std::string& name);

// A CSR structure (values left 0) of `rows` x `cols` with min(nnz, allowed cells) nonzeros,
// columns ascending in each row.
[[nodiscard]] Csr generate(Pattern p, std::int64_t rows, std::int64_t cols, std::int64_t nnz,
                           std::uint64_t seed);

}  // namespace kforge::sparse
