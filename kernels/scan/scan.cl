// scan for the opencl backend: every problem of kernels/scan/ is the linear recurrence
//     x = a_t * x + c_t      applied in scan order (forward t = 0..time-1, reverse time-1..0)
// with per-step coefficients that each problem forms from its inputs (coef below).
//
// One work-group per sequence walks it in tiles of WG*ITEMS steps. Per tile:
//   1. each work-item composes its ITEMS consecutive steps into one affine map (A, X)
//   2. the work-group scans the WG maps in local memory (Hillis-Steele, log2(WG) rounds of
//      (A2, X2) after (A1, X1) = (A2*A1, A2*X1 + X2)); item i's entering value is the prefix
//      of items < i applied to the tile's entering value
//   3. each work-item runs its steps again from that value and writes x; the tile's leaving
//      value enters the next tile
// Parallel across batch (work-groups) and, within a sequence, across its WG work-items.
//
// Parameters (all #defines):
//   WG     work-items per sequence (the local size)
//   ITEMS  consecutive steps per work-item per tile

#ifndef ITEMS  // scan_nstep's spec does not set it: it does not use the scan
#define ITEMS 1
#endif
#define TILE (WG * ITEMS)

// The problem's tensors and scalars: inputs in ABI order, the output, the sizes it needs.
typedef struct {
  __global const float *in0, *in1, *in2, *in3, *in4, *in5;
  __global float* out;
  int time;
  float gamma, lambda, rho_bar, c_bar;
} Args;

enum { LINEAR, DISCOUNTED_RETURN, GAE, TD_LAMBDA, VTRACE, RETRACE, TREE_BACKUP };

// V[t+1] of step t (inputs r, v, done, boot), with V[time] = boot.
inline float next_v(const Args* g, int s, int t, long i) {
  return t + 1 < g->time ? g->in1[i + 1] : g->in3[s];
}

// The value entering sequence s.
inline float enter(const Args* g, int op, int s) {
  switch (op) {
    case DISCOUNTED_RETURN: return g->in2[s];  // (r, done, boot)
    case TD_LAMBDA: return g->in3[s];          // (r, v, done, boot)
    default: return 0.0f;
  }
}

// Step t of sequence s: (a, c).
inline float2 coef(const Args* g, int op, int s, int t) {
  const long i = (long)s * g->time + t;
  switch (op) {
    case LINEAR: return (float2)(g->in0[i], g->in1[i]);
    case DISCOUNTED_RETURN: return (float2)(g->gamma * (1.0f - g->in1[i]), g->in0[i]);
    case GAE: {
      const float m = g->gamma * (1.0f - g->in2[i]);
      return (float2)(m * g->lambda, g->in0[i] + m * next_v(g, s, t, i) - g->in1[i]);
    }
    case TD_LAMBDA: {
      const float m = g->gamma * (1.0f - g->in2[i]);
      return (float2)(m * g->lambda, g->in0[i] + m * (1.0f - g->lambda) * next_v(g, s, t, i));
    }
    case VTRACE: {  // (r, v, done, boot, ratio): x = vs - V
      const float m = g->gamma * (1.0f - g->in2[i]), w = g->in4[i];
      return (float2)(m * g->lambda * fmin(g->c_bar, w),
                      fmin(g->rho_bar, w) * (g->in0[i] + m * next_v(g, s, t, i) - g->in1[i]));
    }
    default: {  // RETRACE, TREE_BACKUP (r, q, eq, done, boot, ratio or pi)
      const float m = g->gamma * (1.0f - g->in3[i]);
      if (t + 1 == g->time) return (float2)(0.0f, g->in0[i] + m * g->in4[s]);
      const float w = g->in5[i + 1];
      const float trace = g->lambda * (op == TREE_BACKUP ? w : fmin(1.0f, w));
      return (float2)(m * trace, g->in0[i] + m * (g->in2[i + 1] - trace * g->in1[i + 1]));
    }
  }
}

// The output written for the scan's value x at element i.
inline float result(const Args* g, int op, long i, float x) {
  return op == VTRACE ? g->in1[i] + x : x;
}

inline void scan_sequence(const Args* g, int op, int reverse, __local float* la, __local float* lx) {
  const int s = get_group_id(0), lid = get_local_id(0), time = g->time;
  float carry = enter(g, op, s);
  for (int base = 0; base < time; base += TILE) {
    const int first = base + lid * ITEMS;  // this item's steps, in scan order
    float A = 1.0f, X = 0.0f;
    for (int n = 0; n < ITEMS; ++n) {
      const int st = first + n;
      if (st < time) {
        const float2 ac = coef(g, op, s, reverse ? time - 1 - st : st);
        A *= ac.x;
        X = ac.x * X + ac.y;
      }
    }
    la[lid] = A;
    lx[lid] = X;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = 1; d < WG; d <<= 1) {
      float pa = 1.0f, px = 0.0f;
      if (lid >= d) pa = la[lid - d], px = lx[lid - d];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (lid >= d) {  // this item's map after the earlier one
        X = A * px + X;
        A = A * pa;
        la[lid] = A;
        lx[lid] = X;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    float x = lid > 0 ? la[lid - 1] * carry + lx[lid - 1] : carry;
    const float leaving = la[WG - 1] * carry + lx[WG - 1];
    barrier(CLK_LOCAL_MEM_FENCE);  // la, lx are rewritten by the next tile
    for (int n = 0; n < ITEMS; ++n) {
      const int st = first + n;
      if (st < time) {
        const int t = reverse ? time - 1 - st : st;
        const float2 ac = coef(g, op, s, t);
        x = ac.x * x + ac.y;
        const long i = (long)s * time + t;
        g->out[i] = result(g, op, i, x);
      }
    }
    carry = leaving;
  }
}

// ---- entry points: the problem's ABI (tensors, sizes, scalars) ---------------------------------
#define LOCALS __local float la[WG], lx[WG]

__kernel void scan_linear(__global const float* a, __global const float* b, __global float* x,
                          int batch, int time) {
  LOCALS;
  const Args g = {a, b, 0, 0, 0, 0, x, time, 0.0f, 0.0f, 0.0f, 0.0f};
  scan_sequence(&g, LINEAR, 0, la, lx);
}

__kernel void scan_linear_rev(__global const float* a, __global const float* b, __global float* x,
                              int batch, int time) {
  LOCALS;
  const Args g = {a, b, 0, 0, 0, 0, x, time, 0.0f, 0.0f, 0.0f, 0.0f};
  scan_sequence(&g, LINEAR, 1, la, lx);
}

__kernel void scan_discounted_return(__global const float* r, __global const float* done,
                                     __global const float* boot, __global float* ret, int batch,
                                     int time, float gamma) {
  LOCALS;
  const Args g = {r, done, boot, 0, 0, 0, ret, time, gamma, 0.0f, 0.0f, 0.0f};
  scan_sequence(&g, DISCOUNTED_RETURN, 1, la, lx);
}

__kernel void scan_gae(__global const float* r, __global const float* v, __global const float* done,
                       __global const float* boot, __global float* adv, int batch, int time,
                       float gamma, float lambda) {
  LOCALS;
  const Args g = {r, v, done, boot, 0, 0, adv, time, gamma, lambda, 0.0f, 0.0f};
  scan_sequence(&g, GAE, 1, la, lx);
}

__kernel void scan_td_lambda(__global const float* r, __global const float* v,
                             __global const float* done, __global const float* boot,
                             __global float* ret, int batch, int time, float gamma, float lambda) {
  LOCALS;
  const Args g = {r, v, done, boot, 0, 0, ret, time, gamma, lambda, 0.0f, 0.0f};
  scan_sequence(&g, TD_LAMBDA, 1, la, lx);
}

__kernel void scan_vtrace(__global const float* r, __global const float* v,
                          __global const float* done, __global const float* boot,
                          __global const float* ratio, __global float* vs, int batch, int time,
                          float gamma, float lambda, float rho_bar, float c_bar) {
  LOCALS;
  const Args g = {r, v, done, boot, ratio, 0, vs, time, gamma, lambda, rho_bar, c_bar};
  scan_sequence(&g, VTRACE, 1, la, lx);
}

__kernel void scan_retrace(__global const float* r, __global const float* q,
                           __global const float* eq, __global const float* done,
                           __global const float* boot, __global const float* ratio,
                           __global float* qret, int batch, int time, float gamma, float lambda) {
  LOCALS;
  const Args g = {r, q, eq, done, boot, ratio, qret, time, gamma, lambda, 0.0f, 0.0f};
  scan_sequence(&g, RETRACE, 1, la, lx);
}

__kernel void scan_tree_backup(__global const float* r, __global const float* q,
                               __global const float* eq, __global const float* done,
                               __global const float* boot, __global const float* pi,
                               __global float* qret, int batch, int time, float gamma,
                               float lambda) {
  LOCALS;
  const Args g = {r, q, eq, done, boot, pi, qret, time, gamma, lambda, 0.0f, 0.0f};
  scan_sequence(&g, TREE_BACKUP, 1, la, lx);
}

// n-step returns are a windowed sum, not a recurrence (README.md): one work-item per output,
// each reading its own window of min(n, time-t) steps.
__kernel void scan_nstep(__global const float* r, __global const float* v,
                         __global const float* done, __global const float* boot,
                         __global float* ret, int batch, int time, int n, float gamma) {
  const long i = get_global_id(0);
  if (i >= (long)batch * time) return;
  const int s = (int)(i / time), t = (int)(i % time), h = min(n, time - t);
  float g = 0.0f, discount = 1.0f;
  for (int k = 0; k < h; ++k) {
    g += discount * r[i + k];
    discount *= gamma * (1.0f - done[i + k]);
  }
  ret[i] = g + discount * (t + h < time ? v[i + h] : boot[s]);
}
