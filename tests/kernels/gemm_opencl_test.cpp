// The library's OpenCL gemm passes kforge's verification at sizes off every tile, for fp32,
// fp16 and bf16, and an invalid parameter combination is refused before compiling. Skips
// itself on a machine without an OpenCL device.
#ifdef KFORGE_WITH_OPENCL
#include <gtest/gtest.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

EvalRequest gemm_request(const Sizes& sizes, DType t, const ParamValues& params = {}) {
  const auto problem = find_problem("gemm");
  EvalRequest req;
  req.problem = "gemm";
  req.kernel = library_kernel(*problem, Lang::opencl);
  req.sizes = problem->resolve_sizes(sizes);
  req.dtype = t;
  req.params = params;
  req.backend = "opencl";
  // As the CLI verifies library kernels: without the index_width run (on PoCL it maps 4 GiB and
  // takes seconds per case; tests/verify/index_width_*_test.cpp and docs/verification.md cover it).
  req.verify.index_width = false;
  return req;
}

class GemmOpenCl : public ::testing::Test {
 protected:
  void SetUp() override {
    backend_ = make_backend("opencl");
    if (!backend_->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend_->device();
  }
  void expect_passes(const Sizes& s, DType t, const ParamValues& params = {}) {
    const EvalResult r = evaluate(gemm_request(s, t, params), *backend_);
    EXPECT_TRUE(r.passed()) << dtype_name(t) << " M=" << s.at("M") << " N=" << s.at("N")
                            << " K=" << s.at("K") << ": " << disposition_name(r.disposition)
                            << ": " << r.error << "\n" << r.compile_log;
  }
  std::unique_ptr<Backend> backend_;
};

const Sizes kOdd[] = {{{"M", 1}, {"N", 1}, {"K", 1}},
                      {{"M", 127}, {"N", 65}, {"K", 33}},
                      {{"M", 200}, {"N", 301}, {"K", 129}}};

TEST_F(GemmOpenCl, Fp32PassesAtOddSizes) {
  for (const Sizes& s : kOdd) expect_passes(s, DType::fp32);
}

TEST_F(GemmOpenCl, Fp16PassesAtOddSizes) {
  for (const Sizes& s : kOdd) expect_passes(s, DType::fp16);
}

TEST_F(GemmOpenCl, Bf16PassesAtOddSizes) {
  for (const Sizes& s : kOdd) expect_passes(s, DType::bf16);
}

TEST_F(GemmOpenCl, ScalarVectorWidthsAndManyWorkItemsPass) {
  const ParamValues p{{"MWG", 8}, {"NWG", 16}, {"KWG", 8}, {"MDIMC", 4},
                      {"NDIMC", 4}, {"VWN", 1}, {"VWM", 1}};
  expect_passes({{"M", 45}, {"N", 70}, {"K", 37}}, DType::bf16, p);
}

TEST_F(GemmOpenCl, InvalidParametersAreRefusedWithAReason) {
  // MWG = 8 is not a multiple of MDIMC = 16.
  const EvalResult r = evaluate(
      gemm_request({{"M", 64}, {"N", 64}, {"K", 64}}, DType::fp32, {{"MWG", 8}, {"MDIMC", 16}}),
      *backend_);
  EXPECT_EQ(r.disposition, Disposition::invalid_config);
  EXPECT_NE(r.error.find("MDIMC"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace kforge
#endif  // KFORGE_WITH_OPENCL
