// The opencl backend: compiles and runs a kernel timed by its own events, reports build errors
// with the driver's log, refuses a missing entry and an oversized work-group, and caches
// program binaries. Every test skips itself on a machine without an OpenCL device.
#ifdef KFORGE_WITH_OPENCL
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

constexpr const char* kScale = R"(
__kernel void scale(__global float* x, int n, float s) {
  const int i = get_global_id(0);
  if (i < n) x[i] = x[i] * s + OFFSET;
}
)";

std::unique_ptr<Backend> device_or_skip() {
  auto b = make_backend("opencl");
  return b->can_run() ? std::move(b) : nullptr;
}

#define SKIP_WITHOUT_DEVICE(b)                                    \
  auto b = device_or_skip();                                      \
  if (!b) GTEST_SKIP() << "no OpenCL device on this machine"

TEST(OpenClBackend, NamesItselfAndItsDevice) {
  auto b = make_backend("opencl");
  EXPECT_EQ(b->name(), "opencl");
  EXPECT_EQ(b->lang(), Lang::opencl);
  EXPECT_FALSE(b->device().empty());
  if (b->can_run()) EXPECT_NE(b->device().find(": "), std::string::npos) << b->device();
}

TEST(OpenClBackend, CompilesRunsAndTimesAKernel) {
  SKIP_WITHOUT_DEVICE(b);
  auto m = b->compile(kScale, "scale", {{"OFFSET", "1.0f"}});
  const int n = 1000;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);
  auto buf = b->alloc(n * sizeof(float));
  b->write(*buf, host.data(), n * sizeof(float));
  const Arg args[] = {Arg::buf(*buf), Arg::i(n), Arg::f(2.0f)};
  const double s = b->run(*m, {{16, 1, 1}, {64, 1, 1}}, args);  // 1024 items for 1000 values
  EXPECT_GT(s, 0.0);
  std::vector<float> out(n);
  b->read(*buf, out.data(), n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], 2.0f * i + 1.0f) << "at " << i;
}

TEST(OpenClBackend, SecondCompileComesFromTheBinaryCache) {
  SKIP_WITHOUT_DEVICE(b);
  const std::string unique = std::to_string(std::rand()) + ".0f";
  auto first = b->compile(kScale, "scale", {{"OFFSET", unique}});
  auto second = b->compile(kScale, "scale", {{"OFFSET", unique}});
  EXPECT_EQ(second->compile_s, 0.0);
  auto buf = b->alloc(sizeof(float));
  const float one = 1.0f;
  b->write(*buf, &one, sizeof one);
  const Arg args[] = {Arg::buf(*buf), Arg::i(1), Arg::f(3.0f)};
  EXPECT_GT(b->run(*second, {{1, 1, 1}, {1, 1, 1}}, args), 0.0);
}

TEST(OpenClBackend, SyntaxErrorGivesCompileErrorWithTheLog) {
  SKIP_WITHOUT_DEVICE(b);
  try {
    (void)b->compile("__kernel void broken(__global float* x) { x[0] = undeclared_name; }",
                     "broken", {});
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("undeclared_name"), std::string::npos) << e.log;
  }
}

TEST(OpenClBackend, MissingEntryGivesCompileError) {
  SKIP_WITHOUT_DEVICE(b);
  try {
    (void)b->compile(kScale, "no_such_kernel", {{"OFFSET", "0.0f"}});
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
    EXPECT_NE(e.log.find("scale"), std::string::npos) << e.log;
  }
}

TEST(OpenClBackend, OversizedWorkGroupGivesLaunchError) {
  SKIP_WITHOUT_DEVICE(b);
  auto m = b->compile(kScale, "scale", {{"OFFSET", "0.0f"}});
  auto buf = b->alloc(sizeof(float));
  const Arg args[] = {Arg::buf(*buf), Arg::i(1), Arg::f(1.0f)};
  EXPECT_THROW((void)b->run(*m, {{1, 1, 1}, {1 << 20, 1, 1}}, args), LaunchError);
}

TEST(OpenClBackend, ZeroByteBufferIsUsable) {
  SKIP_WITHOUT_DEVICE(b);
  auto buf = b->alloc(0);
  EXPECT_EQ(buf->bytes(), 0u);
  b->write(*buf, nullptr, 0);
  b->read(*buf, nullptr, 0);
}

}  // namespace
}  // namespace kforge
#endif  // KFORGE_WITH_OPENCL
