#pragma once
// Lazy-reduction formulas: a scalar expression f(x_i, y_j) over two D-dimensional points, named
// real scalars (a bandwidth `s`) and constants, reduced over j (kernels/lazy_reduce). Grammar,
// loosest first:
//   sum: prod (('+'|'-') prod)*      prod: unary (('*'|'/') unary)*      unary: '-' unary | pow
//   pow: atom ('^' unary)?           atom: NUMBER | NAME | NAME '(' args ')' | '(' sum ')'
//   functions: exp log sqrt abs (1 argument), pow min max (2), sqdist(x,y) dot(x,y)
// The points appear only inside sqdist and dot ("pair terms"), so a kernel computes each pair
// term once per (i, j) in a vectorizable loop over the D coordinates and then the scalar rest.
// Not src/core's Expr: that one is integer-only (sizes and parameters) with no real literals,
// no vectors and a private tree; this tree is walked by a double interpreter and a code emitter.
#include <memory>
#include <string>
#include <vector>

#include "kforge/problem.hpp"

namespace kforge {

class Formula {
 public:
  enum class Kind { number, scalar, term, neg, add, sub, mul, div, pow, exp, log, sqrt, abs, min, max };
  enum class Term { sqdist, dot };
  struct Node {
    Kind kind;
    double number = 0;        // number
    std::string name;         // scalar
    int term = 0;             // term: index into terms()
    std::shared_ptr<const Node> a, b;
  };

  // Throws UsageError: "formula '...': at position P: expected E, found 'T'".
  static Formula parse(const std::string& text);
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] const std::vector<std::string>& scalar_names() const { return scalars_; }
  [[nodiscard]] const std::vector<Term>& terms() const { return terms_; }

  // f(x, y) in double and its first-order rounding-error scale in units of the roundoff of
  // the arithmetic (|fl(f) - f| <~ u * err): each operation's propagated error plus its own
  // rounding; exp/log/pow count 2 ulps (libm's fp32 functions are within that).
  struct Value { double v, err; };
  [[nodiscard]] Value eval(const double* x, const double* y, int D, const Scalars& s) const;
  // A C expression over pair terms named t0, t1, ... and the scalars by name, in float:
  // the same text compiles as C++, OpenCL C and CUDA.
  [[nodiscard]] std::string emit_c() const;

  // d f / d t_k, the derivative in pair term k (an index into terms()), as a formula over the
  // same terms and scalars (so its t0, t1 mean the same), simplified: constants folded, 0 and 1
  // absorbed, pow with a constant exponent by the power rule. Its text() is the derivative in
  // the formula language. The chain to x and y (d sqdist/dx = 2(x - y), d dot/dx = y) is the
  // caller's: kernels/lazy_reduce's gradient problems. Throws UsageError for abs, min and max
  // (not differentiable everywhere: kforge has no subgradients).
  [[nodiscard]] Formula derivative(int term) const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
  std::vector<std::string> scalars_;
  std::vector<Term> terms_;
  friend class FormulaParser;
  friend class FormulaDifferentiator;
};

}  // namespace kforge
