#pragma once
// What the family's two problem files share (problem.cpp: the reductions; grad_problem.cpp:
// their gradients).
#include <memory>
#include <string>

#include "kforge/formula.hpp"
#include "kforge/problem.hpp"

namespace kforge {

// Scalars become kernel parameters by name: they may not shadow the kernels' own names.
// Throws UsageError naming the scalar.
void check_lazy_scalar_names(const Formula& f);

// The gradient of L = sum_i G_i sum_j f(x_i, y_j) b_j with respect to X (wrt 'x', an (N,D)
// output), Y ('y', (M,D)) or B ('b', (M)). trial_values: "<scalar><trial % 2>" -> value.
std::shared_ptr<Problem> make_lazy_grad_problem(std::string name, const std::string& formula, char wrt,
                                                Scalars trial_values);

}  // namespace kforge
