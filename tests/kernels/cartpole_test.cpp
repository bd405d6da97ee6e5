// The cartpole family (kernels/cartpole/) passes kforge's thorough verification on cpu and
// opencl at odd shapes (1 environment, 1 step, primes, block size +-1), in fp32 and fp64, with
// a block of environments where some pole angle leaves the Taylor range (libm path). Bad sizes
// exit 2 naming the size. OpenCL cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

struct Case {
  std::int64_t envs, steps;
  ParamValues params;
  DType dtype = DType::fp32;
};

void expect_passes(Backend& backend, const Case& c) {
  const EvalResult r = evaluate(
      test::library_request("cartpole", backend.name(), {{"envs", c.envs}, {"steps", c.steps}}, c.dtype, c.params),
      backend);
  EXPECT_TRUE(r.passed()) << "cartpole on " << backend.name() << " " << dtype_name(c.dtype)
                          << " envs=" << c.envs << " steps=" << c.steps << ": "
                          << disposition_name(r.disposition) << ": " << r.error << "\n"
                          << r.compile_log;
}

TEST(CartPoleCpu, PassesAtOddShapes) {
  auto backend = make_backend("cpu");
  const Case cases[] = {
      {1, 1, {}},
      {37, 61, {{"ENVS", 8}}},           // 4 full blocks and a tail of 5
      {257, 100, {}},                    // one block of 256 + 1
      {9, 53, {{"ENVS", 8}}, DType::fp64},
  };
  for (const Case& c : cases) expect_passes(*backend, c);
}

TEST(CartPoleOpenCl, PassesAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  const Case cases[] = {
      {1, 1, {}},
      {65, 97, {}},  // one work-group of 64 + 1
      {13, 41, {}, DType::fp64},
  };
  for (const Case& c : cases) expect_passes(*backend, c);
}

TEST(CartPoleCli, BadSizesExitTwoNamingTheSize) {
  const auto r = test::kforge_cli("verify cartpole --backend cpu --size envs=0");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("envs"), std::string::npos) << r.err;
  const auto r2 = test::kforge_cli("verify cartpole --backend cpu --size steps=-4");
  EXPECT_EQ(r2.exit_code, 2) << r2.out << r2.err;
  EXPECT_NE(r2.err.find("steps"), std::string::npos) << r2.err;
}

}  // namespace
}  // namespace kforge
