// WRONG on purpose, a precision cut: the weights are rounded to 11 significant bits (half
// precision's) "to save bandwidth". The errors (~1e-3) sit well inside KernelBench's
// atol = rtol = 1e-2, far outside a float32 computation's bound.
#include <cmath>
static float to_half_precision(float v) {
  int e;
  const float m = std::frexp(v, &e);
  return std::ldexp(std::nearbyint(m * 2048.0f) / 2048.0f, e);
}
static void body(const kf_ctx& ctx, const float* x, const float* w, const float* bias, float* out,
                 int batch_size, int in_channels, int out_channels, int kernel_size, int length) {
  (void)ctx;
  const int out_len = length - kernel_size + 1;
  for (int b = 0; b < batch_size; ++b)
    for (int o = 0; o < out_channels; ++o)
      for (int t = 0; t < out_len; ++t) {
        float s = bias[o];
        for (int c = 0; c < in_channels; ++c)
          for (int k = 0; k < kernel_size; ++k)
            s += to_half_precision(w[((long long)o * in_channels + c) * kernel_size + k]) *
                 x[((long long)b * in_channels + c) * length + t + k];
        out[((long long)b * out_channels + o) * out_len + t] = s;
      }
}
KF_KERNEL(kb_4_conv1d, body)
