// moe_grouped_gemm (kernels/moe/) passes kforge's thorough verification on cpu and opencl at
// odd shapes: T prime, H and F not tile multiples, several token and column blocks, E = 1 (every token on
// one expert), K = 1 and 2, more experts than (token, slot) pairs (experts with no token; the
// skewed trials also leave one expert empty between full ones). Bad sizes exit 2 naming the
// size; invalid parameters are refused before compiling. OpenCL cases skip themselves on a
// machine without an OpenCL device.
#include <gtest/gtest.h>

#include <string>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

struct Case {
  std::int64_t T, H, F, E, K;
  ParamValues params;
};

EvalResult run(Backend& backend, const Case& c) {
  return evaluate(test::library_request("moe_grouped_gemm", backend.name(),
                                        {{"T", c.T}, {"H", c.H}, {"F", c.F}, {"E", c.E}, {"K", c.K}},
                                        DType::fp32, c.params),
                  backend);
}

void expect_passes(Backend& backend, const Case& c) {
  const EvalResult r = run(backend, c);
  std::string params;
  for (const auto& [k, v] : r.params) params += " " + k + "=" + std::to_string(v);
  EXPECT_TRUE(r.passed()) << backend.name() << " T=" << c.T << " H=" << c.H << " F=" << c.F
                          << " E=" << c.E << " K=" << c.K << params << ": "
                          << disposition_name(r.disposition) << ": " << r.error << "\n"
                          << r.compile_log;
}

TEST(MoeCpu, PassesAtOddShapes) {
  auto backend = make_backend("cpu");
  // Small tiles, so that odd shapes cross every boundary: 2 column blocks (the second with a
  // 1-column panel), 3 token blocks, row groups of 32 in tiles of 4 (tails of every height),
  // KC slices with a tail (each slice's gated sum added to Y).
  const ParamValues small = {{"MR", 4}, {"NV", 1}, {"VW", 8}, {"MC", 32}, {"KC", 64}, {"BN", 64}, {"TBLOCKS", 3}};
  // The widest micro-tile: 14 rows of 2 AVX-512 vectors, groups of 32 = 14 + 14 + 4.
  const ParamValues wide = {{"MR", 14}, {"NV", 2}, {"MC", 32}, {"KC", 64}, {"BN", 64}, {"TBLOCKS", 32}};
  const Case cases[] = {
      {37, 67, 45, 5, 2, {}},        // one column block (F < NR), row and column tails
      {131, 131, 97, 7, 2, small},   // see small
      {53, 70, 100, 4, 2, wide},     // KC slice tail 6, column tail 4, 32 token blocks
      {13, 17, 33, 1, 1, {}},        // E = 1: every token on one expert
      {29, 64, 65, 3, 1, small},     // K = 1, F = tile*2 + 1
      {3, 5, 7, 11, 2, {}},          // E > T*K: most experts have no token
      {13, 9, 16, 3, 2, {{"TBLOCKS", 32}}},  // more token blocks than tokens
      {1, 1, 1, 1, 1, {}},
      // The A gather's 8 x 8 transposes: panels of exactly 8 rows and their row tails, KC
      // slices of 96, 96 and 11 (one block of 8 k and a scalar tail of 3).
      {41, 203, 50, 3, 2, {{"MR", 8}, {"NV", 1}, {"MC", 32}, {"KC", 96}}},
  };
  for (const Case& c : cases) expect_passes(*backend, c);
}

// The cpu kernel's column strips follow the pool: ceil(F/BN) strips rounded down to a multiple
// of the threads, or one per thread where that gives fewer, each a run of whole panels that
// differ by one panel at most. 1, 2 and 3 threads on the same shapes: F = 200 in panels of 8 is
// 4 strips on 1 and 2 threads, 3 strips of 9, 8 and 8 panels on 3; F = 40 (5 panels, BN = 64)
// is 1 strip on one thread, 3 + 2 panels on 2, 2 + 2 + 1 on 3. Quick verification (two trials,
// balanced and skewed): the thorough one of PassesAtOddShapes already varies the pool.
TEST(MoeCpu, StripsFollowThePoolsThreads) {
  const ParamValues small = {{"MR", 4}, {"NV", 1}, {"VW", 8}, {"MC", 32}, {"KC", 64}, {"BN", 64}};
  for (const int threads : {1, 2, 3}) {
    auto backend = make_backend("cpu", {.threads = threads});
    for (const Case& c : {Case{61, 70, 200, 6, 2, small}, Case{23, 40, 40, 3, 2, small}}) {
      EvalRequest req = test::library_request("moe_grouped_gemm", "cpu",
                                              {{"T", c.T}, {"H", c.H}, {"F", c.F}, {"E", c.E}, {"K", c.K}},
                                              DType::fp32, c.params);
      req.backend_options.threads = threads;
      req.verify.thorough = false;
      req.verify.trials = 2;
      const EvalResult r = evaluate(req, *backend);
      EXPECT_TRUE(r.passed()) << threads << " threads, F=" << c.F << ": " << disposition_name(r.disposition) << ": "
                              << r.error;
    }
  }
}

TEST(MoeOpenCl, PassesAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  const ParamValues small = {{"BM", 8}, {"BN", 16}, {"KT", 8}, {"WX", 4}, {"WY", 2}, {"TCHUNK", 64}};
  const Case cases[] = {
      {37, 67, 45, 5, 2, {}},
      {13, 17, 33, 1, 1, {}},
      {3, 5, 7, 11, 2, {}},
      {131, 41, 37, 7, 2, small},  // 3 token chunks, several row blocks and KT slices, tails
  };
  for (const Case& c : cases) expect_passes(*backend, c);
}

TEST(MoeCli, BadSizesExitTwoNamingTheSize) {
  const struct {
    const char* sizes;
    const char* names;
  } bad[] = {{"K=3", "size K=3"}, {"T=0", "size T=0"}, {"E=1,K=2", "size K=2"}, {"H=-5", "size H=-5"},
             {"T=1073741824,H=1,F=1,E=2,K=2", "sizes T*K=2147483648"}};  // pair indices overflow int
  for (const auto& b : bad) {
    const auto r = test::kforge_cli(std::string("verify moe_grouped_gemm --backend cpu --size ") + b.sizes);
    EXPECT_EQ(r.exit_code, 2) << b.sizes << ": " << r.out << r.err;
    EXPECT_NE(r.err.find(b.names), std::string::npos) << b.sizes << ": " << r.err;
  }
}

TEST(MoeCpu, InvalidParametersAreRefusedBeforeCompiling) {
  auto backend = make_backend("cpu");
  const EvalResult r = run(*backend, {16, 16, 16, 2, 1, {{"MR", 14}, {"NV", 4}}});
  EXPECT_EQ(r.disposition, Disposition::invalid_config);
  EXPECT_NE(r.error.find("MR"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace kforge
