// cartpole for the cuda backend (see problem.cpp for the environment and the tensors).
// One thread per environment runs all `steps` steps (fused): the state stays in registers,
// only obs/action/reward/done are written, and a reset state is read only where an episode
// ends. The arithmetic is the reference's, in the same order.
//
// Parameters (all #defines):
//   WG   threads per block
typedef kf_storage T;  // float, or double for fp64 (the prelude's)

#define GRAVITY ((T)9.8)
#define MASS_POLE ((T)0.1)
#define TOTAL_MASS ((T)1.1)
#define HALF_LENGTH ((T)0.5)
#define POLE_MASS_LENGTH ((T)0.05)
#define FORCE ((T)10.0)
#define TAU ((T)0.02)
#define X_LIMIT ((T)2.4)
#define THETA_LIMIT ((T)(12 * 2 * 3.14159265358979323846 / 360))

extern "C" __global__ void cartpole(const T* __restrict__ state0, const T* __restrict__ resets,
                       const T* __restrict__ policy, T* __restrict__ obs, T* __restrict__ action,
                       T* __restrict__ reward, T* __restrict__ done, int envs, int steps) {
  const int e = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (e >= envs) return;
  const T w0 = policy[0], w1 = policy[1], w2 = policy[2], w3 = policy[3], b = policy[4];
  T x = state0[(long long)e * 4], xd = state0[(long long)e * 4 + 1];
  T th = state0[(long long)e * 4 + 2], thd = state0[(long long)e * 4 + 3];
  for (int k = 0; k < steps; ++k) {
    const long long i = (long long)k * envs + e;
    const T v = b + w0 * x + w1 * xd + w2 * th + w3 * thd;
    const int right = v > (T)0;
    const T force = right ? FORCE : -FORCE;
    T sn, c;
    sincos(th, &sn, &c);
    const T temp = (force + POLE_MASS_LENGTH * thd * thd * sn) / TOTAL_MASS;
    const T den = HALF_LENGTH * ((T)(4.0 / 3.0) - MASS_POLE * c * c / TOTAL_MASS);
    const T theta_acc = (GRAVITY * sn - c * temp) / den;
    const T x_acc = temp - POLE_MASS_LENGTH * theta_acc * c / TOTAL_MASS;
    x = x + TAU * xd;
    xd = xd + TAU * x_acc;
    th = th + TAU * thd;
    thd = thd + TAU * theta_acc;
    const int d = (x < -X_LIMIT) | (x > X_LIMIT) | (th < -THETA_LIMIT) | (th > THETA_LIMIT);
    if (d) {
      x = resets[i * 4], xd = resets[i * 4 + 1], th = resets[i * 4 + 2], thd = resets[i * 4 + 3];
    }
    obs[i * 4] = x, obs[i * 4 + 1] = xd, obs[i * 4 + 2] = th, obs[i * 4 + 3] = thd;
    action[i] = right ? (T)1 : (T)0;
    reward[i] = (T)1;
    done[i] = d ? (T)1 : (T)0;
  }
}
