// gemm: C = alpha·A·B + beta·C, row-major, A (M,K), B (K,N), C (M,N). Any M, N, K >= 1.
// fp32, or fp16/bf16 storage with fp32 accumulation. With beta = 0, C is not read (the BLAS
// rule), so the verifier poisons it.
#include <cblas.h>

#include <cmath>
#include <thread>

#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

class Gemm final : public Problem {
 public:
  std::string name() const override { return "gemm"; }
  std::string description() const override {
    return "C = alpha*A*B + beta*C, row-major, A (M,K), B (K,N), C (M,N)";
  }
  std::vector<std::string> size_names() const override { return {"M", "N", "K"}; }
  Sizes default_sizes() const override { return {{"M", 1024}, {"N", 1024}, {"K", 1024}}; }
  std::vector<DType> dtypes() const override { return {DType::fp32, DType::fp16, DType::bf16}; }
  std::vector<TensorSpec> tensors() const override {
    return {{"A", Role::in}, {"B", Role::in}, {"C", Role::inout}};
  }
  std::vector<std::string> scalar_names() const override { return {"alpha", "beta"}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
    return t == 0 ? M * K : t == 1 ? K * N : M * N;
  }
  // Trial 0: beta = 0 with C poisoned; later trials read C with a non-trivial beta. The values
  // are exact in fp32 but not in fp16 or bf16 (1.25 + 2^-14, ...), so an epilogue that keeps its
  // scalars in a 16-bit type is off by 2^-14 relative, far beyond fp32's bound.
  std::map<std::string, double> scalars_for_trial(int trial) const override {
    if (trial % 2 == 0) return {{"alpha", 1.25 + 0x1p-14}, {"beta", 0.0}};
    return {{"alpha", -0.75 - 0x1p-15}, {"beta", 0.5 + 0x1p-15}};
  }
  bool reads_inout(const Instance& inst) const override { return inst.scalars.at("beta") != 0.0; }
  // alpha = 0 with beta != 0 (C = beta*C: no early return), beta = 1 (no scaling skipped
  // wrongly), both negative; exact in fp32, not in 16-bit types, like the trials'.
  std::vector<Scalars> special_scalars() const override {
    return {{{"alpha", 0.0}, {"beta", 0.5 + 0x1p-15}},
            {{"alpha", 1.25 + 0x1p-14}, {"beta", 1.0}},
            {{"alpha", -1.5 - 0x1p-14}, {"beta", -0.75 - 0x1p-15}}};
  }
  // A is M rows of K, B is K rows of N; C (read only when beta != 0) stays as drawn.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    return {s.at("K"), s.at("N"), -1};
  }

  // A (M,K) with M*K = 2^31 + 2^15 elements: row 2^16 starts at flat index 2^31, so a 32-bit
  // flat index (i*K + k in int) wraps there. N is 1, whatever was asked, so a plain kernel's
  // 2^31 multiply-adds stay a second or two; the last two rows are live.
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    (void)requested;
    return {{{"M", (1 << 16) + 1}, {"N", 1}, {"K", 1 << 15}}, {{"M", 2}, {"N", 1}, {"K", 1 << 15}}};
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N"), K = in.sizes.at("K");
    const double alpha = in.scalars.at("alpha"), beta = in.scalars.at("beta");
    const auto &A = in.tensors[0], &B = in.tensors[1], &C = in.tensors[2];
    std::vector<double> c(M * N, 0.0), m(M * N, 0.0);
    // i-k-j order: the same sums as the textbook triple loop, in an order that streams rows;
    // rows are independent, so they are shared among the cores.
    parallel_for(M, [&](std::int64_t i0, std::int64_t i1) {
    for (std::int64_t i = i0; i < i1; ++i) {
      double* ci = &c[i * N];
      double* mi = &m[i * N];
      for (std::int64_t k = 0; k < K; ++k) {
        const double a = A[i * K + k], abs_a = std::fabs(a);
        const double* bk = &B[k * N];
        for (std::int64_t j = 0; j < N; ++j) {
          ci[j] += a * bk[j];
          mi[j] += abs_a * std::fabs(bk[j]);
        }
      }
    }
    });
    for (std::int64_t e = 0; e < M * N; ++e) {
      const double cin = beta != 0.0 ? beta * C[e] : 0.0;
      m[e] = std::fabs(alpha) * m[e] + std::fabs(cin);
      c[e] = alpha * c[e] + cin;
    }
    out = tensor_list(std::move(c));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes& s) const override { return static_cast<double>(s.at("K")) + 2; }
  double flops(const Sizes& s) const override {
    return 2.0 * s.at("M") * s.at("N") * s.at("K");
  }
  double bytes(const Sizes& s, DType t) const override {
    const double M = s.at("M"), N = s.at("N"), K = s.at("K");
    return (M * K + K * N + 2 * M * N) * dtype_size(t);
  }

  // OpenBLAS sgemm on fp32 copies of the inputs (for fp16/bf16 too: the peer a user has).
  std::function<void()> baseline(const Instance& in, int threads) const override {
    const int M = static_cast<int>(in.sizes.at("M")), N = static_cast<int>(in.sizes.at("N")),
              K = static_cast<int>(in.sizes.at("K"));
    const float alpha = static_cast<float>(in.scalars.at("alpha"));
    const float beta = static_cast<float>(in.scalars.at("beta"));
    auto a = std::make_shared<std::vector<float>>(in.tensors[0].begin(), in.tensors[0].end());
    auto b = std::make_shared<std::vector<float>>(in.tensors[1].begin(), in.tensors[1].end());
    auto c = std::make_shared<std::vector<float>>(in.tensors[2].begin(), in.tensors[2].end());
    const int nthreads = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
    return [=] {
      openblas_set_num_threads(nthreads);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, alpha, a->data(), K,
                  b->data(), N, beta, c->data(), N);
    };
  }
  std::string baseline_name() const override { return "openblas_sgemm"; }

  std::vector<std::string> kernel_specs() const override {
    return {"kernels/gemm/gemm_cpu.json", "kernels/gemm/gemm_opencl.json",
            "kernels/gemm/gemm_cuda.json"};
  }
};

}  // namespace

std::shared_ptr<Problem> make_gemm_problem() { return std::make_shared<Gemm>(); }

}  // namespace kforge
