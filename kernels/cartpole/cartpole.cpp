// cartpole for the cpu backend (see problem.cpp for the environment and the tensors).
// Each block owns ENVS consecutive environments and runs all `steps` steps for them (fused):
// the state stays in the block's arrays between steps, one per state variable, so the
// per-step loop over environments is a vector loop (then a scalar pass applies the few resets).
// Only obs/action/reward/done are written, and a reset state is read only where an episode ends.
//
// sin and cos: libm's calls do not vectorize, so while every pole angle of the block is
// within SMALL (always, under cart-pole's own termination at 12 degrees, unless a start state
// says otherwise) a Taylor polynomial to theta^17 is used, below one ulp of fp64 there;
// otherwise that step takes libm's sin and cos.
//
// Parameters (all #defines):
//   ENVS   environments per block (the vector loop's length; the grid is envs / ENVS blocks)
#include <cmath>

#if defined(KF_DTYPE_FP64)
typedef double T;
#else
typedef float T;
#endif

#define SMALL T(0.5)
#define GRAVITY T(9.8)
#define MASS_POLE T(0.1)
#define TOTAL_MASS T(1.1)
#define HALF_LENGTH T(0.5)
#define POLE_MASS_LENGTH T(0.05)
#define FORCE T(10.0)
#define TAU T(0.02)
#define X_LIMIT T(2.4)
#define THETA_LIMIT T(12 * 2 * 3.14159265358979323846 / 360)

template <bool Small>
static inline void sin_cos(T th, T& s, T& c) {
  if constexpr (Small) {
    const T t2 = th * th;
    s = th * (T(1) + t2 * (T(-1.0 / 6) + t2 * (T(1.0 / 120) + t2 * (T(-1.0 / 5040) +
        t2 * (T(1.0 / 362880) + t2 * (T(-1.0 / 39916800) + t2 * (T(1.0 / 6227020800) +
        t2 * (T(-1.0 / 1307674368000) + t2 * T(1.0 / 355687428096000)))))))));
    c = T(1) + t2 * (T(-1.0 / 2) + t2 * (T(1.0 / 24) + t2 * (T(-1.0 / 720) +
        t2 * (T(1.0 / 40320) + t2 * (T(-1.0 / 3628800) + t2 * (T(1.0 / 479001600) +
        t2 * (T(-1.0 / 87178291200) + t2 * T(1.0 / 20922789888000))))))));
  } else {
    s = std::sin(th), c = std::cos(th);
  }
}

// One step k for the n environments of the block starting at e0.
template <bool Small>
static inline void step(T* __restrict x, T* __restrict xd, T* __restrict th, T* __restrict thd,
                        int n, int e0, int k, int N, const T* __restrict resets,
                        const T* __restrict w, T* __restrict obs, T* __restrict action,
                        T* __restrict reward, T* __restrict done, unsigned char* __restrict ended) {
  const T w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], b = w[4];
#pragma GCC ivdep
  for (int e = 0; e < n; ++e) {
    const long long i = (long long)k * N + e0 + e;
    const T v = b + w0 * x[e] + w1 * xd[e] + w2 * th[e] + w3 * thd[e];
    const bool right = v > T(0);
    const T force = right ? FORCE : -FORCE;
    T sn, c;
    sin_cos<Small>(th[e], sn, c);
    const T temp = (force + POLE_MASS_LENGTH * thd[e] * thd[e] * sn) / TOTAL_MASS;
    const T den = HALF_LENGTH * (T(4.0 / 3.0) - MASS_POLE * c * c / TOTAL_MASS);
    const T theta_acc = (GRAVITY * sn - c * temp) / den;
    const T x_acc = temp - POLE_MASS_LENGTH * theta_acc * c / TOTAL_MASS;
    T nx = x[e] + TAU * xd[e], nxd = xd[e] + TAU * x_acc;
    T nth = th[e] + TAU * thd[e], nthd = thd[e] + TAU * theta_acc;
    // | not ||: short-circuit evaluation would make the later tests conditional (no vectors)
    const bool d = (nx < -X_LIMIT) | (nx > X_LIMIT) | (nth < -THETA_LIMIT) | (nth > THETA_LIMIT);
    x[e] = nx, xd[e] = nxd, th[e] = nth, thd[e] = nthd;
    obs[i * 4] = nx, obs[i * 4 + 1] = nxd, obs[i * 4 + 2] = nth, obs[i * 4 + 3] = nthd;
    action[i] = right ? T(1) : T(0);
    reward[i] = T(1);
    done[i] = d ? T(1) : T(0);
    ended[e] = d;
  }
  // Resets, apart: a masked load of strided reset states would stop the loop above from
  // vectorizing, and an unconditional one would read every reset state. Episodes last tens
  // of steps, so few environments reset at any step.
  for (int e = 0; e < n; ++e)
    if (ended[e]) {
      const long long i = (long long)k * N + e0 + e;
      x[e] = resets[i * 4], xd[e] = resets[i * 4 + 1], th[e] = resets[i * 4 + 2], thd[e] = resets[i * 4 + 3];
      obs[i * 4] = x[e], obs[i * 4 + 1] = xd[e], obs[i * 4 + 2] = th[e], obs[i * 4 + 3] = thd[e];
    }
}

static void cartpole_block(const kf_ctx& ctx, const T* state0, const T* resets, const T* policy,
                           T* obs, T* action, T* reward, T* done, int envs, int steps) {
  const int e0 = (int)ctx.block_idx.x * ENVS;
  const int n = envs - e0 < ENVS ? envs - e0 : ENVS;
  alignas(64) T x[ENVS], xd[ENVS], th[ENVS], thd[ENVS];
  unsigned char ended[ENVS];
  for (int e = 0; e < n; ++e) {
    const T* s = state0 + (long long)(e0 + e) * 4;
    x[e] = s[0], xd[e] = s[1], th[e] = s[2], thd[e] = s[3];
  }
  for (int k = 0; k < steps; ++k) {
    bool small = true;
    for (int e = 0; e < n; ++e) small &= th[e] > -SMALL && th[e] < SMALL;
    if (small)
      step<true>(x, xd, th, thd, n, e0, k, envs, resets, policy, obs, action, reward, done, ended);
    else
      step<false>(x, xd, th, thd, n, e0, k, envs, resets, policy, obs, action, reward, done, ended);
  }
}

KF_KERNEL(cartpole, cartpole_block)
