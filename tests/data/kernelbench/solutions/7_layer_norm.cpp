// LayerNorm over (rows, cols) of each batch element, the plain float32 way: a sequential sum for
// the mean, a second pass for the biased variance, eps = 1e-5, then weight and bias per element.
// Nothing here is more accurate than a straightforward kernel: kforge's bound must accept it.
#include <cmath>
static void body(const kf_ctx& ctx, const float* x, const float* w, const float* b, float* out,
                 int batch, int rows, int cols) {
  (void)ctx;
  const long long n = (long long)rows * cols;
  for (int i = 0; i < batch; ++i) {
    const float* r = x + i * n;
    float s = 0.0f;
    for (long long j = 0; j < n; ++j) s += r[j];
    const float mean = s / n;
    float v = 0.0f;
    for (long long j = 0; j < n; ++j) v += (r[j] - mean) * (r[j] - mean);
    const float inv = 1.0f / std::sqrt(v / n + 1e-5f);
    for (long long j = 0; j < n; ++j) out[i * n + j] = (r[j] - mean) * inv * w[j] + b[j];
  }
}
KF_KERNEL(kb_7_layer_norm, body)
