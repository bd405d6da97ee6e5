// Sparse formats, their validation and the seeded pattern generators (include/kforge/sparse.hpp).
#include "kforge/sparse.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"

namespace kforge::sparse {
namespace {

// An index as written: "7", not "7.000000"; a fraction or a non-finite value as it is.
std::string number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e18) return std::to_string(static_cast<std::int64_t>(v));
  return std::to_string(v);
}

std::string cell(std::int64_t r, std::int64_t c) {
  return "(" + std::to_string(r) + ", " + std::to_string(c) + ")";
}

// Splits `total` nonzeros over rows in proportion to `weight`, row r taking at most cap[r].
// Proportional shares first, then what rounding left one at a time from a seeded start row, so
// the result sums to min(total, Σcap) exactly.
std::vector<std::int64_t> distribute(std::int64_t total, const std::vector<double>& weight,
                                     const std::vector<std::int64_t>& cap, std::uint64_t seed) {
  const auto rows = static_cast<std::int64_t>(cap.size());
  std::vector<std::int64_t> len(rows, 0);
  std::int64_t left = std::min<std::int64_t>(total, std::accumulate(cap.begin(), cap.end(), std::int64_t{0}));
  while (left > 0) {
    double w = 0;
    for (std::int64_t r = 0; r < rows; ++r)
      if (len[r] < cap[r]) w += weight[r];
    std::int64_t given = 0;
    if (w > 0)
      for (std::int64_t r = 0; r < rows; ++r) {
        if (len[r] >= cap[r]) continue;
        const auto add = std::min<std::int64_t>(cap[r] - len[r], static_cast<std::int64_t>(
                                                                     std::floor(static_cast<double>(left) * weight[r] / w)));
        len[r] += add;
        given += add;
      }
    if (given == 0) {  // shares all rounded to 0: one each, round-robin
      const auto start = static_cast<std::int64_t>(random_bits(seed, 0x5a1, left) % rows);
      for (std::int64_t k = 0; k < rows && given < left; ++k) {
        const std::int64_t r = (start + k) % rows;
        if (len[r] < cap[r]) ++len[r], ++given;
      }
    }
    left -= given;
  }
  return len;
}

// `n` distinct values of [0, range), ascending (Floyd's sampling; the complement when n > range/2).
std::vector<std::int64_t> sample(std::int64_t range, std::int64_t n, std::uint64_t seed, std::uint64_t stream) {
  const bool complement = n > range / 2;
  const std::int64_t draw = complement ? range - n : n;
  std::vector<std::int64_t> picked;
  picked.reserve(draw);
  for (std::int64_t j = range - draw; j < range; ++j) {
    const auto t = static_cast<std::int64_t>(random_bits(seed, stream, j) % static_cast<std::uint64_t>(j + 1));
    picked.push_back(std::find(picked.begin(), picked.end(), t) == picked.end() ? t : j);
  }
  std::sort(picked.begin(), picked.end());
  if (!complement) return picked;
  std::vector<std::int64_t> rest;
  rest.reserve(n);
  for (std::int64_t c = 0, k = 0; c < range; ++c) {
    if (k < draw && picked[k] == c) { ++k; continue; }
    rest.push_back(c);
  }
  return rest;
}

Csr from_lengths(std::int64_t rows, std::int64_t cols, const std::vector<std::int64_t>& len) {
  Csr a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(rows + 1, 0);
  for (std::int64_t r = 0; r < rows; ++r) a.row_ptr[r + 1] = a.row_ptr[r] + len[r];
  a.col_idx.reserve(a.row_ptr[rows]);
  return a;
}

// Magnitude pruning: the nnz largest |w| of a seeded dense matrix (ties broken by position).
Csr pruned(std::int64_t rows, std::int64_t cols, std::int64_t nnz, std::uint64_t seed) {
  const std::int64_t cells = rows * cols;
  std::vector<double> w(cells);
  for (std::int64_t i = 0; i < cells; ++i) w[i] = random_unit(seed, 0x5a7, i);
  std::vector<std::int64_t> order(cells);
  std::iota(order.begin(), order.end(), 0);
  const std::int64_t keep = std::min(nnz, cells);
  if (keep == 0) return from_lengths(rows, cols, std::vector<std::int64_t>(rows, 0));
  std::nth_element(order.begin(), order.begin() + (keep - 1), order.end(),
                   [&](std::int64_t x, std::int64_t y) { return w[x] != w[y] ? w[x] > w[y] : x < y; });
  order.resize(keep);
  std::sort(order.begin(), order.end());
  std::vector<std::int64_t> len(rows, 0);
  for (const std::int64_t i : order) ++len[i / cols];
  Csr a = from_lengths(rows, cols, len);
  for (const std::int64_t i : order) a.col_idx.push_back(i % cols);
  return a;
}

}  // namespace

Csr to_csr(const Coo& a) {
  const auto nnz = static_cast<std::int64_t>(a.row.size());
  if (a.col.size() != a.row.size() || a.values.size() != a.row.size())
    throw UsageError("COO matrix: row, col and values must have the same length");
  std::vector<std::int64_t> order(nnz);
  std::iota(order.begin(), order.end(), 0);
  for (std::int64_t i = 0; i < nnz; ++i)
    if (a.row[i] < 0 || a.row[i] >= a.rows || a.col[i] < 0 || a.col[i] >= a.cols)
      throw UsageError("COO entry " + std::to_string(i) + " at " + cell(a.row[i], a.col[i]) + " is outside the " +
                       std::to_string(a.rows) + " x " + std::to_string(a.cols) + " matrix");
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
    return a.row[x] != a.row[y] ? a.row[x] < a.row[y] : a.col[x] < a.col[y];
  });
  Csr c;
  c.rows = a.rows;
  c.cols = a.cols;
  c.row_ptr.assign(a.rows + 1, 0);
  for (std::int64_t k = 0; k < nnz; ++k) {
    const std::int64_t i = order[k];
    if (k > 0 && a.row[i] == a.row[order[k - 1]] && a.col[i] == a.col[order[k - 1]])
      throw UsageError("COO entries " + std::to_string(order[k - 1]) + " and " + std::to_string(i) +
                       " are both at " + cell(a.row[i], a.col[i]) +
                       ": duplicate indices are refused; sum them into one entry");
    ++c.row_ptr[a.row[i] + 1];
    c.col_idx.push_back(a.col[i]);
    c.values.push_back(a.values[i]);
  }
  for (std::int64_t r = 0; r < a.rows; ++r) c.row_ptr[r + 1] += c.row_ptr[r];
  return c;
}

Coo to_coo(const Csr& a) {
  Coo c;
  c.rows = a.rows;
  c.cols = a.cols;
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (std::int64_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
      c.row.push_back(r);
      c.col.push_back(a.col_idx[p]);
      c.values.push_back(p < static_cast<std::int64_t>(a.values.size()) ? a.values[p] : 0.0);
    }
  return c;
}

std::vector<double> to_dense(const Csr& a) {
  std::vector<double> d(a.rows * a.cols, 0.0);
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (std::int64_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) d[r * a.cols + a.col_idx[p]] += a.values[p];
  return d;
}

Csr transpose(const Csr& a) {
  Coo t = to_coo(a);
  std::swap(t.row, t.col);
  std::swap(t.rows, t.cols);
  return to_csr(t);
}

double BlockedEll::fill() const {
  if (values.empty()) return 1.0;
  const auto nonzero = std::count_if(values.begin(), values.end(), [](double v) { return v != 0.0; });
  return static_cast<double>(nonzero) / static_cast<double>(values.size());
}

BlockedEll to_blocked_ell(const Csr& a, std::int64_t block) {
  if (block < 1) throw UsageError("blocked-ELL block size " + std::to_string(block) + " must be >= 1");
  BlockedEll e;
  e.rows = a.rows, e.cols = a.cols, e.block = block;
  const std::int64_t brows = e.block_rows(), area = block * block;
  std::vector<std::vector<std::int64_t>> tiles(brows);  // each block row's block columns, ascending
  for (std::int64_t br = 0; br < brows; ++br) {
    auto& t = tiles[br];
    for (std::int64_t r = br * block; r < std::min(a.rows, (br + 1) * block); ++r)
      for (std::int64_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) t.push_back(a.col_idx[p] / block);
    std::sort(t.begin(), t.end());
    t.erase(std::unique(t.begin(), t.end()), t.end());
    e.ell_cols = std::max(e.ell_cols, static_cast<std::int64_t>(t.size()));
  }
  e.block_col.assign(brows * e.ell_cols, -1);
  e.values.assign(brows * e.ell_cols * area, 0.0);
  for (std::int64_t br = 0; br < brows; ++br) {
    const auto& t = tiles[br];
    std::copy(t.begin(), t.end(), e.block_col.begin() + br * e.ell_cols);
    for (std::int64_t r = br * block; r < std::min(a.rows, (br + 1) * block); ++r)
      for (std::int64_t p = a.row_ptr[r]; p < a.row_ptr[r + 1]; ++p) {
        const std::int64_t c = a.col_idx[p];
        const auto slot = std::lower_bound(t.begin(), t.end(), c / block) - t.begin();
        e.values[(br * e.ell_cols + slot) * area + (r - br * block) * block + c % block] =
            p < static_cast<std::int64_t>(a.values.size()) ? a.values[p] : 0.0;
      }
  }
  return e;
}

Csr to_csr(const BlockedEll& a) {
  if (a.block < 1) throw UsageError("blocked-ELL block size " + std::to_string(a.block) + " must be >= 1");
  const std::int64_t brows = a.block_rows(), bcols = (a.cols + a.block - 1) / a.block, area = a.block * a.block;
  if (static_cast<std::int64_t>(a.block_col.size()) != brows * a.ell_cols ||
      static_cast<std::int64_t>(a.values.size()) != brows * a.ell_cols * area)
    throw UsageError("blocked-ELL: block_col holds " + std::to_string(a.block_col.size()) + " slots and values " +
                     std::to_string(a.values.size()) + " cells; a " + std::to_string(a.rows) + " x " +
                     std::to_string(a.cols) + " matrix in " + std::to_string(a.block) + "-tiles with ell_cols=" +
                     std::to_string(a.ell_cols) + " needs " + std::to_string(brows * a.ell_cols) + " and " +
                     std::to_string(brows * a.ell_cols * area));
  Coo c;
  c.rows = a.rows, c.cols = a.cols;
  for (std::int64_t br = 0; br < brows; ++br)
    for (std::int64_t s = 0; s < a.ell_cols; ++s) {
      const std::int64_t slot = br * a.ell_cols + s, bc = a.block_col[slot];
      if (bc == -1) continue;
      if (bc < 0 || bc >= bcols)
        throw UsageError("blocked-ELL: block_col[" + std::to_string(slot) + "]=" + std::to_string(bc) +
                         " (block row " + std::to_string(br) + ") is outside the " + std::to_string(bcols) +
                         " block columns; use -1 for padding");
      for (std::int64_t s2 = 0; s2 < s; ++s2)
        if (a.block_col[br * a.ell_cols + s2] == bc)
          throw UsageError("blocked-ELL: block row " + std::to_string(br) + " holds block column " +
                           std::to_string(bc) + " twice (slots " + std::to_string(s2) + " and " + std::to_string(s) +
                           "); merge the two tiles");
      for (std::int64_t i = 0; i < a.block; ++i)
        for (std::int64_t j = 0; j < a.block; ++j) {
          const std::int64_t r = br * a.block + i, col = bc * a.block + j;
          const double v = a.values[slot * area + i * a.block + j];
          if (r < a.rows && col < a.cols && v != 0.0) c.row.push_back(r), c.col.push_back(col), c.values.push_back(v);
        }
    }
  return to_csr(c);
}

void validate_sparse_vector(const std::string& what, const std::string& name, const double* idx, std::int64_t n,
                            std::int64_t length) {
  for (std::int64_t q = 0; q < n; ++q) {
    const double v = idx[q];
    const std::string at = name + "[" + std::to_string(q) + "]=" + number(v);
    if (!std::isfinite(v) || v != std::floor(v) || v < 0 || v >= static_cast<double>(length))
      throw UsageError(what + ": " + at + " is not an index in [0, " + std::to_string(length) + ")");
    if (q > 0 && v <= idx[q - 1])
      throw UsageError(what + ": " + at + " is not greater than " + name + "[" + std::to_string(q - 1) + "]=" +
                       number(idx[q - 1]) +
                       ": a sparse vector's indices must ascend strictly (sort them; sum duplicates into one entry)");
  }
}

std::vector<std::int64_t> sample_indices(std::int64_t range, std::int64_t n, std::uint64_t seed) {
  if (n < 0 || n > range) throw UsageError("sparse::sample_indices: n must be in [0, range]");
  return sample(range, n, seed, 0x5c00);
}

void validate_csr(const std::string& what, const double* row_ptr, const double* col_idx, std::int64_t rows,
                  std::int64_t cols, std::int64_t nnz_cap, bool csc, bool ascending) {
  auto fail = [&](const std::string& msg) { throw UsageError(what + ": " + msg); };
  auto integer = [](double v) { return std::isfinite(v) && v == std::floor(v); };
  const std::string ptr = csc ? "col_ptr" : "row_ptr", idx = csc ? "row_idx" : "col_idx";
  const std::string line = csc ? "column" : "row", index = csc ? "row" : "column";
  if (row_ptr[0] != 0) fail(ptr + "[0]=" + number(row_ptr[0]) + " must be 0 (a compressed pointer starts at 0)");
  for (std::int64_t r = 0; r < rows; ++r) {
    const double a = row_ptr[r], b = row_ptr[r + 1];
    const std::string at = ptr + "[" + std::to_string(r + 1) + "]=" + number(b);
    if (!integer(b)) fail(at + " is not an integer index");
    if (b < a)
      fail(at + " is less than " + ptr + "[" + std::to_string(r) + "]=" + number(a) + ": a " + line +
           " pointer must not decrease (" + line + " " + std::to_string(r) + " would have a negative length)");
    if (b > static_cast<double>(nnz_cap))
      fail(at + " exceeds NNZ=" + std::to_string(nnz_cap) + " (the length of " + idx + " and values); raise NNZ");
  }
  std::vector<std::int64_t> seen;
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto p0 = static_cast<std::int64_t>(row_ptr[r]), p1 = static_cast<std::int64_t>(row_ptr[r + 1]);
    seen.clear();
    for (std::int64_t p = p0; p < p1; ++p) {
      const double c = col_idx[p];
      if (!integer(c) || c < 0 || c >= static_cast<double>(cols))
        fail(idx + "[" + std::to_string(p) + "]=" + number(c) + " (" + line + " " + std::to_string(r) +
             ") is not a " + index + " index in [0, " + std::to_string(cols) + ")");
      if (ascending && p > p0 && c <= col_idx[p - 1])
        fail(idx + "[" + std::to_string(p) + "]=" + number(c) + " is not greater than " + idx + "[" +
             std::to_string(p - 1) + "]=" + number(col_idx[p - 1]) + " (" + line + " " + std::to_string(r) + "): " +
             what + " needs each " + line + "'s " + index + " indices ascending; sort them");
      seen.push_back(static_cast<std::int64_t>(c));
    }
    std::sort(seen.begin(), seen.end());
    const auto dup = std::adjacent_find(seen.begin(), seen.end());
    if (dup != seen.end())
      fail(line + " " + std::to_string(r) + " holds " + index + " " + std::to_string(*dup) + " twice (" + idx + "[" +
           std::to_string(p0) + ".." + std::to_string(p1 - 1) + "]): duplicate indices are refused; sum them into one entry");
  }
}

const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::uniform: return "uniform";
    case Pattern::power_law: return "power_law";
    case Pattern::banded: return "banded";
    case Pattern::block: return "block";
    case Pattern::pruned: return "pruned";
    case Pattern::empty_rows_cols: return "empty_rows_cols";
    case Pattern::dense_row: return "dense_row";
  }
  return "?";
}

Pattern pattern_from_name(const std::string& name) {
  std::string all;
  for (int i = 0; i < kPatternCount; ++i) {
    if (name == pattern_name(static_cast<Pattern>(i))) return static_cast<Pattern>(i);
    all += std::string(i ? ", " : "") + pattern_name(static_cast<Pattern>(i));
  }
  throw UsageError("unknown sparsity pattern '" + name + "' (one of: " + all + ")");
}

Csr generate(Pattern p, std::int64_t rows, std::int64_t cols, std::int64_t nnz, std::uint64_t seed) {
  if (rows < 1 || cols < 1 || nnz < 0) throw UsageError("sparse::generate: rows and cols must be >= 1, nnz >= 0");
  if (p == Pattern::pruned) {  // values left 0, as every pattern's (they were left empty)
    Csr a = pruned(rows, cols, nnz, seed);
    a.values.assign(a.nnz(), 0.0);
    return a;
  }
  std::vector<double> weight(rows, 1.0);
  std::vector<std::int64_t> cap(rows, cols);
  const bool holes = p == Pattern::empty_rows_cols;
  const std::int64_t open_cols = holes ? (cols + 1) / 2 : cols;  // even columns
  const std::int64_t dense = rows / 2;                            // the dense_row pattern's row
  if (p == Pattern::power_law) {
    std::vector<std::int64_t> rank(rows);
    std::iota(rank.begin(), rank.end(), 0);
    for (std::int64_t i = rows - 1; i > 0; --i)
      std::swap(rank[i], rank[random_bits(seed, 0x5a2, i) % static_cast<std::uint64_t>(i + 1)]);
    for (std::int64_t r = 0; r < rows; ++r) weight[r] = 1.0 / static_cast<double>(rank[r] + 1);
  }
  if (holes)
    for (std::int64_t r = 0; r < rows; ++r) cap[r] = (rows == 1 || r % 2 == 1) ? open_cols : 0;
  std::vector<std::int64_t> len;
  if (p == Pattern::dense_row) {  // the dense row first, the rest spread evenly
    std::vector<std::int64_t> rest_cap = cap;
    rest_cap[dense] = 0;
    const std::int64_t first = std::min(nnz, cols);
    len = distribute(nnz - first, weight, rest_cap, seed);
    len[dense] = first;
  } else {
    len = distribute(nnz, weight, cap, seed);
  }
  Csr a = from_lengths(rows, cols, len);
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t n = len[r];
    if (n == 0) continue;
    if (p == Pattern::banded) {  // contiguous, centred on the scaled diagonal
      const std::int64_t centre = rows == 1 ? cols / 2 : r * (cols - 1) / (rows - 1);
      const std::int64_t start = std::clamp<std::int64_t>(centre - n / 2, 0, cols - n);
      for (std::int64_t c = start; c < start + n; ++c) a.col_idx.push_back(c);
    } else if (p == Pattern::block) {  // the group's shuffled column blocks, in order, first n columns
      const std::int64_t blocks = (cols + 3) / 4, group = r / 4;
      std::vector<std::int64_t> order(blocks);
      std::iota(order.begin(), order.end(), 0);
      for (std::int64_t i = blocks - 1; i > 0; --i)
        std::swap(order[i], order[random_bits(seed, 0x5a3 + group, i) % static_cast<std::uint64_t>(i + 1)]);
      std::vector<std::int64_t> picked;
      for (std::int64_t b = 0; b < blocks && static_cast<std::int64_t>(picked.size()) < n; ++b)
        for (std::int64_t c = order[b] * 4; c < std::min(cols, order[b] * 4 + 4) && static_cast<std::int64_t>(picked.size()) < n; ++c)
          picked.push_back(c);
      std::sort(picked.begin(), picked.end());
      a.col_idx.insert(a.col_idx.end(), picked.begin(), picked.end());
    } else {
      const auto picked = sample(open_cols, n, seed, 0x5b00 + static_cast<std::uint64_t>(r));
      for (const std::int64_t c : picked) a.col_idx.push_back(holes ? 2 * c : c);
    }
  }
  a.values.assign(a.nnz(), 0.0);
  return a;
}

}  // namespace kforge::sparse
