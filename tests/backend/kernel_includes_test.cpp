// Kernel sources share code through the headers kforge carries (kernels/common/): an
// `#include "kernels/..."` line is replaced by the header's text before the compiler sees the
// source, once per header, with #line directives so that messages still name the kernel's own
// lines. A header kforge does not carry is a compile error naming the line.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/kernel_includes.hpp"
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(KernelIncludes, AHeaderGoesInOnceWithLinesThatPointBack) {
  const std::string source =
      "#define VW 8\n#include \"kernels/common/simd.hpp\"\nint first;\n  #  include \"kernels/common/simd.hpp\"\nint second;\n";
  const std::string out = expand_kernel_includes(source, "mine.cpp");
  const std::string& header = embedded_file("kernels/common/simd.hpp");
  EXPECT_EQ(count(out, "static void* scratch("), 1u) << out;
  EXPECT_EQ(count(out, "#line 1 \"kernels/common/simd.hpp\""), 1u);
  EXPECT_NE(out.find("#line 3 \"mine.cpp\"\nint first;"), std::string::npos) << out;
  EXPECT_NE(out.find("#line 5 \"mine.cpp\"\nint second;"), std::string::npos) << out;
  EXPECT_GT(out.size(), header.size());
  // A source without kforge headers is passed on as it is.
  const std::string plain = "#include <cmath>\nint x;";
  EXPECT_EQ(expand_kernel_includes(plain, "mine.cpp"), plain);
}

TEST(KernelIncludes, AHeaderKforgeDoesNotCarryNamesTheLine) {
  try {
    (void)expand_kernel_includes("int a;\n#include \"kernels/common/no_such.hpp\"\n", "mine.cpp");
    FAIL() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("mine.cpp:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("kernels/common/no_such.hpp"), std::string::npos) << e.what();
    EXPECT_NE(e.log.find("kernels/common/simd.hpp"), std::string::npos) << e.log;  // what it has
  }
}

// A user's kernel built on the shared header: vectors, scratch and the dtype's conversions.
constexpr const char* kScale = R"(#include "kernels/common/simd.hpp"
static void body(const kf_ctx& ctx, const T* x, T* y, int n) {
  const int i0 = (int)ctx.block_idx.x * 64;
  float* tmp = scratch_floats(0, 64);
  for (int i = 0; i < 64; ++i) tmp[i] = i0 + i < n ? to_f32(x[i0 + i]) : 0.0f;
  for (int v = 0; v < 64 / VW; ++v) *(vf*)(tmp + v * VW) *= 3.0f;
  for (int i = 0; i < 64 && i0 + i < n; ++i) y[i0 + i] = from_f32(tmp[i]);
}
KF_KERNEL(scale3, body))";

TEST(KernelIncludes, AUserKernelOnTheSharedHeaderRunsOnTheCpu) {
  auto b = make_backend("cpu", {.threads = 2});
  const int n = 1000 + 37;  // not a multiple of the 64-element blocks
  std::vector<float> x(n), y(n, std::numeric_limits<float>::quiet_NaN());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  for (auto& v : x) v = u(rng);
  auto bx = b->alloc(n * 4), by = b->alloc(n * 4);
  b->write(*bx, x.data(), n * 4);
  b->write(*by, y.data(), n * 4);
  auto m = b->compile(kScale, "scale3", {{"VW", "0"}}, "scale3.cpp");
  const Arg args[] = {Arg::buf(*bx), Arg::buf(*by), Arg::i(n)};
  LaunchGeometry g;
  g.grid.x = (n + 63) / 64;
  (void)b->run(*m, g, args);
  b->read(*by, y.data(), n * 4);
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * x[i]) << "element " << i;
}

TEST(KernelIncludes, ACompilerErrorAfterAHeaderNamesTheKernelsOwnLine) {
  auto b = make_backend("cpu", {.threads = 1});
  try {
    (void)b->compile("#include \"kernels/common/simd.hpp\"\n\nint broken = ;\n", "x", {{"VW", "0"}}, "mine.cpp");
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("mine.cpp:3"), std::string::npos) << e.log;
  }
}

}  // namespace
}  // namespace kforge
