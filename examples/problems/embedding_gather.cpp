// examples.embedding_gather on the cpu backend: block b copies rows b*BB .. b*BB+BB-1 of out, each
// the table row its int32 id names (the table's row offset in 64 bits: V * D may pass 2^31).
static void gather_block(const kf_ctx& ctx, const kf_storage* table, const int* ids, kf_storage* out, int V,
                         int D, int B) {
  (void)V;
  const int b0 = (int)ctx.block_idx.x * BB, b1 = b0 + BB < B ? b0 + BB : B;
  for (int b = b0; b < b1; ++b) {
    const kf_storage* row = table + (long long)ids[b] * D;
    kf_storage* dst = out + (long long)b * D;
    for (int d = 0; d < D; ++d) dst[d] = row[d];
  }
}
KF_KERNEL(examples_embedding_gather, gather_block)
