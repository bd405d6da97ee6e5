// spdnn: a GraphChallenge-style sparse deep network (the MIT/IEEE/Amazon Sparse DNN Challenge),
// inference through L layers with ReLU and the clip at 32 fused:
//
//   Y_0 = the input features (B inputs x N neurons, mostly zeros: binary, or small values)
//   Y_{l+1} = min(max(Y_l W_l + b_l, 0), 32)          l = 0 .. L-1
//   categories[r] = 1 if row r of Y_L has any nonzero, else 0
//
// W_l (N x N) has exactly K nonzeros in every row and every column. It travels "pulled": for
// each output neuron j its K input neurons and weights, W_idx[l][j][t] and W_val[l][j][t]
// (an ELL layout of W_l^T: with a fixed K per column no row pointer is needed), so output j is
// b_l[j] + Σ_t W_val[l][j][t] · Y_l[r][W_idx[l][j][t]], written by one owner and no atomics.
// W_idx is an int32 tensor (TensorSpec::storage). A repeated index within a
// neuron's list is two connections (their weights add): the generator never makes one, the
// reference and the kernels sum them.
//
// The generator (condition_inputs; seeded), modelled on the challenge's
// RadiX-Net layers: layer l is a permuted circulant. K distinct offsets D_l drawn from [0, N)
// and a permutation π_l of the neurons; input neuron i feeds outputs π_l((i + d) mod N), d in
// D_l. Every row and every column has exactly K nonzeros (a circulant has, and permuting
// columns keeps it); the random offsets and permutations mix neurons across layers as
// RadiX-Net's mixed-radix strides do (RadiX-Net's own construction is deterministic and
// needs N a product of its radices; this one works at every N, K <= N). Weights are
// (2 / K)(3/4 + u/2), u uniform in [0, 1): mean 2/K, the challenge's 1/16 at K = 32, and not
// exact multiples of a power of two, so sums round; a neuron's K weights sum to at least 1.5. Biases are the challenge's per layer size
// (-0.30 up to 1024 neurons, -0.35 to 4096, -0.40 to 16384, -0.45 beyond) times 0.9..1.1 per
// neuron. Y_0: every fifth row empty (its category must be 0), the others with a density
// drawn per row in 0.03..0.5 (so some rows die in the first layers and some saturate), values 1
// (binary, as the challenge's MNIST inputs) on even trials and multiples of 1/4 in 0.25..2 on
// odd ones; row 0 all ones, which no layer can kill (each neuron gets >= 1.5 - 0.33 > 1), so no
// instance's output is all zero, not even a 1x1 network's.
//
// The error bound (compare's γ_n · magnitude per element, n = K + 11 at every element): one
// layer's sum of K products and the bias, in any order and with or without FMA, is within
// γ_n (Σ_t |ŷ_t w_t| + |b|) of the exact sum of the computed inputs (Higham §3.1; the 10 extra
// terms absorb the second-order difference between |ŷ| and |y|). An input error e_t reaches
// the sum as Σ |w_t| e_t. ReLU and the clip are 1-Lipschitz, so they never amplify an error;
// and where the exact pre-activation z is below 0 or above 32 by more than twice its bound,
// the computed one is on the same side and the output is exactly 0 or exactly 32: the error
// stops there. So the reference carries, next to each activation, A (the "magnitude"):
//
//   A_{l+1}[j] = pass · (Σ_t |w_t| A_l[i_t] + Σ_t |y_l[i_t] w_t| + |b_j|),   A_0 = 0,
//   pass = 0 if z < -2 γ_n A_z or z > 32 + 2 γ_n A_z (A_z the parenthesis), else 1,
//
// and the bound on Y_L is γ_n · A_L (plus compare's rounding terms). A dead or saturated
// neuron contributes no error downstream; a live path carries the sum of its layers' own
// reduction magnitudes. A worst-case bound over L layers would instead grow like (Σ|w|)^L = 2^L.
// Categories: row r's category is decided when some output exceeds twice its bound (computed
// > 0 too) or every output is exactly 0 with A = 0 (computed exactly 0 too); then it is
// compared exactly. A row whose every nonzero output lies within its bound (rare: a sum that
// lands within a few ulps of 0) accepts 0 or 1 (its category's magnitude makes the bound >= 2).
#include <Eigen/Sparse>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <random>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

enum { kY0, kWIdx, kWVal, kBias, kY, kCat };
constexpr double kClip = 32;

// The challenge's bias for a layer of N neurons.
double challenge_bias(std::int64_t N) {
  return N <= 1024 ? -0.30 : N <= 4096 ? -0.35 : N <= 16384 ? -0.40 : -0.45;
}

class Spdnn final : public Problem {
 public:
  std::string name() const override { return "spdnn"; }
  std::string description() const override {
    return "sparse DNN inference (GraphChallenge): Y0 (B,N) inputs; per layer l < L, Y = min(max(Y W_l + b_l, 0), 32) "
           "with W_l (N,N) K nonzeros per row and column, pulled: W_idx, W_val (L,N,K) = each output neuron's inputs "
           "(W_idx int32), bias (L,N); outputs Y (B,N) and cat (B) = 1 where the row has a nonzero";
  }
  std::vector<std::string> size_names() const override { return {"B", "N", "K", "L"}; }
  // The challenge's smallest layer size (1024 neurons, 32 connections), few enough layers and
  // inputs that `kforge suite` verifies it in seconds.
  Sizes default_sizes() const override { return {{"B", 256}, {"N", 1024}, {"K", 32}, {"L", 8}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"Y0", Role::in}, {"W_idx", Role::in, DType::int32}, {"W_val", Role::in}, {"bias", Role::in},
            {"Y", Role::out}, {"cat", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  Scalars scalars_for_trial(int) const override { return {}; }
  void check_sizes(const Sizes& s) const override {
    for (const auto& n : size_names())
      if (s.at(n) < 1 || s.at(n) >= (1LL << 31))
        throw UsageError("size " + n + "=" + std::to_string(s.at(n)) + " must be in [1, 2^31) (indices and offsets are int32)");
    if (s.at("K") > s.at("N"))
      throw UsageError("size K=" + std::to_string(s.at("K")) + " must be at most N=" + std::to_string(s.at("N")) +
                       " (K nonzeros per row of an N x N layer)");
    for (const auto& [what, n] : {std::pair{"B*N", s.at("B") * s.at("N")}, {"L*N*K", s.at("L") * s.at("N") * s.at("K")}})
      if (n > (1LL << 31) - 1)
        throw UsageError(std::string("sizes ") + what + "=" + std::to_string(n) + " must fit in a 32-bit int (the kernel ABI)");
  }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t B = s.at("B"), N = s.at("N"), K = s.at("K"), L = s.at("L");
    switch (t) {
      case kY0:
      case kY: return B * N;
      case kWIdx:
      case kWVal: return L * N * K;
      case kBias: return L * N;
      default: return B;
    }
  }

  void condition_inputs(Instance& in, std::uint64_t seed, int trial) const override {
    const std::int64_t B = in.sizes.at("B"), N = in.sizes.at("N"), K = in.sizes.at("K"), L = in.sizes.at("L");
    std::mt19937_64 rng(mix64(seed ^ (0x5bd22ull + static_cast<std::uint64_t>(trial))));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<std::int64_t> perm(N), inv(N), all(N);
    std::vector<std::pair<double, double>> conn(K);  // (input neuron, weight), sorted by neuron
    for (std::int64_t l = 0; l < L; ++l) {
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      for (std::int64_t c = 0; c < N; ++c) inv[perm[c]] = c;
      std::iota(all.begin(), all.end(), 0);
      for (std::int64_t t = 0; t < K; ++t)  // the first K of a partial shuffle: K distinct offsets
        std::swap(all[t], all[t + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(N - t))]);
      for (std::int64_t j = 0; j < N; ++j) {
        for (std::int64_t t = 0; t < K; ++t)
          conn[t] = {static_cast<double>(((inv[j] - all[t]) % N + N) % N),
                     static_cast<double>(static_cast<float>(2.0 / K * (0.75 + 0.5 * unit(rng))))};
        std::sort(conn.begin(), conn.end());  // ascending inputs: the kernels' gathers walk forward
        for (std::int64_t t = 0; t < K; ++t) {
          in.tensors[kWIdx][(l * N + j) * K + t] = conn[t].first;
          in.tensors[kWVal][(l * N + j) * K + t] = conn[t].second;
        }
        in.tensors[kBias][l * N + j] = static_cast<float>(challenge_bias(N) * (0.9 + 0.2 * unit(rng)));
      }
    }
    for (std::int64_t r = 0; r < B; ++r) {
      const double density = r == 0 ? 1.0 : r % 5 == 4 ? 0.0 : 0.03 + 0.47 * unit(rng);
      for (std::int64_t i = 0; i < N; ++i) {
        double v = 0;
        if (unit(rng) < density) v = trial % 2 == 0 || r == 0 ? 1.0 : 0.25 * static_cast<double>(1 + rng() % 8);
        in.tensors[kY0][r * N + i] = v;
      }
    }
  }

  // A connection moves to the next input neuron (still in range); other inputs as the default.
  void perturb(Instance& in, std::size_t t, std::size_t i) const override {
    const std::int64_t N = in.sizes.at("N");
    if (t != kWIdx) return Problem::perturb(in, t, i);
    if (N == 1) return Problem::perturb(in, kWVal, i);
    auto& idx = in.tensors[kWIdx][i];
    idx = static_cast<double>((static_cast<std::int64_t>(idx) + 1) % N);
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    check_indices(in);
    const std::int64_t B = in.sizes.at("B"), N = in.sizes.at("N"), K = in.sizes.at("K"), L = in.sizes.at("L");
    const double g = gamma(K);
    const auto &idx = in.tensors[kWIdx], &val = in.tensors[kWVal], &bias = in.tensors[kBias];
    std::vector<double> y(B * N), a(B * N, 0.0), cat(B), cat_mag(B);
    parallel_for(B, [&](std::int64_t r0, std::int64_t r1) {
      std::vector<double> yl(N), al(N, 0.0), yn(N), an(N);
      for (std::int64_t r = r0; r < r1; ++r) {
        std::copy_n(&in.tensors[kY0][r * N], N, yl.begin());
        std::fill(al.begin(), al.end(), 0.0);
        for (std::int64_t l = 0; l < L; ++l) {
          for (std::int64_t j = 0; j < N; ++j) {
            const std::int64_t base = (l * N + j) * K;
            double z = bias[l * N + j], az = std::fabs(bias[l * N + j]);
            for (std::int64_t t = 0; t < K; ++t) {
              const auto i = static_cast<std::int64_t>(idx[base + t]);
              const double w = val[base + t];
              z += yl[i] * w;
              az += std::fabs(yl[i] * w) + std::fabs(w) * al[i];
            }
            const bool settled = z < -2 * g * az || z > kClip + 2 * g * az;  // computed on the same side
            yn[j] = std::min(std::max(z, 0.0), kClip);
            an[j] = settled ? 0.0 : az;
          }
          std::swap(yl, yn);
          std::swap(al, an);
        }
        bool decided_one = false, all_exact_zero = true;
        for (std::int64_t j = 0; j < N; ++j) {
          decided_one = decided_one || yl[j] > 2 * g * al[j];
          all_exact_zero = all_exact_zero && yl[j] == 0 && al[j] == 0;
        }
        std::copy_n(yl.begin(), N, &y[r * N]);
        std::copy_n(al.begin(), N, &a[r * N]);
        cat[r] = std::any_of(yl.begin(), yl.end(), [](double v) { return v > 0; }) ? 1 : 0;
        cat_mag[r] = decided_one || all_exact_zero ? 0.0 : 2 / g;  // undecided: bound >= 2, 0 and 1 pass
      }
    });
    out = tensor_list(std::move(y), std::move(cat));
    mag = tensor_list(std::move(a), std::move(cat_mag));
  }
  // Every element's bound uses one layer's reduction (K products and the bias, + 10): the
  // layers' contributions are in the propagated magnitude, not in n.
  std::vector<std::vector<double>> reduction_lengths(const Instance& in) const override {
    const std::int64_t B = in.sizes.at("B"), N = in.sizes.at("N");
    const double n = static_cast<double>(in.sizes.at("K")) + 11;
    return tensor_list(std::vector<double>(B * N, n), std::vector<double>(B, n));
  }
  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("K") + 11); }
  // Structured inputs: Y0 a matrix of rows of N (zero rows: inputs whose category is 0,
  // identical rows, one-hot rows, equal values; alternating signs: negative input features, which
  // the generator never draws (its inputs are 0, 1 or multiples of 1/4), so a kernel that takes
  // "active" to mean y > 0 fails; near overflow: layer 0 sums K weights of at most 2.5/K times Y0,
  // then ReLU and the clip at 32 hold every later layer). The layers (W_idx, W_val, bias) stay the
  // generator's: their weights and biases are the challenge's, the indices a circulant's.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("N"), -1, -1, -1, -1, -1}; }
  // A multiply and an add per connection, input and layer (every row counted, live or not).
  double flops(const Sizes& s) const override {
    return 2.0 * s.at("B") * s.at("N") * s.at("K") * s.at("L");
  }
  // Y0, the layers' indices, weights and biases, read once; Y and cat written once.
  double bytes(const Sizes& s, DType t) const override {
    const double B = s.at("B"), N = s.at("N"), K = s.at("K"), L = s.at("L");
    return (2 * B * N + B + L * N * (2 * K + 1)) * dtype_size(t);
  }
  double fuzz_work(const Sizes& s) const override {
    return static_cast<double>(s.at("B")) * s.at("N") * s.at("K") * s.at("L");
  }

  // What a C++ user writes with Eigen (one thread): each layer a column-major SparseMatrix
  // built once, Y dense; per layer Y = (Y W_l + b_l) clamped to [0, 32], then the categories.
  std::function<void()> baseline(const Instance& in, int threads) const override {
    (void)threads;  // Eigen's dense x sparse product runs on one thread
    const std::int64_t B = in.sizes.at("B"), N = in.sizes.at("N"), K = in.sizes.at("K"), L = in.sizes.at("L");
    using Sp = Eigen::SparseMatrix<float, Eigen::ColMajor, int>;
    using Dense = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    auto layers = std::make_shared<std::vector<Sp>>();
    auto biases = std::make_shared<std::vector<Eigen::RowVectorXf>>();
    for (std::int64_t l = 0; l < L; ++l) {
      std::vector<Eigen::Triplet<float, int>> trip;
      Eigen::RowVectorXf b(N);
      for (std::int64_t j = 0; j < N; ++j) {
        b[j] = static_cast<float>(in.tensors[kBias][l * N + j]);
        for (std::int64_t t = 0; t < K; ++t)
          trip.emplace_back(static_cast<int>(in.tensors[kWIdx][(l * N + j) * K + t]), static_cast<int>(j),
                            static_cast<float>(in.tensors[kWVal][(l * N + j) * K + t]));
      }
      Sp w(N, N);
      w.setFromTriplets(trip.begin(), trip.end());
      layers->push_back(std::move(w));
      biases->push_back(std::move(b));
    }
    auto y0 = std::make_shared<Dense>(B, N);
    for (std::int64_t e = 0; e < B * N; ++e) y0->data()[e] = static_cast<float>(in.tensors[kY0][e]);
    auto y = std::make_shared<Dense>(B, N), z = std::make_shared<Dense>(B, N);
    auto cat = std::make_shared<Eigen::VectorXf>(B);
    return [layers, biases, y0, y, z, cat] {
      *y = *y0;
      for (std::size_t l = 0; l < layers->size(); ++l) {
        z->noalias() = *y * (*layers)[l];
        z->rowwise() += (*biases)[l];
        *y = z->cwiseMax(0.0f).cwiseMin(32.0f);
      }
      *cat = (y->array() > 0.0f).rowwise().any().cast<float>();
    };
  }
  std::string baseline_name() const override { return "eigen_dense_x_sparse"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/sparse/spdnn_cpu.json", "kernels/sparse/spdnn_opencl.json", "kernels/sparse/spdnn_cuda.json"};
  }

  // compare's γ_n for one layer's reduction (n = K + 11) in fp32.
  static double gamma(std::int64_t K) {
    const double nu = static_cast<double>(K + 11) * std::ldexp(1.0, -24);
    return nu / (1 - nu);
  }

 private:
  // Every index an integer in [0, N): the message names the entry, its layer and neuron.
  void check_indices(const Instance& in) const {
    const std::int64_t N = in.sizes.at("N"), K = in.sizes.at("K");
    const auto& idx = in.tensors[kWIdx];
    for (std::size_t p = 0; p < idx.size(); ++p)
      if (!(idx[p] >= 0 && idx[p] < static_cast<double>(N) && idx[p] == std::floor(idx[p])))
        throw UsageError("spdnn: W_idx[" + std::to_string(p) + "]=" + fmt_number(idx[p]) + " (layer " +
                         std::to_string(static_cast<std::int64_t>(p) / (N * K)) + ", neuron " +
                         std::to_string(static_cast<std::int64_t>(p) / K % N) + ") must be an integer in [0, N=" +
                         std::to_string(N) + "): an input neuron's index");
  }
  static std::string fmt_number(double v) {
    std::string s = std::to_string(v);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
};

}  // namespace

std::shared_ptr<Problem> make_spdnn_problem() { return std::make_shared<Spdnn>(); }

}  // namespace kforge
