// The opencl backend: compiles and runs a kernel timed by its own events, reports build errors
// with the driver's log, refuses a missing entry and an oversized work-group, and caches
// program binaries. Its prelude (src/backend/opencl/prelude.cl, in front of every kernel)
// converts exactly as the host (kforge/dtype.hpp) at every vector width, and a compile error
// still names the kernel's file and its own line, through the backend and through an
// evaluation. Every test skips itself on a machine without an OpenCL device.
#ifdef KFORGE_WITH_OPENCL
#include <gtest/gtest.h>

#include <bit>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/dtype.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
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

// A device in the host's memory (PoCL) lends its largest buffers from a mapping of ours, as the
// index_width check needs: 4 GiB whose untouched bytes read as zero and take no memory, written
// and read in part, a kernel's write at its far end seen by the host, and a range folded onto
// one page-sized block.
constexpr const char* kTouchLast = R"(
__kernel void touch_last(__global float* x, int last) { x[last] = 7.0f; }
)";

long resident_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  long kib = -1;
  char line[256];
  while (f && std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  if (f) std::fclose(f);
  return kib;
}

TEST(OpenClBackend, AHostMemoryDeviceLendsSparseBuffers) {
  SKIP_WITHOUT_DEVICE(b);
  if (!b->sparse_buffers()) GTEST_SKIP() << "the device has memory of its own: " << b->device();
  const std::size_t n = std::size_t{1} << 30;  // floats: 4 GiB
  const long before = resident_kib();
  auto buf = b->alloc(n * sizeof(float));
  const float tail[2] = {1.5f, -2.5f};
  b->write_region(*buf, (n - 4) * sizeof(float), tail, sizeof tail);
  float head[4] = {9, 9, 9, 9}, back[2] = {0, 0};
  b->read_region(*buf, 0, head, sizeof head);
  b->read_region(*buf, (n - 4) * sizeof(float), back, sizeof back);
  for (float v : head) EXPECT_EQ(v, 0.0f);
  EXPECT_EQ(back[0], 1.5f);
  EXPECT_EQ(back[1], -2.5f);
  auto m = b->compile(kTouchLast, "touch_last", {});
  const Arg args[] = {Arg::buf(*buf), Arg::i(static_cast<std::int32_t>(n - 1))};
  (void)b->run(*m, {{1, 1, 1}, {1, 1, 1}}, args);
  float last = 0;
  b->read_region(*buf, (n - 1) * sizeof(float), &last, sizeof last);
  EXPECT_EQ(last, 7.0f);
  EXPECT_LT(resident_kib() - before, 256 * 1024) << "the untouched 4 GiB should take no memory";
  // Folded: every 64 KiB piece of the first 1 MiB is one block, so a write shows in all.
  ASSERT_TRUE(b->fold_region(*buf, 0, 1 << 20, 1 << 16));
  const float one = 3.0f;
  b->write_region(*buf, 4, &one, sizeof one);
  float seen = 0;
  b->read_region(*buf, (1 << 19) + 4, &seen, sizeof seen);
  EXPECT_EQ(seen, 3.0f);
}

// Stores each float of x in the dtype's storage, once one element at a time (kf_store) and once
// VEC at a time (KF_STOREN from a KF_VLOAD), and reads both back as floats (kf_load, KF_LOADN).
constexpr const char* kRoundTrip = R"(
__kernel void round_trip(__global const float* x, __global kf_storage* s1, __global kf_storage* sv,
                         __global float* back1, __global float* backv) {
  const int i = get_global_id(0);
  kf_store(x[i], s1 + i);
  back1[i] = kf_load(s1 + i);
  if (i % VEC == 0) {
    KF_STOREN(VEC, KF_VLOAD(VEC, x + i), sv + i);
    const KF_FLOATN(VEC) v = KF_LOADN(VEC, sv + i);
    KF_VSTORE(VEC, v, backv + i);
  }
}
)";

std::vector<float> awkward_floats() {
  std::vector<float> v;
  // bf16: ties to even, just past, just short; overflow to infinity, infinities; NaNs with low
  // payloads (truncated they would be infinities), tiny, -0; fp16: tie, subnormals, overflow.
  for (const std::uint32_t bits :
       {0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f817fffu, 0x7f7fffffu, 0xff7fffffu,
        0x7f800000u, 0xff800000u, 0x7f800001u, 0xffc00001u, 0x00000001u, 0x80000000u,
        0x3f801000u, 0x387fc000u, 0x33800000u, 0x477ff000u})
    v.push_back(std::bit_cast<float>(bits));
  for (int i = 0; i < 16; ++i)  // ordinary values of both signs over a range of exponents
    v.push_back(std::ldexp(1.0f + 0.0371f * i, i - 8) * (i % 2 ? -1.0f : 1.0f));
  return v;
}

std::uint32_t expected_bits(DType t, float f) {
  switch (t) {
    case DType::fp16: return fp32_to_fp16(f);
    case DType::bf16: return fp32_to_bf16(f);
    default: return std::bit_cast<std::uint32_t>(f);
  }
}

std::uint32_t bits_at(const std::vector<unsigned char>& bytes, std::size_t size, std::size_t i) {
  std::uint32_t v = 0;
  for (std::size_t b = 0; b < size; ++b) v |= std::uint32_t(bytes[i * size + b]) << (8 * b);
  return v;
}

TEST(OpenclPrelude, StoresAndLoadsRoundAsTheHostAtEveryVectorWidth) {
  SKIP_WITHOUT_DEVICE(b);
  const std::vector<float> x = awkward_floats();
  const std::size_t n = x.size();  // 32: a multiple of every width
  for (const DType t : {DType::fp32, DType::fp16, DType::bf16})
    for (const int vec : {1, 2, 4, 8, 16}) {
      const std::string tag = std::string(dtype_name(t)) + " VEC=" + std::to_string(vec);
      SCOPED_TRACE(tag);
      std::string D = "KF_DTYPE_" + std::string(dtype_name(t));
      for (char& c : D) c = static_cast<char>(std::toupper(c));
      auto m = b->compile(kRoundTrip, "round_trip", {{D, "1"}, {"VEC", std::to_string(vec)}});
      const std::size_t size = dtype_size(t);
      auto xb = b->alloc(n * 4), s1 = b->alloc(n * size), sv = b->alloc(n * size);
      auto back1 = b->alloc(n * 4), backv = b->alloc(n * 4);
      b->write(*xb, x.data(), n * 4);
      const Arg args[] = {Arg::buf(*xb), Arg::buf(*s1), Arg::buf(*sv), Arg::buf(*back1),
                          Arg::buf(*backv)};
      b->run(*m, {{static_cast<std::int64_t>(n), 1, 1}, {1, 1, 1}}, args);
      std::vector<unsigned char> got1(n * size), gotv(n * size);
      std::vector<float> f1(n), fv(n);
      b->read(*s1, got1.data(), got1.size());
      b->read(*sv, gotv.data(), gotv.size());
      b->read(*back1, f1.data(), n * 4);
      b->read(*backv, fv.data(), n * 4);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint32_t want = expected_bits(t, x[i]);
        std::vector<double> decoded(1);
        decode(t, &want, decoded);  // little-endian: the low bytes hold a 16-bit pattern
        SCOPED_TRACE("x = " + std::to_string(x[i]) + " (bits " +
                     std::to_string(std::bit_cast<std::uint32_t>(x[i])) + ")");
        for (const auto& [bits, back] : {std::pair{bits_at(got1, size, i), f1[i]},
                                         std::pair{bits_at(gotv, size, i), fv[i]}}) {
          if (std::isnan(decoded[0])) {  // any quiet NaN will do: the payload is not specified
            EXPECT_TRUE(std::isnan(back)) << back;
            continue;
          }
          EXPECT_EQ(bits, want);
          EXPECT_EQ(std::bit_cast<std::uint32_t>(back),
                    std::bit_cast<std::uint32_t>(static_cast<float>(decoded[0])));
        }
      }
    }
}

// Line 3 of the kernel is wrong; the prelude in front of it has dozens of lines.
constexpr const char* kBroken =
    "// a kernel with an error on line 3\n"
    "__kernel void broken(__global float* x) {\n"
    "  x[0] = undeclared_name_kf;\n"
    "}\n";

TEST(OpenclPrelude, CompileErrorNamesTheKernelFileAndItsOwnLine) {
  SKIP_WITHOUT_DEVICE(b);
  try {
    (void)b->compile(kBroken, "broken", {}, "kernels/demo/broken.cl");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("kernels/demo/broken.cl:3:"), std::string::npos) << e.log;
    EXPECT_NE(std::string(e.what()).find("broken.cl:3:"), std::string::npos) << e.what();
  }
}

TEST(OpenclPrelude, EvaluationOfABrokenSourceNamesItsFileAndLine) {
  SKIP_WITHOUT_DEVICE(b);
  const nlohmann::json spec = {{"name", "broken"}, {"problem", "gemm"}, {"lang", "opencl"},
                               {"entry", "broken"}, {"dtypes", {"fp32"}},
                               {"grid", {"1"}},     {"block", {"1"}}};
  EvalRequest req;
  req.problem = "gemm";
  req.kernel = KernelSpec::from_json_with_source(spec, kBroken);
  req.kernel.source_path = "my/broken_gemm.cl";
  req.sizes = {{"M", 3}, {"N", 5}, {"K", 7}};
  req.backend = "opencl";
  const EvalResult r = evaluate(req, *b);
  ASSERT_EQ(r.disposition, Disposition::compile_error) << r.error;
  EXPECT_NE(r.compile_log.find("my/broken_gemm.cl:3:"), std::string::npos) << r.compile_log;
}

}  // namespace
}  // namespace kforge
#endif  // KFORGE_WITH_OPENCL
