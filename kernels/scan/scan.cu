// scan for the cuda backend: every problem of kernels/scan/ is the linear recurrence
//     x = a_t * x + c_t      applied in scan order (forward t = 0..time-1, reverse time-1..0)
// with per-step coefficients that each problem forms from its inputs (a struct per problem).
//
// One block per sequence walks it in tiles of WG*ITEMS steps (as scan.cl). Per tile:
//   1. each thread composes its ITEMS consecutive steps into one affine map (A, X)
//   2. the block scans the WG maps: within each warp by shuffles (log2(32) rounds of
//      (A2, X2) after (A1, X1) = (A2*A1, A2*X1 + X2)), then across warps in shared memory
//   3. each thread runs its steps again from its entering value and writes x
//
// Parameters (all #defines):
//   WG     threads per sequence (a multiple of 32)
//   ITEMS  consecutive steps per thread per tile
#ifndef ITEMS  // scan_nstep's spec does not set it: it does not use the scan
#define ITEMS 1
#endif
#define TILE (WG * ITEMS)
#define WARPS (WG / 32)
typedef float T;

struct Map {
  float a, x;  // x -> a*x + x0
};
// `later` after `earlier`.
__device__ __forceinline__ Map after(Map later, Map earlier) {
  return {later.a * earlier.a, later.a * earlier.x + later.x};
}

// Inclusive scan of the block's maps in thread order.
__device__ __forceinline__ Map block_scan(Map m, Map* warp_totals) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const float pa = __shfl_up_sync(0xffffffffu, m.a, d), px = __shfl_up_sync(0xffffffffu, m.x, d);
    if (lane >= d) m = after(m, {pa, px});
  }
  if (lane == 31) warp_totals[warp] = m;
  __syncthreads();
  if (warp == 0) {  // scan the warp totals with the first warp
    Map w = lane < WARPS ? warp_totals[lane] : Map{1.0f, 0.0f};
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const float pa = __shfl_up_sync(0xffffffffu, w.a, d), px = __shfl_up_sync(0xffffffffu, w.x, d);
      if (lane >= d) w = after(w, {pa, px});
    }
    if (lane < WARPS) warp_totals[lane] = w;
  }
  __syncthreads();
  if (warp > 0) m = after(m, warp_totals[warp - 1]);
  return m;
}

template <bool REVERSE, class E>
__device__ void scan_sequence(const E& e, int time) {
  __shared__ Map warp_totals[WARPS];
  __shared__ Map scanned[WG];
  const int s = blockIdx.x, tid = threadIdx.x;
  float carry = e.init(s);
  for (int base = 0; base < time; base += TILE) {
    const int first = base + tid * ITEMS;  // this thread's steps, in scan order
    Map m{1.0f, 0.0f};
    for (int n = 0; n < ITEMS; ++n) {
      const int st = first + n;
      if (st < time) {
        float a, c;
        e.step(s, REVERSE ? time - 1 - st : st, a, c);
        m = after({a, c}, m);
      }
    }
    m = block_scan(m, warp_totals);
    scanned[tid] = m;
    __syncthreads();
    float x = tid > 0 ? scanned[tid - 1].a * carry + scanned[tid - 1].x : carry;
    const float leaving = scanned[WG - 1].a * carry + scanned[WG - 1].x;
    for (int n = 0; n < ITEMS; ++n) {
      const int st = first + n;
      if (st < time) {
        const int t = REVERSE ? time - 1 - st : st;
        float a, c;
        e.step(s, t, a, c);
        x = a * x + c;
        e.put(s, t, x);
      }
    }
    carry = leaving;
    __syncthreads();  // warp_totals and scanned are rewritten by the next tile
  }
}

// ---- the problems' coefficients ----------------------------------------------------------------
struct Seq {  // element (s, t) of a (batch, time) tensor
  int time;
  __device__ long long at(int s, int t) const { return (long long)s * time + t; }
};

struct Linear : Seq {
  const T *a, *b;
  T* x;
  __device__ float init(int) const { return 0.0f; }
  __device__ void step(int s, int t, float& ai, float& ci) const { ai = a[at(s, t)], ci = b[at(s, t)]; }
  __device__ void put(int s, int t, float v) const { x[at(s, t)] = v; }
};

struct DiscountedReturn : Seq {
  const T *r, *done, *boot;
  T* ret;
  float gamma;
  __device__ float init(int s) const { return boot[s]; }
  __device__ void step(int s, int t, float& a, float& c) const {
    a = gamma * (1.0f - done[at(s, t)]), c = r[at(s, t)];
  }
  __device__ void put(int s, int t, float v) const { ret[at(s, t)] = v; }
};

// GAE (LAMBDA_RETURN false) and the TD(lambda) return (true): inputs r, v, done, boot.
template <bool LAMBDA_RETURN>
struct ValueEstimator : Seq {
  const T *r, *v, *done, *boot;
  T* out;
  float gamma, lambda;
  __device__ float init(int s) const { return LAMBDA_RETURN ? boot[s] : 0.0f; }
  __device__ void step(int s, int t, float& a, float& c) const {
    const long long i = at(s, t);
    const float m = gamma * (1.0f - done[i]);
    const float next_v = t + 1 < time ? v[i + 1] : boot[s];
    a = m * lambda;
    c = LAMBDA_RETURN ? r[i] + m * (1.0f - lambda) * next_v : r[i] + m * next_v - v[i];
  }
  __device__ void put(int s, int t, float x) const { out[at(s, t)] = x; }
};

struct VTrace : Seq {  // x = vs - V
  const T *r, *v, *done, *boot, *ratio;
  T* vs;
  float gamma, lambda, rho_bar, c_bar;
  __device__ float init(int) const { return 0.0f; }
  __device__ void step(int s, int t, float& a, float& c) const {
    const long long i = at(s, t);
    const float m = gamma * (1.0f - done[i]), w = ratio[i];
    const float next_v = t + 1 < time ? v[i + 1] : boot[s];
    a = m * lambda * fminf(c_bar, w);
    c = fminf(rho_bar, w) * (r[i] + m * next_v - v[i]);
  }
  __device__ void put(int s, int t, float x) const { vs[at(s, t)] = v[at(s, t)] + x; }
};

// Retrace (TB false: trace lambda*min(1, ratio)) and TB(lambda) (TB true: trace lambda*pi).
template <bool TB>
struct OffPolicyQ : Seq {
  const T *r, *q, *eq, *done, *boot, *w;
  T* qret;
  float gamma, lambda;
  __device__ float init(int) const { return 0.0f; }
  __device__ void step(int s, int t, float& a, float& c) const {
    const long long i = at(s, t);
    const float m = gamma * (1.0f - done[i]);
    if (t + 1 < time) {
      const float trace = lambda * (TB ? w[i + 1] : fminf(1.0f, w[i + 1]));
      a = m * trace;
      c = r[i] + m * (eq[i + 1] - trace * q[i + 1]);
    } else {
      a = 0.0f;
      c = r[i] + m * boot[s];
    }
  }
  __device__ void put(int s, int t, float x) const { qret[at(s, t)] = x; }
};

// ---- entry points: the problem's ABI (tensors, sizes, scalars) ---------------------------------
extern "C" __global__ void __launch_bounds__(WG) scan_linear(const T* a, const T* b, T* x, int batch, int time) {
  Linear e;
  e.time = time, e.a = a, e.b = b, e.x = x;
  scan_sequence<false>(e, time);
}
extern "C" __global__ void __launch_bounds__(WG) scan_linear_rev(const T* a, const T* b, T* x, int batch, int time) {
  Linear e;
  e.time = time, e.a = a, e.b = b, e.x = x;
  scan_sequence<true>(e, time);
}
extern "C" __global__ void __launch_bounds__(WG) scan_discounted_return(const T* r, const T* done, const T* boot,
                                                        T* ret, int batch, int time, float gamma) {
  DiscountedReturn e;
  e.time = time, e.r = r, e.done = done, e.boot = boot, e.ret = ret, e.gamma = gamma;
  scan_sequence<true>(e, time);
}
template <bool LAMBDA_RETURN>
__device__ void value_estimator(const T* r, const T* v, const T* done, const T* boot, T* out,
                                int time, float gamma, float lambda) {
  ValueEstimator<LAMBDA_RETURN> e;
  e.time = time, e.r = r, e.v = v, e.done = done, e.boot = boot, e.out = out;
  e.gamma = gamma, e.lambda = lambda;
  scan_sequence<true>(e, time);
}
extern "C" __global__ void __launch_bounds__(WG) scan_gae(const T* r, const T* v, const T* done, const T* boot,
                                          T* adv, int batch, int time, float gamma, float lambda) {
  value_estimator<false>(r, v, done, boot, adv, time, gamma, lambda);
}
extern "C" __global__ void __launch_bounds__(WG) scan_td_lambda(const T* r, const T* v, const T* done,
                                                const T* boot, T* ret, int batch, int time,
                                                float gamma, float lambda) {
  value_estimator<true>(r, v, done, boot, ret, time, gamma, lambda);
}
extern "C" __global__ void __launch_bounds__(WG) scan_vtrace(const T* r, const T* v, const T* done, const T* boot,
                                             const T* ratio, T* vs, int batch, int time,
                                             float gamma, float lambda, float rho_bar, float c_bar) {
  VTrace e;
  e.time = time, e.r = r, e.v = v, e.done = done, e.boot = boot, e.ratio = ratio, e.vs = vs;
  e.gamma = gamma, e.lambda = lambda, e.rho_bar = rho_bar, e.c_bar = c_bar;
  scan_sequence<true>(e, time);
}
template <bool TB>
__device__ void off_policy_q(const T* r, const T* q, const T* eq, const T* done, const T* boot,
                             const T* w, T* qret, int time, float gamma, float lambda) {
  OffPolicyQ<TB> e;
  e.time = time, e.r = r, e.q = q, e.eq = eq, e.done = done, e.boot = boot, e.w = w, e.qret = qret;
  e.gamma = gamma, e.lambda = lambda;
  scan_sequence<true>(e, time);
}
extern "C" __global__ void __launch_bounds__(WG) scan_retrace(const T* r, const T* q, const T* eq, const T* done,
                                              const T* boot, const T* ratio, T* qret, int batch,
                                              int time, float gamma, float lambda) {
  off_policy_q<false>(r, q, eq, done, boot, ratio, qret, time, gamma, lambda);
}
extern "C" __global__ void __launch_bounds__(WG) scan_tree_backup(const T* r, const T* q, const T* eq, const T* done,
                                                  const T* boot, const T* pi, T* qret, int batch,
                                                  int time, float gamma, float lambda) {
  off_policy_q<true>(r, q, eq, done, boot, pi, qret, time, gamma, lambda);
}

// n-step returns are a windowed sum, not a recurrence (README.md): one thread per output, each
// reading its own window of min(n, time-t) steps.
extern "C" __global__ void __launch_bounds__(WG) scan_nstep(const T* r, const T* v, const T* done,
                                                           const T* boot, T* ret, int batch,
                                                           int time, int n, float gamma) {
  const long long i = (long long)blockIdx.x * WG + threadIdx.x;
  if (i >= (long long)batch * time) return;
  const int s = (int)(i / time), t = (int)(i % time), h = min(n, time - t);
  float g = 0.0f, discount = 1.0f;
  for (int k = 0; k < h; ++k) {
    g += discount * r[i + k];
    discount *= gamma * (1.0f - done[i + k]);
  }
  ret[i] = g + discount * (t + h < time ? v[i + h] : boot[s]);
}
