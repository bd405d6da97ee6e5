// The KF_ABLATE hooks that bench/kernel_phases times (gemm, moe_grouped_gemm, conv2d_nchw8c on
// the cpu backend): each kernel still compiles with every phase taken out, and taking them out
// reaches the kernel (its output changes). A hook that silently did nothing would let the bench
// report a phase as free. The default build (KF_ABLATE undefined) is what the family tests verify.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"

namespace kforge {
namespace {

// The kernel's output (its last tensor) after one launch with KF_ABLATE = mask (-1: undefined).
std::vector<float> run_with(const std::string& problem_name, const Sizes& given, int mask) {
  auto backend = make_backend("cpu", {.threads = 2});
  const auto problem = find_problem(problem_name);
  const Sizes sizes = problem->resolve_sizes(given);
  const KernelSpec spec = library_kernel(*problem, Lang::cpp, sizes);
  const ParamValues params = spec.resolve({});
  Defines d = defines_for(params, DType::fp32);
  if (mask >= 0) d.emplace_back("KF_ABLATE", std::to_string(mask));
  auto module = backend->compile(spec.source, spec.entry, d, spec.source_path);
  const Instance inst = problem->make_instance(sizes, DType::fp32, Distribution::normal, 7, 1);
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Arg> args;
  for (std::size_t t = 0; t < inst.tensors.size(); ++t) {
    std::vector<float> f(inst.tensors[t].begin(), inst.tensors[t].end());
    f.resize(static_cast<std::size_t>(problem->tensor_elements(t, sizes)), 0.0f);
    bufs.push_back(backend->alloc(f.size() * sizeof(float)));
    backend->write(*bufs.back(), f.data(), f.size() * sizeof(float));
    args.push_back(Arg::buf(*bufs.back()));
  }
  for (const auto& n : problem->size_names()) args.push_back(Arg::i(static_cast<std::int32_t>(sizes.at(n))));
  for (const auto& n : problem->scalar_names()) args.push_back(Arg::f(static_cast<float>(inst.scalars.at(n))));
  // Twice: the pack-once hooks pack on a thread's first block and skip from then on.
  for (int i = 0; i < 2; ++i) backend->run(*module, spec.geometry(params, sizes), args);
  std::vector<float> out(static_cast<std::size_t>(problem->tensor_elements(inst.tensors.size() - 1, sizes)));
  backend->read(*bufs.back(), out.data(), out.size() * sizeof(float));
  return out;
}

// Two compiles per kernel (the kernel as it is, and with the hooks on): KF_ABLATE undefined and
// 0 are the same text by the kernels' `#ifndef KF_ABLATE / #define KF_ABLATE 0`.
void expect_hooks_reach(const std::string& problem, const Sizes& sizes, int all_bits) {
  const std::vector<float> full = run_with(problem, sizes, -1), ablated = run_with(problem, sizes, all_bits);
  ASSERT_EQ(full.size(), ablated.size());
  EXPECT_NE(0, std::memcmp(full.data(), ablated.data(), full.size() * sizeof(float)))
      << problem << ": KF_ABLATE=" << all_bits << " left the output as it was: a hook does not reach the kernel";
}

// Shapes that are multiples of no tile; K over two slices, so that the pack-once hooks skip.
TEST(AblationHooks, GemmCompilesAndReaches) {
  expect_hooks_reach("gemm", {{"M", 67}, {"N", 83}, {"K", 301}}, 1 | 2 | 4 | 8 | 16 | 32);
}

TEST(AblationHooks, MoeCompilesAndReaches) {
  expect_hooks_reach("moe_grouped_gemm", {{"T", 61}, {"H", 300}, {"F", 72}, {"E", 5}, {"K", 2}}, 31);
}

// The strided 1x1 (conv3_1's case): the staged path the hooks force, and the others.
TEST(AblationHooks, Conv2dNchw8cCompilesAndReaches) {
  expect_hooks_reach("conv2d_nchw8c", {{"N", 1}, {"C", 24}, {"H", 13}, {"W", 11}, {"K", 24}, {"R", 1}, {"S", 1},
                                      {"stride", 2}, {"pad", 0}, {"dil", 1}},
                     1 | 2 | 8 | 16);
}

}  // namespace
}  // namespace kforge
