#pragma once
// Private to src/dist: the multi-rank problems built on library problems (multirank.hpp), by
// name for run_overlap and follow_overlap (overlap.cpp).
#include <string>

#include "dist/multirank.hpp"

namespace kforge::dist {

const multirank::App& moe_dist_app();  // moe_dist.cpp
const multirank::App& gnn_dist_app();  // gnn_dist.cpp
const multirank::App& kernel_kmeans_dist_app();  // kernel_kmeans_dist.cpp

// The app named `problem`, or null for the GEMMs of overlap.cpp.
inline const multirank::App* multirank_app(const std::string& problem) {
  if (problem == "moe_dist") return &moe_dist_app();
  if (problem == "gnn_dist") return &gnn_dist_app();
  if (problem == "kernel_kmeans_dist") return &kernel_kmeans_dist_app();
  return nullptr;
}

}  // namespace kforge::dist
