// spmspv (kernels/sparse/spmspv_problem.hpp) and the sparse-vector helpers it uses: transpose,
// index sampling and the vector validator; the reference (values and structural mask) against a
// dense product computed here; malformed CSC structures and vectors refused naming the index;
// x's perturbation keeping it valid; and the cpu and opencl kernels passing the thorough
// protocol at odd shapes for every pattern at vector densities from one entry to all of them.
// OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using sparse::Pattern;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

enum { kColPtr, kRowIdx, kValues, kXIdx, kXVal };

TEST(SparseVector, TransposeSampleAndValidate) {
  const sparse::Csr a = sparse::generate(Pattern::power_law, 13, 9, 40, 3);
  const sparse::Csr t = sparse::transpose(a);
  EXPECT_EQ(t.rows, 9);
  EXPECT_EQ(t.cols, 13);
  const auto back = sparse::transpose(t);
  EXPECT_EQ(back.row_ptr, a.row_ptr);
  EXPECT_EQ(back.col_idx, a.col_idx);
  for (const std::int64_t n : {0L, 1L, 7L, 50L, 100L}) {
    const auto idx = sparse::sample_indices(100, n, 9);
    ASSERT_EQ(static_cast<std::int64_t>(idx.size()), n);
    std::vector<double> d(idx.begin(), idx.end());
    EXPECT_EQ(error_of([&] { sparse::validate_sparse_vector("t", "x_idx", d.data(), n, 100); }), "(no error)");
  }
  EXPECT_NE(sparse::sample_indices(1000, 5, 1), sparse::sample_indices(1000, 5, 2));
  const double unsorted[] = {1, 4, 4}, range[] = {0, 9}, frac[] = {0.5};
  EXPECT_NE(error_of([&] { sparse::validate_sparse_vector("spmspv", "x_idx", unsorted, 3, 9); })
                .find("spmspv: x_idx[2]=4 is not greater than x_idx[1]=4"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sparse::validate_sparse_vector("spmspv", "x_idx", range, 2, 9); }).find("x_idx[1]=9"),
            std::string::npos);
  EXPECT_NE(error_of([&] { sparse::validate_sparse_vector("spmspv", "x_idx", frac, 1, 9); }).find("x_idx[0]=0.5"),
            std::string::npos);
}

// The reference against A (from its CSC) times x made dense, and the mask against rows that
// meet one of x's columns, for every pattern.
TEST(SparseSpmspv, ReferenceMatchesADenseProduct) {
  const auto p = find_problem("spmspv");
  const std::int64_t M = 41, K = 37;
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) {
    const Instance in = p->make_instance({{"M", M}, {"K", K}, {"NNZ", 300}, {"XNNZ", 6}}, DType::fp32,
                                         Distribution::normal, 7, 0, {{"pattern", pattern}});
    std::vector<double> a(M * K, 0.0), x(K, 0.0);
    std::vector<bool> stored(M * K, false), in_x(K, false);
    for (std::int64_t j = 0; j < K; ++j)
      for (auto q = static_cast<std::int64_t>(in.tensors[kColPtr][j]); q < in.tensors[kColPtr][j + 1]; ++q) {
        const auto r = static_cast<std::int64_t>(in.tensors[kRowIdx][q]);
        a[r * K + j] = in.tensors[kValues][q];
        stored[r * K + j] = true;
      }
    for (int q = 0; q < 6; ++q) {
      const auto j = static_cast<std::int64_t>(in.tensors[kXIdx][q]);
      x[j] = in.tensors[kXVal][q];
      in_x[j] = true;
    }
    std::vector<std::vector<double>> out, mag;
    p->reference(in, out, mag);
    int entries = 0;
    for (std::int64_t r = 0; r < M; ++r) {
      double y = 0;
      bool hit = false;
      for (std::int64_t j = 0; j < K; ++j) {
        y += a[r * K + j] * x[j];
        hit = hit || (stored[r * K + j] && in_x[j]);
      }
      EXPECT_NEAR(out[0][r], y, 1e-12 * (1 + std::fabs(y))) << "pattern " << pattern << " row " << r;
      EXPECT_EQ(out[1][r], hit ? 1.0 : 0.0) << "pattern " << pattern << " row " << r;
      entries += hit;
    }
    EXPECT_GT(entries, 0) << "pattern " << pattern << ": x always meets A's first nonempty column";
  }
}

TEST(SparseSpmspv, MalformedInputsAreRefusedNamingTheIndex) {
  const auto p = find_problem("spmspv");
  const Instance in = p->make_instance({{"M", 6}, {"K", 5}, {"NNZ", 12}, {"XNNZ", 3}}, DType::fp32,
                                       Distribution::normal, 3, 1);
  std::vector<std::vector<double>> out, mag;
  Instance bad = in;
  bad.tensors[kColPtr][3] = bad.tensors[kColPtr][2] - 1;
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("spmspv: col_ptr[3]="), std::string::npos);
  bad = in;
  bad.tensors[kRowIdx][4] = 6;
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("row_idx[4]=6 (column"), std::string::npos);
  bad = in;  // a column's row indices out of order (columns 0..4 of 6 rows hold 12 entries: one has two)
  for (std::int64_t j = 0; j < 5; ++j)
    if (bad.tensors[kColPtr][j + 1] - bad.tensors[kColPtr][j] >= 2) {
      const auto p0 = static_cast<std::size_t>(bad.tensors[kColPtr][j]);
      std::swap(bad.tensors[kRowIdx][p0], bad.tensors[kRowIdx][p0 + 1]);
      EXPECT_NE(error_of([&] { p->reference(bad, out, mag); })
                    .find("row_idx[" + std::to_string(p0 + 1) + "]="),
                std::string::npos);
      EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("ascending; sort them"), std::string::npos);
      break;
    }
  bad = in;
  bad.tensors[kXIdx][2] = bad.tensors[kXIdx][1];
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("x_idx[2]="), std::string::npos);
  const auto r = test::kforge_cli("verify spmspv --backend cpu --size K=10,XNNZ=11");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("size XNNZ=11 must be at most K=10"), std::string::npos) << r.err;
}

// Every perturbation of the structure and of x's indices leaves valid inputs (columns still
// ascending, x still ascending), so the check then has a reference.
TEST(SparseSpmspv, PerturbationKeepsInputsValid) {
  const auto p = find_problem("spmspv");
  std::vector<std::vector<double>> out, mag;
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern) {
    Instance in = p->make_instance({{"M", 23}, {"K", 19}, {"NNZ", 120}, {"XNNZ", 4}}, DType::fp32,
                                   Distribution::normal, 5, 0, {{"pattern", pattern}});
    for (std::size_t i = 0; i < 40; ++i) {
      p->perturb(in, i % 2 == 0 ? kColPtr : kRowIdx, i * 7);
      EXPECT_EQ(error_of([&] { p->reference(in, out, mag); }), "(no error)") << "pattern " << pattern << " i " << i;
    }
  }
}

TEST(SparseSpmspv, PerturbationKeepsTheVectorValid) {
  const auto p = find_problem("spmspv");
  for (const std::int64_t xnnz : {1L, 4L, 17L}) {
    Instance in = p->make_instance({{"M", 9}, {"K", 17}, {"NNZ", 40}, {"XNNZ", xnnz}}, DType::fp32,
                                   Distribution::normal, 11, 0);
    for (std::size_t i = 0; i < 20; ++i) {
      const auto before = in.tensors[kXIdx];
      const auto vals = in.tensors[kXVal];
      p->perturb(in, kXIdx, i);
      EXPECT_EQ(error_of([&] {
                  sparse::validate_sparse_vector("spmspv", "x_idx", in.tensors[kXIdx].data(), xnnz, 17);
                }),
                "(no error)");
      EXPECT_TRUE(before != in.tensors[kXIdx] || vals != in.tensors[kXVal]) << "XNNZ " << xnnz << " i " << i;
    }
  }
}

struct Case {
  std::int64_t M, K, NNZ, XNNZ;
  ParamValues params;
};

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  EvalRequest req = test::library_request("spmspv", backend.name(),
                                          {{"M", c.M}, {"K", c.K}, {"NNZ", c.NNZ}, {"XNNZ", c.XNNZ}}, DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SparseSpmspvCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {61, 53, 700, 5, {{"RBLOCKS", 3}}}, pattern);  // x 9% dense
  expect_passes(*backend, {1, 1, 1, 1, {}});                    // a 1x1 matrix
  expect_passes(*backend, {97, 301, 5000, 1, {{"RBLOCKS", 8}}});  // one entry in x
  expect_passes(*backend, {37, 29, 1073, 29, {}});                // A and x fully dense
}

TEST(SparseSpmspvOpenCl, PassesEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {61, 53, 700, 5, {{"WG", 16}, {"RPT", 3}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, {}});
  expect_passes(*backend, {37, 29, 1073, 29, {}});
}

}  // namespace
}  // namespace kforge
