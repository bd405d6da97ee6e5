#pragma once
// Training data straight from the results store: every passed evaluation of one problem, at
// whatever sizes it was measured, as a row of the problem's features at its sizes joined with
// its configuration's (the rows `sized_dataset` makes from recorded spaces), and its median time.
#include <string>
#include <vector>

#include "kforge/predict.hpp"
#include "kforge/problem.hpp"
#include "kforge/store.hpp"

namespace kforge {

struct StoreDataset {
  Dataset data;
  std::vector<Sizes> sizes;  // the distinct sizes the rows come from, in the order first met
  int skipped = 0;           // evaluations left out: not passed, no time, or another dtype
};

// `evaluations` of `problem` (others are an error: the caller queried by problem). Only passed
// evaluations with a median time, of `dtype`, make rows.
[[nodiscard]] StoreDataset store_dataset(const Problem& problem, DType dtype,
                                         const std::vector<StoredEvaluation>& evaluations);

}  // namespace kforge
