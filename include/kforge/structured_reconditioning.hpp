#pragma once
// A problem whose inputs must stay conditioned whatever the `structured` check's patterns do to
// them (the signature kernels: a path's total variation bounds the PDE's growth, exp(TV_x TV_y),
// and a one-hot or zig-zag path would leave it) also derives from StructuredReconditioning. The
// verifier calls it after each pattern has reshaped the inputs (src/verify/structured_inputs.cpp);
// it must keep what the pattern made (zeros, equal values, signs, -0.0), e.g. by scaling with a
// power of two.
#include "kforge/problem.hpp"

namespace kforge {

class StructuredReconditioning {
 public:
  virtual ~StructuredReconditioning() = default;
  virtual void recondition_structured(Instance& inst) const = 0;
};

}  // namespace kforge
