// The cuda backend: NVRTC compiles every library CUDA kernel for sm_90 on any machine; without
// a driver or device it says why and refuses to launch; with a GPU the gemm passes
// verification at sizes off every tile (those tests skip themselves without a device).
#ifdef KFORGE_WITH_CUDA
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backend/cuda/nvrtc_compiler.hpp"
#include "backend/cuda/ptxas_report.hpp"
#include "test_util.hpp"  // the tests' own cache folder
#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {


std::vector<KernelSpec> cuda_library_kernels() {
  std::vector<KernelSpec> out;
  for (const auto& p : problems())
    for (auto& k : library_kernels(*p))
      if (k.lang == Lang::cuda) out.push_back(std::move(k));
  return out;
}

bool driver_present() {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

// Every library CUDA kernel, every dtype, through the backend (NVRTC, then ptxas for sm_90 on
// a machine without a GPU, for the device's architecture on one): one compile each, since
// NVRTC is the slowest part of the test suite.
TEST(CudaBackend, EveryLibraryKernelCompilesThroughTheBackend) {
  const auto kernels = cuda_library_kernels();
  ASSERT_FALSE(kernels.empty()) << "no library kernel in CUDA";
  auto b = make_backend("cuda");
  for (const auto& k : kernels)
    for (DType t : k.dtypes) {
      SCOPED_TRACE(k.name + " " + std::string(dtype_name(t)));
      try {
        auto m = b->compile(k.source, k.entry, defines_for(k.defaults, t));
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->resources.reported_by.rfind("ptxas", 0), 0u) << "no CUBIN: " << m->resources.reported_by;
        EXPECT_GE(m->resources.registers, 1);
      } catch (const CompileError& e) {
        ADD_FAILURE() << e.what() << "\n" << e.log;
      }
    }
}

TEST(CudaBackend, CeilingsMicroBenchmarksCompileForSm90) {
  const std::string& src = embedded_file("src/measure/ceilings/ceilings.cu");
  for (const char* entry : {"peak_fp32", "peak_fp64", "triad"}) {
    SCOPED_TRACE(entry);
    EXPECT_NO_THROW((void)cuda::compile_cubin(src, entry, {}, "sm_90"));
  }
}

TEST(CudaBackend, SecondCompileComesFromTheCache) {
  auto b = make_backend("cuda");
  const std::string src = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = NONCE; }\n";
  const std::string nonce =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007) +
      ".0f";
  auto first = b->compile(src, "k", {{"NONCE", nonce}});
  EXPECT_GT(first->compile_s, 0.0);
  auto second = b->compile(src, "k", {{"NONCE", nonce}});
  EXPECT_EQ(second->compile_s, 0.0);
}

// ptxas's report reaches the module without a GPU: registers, spills, shared memory and
// barriers of the entry; a kernel squeezed into 32 registers that needs more spills, one that
// is not does not; the report's lines never show up as compiler warnings, and a cached module
// reports the same figures as a fresh compile.
TEST(CudaBackend, PtxasReportsRegistersSpillsAndSharedMemory) {
  auto b = make_backend("cuda");
  const std::string nonce =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
  // 37 floats of shared memory per thread of a 128-thread block: 18944 bytes, not a round tile.
  const std::string roomy =
      "extern \"C\" __global__ void __launch_bounds__(128) roomy(float* x, int n) {\n"
      "  __shared__ float tile[128 * 37];\n"
      "  for (int i = threadIdx.x; i < 128 * 37; i += 128) tile[i] = x[i] * NONCE;\n"
      "  __syncthreads();\n"
      "  x[threadIdx.x] = tile[(threadIdx.x * 37 + n) % (128 * 37)];\n"
      "}\n";
  auto m = b->compile(roomy, "roomy", {{"NONCE", nonce}});
  const CompilerResources& r = m->resources;
  EXPECT_EQ(r.reported_by, "ptxas sm_90");
  EXPECT_GT(r.registers, 0);
  EXPECT_EQ(r.shared_bytes, 128 * 37 * 4);
  EXPECT_EQ(r.barriers, 1);
  EXPECT_EQ(r.spill_store_bytes, 0);
  EXPECT_EQ(m->log.find("ptxas"), std::string::npos) << m->log;
  const auto cached = b->compile(roomy, "roomy", {{"NONCE", nonce}});
  EXPECT_EQ(cached->compile_s, 0.0);
  EXPECT_EQ(cached->resources.registers, r.registers);
  EXPECT_EQ(cached->resources.shared_bytes, r.shared_bytes);

  // 64 live accumulators in a block of 1024 threads with 2 blocks per SM: ptxas may use at most
  // 32 registers a thread, so it spills.
  const std::string squeezed =
      "extern \"C\" __global__ void __launch_bounds__(1024, 2) squeezed(const float* x, float* y, int n) {\n"
      "  float acc[64];\n"
      "  for (int j = 0; j < 64; ++j) acc[j] = x[j] * NONCE;\n"
      "  for (int i = 0; i < n; ++i)\n"
      "#pragma unroll\n"
      "    for (int j = 0; j < 64; ++j) acc[j] = acc[j] * x[i * 64 + j] + acc[(j + 7) % 64];\n"
      "#pragma unroll\n"
      "  for (int j = 0; j < 64; ++j) y[threadIdx.x * 64 + j] = acc[j];\n"
      "}\n";
  const auto s = b->compile(squeezed, "squeezed", {{"NONCE", nonce}})->resources;
  EXPECT_LE(s.registers, 32);
  EXPECT_GT(s.spill_store_bytes, 0);
  EXPECT_GT(s.spill_load_bytes, 0);
}

TEST(CudaBackend, PtxasReportParsesTheEntryAmongOtherFunctions) {
  const std::string log =
      "kernel.cu(3): warning #177-D: variable \"unused\" was declared but never referenced\n"
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Function properties for helper\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Function properties for other\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 12 registers, 380 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function 'main_k' for 'sm_90'\n"
      "ptxas info    : Function properties for main_k\n"
      "ptxas         .     40 bytes stack frame, 36 bytes spill stores, 28 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 2 barriers, 4100 bytes smem, 380 bytes cmem[0]\n";
  const auto rep = cuda::parse_ptxas_report(log, "main_k", "sm_90");
  EXPECT_EQ(rep.entry.reported_by, "ptxas sm_90");
  EXPECT_EQ(rep.entry.registers, 255);
  EXPECT_EQ(rep.entry.barriers, 2);
  EXPECT_EQ(rep.entry.shared_bytes, 4100);
  EXPECT_EQ(rep.entry.stack_bytes, 40);
  EXPECT_EQ(rep.entry.spill_store_bytes, 36);
  EXPECT_EQ(rep.entry.spill_load_bytes, 28);
  EXPECT_EQ(rep.rest, "kernel.cu(3): warning #177-D: variable \"unused\" was declared but never referenced");
  EXPECT_FALSE(cuda::parse_ptxas_report(log, "absent", "sm_90").entry.known());
}

// A source of several kernels: each entry is compiled and reported alone (its own shared
// memory, not a neighbour's), and an entry with C++ linkage, whose mangled name ptxas cannot be
// told before compiling, still compiles and reports.
TEST(CudaBackend, EachEntryOfASourceOfSeveralReportsItsOwnResources) {
  auto b = make_backend("cuda");
  const std::string nonce =
      std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
  const std::string src =
      "extern \"C\" __global__ void small(float* x) {\n"
      "  __shared__ float t[33]; t[threadIdx.x % 33] = x[threadIdx.x] * NONCE; __syncthreads();\n"
      "  x[threadIdx.x] = t[(threadIdx.x + 1) % 33];\n}\n"
      "extern \"C\" __global__ void large(float* x) {\n"
      "  __shared__ float t[1031]; t[threadIdx.x % 1031] = x[threadIdx.x]; __syncthreads();\n"
      "  x[threadIdx.x] = t[(threadIdx.x + 5) % 1031];\n}\n"
      "template <int S> __global__ void templated(float* x) {\n"
      "  __shared__ float t[S]; t[threadIdx.x % S] = x[threadIdx.x]; __syncthreads();\n"
      "  x[threadIdx.x] = t[(threadIdx.x + 3) % S];\n}\n"
      "template __global__ void templated<77>(float*);\n";
  EXPECT_EQ(b->compile(src, "small", {{"NONCE", nonce}})->resources.shared_bytes, 33 * 4);
  EXPECT_EQ(b->compile(src, "large", {{"NONCE", nonce}})->resources.shared_bytes, 1031 * 4);
  const auto t = b->compile(src, "templated<77>", {{"NONCE", nonce}})->resources;
  EXPECT_EQ(t.reported_by, "ptxas sm_90");
  EXPECT_EQ(t.shared_bytes, 77 * 4);
}

TEST(CudaBackend, SyntaxErrorGivesCompileErrorWithTheLog) {
  auto b = make_backend("cuda");
  const std::string src =
      "extern \"C\" __global__ void k(float* x) {\n  int i = threadIdx.x\n  x[i] = 1;\n}\n";
  try {
    (void)b->compile(src, "k", {});
    FAIL() << "a syntax error compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA compilation failed"), std::string::npos) << e.what();
    EXPECT_NE(e.log.find("error"), std::string::npos) << e.log;
    EXPECT_NE(e.log.find("expected a \";\""), std::string::npos) << e.log;
  }
}

// The prelude (src/backend/cuda/prelude.cuh) stands in front of every source, yet NVRTC's
// messages name the kernel's file and its own line, and its helpers need no include.
TEST(CudaBackend, CompileErrorNamesTheKernelFileAndItsOwnLine) {
  auto b = make_backend("cuda");
  const std::string src =
      "// line 1\nextern \"C\" __global__ void k(kf_storage* x) {\n  x[0] = undeclared_kf;\n}\n";
  try {
    (void)b->compile(src, "k", {{"KF_DTYPE_BF16", "1"}}, "kernels/demo/broken.cu");
    FAIL() << "an undeclared name compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("kernels/demo/broken.cu(3)"), std::string::npos) << e.log;
    EXPECT_EQ(e.log.find("kf_storage"), std::string::npos) << e.log;  // the prelude's type is known
  }
}

TEST(CudaBackend, MissingEntryGivesCompileError) {
  auto b = make_backend("cuda");
  try {
    (void)b->compile("extern \"C\" __global__ void other(float* x) { x[0] = 1; }\n", "gemm", {});
    FAIL() << "a source without the entry compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel 'gemm'"), std::string::npos) << e.what();
  }
}

TEST(CudaBackend, WithoutADriverItSaysWhyAndRefusesToRun) {
  if (driver_present()) GTEST_SKIP() << "this machine has a CUDA driver";
  auto b = make_backend("cuda");
  EXPECT_EQ(b->name(), "cuda");
  EXPECT_EQ(b->lang(), Lang::cuda);
  EXPECT_FALSE(b->can_run());
  EXPECT_EQ(b->device(), "no CUDA driver (libcuda.so.1) on this machine");
  EXPECT_THROW((void)b->alloc(64), NotSupported);
  auto m = b->compile("extern \"C\" __global__ void k(float* x) { x[0] = 1; }\n", "k", {});
  EXPECT_THROW((void)b->run(*m, LaunchGeometry{}, {}), NotSupported);
}

TEST(CudaBackend, EvaluateGemmIsNotSupportedWithoutADevice) {
  auto b = make_backend("cuda");
  if (b->can_run()) GTEST_SKIP() << "this machine runs CUDA: " << b->device();
  const auto p = find_problem("gemm");
  EvalRequest req;
  req.problem = "gemm";
  req.kernel = library_kernel(*p, Lang::cuda);
  req.sizes = p->resolve_sizes({{"M", 33}, {"N", 17}, {"K", 9}});
  req.backend = "cuda";
  const EvalResult r = evaluate(req, *b);
  EXPECT_EQ(r.disposition, Disposition::not_supported) << r.error;
  EXPECT_NE(r.error.find("cannot launch"), std::string::npos) << r.error;
  EXPECT_EQ(r.device, b->device());
}

// --- on a GPU -------------------------------------------------------------------------------

TEST(CudaBackendOnDevice, BuffersRoundTrip) {
  auto b = make_backend("cuda");
  if (!b->can_run()) GTEST_SKIP() << b->device();
  std::vector<float> in(1000), out(1000, -1.0f);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  auto buf = b->alloc(in.size() * 4);
  b->write(*buf, in.data(), in.size() * 4);
  b->read(*buf, out.data(), out.size() * 4);
  EXPECT_EQ(in, out);
}

TEST(CudaBackendOnDevice, RunsAKernelAndTimesIt) {
  auto b = make_backend("cuda");
  if (!b->can_run()) GTEST_SKIP() << b->device();
  auto m = b->compile(
      "extern \"C\" __global__ void axpy(float* y, const float* x, int n, float a) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }\n",
      "axpy", {});
  const int n = 1000;
  std::vector<float> x(n, 2.0f), y(n, 1.0f);
  auto bx = b->alloc(n * 4), by = b->alloc(n * 4);
  b->write(*bx, x.data(), n * 4);
  b->write(*by, y.data(), n * 4);
  const Arg args[] = {Arg::buf(*by), Arg::buf(*bx), Arg::i(n), Arg::f(3.0f)};
  const double s = b->run(*m, LaunchGeometry{{4, 1, 1}, {256, 1, 1}}, args);
  EXPECT_GT(s, 0.0);
  EXPECT_LT(s, 1.0);
  b->read(*by, y.data(), n * 4);
  for (float v : y) ASSERT_EQ(v, 7.0f);
}

TEST(CudaBackendOnDevice, BadGeometryIsALaunchError) {
  auto b = make_backend("cuda");
  if (!b->can_run()) GTEST_SKIP() << b->device();
  auto m =
      b->compile("extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1; }\n", "k", {});
  auto buf = b->alloc(4096 * 4);
  const Arg args[] = {Arg::buf(*buf)};
  EXPECT_THROW((void)b->run(*m, LaunchGeometry{{1, 1, 1}, {4096, 1, 1}}, args), LaunchError);
  EXPECT_THROW((void)b->run(*m, LaunchGeometry{{0, 1, 1}, {32, 1, 1}}, args), LaunchError);
  // The context is still usable after a refused launch (no fault happened).
  EXPECT_GE(b->run(*m, LaunchGeometry{{1, 1, 1}, {32, 1, 1}}, args), 0.0);
}

// A fault kills the CUDA context of its process, so it runs in a fresh one (threadsafe death
// tests re-execute the test binary).
TEST(CudaBackendOnDeviceDeathTest, IllegalAddressIsALaunchError) {
  if (!make_backend("cuda")->can_run()) GTEST_SKIP() << "no CUDA device";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        auto b = make_backend("cuda");
        auto m = b->compile(
            "extern \"C\" __global__ void k(int n) { ((volatile float*)(8ull + n))[0] = 1; }\n",
            "k", {});
        const Arg args[] = {Arg::i(0)};
        try {
          (void)b->run(*m, LaunchGeometry{{1, 1, 1}, {32, 1, 1}}, args);
        } catch (const LaunchError& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::exit(3);
        }
        std::exit(0);
      },
      testing::ExitedWithCode(3), "ILLEGAL_ADDRESS|LAUNCH_FAILED|ILLEGAL_INSTRUCTION");
}

TEST(CudaBackendOnDevice, GemmPassesAtOddSizes) {
  auto b = make_backend("cuda");
  if (!b->can_run()) GTEST_SKIP() << b->device();
  const auto p = find_problem("gemm");
  const KernelSpec k = library_kernel(*p, Lang::cuda);
  const std::vector<Sizes> sizes{{{"M", 1}, {"N", 1}, {"K", 1}},
                                 {{"M", 127}, {"N", 129}, {"K", 61}},
                                 {{"M", 333}, {"N", 257}, {"K", 1001}},
                                 {{"M", 7}, {"N", 300}, {"K", 2}}};
  const std::vector<ParamValues> configs{
      {},  // the defaults
      {{"BM", 64}, {"BN", 64}, {"BK", 16}, {"TM", 4}, {"TN", 4}, {"VEC", 1}, {"MINB", 1}},
      {{"BM", 32}, {"BN", 256}, {"BK", 8}, {"TM", 8}, {"TN", 8}, {"VEC", 2}, {"MINB", 1}}};
  for (DType t : k.dtypes)
    for (const auto& s : sizes)
      for (const auto& params : configs) {
        EvalRequest req;
        req.problem = "gemm";
        req.kernel = k;
        req.sizes = p->resolve_sizes(s);
        req.dtype = t;
        req.params = params;
        req.backend = "cuda";
        const EvalResult r = evaluate(req, *b);
        EXPECT_EQ(r.disposition, Disposition::passed)
            << dtype_name(t) << " M=" << s.at("M") << " N=" << s.at("N") << " K=" << s.at("K")
            << " params " << nlohmann::json(r.params).dump() << ": " << r.error;
      }
}

}  // namespace
}  // namespace kforge
#endif  // KFORGE_WITH_CUDA
