#pragma once
// How the sparse cpu kernels cut a CSR matrix's rows into blocks of equal work: a row costs its
// nonzeros plus one (its own overhead, so empty rows are not free), and block b of RBLOCKS owns
// the rows whose cost prefix row_ptr[r] + r falls in its share (row pointers are int32,
// kernels/sparse/sparse_problem.hpp).

// The first row whose cost prefix row_ptr[r] + r reaches `target` (rows 0..M).
static int first_row_at(const int* row_ptr, int M, double target) {
  int lo = 0, hi = M;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if ((double)row_ptr[mid] + mid < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
