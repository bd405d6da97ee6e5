#pragma once
// What the family's two problem files share (problem.cpp: the reductions; grad_problem.cpp:
// their gradients).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kforge/formula.hpp"
#include "kforge/problem.hpp"

namespace kforge {

// Scalars become kernel parameters by name: they may not shadow the kernels' own names.
// Throws UsageError naming the scalar.
void check_lazy_scalar_names(const Formula& f);

// The formula's #defines every template of the family reads: LZ_NTERMS, LZ_TERM0/1 (0 sqdist,
// 1 dot), LZ_F(t0, t1) (the formula as C) and LZ_SCALAR_PARAMS (its scalars as parameters).
std::string formula_defines(const Formula& f);

// The family's specs `<stem>_<cpu|opencl|cuda>.json` and their templates, each template behind
// `prefix`, written once under the cache folder (keyed by everything written) for problem
// `name`; `adjust` may change a spec before it is written. Returns the specs' paths.
std::vector<std::string> write_generated_specs(const std::string& stem, const std::string& name,
                                               const std::string& prefix,
                                               const std::function<void(nlohmann::json&)>& adjust = {});

// Whether `f` is the library's Gaussian exp(-sqdist(x,y)/s), however written (compared as
// emitted C): the structured patterns' near_overflow scale for the weights rests on its bound
// (|f| <= 1, |df/dx| <= sqrt(2/s) e^-1/2), which a formula in general does not have.
inline bool is_library_gaussian(const Formula& f) {
  static const std::string gaussian = Formula::parse("exp(-sqdist(x,y)/s)").emit_c();
  return f.emit_c() == gaussian;
}

// The gradient with respect to X (wrt 'x', an (N,D) output), Y ('y', (M,D)) or B ('b', (M)) of
//   reduce "sum":       L = sum_i G_i sum_j f(x_i, y_j) b_j
//   reduce "logsumexp": L = sum_i G_i log sum_j exp f(x_i, y_j)   (x and y only; no B, the
//                       forward's LSE (N) is an input instead)
// trial_values: "<scalar><trial % 2>" -> value. Throws UsageError for another reduction or
// grad_b of logsumexp.
std::shared_ptr<Problem> make_lazy_grad_problem(std::string name, const std::string& formula, char wrt,
                                                const std::string& reduce, Scalars trial_values);

// The gradient with respect to X ('x') or Y ('y') of L = sum_i sum_k G_ik v_ik, v_ik the k-th
// smallest f(x_i, y_j) over j (kmin; min: K = 1), through the forward's indices IDX (N,K), an
// input (grad_min_problem.cpp). Throws UsageError for wrt 'b'.
std::shared_ptr<Problem> make_lazy_min_grad_problem(std::string name, const std::string& formula, char wrt, bool kmin);

}  // namespace kforge
