// Mean over the batch of logsumexp(predictions[b]) - predictions[b][targets[b]]; the targets
// (int64 class indices in the module) arrive as floats holding whole numbers.
#include <cmath>
static void body(const kf_ctx& ctx, const float* predictions, const float* targets, float* out,
                 int batch_size, int num_classes) {
  (void)ctx;
  double total = 0;
  for (int b = 0; b < batch_size; ++b) {
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
