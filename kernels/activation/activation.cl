// activations for the opencl backend: Y = f(X + bias), elementwise over X, Y (M,N) row-major,
// the bias (length N) added when with_bias != 0. One kernel per function (relu, leaky_relu,
// gelu_erf, gelu_tanh, silu), one body. Each work-item handles VEC adjacent elements of a row
// per step; a work-group of WG work-items covers WG*VEC columns of one row, and the grid is
// (column tiles, rows), so one long row is spread over many groups. GELU's tanh form goes
// through (1 + tanh(a)) / 2 = 1 / (1 + exp(-2a)), which never cancels;
// SiLU's sigmoid takes exp(-|z|), which never overflows.
//
// Parameters (all #defines):
//   WG    work-items per group
//   VEC   adjacent elements per work-item (1, 2, 4, 8)
// dtype (one of): KF_DTYPE_FP32, KF_DTYPE_FP16 (half storage), KF_DTYPE_BF16 (ushort storage);
// the arithmetic is float throughout.

typedef kf_storage T;  // the dtype's storage type (the prelude's)

#define RELU 0
#define LEAKY 1
#define GELU_ERF 2
#define GELU_TANH 3
#define SILU 4

inline float act(float z, int f, float slope) {
  switch (f) {
    case RELU: return z > 0.0f ? z : 0.0f;
    case LEAKY: return z > 0.0f ? z : slope * z;
    case GELU_ERF: return z * 0.5f * erfc(-z * 0.70710678f);
    case GELU_TANH: return z / (1.0f + exp(-2.0f * 0.7978845608f * (z + 0.044715f * z * z * z)));
    default: {  // exp(-|z|) never overflows: sigmoid = 1/(1+e) or e/(1+e)
      const float e = exp(-fabs(z));
      return z * (z < 0.0f ? e : 1.0f) / (1.0f + e);
    }
  }
}

inline void act_tile(__global const T* X, __global const T* B, __global T* Y, int N,
                     float with_bias, int f, float slope) {
  const int j0 = (get_group_id(0) * WG + get_local_id(0)) * VEC;
  const long row = get_group_id(1);
  for (int e = 0; e < VEC; ++e) {
    const int j = j0 + e;
    if (j >= N) break;
    float z = kf_load(X + row * N + j);
    if (with_bias != 0.0f) z += kf_load(B + j);
    kf_store(act(z, f, slope), Y + row * N + j);
  }
}

#define KF_ACTIVATION(name, F)                                                               \
  __kernel __attribute__((reqd_work_group_size(WG, 1, 1)))                                  \
  void name(__global const T* X, __global const T* B, __global T* Y, int M, int N,          \
            float with_bias) {                                                              \
    act_tile(X, B, Y, N, with_bias, F, 0.0f);                                               \
  }

KF_ACTIVATION(relu, RELU)
KF_ACTIVATION(gelu_erf, GELU_ERF)
KF_ACTIVATION(gelu_tanh, GELU_TANH)
KF_ACTIVATION(silu, SILU)

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void leaky_relu(__global const T* X, __global const T* B, __global T* Y, int M, int N,
                float with_bias, float slope) {
  act_tile(X, B, Y, N, with_bias, LEAKY, slope);
}
