// activations for the cuda backend: Y = f(X + bias), elementwise over X, Y (M,N) row-major,
// the bias (length N) added when with_bias != 0. One kernel per function (relu, leaky_relu,
// gelu_erf, gelu_tanh, silu), one body. Each thread handles VEC elements of a row, THREADS
// apart (coalesced); a block covers THREADS*VEC columns of one row and the grid is (column
// tiles x rows, flattened into x: y is limited to 65535), so one long row is spread over
// many blocks. GELU's tanh form goes through
// (1 + tanh(a)) / 2 = 1 / (1 + exp(-2a)), which never cancels; the erf form uses normcdff.
//
// Parameters (all #defines):
//   THREADS  threads per block (a multiple of 32)
//   VEC      elements per thread
typedef kf_storage T;  // the dtype's storage type (the prelude's)

enum Fn { kRelu, kLeaky, kGeluErf, kGeluTanh, kSilu };

template <int F>
__device__ __forceinline__ float act(float z, float slope) {
  if (F == kRelu) return z > 0.0f ? z : 0.0f;
  if (F == kLeaky) return z > 0.0f ? z : slope * z;
  if (F == kGeluErf) return z * normcdff(z);
  if (F == kGeluTanh) return z / (1.0f + expf(-2.0f * 0.7978845608f * (z + 0.044715f * z * z * z)));
  const float e = expf(-fabsf(z));  // never overflows: sigmoid = 1/(1+e) or e/(1+e)
  return z * (z < 0.0f ? e : 1.0f) / (1.0f + e);
}

template <int F>
__device__ __forceinline__ void act_tile(const T* __restrict__ X, const T* __restrict__ B,
                                         T* __restrict__ Y, int N, float with_bias, float slope) {
  const int tiles = (N + THREADS * VEC - 1) / (THREADS * VEC);
  const long long row = blockIdx.x / tiles;
  const int j0 = (blockIdx.x % tiles) * THREADS * VEC + threadIdx.x;
#pragma unroll
  for (int e = 0; e < VEC; ++e) {
    const int j = j0 + e * THREADS;
    if (j >= N) break;
    float z = kf_to_f32(X[row * N + j]);
    if (with_bias != 0.0f) z += kf_to_f32(B[j]);
    Y[row * N + j] = kf_from_f32(act<F>(z, slope));
  }
}

#define KF_ACTIVATION(name, F)                                                                \
  extern "C" __global__ void __launch_bounds__(THREADS)                                      \
  name(const T* X, const T* B, T* Y, int M, int N, float with_bias) {                        \
    act_tile<F>(X, B, Y, N, with_bias, 0.0f);                                                \
  }

KF_ACTIVATION(relu, kRelu)
KF_ACTIVATION(gelu_erf, kGeluErf)
KF_ACTIVATION(gelu_tanh, kGeluTanh)
KF_ACTIVATION(silu, kSilu)

extern "C" __global__ void __launch_bounds__(THREADS)
leaky_relu(const T* X, const T* B, T* Y, int M, int N, float with_bias, float slope) {
  act_tile<kLeaky>(X, B, Y, N, with_bias, slope);
}
