// moe_grouped_gemm: a mixture-of-experts layer. Token t is routed to K experts ids[t, k] with
// gate weights gate[t, k]; each expert e has its own weight matrix W[e] (H, F):
//     Y[t, :] = Σ_k gate[t, k] · X[t, :] · W[ids[t, k]]
// Row-major X (T,H), ids and gate (T,K), W (E,H,F), Y (T,F). fp32 only: the expert ids travel
// in the fp32 storage as exact small integers (every id < 2^24 is exact in fp32).
//
// Inputs are conditioned so ids are valid and distinct per token; odd trials route with a
// skewed (Zipf-like) load and leave one expert without tokens, even trials route balanced.
// Timed runs use trial 1, so `kforge bench` times the skewed load (the case that matters).
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

enum { kX, kIds, kGate, kW, kY };

class MoeGroupedGemm final : public Problem {
 public:
  std::string name() const override { return "moe_grouped_gemm"; }
  std::string description() const override {
    return "Y[t] = sum_k gate[t,k] * X[t] * W[ids[t,k]]; X (T,H), ids and gate (T,K), W (E,H,F), "
           "Y (T,F); ids are exact integers in fp32";
  }
  std::vector<std::string> size_names() const override { return {"T", "H", "F", "E", "K"}; }
  // A small layer (a micro-batch of 256 tokens, 8 experts, top-2), so that `kforge suite`,
  // which verifies thoroughly at the defaults on every backend (PoCL included), stays seconds.
  Sizes default_sizes() const override {
    return {{"T", 256}, {"H", 512}, {"F", 256}, {"E", 8}, {"K", 2}};
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"X", Role::in}, {"ids", Role::in}, {"gate", Role::in}, {"W", Role::in}, {"Y", Role::out}};
  }
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t T = s.at("T"), H = s.at("H"), F = s.at("F"), E = s.at("E"), K = s.at("K");
    switch (t) {
      case kX: return T * H;
      case kIds:
      case kGate: return T * K;
      case kW: return E * H * F;
      default: return T * F;
    }
  }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }
  // X as rows of H and W as rows of F (each expert's H rows); ids and gate are conditioned
  // (valid experts, probabilities), Y is an output.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("H"), -1, -1, s.at("F"), -1};
  }

  void check_sizes(const Sizes& s) const override {
    for (const char* n : {"T", "H", "F", "E", "K"})
      if (s.at(n) < 1 || s.at(n) > (1LL << 30))
        throw UsageError(std::string("size ") + n + "=" + std::to_string(s.at(n)) + " must be in [1, 2^30]");
    if (s.at("K") > 2)
      throw UsageError("size K=" + std::to_string(s.at("K")) + " (top-k) must be 1 or 2");
    if (s.at("K") > s.at("E"))
      throw UsageError("size K=" + std::to_string(s.at("K")) + " must not exceed size E=" +
                       std::to_string(s.at("E")) + " (a token's experts are distinct)");
    if (s.at("E") > (1 << 24))
      throw UsageError("size E=" + std::to_string(s.at("E")) + " must be <= 2^24 (ids are exact in fp32)");
    for (const auto& [what, n] : {std::pair{"T*H", s.at("T") * s.at("H")}, {"E*H*F", s.at("E") * s.at("H") * s.at("F")},
                                  {"T*F", s.at("T") * s.at("F")}, {"T*K", s.at("T") * s.at("K")}})
      if (n > (1LL << 31) - 1)
        throw UsageError(std::string("sizes ") + what + "=" + std::to_string(n) +
                         " must fit in a 32-bit int (the kernel ABI)");
  }

  // The index_width check (docs/verification.md): X (T,H) past 2^31 elements, T = 2^16 + 1 tokens
  // of H = 2^15 (token 2^16 starts at flat index 2^31, where t * H in int wraps), the last two
  // live. A zero token (X, gate and id all 0: expert 0, a valid id) gives a zero Y row, as the
  // check requires. Each token still goes through its expert's H x F product, 2F operations per
  // element of X: F = 16 (one vector of the cpu kernel), K = 1 (so the zero ids cannot collide
  // with a second one) and E = 2 keep it at 2^31 x 32 = 69 GFLOP, seconds; Y (T x 16) stays small.
  // check_sizes' T*H limit is the problem's for ordinary runs; the library's kernels (cpu,
  // OpenCL, CUDA) form t * H in 64 bits.
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    (void)requested;
    WideIndexShape w;
    w.sizes = {{"T", (1 << 16) + 1}, {"H", 1 << 15}, {"F", 16}, {"E", 2}, {"K", 1}};
    w.live = w.sizes;
    w.live["T"] = 2;
    return w;
  }

  // Routing. Odd trials: a Zipf-like load (expert r drawn with weight 1/(r+1)) where, when
  // E > K leaves room, the middle expert gets no token (an empty group between full ones).
  // Even trials: balanced, token t on experts (t·K + k + shift) mod E. Ids distinct per token.
  void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const override {
    const std::int64_t T = inst.sizes.at("T"), E = inst.sizes.at("E"), K = inst.sizes.at("K");
    auto& ids = inst.tensors[kIds];
    const std::int64_t shift = static_cast<std::int64_t>(random_bits(seed, 0x30e0 + trial, 0) % E);
    if (trial % 2 == 0) {
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t k = 0; k < K; ++k) ids[t * K + k] = static_cast<double>((t * K + k + shift) % E);
      return;
    }
    const std::int64_t empty = E > K ? E / 2 : -1;
    std::vector<double> cdf(E, 0.0);
    double total = 0;
    for (std::int64_t e = 0; e < E; ++e) cdf[e] = total += e == empty ? 0.0 : 1.0 / static_cast<double>(e + 1);
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t k = 0; k < K; ++k) {
        std::int64_t e = 0;
        for (std::uint64_t draw = 0;; ++draw) {
          const double u = random_unit(seed, 0x30f0 + trial, (t * K + k) * 64 + draw) * total;
          e = std::min<std::int64_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin(), E - 1);
          if (e != empty && (k == 0 || ids[t * K] != static_cast<double>(e))) break;
          if (draw == 63) {  // a token whose first draw is the only one left: take the next free
            e = (static_cast<std::int64_t>(ids[t * K]) + 1) % E;
            if (e == empty) e = (e + 1) % E;
            break;
          }
        }
        ids[t * K + k] = static_cast<double>(e);
      }
  }

  // An id moves to another expert the token does not use yet; with no such expert (E = K) the
  // token's two ids swap; with E = 1 ids cannot change, so its gate moves instead.
  void perturb(Instance& inst, std::size_t t, std::size_t i) const override {
    if (t != kIds) return Problem::perturb(inst, t, i);
    const std::int64_t E = inst.sizes.at("E"), K = inst.sizes.at("K");
    auto& ids = inst.tensors[kIds];
    const std::size_t row = i - i % K, other = K == 2 ? row + (1 - i % K) : i;
    if (E == 1) return Problem::perturb(inst, kGate, i);
    if (E == K) return std::swap(ids[row], ids[row + 1]);
    double e = ids[i];
    do e = std::fmod(e + 1, static_cast<double>(E));
    while (e == ids[other]);
    ids[i] = e;
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t T = in.sizes.at("T"), H = in.sizes.at("H"), F = in.sizes.at("F"),
                       E = in.sizes.at("E"), K = in.sizes.at("K");
    const auto &X = in.tensors[kX], &ids = in.tensors[kIds], &gate = in.tensors[kGate], &W = in.tensors[kW];
    for (std::int64_t i = 0; i < T * K; ++i)
      if (!(ids[i] >= 0 && ids[i] < static_cast<double>(E) && ids[i] == std::floor(ids[i])))
        throw UsageError("ids[" + std::to_string(i) + "]=" + std::to_string(ids[i]) +
                         " is not an expert in [0, E)");
    std::vector<double> y(T * F, 0.0), m(T * F, 0.0);
    parallel_for(T, [&](std::int64_t t0, std::int64_t t1) {
      for (std::int64_t t = t0; t < t1; ++t) {
        double* yt = &y[t * F];
        double* mt = &m[t * F];
        for (std::int64_t k = 0; k < K; ++k) {
          const double g = gate[t * K + k];
          const double* we = &W[static_cast<std::int64_t>(ids[t * K + k]) * H * F];
          for (std::int64_t h = 0; h < H; ++h) {
            const double a = g * X[t * H + h], abs_a = std::fabs(a);
            const double* wh = we + h * F;
            for (std::int64_t f = 0; f < F; ++f) {
              yt[f] += a * wh[f];
              mt[f] += abs_a * std::fabs(wh[f]);
            }
          }
        }
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  // Each output sums K products of H terms, each scaled by a gate.
  double reduction_length(const Sizes& s) const override {
    return static_cast<double>(s.at("H") * s.at("K")) + 2;
  }
  double flops(const Sizes& s) const override {
    return 2.0 * s.at("T") * s.at("K") * s.at("F") * (s.at("H") + 1.0);
  }
  // X, routing and Y once, and the weights of every expert that can have a token.
  double bytes(const Sizes& s, DType t) const override {
    const double T = s.at("T"), H = s.at("H"), F = s.at("F"), K = s.at("K");
    const double used = std::min<double>(s.at("E"), T * K);
    return (T * H + 2 * T * K + used * H * F + T * F) * dtype_size(t);
  }

  // The loop a user writes: per expert, gather its tokens' rows, one OpenBLAS sgemm, scatter
  // gate-weighted rows back (tokens in expert order, so Y is zeroed first).
  std::function<void()> baseline(const Instance& in, int threads) const override {
    const std::int64_t T = in.sizes.at("T"), H = in.sizes.at("H"), F = in.sizes.at("F"),
                       E = in.sizes.at("E"), K = in.sizes.at("K");
    auto f32 = [&](int t) { return std::make_shared<std::vector<float>>(in.tensors[t].begin(), in.tensors[t].end()); };
    auto X = f32(kX), ids = f32(kIds), gate = f32(kGate), W = f32(kW);
    auto Y = std::make_shared<std::vector<float>>(T * F);
    auto rows = std::make_shared<std::vector<float>>(T * K * H), outs = std::make_shared<std::vector<float>>(T * K * F);
    auto members = std::make_shared<std::vector<std::int64_t>>(T * K);
    const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    return [=] {
      openblas_set_num_threads(nthreads);
      std::fill(Y->begin(), Y->end(), 0.0f);
      for (std::int64_t e = 0; e < E; ++e) {
        std::int64_t n = 0;
        for (std::int64_t i = 0; i < T * K; ++i)
          if (static_cast<std::int64_t>((*ids)[i]) == e) (*members)[n++] = i;
        if (n == 0) continue;
        for (std::int64_t r = 0; r < n; ++r)
          std::copy_n(&(*X)[((*members)[r] / K) * H], H, &(*rows)[r * H]);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(F),
                    static_cast<int>(H), 1.0f, rows->data(), static_cast<int>(H), &(*W)[e * H * F],
                    static_cast<int>(F), 0.0f, outs->data(), static_cast<int>(F));
        for (std::int64_t r = 0; r < n; ++r) {
          const std::int64_t i = (*members)[r];
          const float g = (*gate)[i];
          float* y = &(*Y)[(i / K) * F];
          const float* o = &(*outs)[r * F];
          for (std::int64_t f = 0; f < F; ++f) y[f] += g * o[f];
        }
      }
    };
  }
  std::string baseline_name() const override { return "expert_loop_openblas"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/moe/moe_cpu.json", "kernels/moe/moe_opencl.json", "kernels/moe/moe_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_moe_problem() { return std::make_shared<MoeGroupedGemm>(); }

}  // namespace kforge
