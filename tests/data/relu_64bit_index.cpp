// CORRECT: activation.relu (Y = max(X + bias, 0), X and Y (M,N)) as a plain loop over rows, the
// flat index in 64 bits. The twin of tests/verify/wrong/activation_int32_flat_index.cpp: it
// passes the index_width check that rejects the twin (tests/verify/index_width_elementwise_test.cpp).
//   build/kforge eval --problem activation.relu --lang cpp --entry relu \
//     --source tests/data/relu_64bit_index.cpp --grid 'ceil_div(M,16)' --json
static void body(const kf_ctx& ctx, const kf_storage* X, const kf_storage* B, kf_storage* Y, int M, int N,
                 float with_bias) {
  const int i0 = static_cast<int>(ctx.block_idx.x) * 16;
  const int i1 = i0 + 16 < M ? i0 + 16 : M;
  for (int i = i0; i < i1; ++i)
    for (int j = 0; j < N; ++j) {
      const long long e = static_cast<long long>(i) * N + j;
      float z = kf_to_f32(X[e]) + (with_bias != 0.0f ? kf_to_f32(B[j]) : 0.0f);
      Y[e] = kf_from_f32(z > 0.0f ? z : 0.0f);
    }
}
KF_KERNEL(relu, body)
