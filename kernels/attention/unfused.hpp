#pragma once
// The peer of the fused attention kernel: the composition a user writes by hand with a BLAS,
// in fp32. Per call: a RoPE pass over Q and K (cos/sin tables precomputed once, as models keep
// a rotary cache), then per (batch, head): OpenBLAS sgemm for P = scale·Q'·K'ᵀ (S×S), a
// softmax pass over P's rows (causal: keys j > i get 0), and OpenBLAS sgemm for O = P·V.
// Extra memory: Q' and K' (O(S·D) per head) and one S×S score matrix reused by every head,
// which is the O(S²) the fused kernel avoids.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge::attention {

class Unfused {
 public:
  Unfused(const Instance& in, int threads)
      : B_(in.sizes.at("B")), H_(in.sizes.at("H")), HKV_(in.sizes.at("HKV")),
        S_(in.sizes.at("S")), D_(in.sizes.at("D")), threads_(threads),
        scale_(static_cast<float>(in.scalars.at("scale"))), causal_(in.scalars.at("causal") != 0),
        q_(in.tensors[0].begin(), in.tensors[0].end()), k_(in.tensors[1].begin(), in.tensors[1].end()),
        v_(in.tensors[2].begin(), in.tensors[2].end()), o_(q_.size()), qr_(q_.size()), kr_(k_.size()),
        p_(static_cast<std::size_t>(S_ * S_)), cos_(S_ * (D_ / 2)), sin_(cos_.size()) {
    const double base = in.scalars.at("rope_base");
    for (std::int64_t pos = 0; pos < S_; ++pos)
      for (std::int64_t d = 0; d < D_ / 2; ++d) {
        const double a = static_cast<double>(pos) * std::pow(base, -2.0 * d / D_);
        cos_[pos * (D_ / 2) + d] = static_cast<float>(std::cos(a));
        sin_[pos * (D_ / 2) + d] = static_cast<float>(std::sin(a));
      }
  }

  void run() {
    rope(q_, qr_, B_ * H_);
    rope(k_, kr_, B_ * HKV_);
    openblas_set_num_threads(threads_);
    const int S = static_cast<int>(S_), D = static_cast<int>(D_);
    for (std::int64_t bh = 0; bh < B_ * H_; ++bh) {
      const std::int64_t kv = (bh / H_) * HKV_ + (bh % H_) / (H_ / HKV_);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, S, D, scale_, &qr_[bh * S_ * D_], D,
                  &kr_[kv * S_ * D_], D, 0.0f, p_.data(), S);
      softmax_rows();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, D, S, 1.0f, p_.data(), S,
                  &v_[kv * S_ * D_], D, 0.0f, &o_[bh * S_ * D_], D);
    }
  }

 private:
  void rope(const std::vector<float>& x, std::vector<float>& r, std::int64_t heads) const {
    const std::int64_t half = D_ / 2;
    parallel_for(heads * S_, [&](std::int64_t r0, std::int64_t r1) {
      for (std::int64_t row = r0; row < r1; ++row) {
        const float* c = &cos_[(row % S_) * half];
        const float* s = &sin_[(row % S_) * half];
        const float* a = &x[row * D_];
        float* out = &r[row * D_];
        for (std::int64_t d = 0; d < half; ++d) {
          out[d] = a[d] * c[d] - a[d + half] * s[d];
          out[d + half] = a[d + half] * c[d] + a[d] * s[d];
        }
      }
    });
  }

  void softmax_rows() {
    parallel_for(S_, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        float* row = &p_[i * S_];
        const std::int64_t n = causal_ ? i + 1 : S_;
        float mx = row[0];
        for (std::int64_t j = 1; j < n; ++j) mx = std::max(mx, row[j]);
        float sum = 0;
        for (std::int64_t j = 0; j < n; ++j) sum += row[j] = std::exp(row[j] - mx);
        const float inv = 1.0f / sum;
        for (std::int64_t j = 0; j < n; ++j) row[j] *= inv;
        for (std::int64_t j = n; j < S_; ++j) row[j] = 0.0f;
      }
    });
  }

  std::int64_t B_, H_, HKV_, S_, D_;
  int threads_;
  float scale_;
  bool causal_;
  std::vector<float> q_, k_, v_, o_, qr_, kr_, p_, cos_, sin_;
};

}  // namespace kforge::attention
