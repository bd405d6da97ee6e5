// spdnn (kernels/sparse/spdnn_problem.cpp): the generator's layers have exactly K nonzeros per
// row and column; the reference against the network computed from dense matrices; the
// propagated error bound holding for fp32 evaluations in two summation orders; malformed
// indices and K > N refused (exit 2 at the CLI); and the cpu and opencl kernels passing the
// thorough protocol at odd shapes, one layer, a 1x1 network, inputs with empty rows and (cpu)
// rows dying across the layers, so the live ones are packed into fewer tiles. OpenCL
// cases skip themselves on a machine without an OpenCL device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/problem.hpp"
#include "kernels/family_test.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

enum { kY0, kWIdx, kWVal, kBias };

Instance make(std::int64_t B, std::int64_t N, std::int64_t K, std::int64_t L, std::uint64_t seed, int trial = 0) {
  return find_problem("spdnn")->make_instance({{"B", B}, {"N", N}, {"K", K}, {"L", L}}, DType::fp32,
                                               Distribution::normal, seed, trial);
}

TEST(Spdnn, LayersHaveKNonzerosPerRowAndColumn) {
  const std::int64_t N = 37, K = 5, L = 3;
  const Instance in = make(4, N, K, L, 7);
  for (std::int64_t l = 0; l < L; ++l) {
    std::vector<int> row(N, 0), col(N, 0), cell(N * N, 0);
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t t = 0; t < K; ++t) {
        const auto i = static_cast<std::int64_t>(in.tensors[kWIdx][(l * N + j) * K + t]);
        ++row[i], ++col[j], ++cell[i * N + j];
        EXPECT_GT(in.tensors[kWVal][(l * N + j) * K + t], 0);
      }
    EXPECT_TRUE(std::all_of(row.begin(), row.end(), [&](int c) { return c == K; })) << "layer " << l;
    EXPECT_TRUE(std::all_of(col.begin(), col.end(), [&](int c) { return c == K; })) << "layer " << l;
    EXPECT_EQ(*std::max_element(cell.begin(), cell.end()), 1) << "a repeated connection in layer " << l;
  }
}

// The network from dense matrices: Y W_l + b_l, ReLU, clip, layer by layer.
std::vector<double> dense_network(const Instance& in) {
  const std::int64_t B = in.sizes.at("B"), N = in.sizes.at("N"), K = in.sizes.at("K"), L = in.sizes.at("L");
  std::vector<double> y = in.tensors[kY0];
  for (std::int64_t l = 0; l < L; ++l) {
    std::vector<double> w(N * N, 0.0), next(B * N);
    for (std::int64_t j = 0; j < N; ++j)
      for (std::int64_t t = 0; t < K; ++t)
        w[static_cast<std::int64_t>(in.tensors[kWIdx][(l * N + j) * K + t]) * N + j] += in.tensors[kWVal][(l * N + j) * K + t];
    for (std::int64_t r = 0; r < B; ++r)
      for (std::int64_t j = 0; j < N; ++j) {
        double z = in.tensors[kBias][l * N + j];
        for (std::int64_t i = 0; i < N; ++i) z += y[r * N + i] * w[i * N + j];
        next[r * N + j] = std::min(std::max(z, 0.0), 32.0);
      }
    y = std::move(next);
  }
  return y;
}

TEST(Spdnn, ReferenceMatchesTheDenseNetworkAndCategories) {
  const auto p = find_problem("spdnn");
  int live = 0, dead = 0, interior = 0;
  for (const int trial : {0, 1}) {
    const Instance in = make(40, 29, 6, 4, 11, trial);
    std::vector<std::vector<double>> out, mag;
    p->reference(in, out, mag);
    const auto want = dense_network(in);
    const std::int64_t N = 29;
    for (std::int64_t r = 0; r < 40; ++r) {
      bool any = false;
      for (std::int64_t j = 0; j < N; ++j) {
        const double w = want[r * N + j];
        EXPECT_NEAR(out[0][r * N + j], w, 1e-12 * (1 + w)) << "row " << r << " neuron " << j;
        any = any || w > 0;
        interior += w > 0 && w < 32;
      }
      EXPECT_EQ(out[1][r], any ? 1.0 : 0.0) << "category of row " << r;
      (any ? live : dead) += 1;
      if (r % 5 == 4) EXPECT_EQ(out[1][r], 0.0) << "an empty input row keeps category 0 (negative biases)";
    }
  }
  // The generator must give both outcomes and unclipped values, or the check is weak.
  EXPECT_GT(live, 5);
  EXPECT_GT(dead, 5);
  EXPECT_GT(interior, 20);
}

// fp32 evaluations of the network in two summation orders (forward, and backward with the
// bias last) stay within the reference's propagated bound γ_n · A on every output.
TEST(Spdnn, PropagatedBoundHoldsForFp32InAnyOrder) {
  const auto p = find_problem("spdnn");
  const Instance in = make(30, 64, 16, 3, 5, 1);
  const std::int64_t B = 30, N = 64, K = 16, L = 3;
  std::vector<std::vector<double>> out, mag;
  p->reference(in, out, mag);
  const double nu = (K + 11) * std::ldexp(1.0, -24), g = nu / (1 - nu);
  double worst = 0;
  for (const bool backward : {false, true}) {
    std::vector<float> y(in.tensors[kY0].begin(), in.tensors[kY0].end()), next(B * N);
    for (std::int64_t l = 0; l < L; ++l) {
      for (std::int64_t r = 0; r < B; ++r)
        for (std::int64_t j = 0; j < N; ++j) {
          const auto b = static_cast<float>(in.tensors[kBias][l * N + j]);
          float z = backward ? 0.0f : b;
          for (std::int64_t k = 0; k < K; ++k) {
            const std::int64_t t = backward ? K - 1 - k : k, e = (l * N + j) * K + t;
            z += static_cast<float>(in.tensors[kWVal][e]) * y[r * N + static_cast<std::int64_t>(in.tensors[kWIdx][e])];
          }
          if (backward) z += b;
          next[r * N + j] = std::min(std::max(z, 0.0f), 32.0f);
        }
      std::swap(y, next);
    }
    for (std::int64_t e = 0; e < B * N; ++e) {
      const double err = std::fabs(y[e] - out[0][e]), bound = g * mag[0][e] + std::ldexp(1.0, -24) * out[0][e];
      EXPECT_LE(err, bound) << "element " << e << (backward ? " (backward)" : " (forward)");
      if (bound > 0) worst = std::max(worst, err / bound);
    }
  }
  EXPECT_GT(worst, 0) << "rounding never showed: the instance is too easy";
}

TEST(Spdnn, MalformedIndicesAndSizesAreRefused) {
  const auto p = find_problem("spdnn");
  Instance in = make(3, 8, 2, 2, 3);
  std::vector<std::vector<double>> out, mag;
  in.tensors[kWIdx][21] = 8;  // layer 1, neuron 2: no neuron 8
  try {
    p->reference(in, out, mag);
    ADD_FAILURE() << "an index out of range passed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("W_idx[21]=8 (layer 1, neuron 2)"), std::string::npos) << e.what();
  }
  const auto r = test::kforge_cli("verify spdnn --backend cpu --size N=4,K=5");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("K=5 must be at most N=4"), std::string::npos) << r.err;
}

struct Case {
  std::int64_t B, N, K, L;
  ParamValues params;
};

void expect_passes(Backend& backend, const Case& c) {
  const EvalRequest req = test::library_request("spdnn", backend.name(), {{"B", c.B}, {"N", c.N}, {"K", c.K}, {"L", c.L}},
                                                DType::fp32, c.params);
  const EvalResult r = evaluate(req, backend);
  EXPECT_TRUE(r.passed()) << test::describe(r);
}

TEST(SpdnnCpu, PassesAtOddShapes) {
  auto backend = make_backend("cpu");
  expect_passes(*backend, {37, 61, 7, 5, {{"RB", 16}, {"TILES", 2}}});   // rows not a tile, N not a vector
  expect_passes(*backend, {70, 45, 9, 1, {{"RB", 32}, {"VW", 8}}});      // one layer
  expect_passes(*backend, {1, 1, 1, 1, {}});                             // a 1x1 network
  expect_passes(*backend, {5, 128, 32, 24, {{"RB", 48}, {"TILES", 1}}});  // deep, one partial tile
  // rows die over the layers and the live ones are packed across four tiles
  expect_passes(*backend, {150, 64, 8, 16, {{"RB", 16}, {"TILES", 4}, {"KU", 4}}});
}

TEST(SpdnnOpenCl, PassesAtOddShapes) {
  auto backend = make_backend("opencl");
  if (!backend->can_run()) GTEST_SKIP() << "no OpenCL device: " << backend->device();
  expect_passes(*backend, {37, 61, 7, 5, {{"WX", 16}, {"WY", 4}, {"NMAX", 1024}}});
  expect_passes(*backend, {70, 45, 9, 1, {}});
  expect_passes(*backend, {1, 1, 1, 1, {}});
  expect_passes(*backend, {5, 128, 32, 24, {{"WX", 32}, {"WY", 1}}});
}

}  // namespace
}  // namespace kforge
