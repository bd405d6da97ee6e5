// WRONG on purpose, a tail bug: the batch is walked in blocks of 4 and a partial last block is
// dropped from the sum (still divided by the whole batch). The default batch (16) is a multiple
// of 4, so KernelBench's check passes.
#include <cmath>
static void body(const kf_ctx& ctx, const float* predictions, const float* targets, float* out,
                 int batch_size, int num_classes) {
  (void)ctx;
  double total = 0;
  for (int b0 = 0; b0 + 4 <= batch_size; b0 += 4)
    for (int b = b0; b < b0 + 4; ++b) {
      const float* p = predictions + (long long)b * num_classes;
      double m = p[0];
      for (int c = 1; c < num_classes; ++c) m = p[c] > m ? p[c] : m;
      double s = 0;
      for (int c = 0; c < num_classes; ++c) s += std::exp(p[c] - m);
      total += m + std::log(s) - p[(int)targets[b]];
    }
  out[0] = (float)(total / batch_size);
}
KF_KERNEL(kb_6_cross_entropy, body)
