#pragma once
// Structured inputs: values that random draws essentially never produce and that break kernels
// with shortcuts (a skipped zero row, a division by a row's maximum, an early exit on equal
// values, a flush of subnormals, an overflow the exact math does not have). The problem says
// which tensors may be reshaped and how (Problem::structured_rows); the `structured` check of
// the thorough protocol runs each pattern once.
#include <cstdint>
#include <string_view>
#include <vector>

#include "kforge/problem.hpp"

namespace kforge {

enum class Structure {
  zero_rows,           // every third row (and the first) all zeros
  zero_columns,        // every third column (and the first) all zeros
  identical_rows,      // every row a copy of the first
  one_hot_rows,        // each row a single 1 at a random place
  all_equal,           // every element 0.75
  alternating_signs,   // |x| with signs + - + - in memory order
  near_overflow,       // scaled so the largest exact partial result is a quarter of the dtype's max
  subnormal_inputs,    // the first reshaped tensor entirely subnormal (products subnormal too)
  subnormal_products,  // normal inputs whose products fall below the dtype's normal range
  negative_zero,       // zero rows of -0.0 and every fifth element -0.0
};

[[nodiscard]] std::string_view structure_name(Structure s);

// The patterns that apply to a problem at sizes `s` (matrix ones only with a matrix tensor);
// empty when the problem reshapes no tensor.
[[nodiscard]] std::vector<Structure> structures_for(const Problem& p, const Sizes& s);

// Reshapes the declared input tensors of `inst` (drawn by make_instance) with pattern `st`,
// rounded to the dtype, then lets a problem that derives from StructuredReconditioning
// (kforge/structured_reconditioning.hpp: the signature kernels) condition them again. `seed`
// places the one-hot elements.
void apply_structure(const Problem& p, Structure st, Instance& inst, std::uint64_t seed);

}  // namespace kforge
