// fusedmm (kernels/sparse/fusedmm_problem.hpp): its reference equals sddmm's followed by spmm's
// on the same pattern, its bound follows each row's nonzeros plus D, malformed inputs and bad
// scalars are refused naming them, and the cpu and opencl kernels pass the thorough protocol at
// odd shapes for every pattern and both ops (the trials alternate op 0 and op 1), including a
// 1x1 matrix, one nonzero, rows longer than a chunk and a fully dense matrix with N below a
// vector; the cpu kernel's 2-D tiles at odd shapes, and Z = Y as one buffer (through the tiles,
// a planted bug there rejected). OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/sparse.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

// fusedmm at op 0 is sddmm's sampled values fed to spmm as the sparse matrix's values.
TEST(SparseFusedmm, ReferenceIsSddmmThenSpmm) {
  const Sizes s{{"M", 23}, {"K", 19}, {"D", 7}, {"N", 5}, {"NNZ", 150}};
  for (const int pattern : {0, 1, 6}) {
    const auto fp = find_problem("fusedmm");
    const Instance f = fp->make_instance(s, DType::fp32, Distribution::normal, 5, 0, {{"pattern", pattern}, {"op", 0}});
    std::vector<std::vector<double>> fo, fm, so, sm, po, pm;
    fp->reference(f, fo, fm);
    Instance sd = find_problem("sddmm")->make_instance({{"M", 23}, {"K", 19}, {"D", 7}, {"NNZ", 150}}, DType::fp32,
                                                       Distribution::normal, 1, 0);
    sd.tensors = {f.tensors[0], f.tensors[1], f.tensors[2], f.tensors[3], {}};
    find_problem("sddmm")->reference(sd, so, sm);
    Instance sp = find_problem("spmm")->make_instance({{"M", 23}, {"K", 19}, {"N", 5}, {"NNZ", 150}}, DType::fp32,
                                                      Distribution::normal, 1, 0);
    sp.tensors = {f.tensors[0], f.tensors[1], so[0], f.tensors[4], {}};
    find_problem("spmm")->reference(sp, po, pm);
    ASSERT_EQ(fo[0].size(), po[0].size());
    double largest = 0;
    for (std::size_t i = 0; i < fo[0].size(); ++i) {
      EXPECT_NEAR(fo[0][i], po[0][i], 1e-9 * (1 + std::fabs(po[0][i]))) << "pattern " << pattern << " element " << i;
      largest = std::max(largest, std::fabs(fo[0][i]));
    }
    EXPECT_GT(largest, 0) << "pattern " << pattern;
  }
}

TEST(SparseFusedmm, SigmoidAndBoundPerRow) {
  const auto p = find_problem("fusedmm");
  const Sizes s{{"M", 30}, {"K", 200}, {"D", 9}, {"N", 4}, {"NNZ", 500}};
  const Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 3, 2, {{"op", 1}});  // power-law rows
  std::vector<std::vector<double>> out, mag;
  p->reference(in, out, mag);
  // Each row's column 1, summed here independently: sigmoid(x . y) * z over the row's nonzeros.
  const auto& rp = in.tensors[0];
  for (std::int64_t r = 0; r < 30; ++r) {
    double want = 0;
    for (auto q = static_cast<std::int64_t>(rp[r]); q < rp[r + 1]; ++q) {
      const auto c = static_cast<std::int64_t>(in.tensors[1][q]);
      double dot = 0;
      for (int d = 0; d < 9; ++d) dot += in.tensors[2][r * 9 + d] * in.tensors[3][c * 9 + d];
      want += in.tensors[4][c * 4 + 1] / (1 + std::exp(-dot));
    }
    EXPECT_NEAR(out[0][r * 4 + 1], want, 1e-12 * (1 + std::fabs(want))) << "row " << r;
  }
  const auto n = p->reduction_lengths(in);
  for (std::int64_t r = 0; r < 30; ++r) EXPECT_EQ(n[0][r * 4 + 3], std::max(1.0, rp[r + 1] - rp[r] + 9 + 10));
}

TEST(SparseFusedmm, MalformedInputsAndBadScalarsAreRefused) {
  const auto p = find_problem("fusedmm");
  Instance in = p->make_instance({{"M", 5}, {"K", 6}, {"D", 3}, {"N", 2}, {"NNZ", 12}}, DType::fp32,
                                 Distribution::normal, 3, 1);
  std::vector<std::vector<double>> out, mag;
  Instance bad = in;
  bad.tensors[1][4] = 6;
  EXPECT_NE(error_of([&] { p->reference(bad, out, mag); }).find("fusedmm: col_idx[4]=6"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)p->resolve_scalars({{"op", 2}}); }).find("scalar op=2"), std::string::npos);
  const auto r = test::kforge_cli("verify fusedmm --backend cpu --scalar op=0.5");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("scalar op=0.5"), std::string::npos) << r.err;
}

struct Case {
  std::int64_t M, K, D, N, NNZ;
  ParamValues params;
};

void expect_passes(Backend& backend, const Case& c, int pattern = -1) {
  EvalRequest req = test::library_request(
      "fusedmm", backend.name(), {{"M", c.M}, {"K", c.K}, {"D", c.D}, {"N", c.N}, {"NNZ", c.NNZ}}, DType::fp32, c.params);
  if (pattern >= 0) req.scalars = req.verify.scalars = {{"pattern", pattern}};
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << "pattern " << pattern << ": " << test::describe(r);
}

TEST(SparseFusedmmCpu, PassesEveryPatternAtOddShapes) {
  auto backend = make_backend("cpu");
  // chunks of 8 (rows longer than a chunk load, add and store), columns with vector and scalar tails
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {37, 53, 19, 45, 400, {{"CH", 8}, {"NV", 1}, {"VW", 8}, {"RBLOCKS", 5}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, 1, {}});                          // a 1x1 matrix
  expect_passes(*backend, {29, 31, 33, 70, 1, {}});                      // one nonzero
  expect_passes(*backend, {13, 17, 5, 3, 2000, {{"RBLOCKS", 64}}});      // fully dense, N below a vector
  expect_passes(*backend, {131, 97, 64, 130, 3000, {}});                 // defaults
}

// The register-tiled kernel (8 dot products reduced at once, NV-vector update tiles, prefetch) at
// D and N off every vector width and tile: D = 19 (two vectors and 3 scalar columns), N = 45
// (a tile of 4 vectors, one vector, 5 scalars at NV = 8), N = 130 (two 64-column tiles and 2
// scalars); rows shorter than a group of 8, longer than a chunk, empty rows (pattern 5), one
// dense row (pattern 6); the protocol poisons out, so a row left unwritten fails.
// STAGE = 0: the protocol's Y and Z are two buffers, which the default (STAGE = 1) sends through
// the staged path; these cases keep the chunked update (the path Z = Y takes) under the protocol.
TEST(SparseFusedmmCpu, RegisterTilesAtOddWidths) {
  auto backend = make_backend("cpu");
  for (const int pattern : {0, 2, 5, 6})
    expect_passes(*backend, {41, 67, 19, 45, 700, {{"CH", 16}, {"NV", 8}, {"PD", 8}, {"RBLOCKS", 5}, {"STAGE", 0}}}, pattern);
  expect_passes(*backend, {23, 29, 37, 130, 500, {{"CH", 8}, {"NV", 8}, {"PD", 16}, {"STAGE", 0}}}, 6);
  expect_passes(*backend, {19, 23, 8, 9, 437, {{"CH", 64}, {"NV", 2}, {"PD", 0}, {"STAGE", 0}}});  // every row dense
  expect_passes(*backend, {37, 41, 3, 7, 300, {{"NV", 4}, {"STAGE", 0}}}, 5);                      // D, N below a vector
}

// The staged path (Y != Z, STAGE = 1: the block's sampled values into scratch, then spmm.cpu's
// row code, its prefetch ZPD and its 2-D tiles) at odd shapes: every pattern with D = 64 (whole
// groups of 8 stored as a vector, so a row's last group writes sums past its end), D = 19 (the
// scalar tail), N = 45 and 130 (spmm_rows' tails), ZPD on and off, spmm_rows' own 2-D tiles
// (K = 3001, KP = 64: its ranges of 256 rows of Z).
TEST(SparseFusedmmCpu, StagedUpdateAtOddShapes) {
  auto backend = make_backend("cpu");
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {41, 67, 64, 45, 700, {{"RBLOCKS", 5}, {"ZPD", 4}}}, pattern);
  expect_passes(*backend, {23, 29, 19, 130, 500, {{"ZPD", 0}, {"NV", 4}}}, 6);
  expect_passes(*backend, {31, 3001, 64, 45, 6000, {{"KP", 64}, {"KMIN", 64}, {"RBLOCKS", 2}}});  // spmm_rows' tiles
  expect_passes(*backend, {29, 31, 64, 70, 1, {}});  // one nonzero: a group of 8 in 8 floats of slack
}

// The staged path's order matters: a row's last group of 8 may store sums past its end, which the
// next row overwrites only because rows go in order; walking them backwards must be rejected.
TEST(SparseFusedmmCpu, StagedRowsOutOfOrderAreRejected) {
  auto backend = make_backend("cpu");
  EvalRequest req = test::library_request("fusedmm", "cpu", {{"M", 41}, {"K", 67}, {"D", 64}, {"N", 45}, {"NNZ", 700}});
  test::plant(req, "for (int r = r0; r < r1; ++r) {\n      const int p0 = row_ptr[r], p1 = row_ptr[r + 1];\n      if (p0 < p1) dots(",
              "for (int r = r1 - 1; r >= r0; --r) {\n      const int p0 = row_ptr[r], p1 = row_ptr[r + 1];\n      if (p0 < p1) dots(");
  req.verify.trials = 2;
  const EvalResult r = evaluate(req, *backend);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << r.error;
}

// Planted errors in the new paths must be rejected: a lane of the 8-dot reduction taken from the
// wrong group member, and the scalar tail of D losing its last column.
TEST(SparseFusedmmCpu, PlantedErrorsAreRejected) {
  auto backend = make_backend("cpu");
  const std::vector<std::pair<std::string, std::string>> plants = {
      {"4, 5, 6, 7, 12, 13, 14, 15);", "4, 5, 6, 7, 8, 9, 10, 11);"},
      {"for (int e = d; e < D; ++e)", "for (int e = d; e + 1 < D; ++e)"}};
  for (const auto& [from, to] : plants) {
    EvalRequest req = test::library_request(
        "fusedmm", "cpu", {{"M", 31}, {"K", 37}, {"D", 19}, {"N", 21}, {"NNZ", 400}}, DType::fp32, {});
    test::plant(req, from, to);  // the shuffle tree is in kernels/common/dot8.hpp, shared with sddmm.cpu
    req.verify.trials = 2;
    const EvalResult r = evaluate(req, *backend);
    EXPECT_EQ(r.disposition, Disposition::incorrect) << to << ": " << r.error;
  }
}

// The 2-D tiles (KP > 0: K in ranges of KR rows of Y and Z, each row's nonzeros of a range
// done range by range, the first range storing the output row and the others adding to it) at
// odd shapes: K = 1001 at KP = 64 KiB is 7 ranges with D = 67, N = 45 (KR = 146), 2 with
// D = 67, N = 9; KMIN = 0 and KSEG = 0 take the tiles whatever the block's density. Every pattern: empty
// rows (5) store zeros in the first range, a dense row (6) crosses every range, power-law rows.
TEST(SparseFusedmmCpu, TwoDimensionalTilesAtOddShapes) {
  auto backend = make_backend("cpu");
  const ParamValues tiles{{"KP", 64}, {"KMIN", 0}, {"KSEG", 0}, {"CH", 16}, {"RBLOCKS", 4}};
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {37, 1001, 67, 45, 3000, tiles}, pattern);
  expect_passes(*backend, {29, 1001, 67, 45, 1, tiles});      // one nonzero
  expect_passes(*backend, {13, 300, 67, 9, 3900, tiles});     // fully dense: every row crosses both ranges
}

// Runs `k` (its source possibly planted) with one buffer for Y and Z and compares with the
// reference computed with Z = Y; out is poisoned (-7) beforehand. Returns the first element
// off by more than 1e-5 of its magnitude ("" when all agree, with some nonzero).
std::string run_same_buffer(Backend& backend, const KernelSpec& k, const ParamValues& overrides, const Sizes& s,
                            int op) {
  const auto p = find_problem("fusedmm");
  Instance in = p->make_instance(s, DType::fp32, Distribution::normal, 11, 2, {{"pattern", 5}, {"op", op}});
  in.tensors[4] = in.tensors[3];  // Z = Y
  std::vector<std::vector<double>> ref, mag;
  p->reference(in, ref, mag);
  const ParamValues params = k.resolve(overrides);
  Defines defines{{"KF_DTYPE_FP32", "1"}};
  for (const auto& [name, val] : params) defines.emplace_back(name, std::to_string(val));
  auto module = backend.compile(k.source, k.entry, defines, k.source_path);
  std::vector<std::unique_ptr<Buffer>> bufs;
  for (std::size_t t = 0; t < 6; ++t) {
    if (t == 4) continue;  // Z: Y's buffer
    bufs.push_back(test::upload_tensor(backend, *p, in, t));  // out poisoned (-7)
  }
  std::vector<Arg> args{Arg::buf(*bufs[0]), Arg::buf(*bufs[1]), Arg::buf(*bufs[2]),
                        Arg::buf(*bufs[3]), Arg::buf(*bufs[3]), Arg::buf(*bufs[4])};
  for (const char* n : {"M", "K", "D", "N", "NNZ"}) args.push_back(Arg::i(static_cast<std::int32_t>(s.at(n))));
  args.push_back(Arg::f(5.0f));  // pattern
  args.push_back(Arg::f(static_cast<float>(op)));
  backend.run(*module, k.geometry(params, s), args);
  std::vector<float> got(static_cast<std::size_t>(s.at("M") * s.at("N")));
  backend.read(*bufs[4], got.data(), got.size() * 4);
  bool some_nonzero = false;
  for (std::size_t e = 0; e < got.size(); ++e) {  // fp32 sums of a few dozen terms: far inside 1e-5
    if (!(std::fabs(got[e] - ref[0][e]) <= 1e-5 * mag[0][e] + 1e-30))
      return "op " + std::to_string(op) + " out[" + std::to_string(e) + "] = " + std::to_string(got[e]) +
             ", reference " + std::to_string(ref[0][e]);
    some_nonzero = some_nonzero || got[e] != 0;
  }
  return some_nonzero ? "" : "every output zero";
}

// Z and Y one buffer (a graph embedding's update, D == N): each neighbour's row is gathered once
// for both uses (the update reads it from L1), the Z prefetch is skipped, and the 2-D tiles size
// their ranges by Y's rows alone (KR = KP KiB / 4D: K = 1001 at D = 67 and KP = 64 is 5 ranges).
// Both ops, one pass and 2-D tiles, empty rows (pattern 5).
TEST(SparseFusedmmCpu, SameBufferForYAndZ) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("fusedmm");
  const Sizes small = p->resolve_sizes({{"M", 43}, {"K", 57}, {"D", 21}, {"N", 21}, {"NNZ", 600}});
  const Sizes wide = p->resolve_sizes({{"M", 43}, {"K", 1001}, {"D", 67}, {"N", 67}, {"NNZ", 4000}});
  const ParamValues tiles{{"KP", 64}, {"KMIN", 0}, {"KSEG", 0}, {"CH", 16}, {"RBLOCKS", 4}};
  for (const int op : {0, 1}) {
    EXPECT_EQ(run_same_buffer(*backend, library_kernel(*p, Lang::cpp, small), {{"CH", 16}, {"RBLOCKS", 4}}, small, op), "");
    EXPECT_EQ(run_same_buffer(*backend, library_kernel(*p, Lang::cpp, wide), tiles, wide, op), "");
    EXPECT_EQ(run_same_buffer(*backend, library_kernel(*p, Lang::cpp, wide), {}, wide, op), "");  // defaults
  }
}

// The path Z = Y takes through the 2-D tiles, with a planted bug (every range stores the output
// row instead of adding to the earlier ranges' sum), must be rejected: proof that the one-buffer
// run goes through the tiles and that the check above can fail.
TEST(SparseFusedmmCpu, PlantedBugInTheTilesIsRejectedWithOneBuffer) {
  auto backend = make_backend("cpu");
  const auto p = find_problem("fusedmm");
  const Sizes wide = p->resolve_sizes({{"M", 43}, {"K", 1001}, {"D", 67}, {"N", 67}, {"NNZ", 4000}});
  EvalRequest req = test::library_request("fusedmm", "cpu", wide);
  test::plant(req, "q == 0 && p == s0", "p == s0");
  const ParamValues tiles{{"KP", 64}, {"KMIN", 0}, {"KSEG", 0}, {"CH", 16}, {"RBLOCKS", 4}};
  EXPECT_NE(run_same_buffer(*backend, req.kernel, tiles, wide, 0), "");
  EXPECT_EQ(run_same_buffer(*backend, req.kernel, {{"KP", 0}}, wide, 0), "");  // the one-pass path has no such line
  // The same plant through the protocol, Y and Z two buffers (7 ranges at D = 67, N = 45).
  EvalRequest two = test::library_request("fusedmm", "cpu", {{"M", 37}, {"K", 1001}, {"D", 67}, {"N", 45}, {"NNZ", 3000}},
                                          DType::fp32, tiles);
  test::plant(two, "q == 0 && p == s0", "p == s0");
  two.verify.trials = 2;
  const EvalResult r = evaluate(two, *backend);
  EXPECT_EQ(r.disposition, Disposition::incorrect) << r.error;
}

TEST(SparseFusedmmOpenCl, PassesEveryPattern) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  for (int pattern = 0; pattern < sparse::kPatternCount; ++pattern)
    expect_passes(*backend, {37, 53, 19, 45, 400, {{"WX", 8}, {"CPT", 2}}}, pattern);
  expect_passes(*backend, {1, 1, 1, 1, 1, {}});
  expect_passes(*backend, {13, 17, 5, 3, 2000, {}});
}

}  // namespace
}  // namespace kforge
