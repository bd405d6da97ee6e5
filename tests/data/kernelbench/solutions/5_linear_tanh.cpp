// y = tanh(x W^T + b): x (batch, in_features), W (out_features, in_features), b (out_features).
// out_features is derived in the module (in_features // 2), so the kernel derives it too.
#include <cmath>
static void body(const kf_ctx& ctx, const float* x, const float* W, const float* bias, float* out,
                 int batch, int in_features) {
  (void)ctx;
  const int out_features = in_features / 2;
  for (int i = 0; i < batch; ++i)
    for (int o = 0; o < out_features; ++o) {
      float s = bias[o];
      for (int k = 0; k < in_features; ++k) s += x[(long long)i * in_features + k] * W[(long long)o * in_features + k];
      out[(long long)i * out_features + o] = std::tanh(s);
    }
}
KF_KERNEL(kb_5_linear_tanh, body)
