// Symbolic differentiation of a lazy-reduction formula in one of its pair terms, with the small
// simplifier that keeps the emitted C compact (a derivative built naively is mostly "* 0" and
// "+ 0"), and a printer back to the formula language.
#include <cmath>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/formula.hpp"

namespace kforge {

using Node = Formula::Node;
using Kind = Formula::Kind;
using Ptr = std::shared_ptr<const Node>;

class FormulaDifferentiator {
 public:
  FormulaDifferentiator(const Formula& f, int term) : f_(f), term_(term) {}

  Formula run() {
    Formula d;
    d.root_ = diff(*f_.root_);
    d.terms_ = f_.terms_;
    d.scalars_ = f_.scalars_;
    d.text_ = print(*d.root_);
    return d;
  }

 private:
  static Ptr num(double v) {
    auto n = std::make_shared<Node>();
    n->kind = Kind::number, n->number = v;
    return n;
  }
  static bool is(const Ptr& p, double v) { return p->kind == Kind::number && p->number == v; }
  static bool both_numbers(const Ptr& a, const Ptr& b) {
    return a->kind == Kind::number && b && b->kind == Kind::number;
  }
  static Ptr make(Kind k, Ptr a, Ptr b = {}) {
    auto n = std::make_shared<Node>();
    n->kind = k, n->a = std::move(a), n->b = std::move(b);
    return n;
  }
  // Constructors that simplify as they build.
  static Ptr neg(Ptr a) {
    if (a->kind == Kind::number) return num(-a->number);
    if (a->kind == Kind::neg) return a->a;
    return make(Kind::neg, std::move(a));
  }
  static Ptr add(Ptr a, Ptr b) {
    if (is(a, 0)) return b;
    if (is(b, 0)) return a;
    if (both_numbers(a, b)) return num(a->number + b->number);
    if (b->kind == Kind::neg) return make(Kind::sub, std::move(a), b->a);
    return make(Kind::add, std::move(a), std::move(b));
  }
  static Ptr sub(Ptr a, Ptr b) {
    if (is(b, 0)) return a;
    if (is(a, 0)) return neg(std::move(b));
    if (both_numbers(a, b)) return num(a->number - b->number);
    return make(Kind::sub, std::move(a), std::move(b));
  }
  static Ptr mul(Ptr a, Ptr b) {
    if (is(a, 0) || is(b, 0)) return num(0);
    if (is(a, 1)) return b;
    if (is(b, 1)) return a;
    if (is(a, -1)) return neg(std::move(b));
    if (is(b, -1)) return neg(std::move(a));
    if (both_numbers(a, b)) return num(a->number * b->number);
    if (a->kind == Kind::neg && b->kind == Kind::neg) return mul(a->a, b->a);
    if (a->kind == Kind::neg) return neg(mul(a->a, std::move(b)));
    if (b->kind == Kind::neg) return neg(mul(std::move(a), b->a));
    if (b->kind == Kind::div && is(b->a, 1)) return div(std::move(a), b->b);  // a * (1/c) = a/c
    return make(Kind::mul, std::move(a), std::move(b));
  }
  static Ptr div(Ptr a, Ptr b) {
    if (is(a, 0)) return num(0);
    if (is(b, 1)) return a;
    if (both_numbers(a, b)) return num(a->number / b->number);
    if (a->kind == Kind::neg) return neg(div(a->a, std::move(b)));
    if (a->kind == Kind::number && a->number < 0) return neg(div(num(-a->number), std::move(b)));
    return make(Kind::div, std::move(a), std::move(b));
  }
  static Ptr pow(Ptr a, Ptr b) {
    if (is(b, 1)) return a;
    if (is(b, 0)) return num(1);
    if (both_numbers(a, b)) return num(std::pow(a->number, b->number));
    return make(Kind::pow, std::move(a), std::move(b));
  }

  Ptr diff(const Node& n) {
    // Shared subtrees as pointers into the original tree: the derivative reuses them.
    auto self = [&](const Ptr& p) { return p; };
    switch (n.kind) {
      case Kind::number:
      case Kind::scalar: return num(0);
      case Kind::term: return num(n.term == term_ ? 1 : 0);
      case Kind::neg: return neg(diff(*n.a));
      case Kind::add: return add(diff(*n.a), diff(*n.b));
      case Kind::sub: return sub(diff(*n.a), diff(*n.b));
      case Kind::mul: return add(mul(diff(*n.a), self(n.b)), mul(self(n.a), diff(*n.b)));
      case Kind::div: {
        // (a/b)' = a'/b - a b' / b^2
        const Ptr da = diff(*n.a), db = diff(*n.b);
        return sub(div(da, n.b), div(mul(n.a, db), mul(n.b, n.b)));
      }
      case Kind::pow: {
        const Ptr da = diff(*n.a), db = diff(*n.b);
        // Constant exponent: b a^(b-1) a'. Otherwise a^b (b' log a + b a'/a).
        if (is(db, 0)) return mul(mul(n.b, pow(n.a, sub(n.b, num(1)))), da);
        const Ptr whole = make(Kind::pow, n.a, n.b);
        return mul(whole, add(mul(db, make(Kind::log, n.a)), div(mul(n.b, da), n.a)));
      }
      case Kind::exp: return mul(make(Kind::exp, n.a), diff(*n.a));
      case Kind::log: return div(diff(*n.a), n.a);
      case Kind::sqrt: return div(diff(*n.a), mul(num(2), make(Kind::sqrt, n.a)));
      case Kind::abs:
      case Kind::min:
      case Kind::max: {
        const char* name = n.kind == Kind::abs ? "abs" : n.kind == Kind::min ? "min" : "max";
        // Only where the argument depends on the term: abs(s) of a scalar is a constant.
        if (is(diff(*n.a), 0) && (!n.b || is(diff(*n.b), 0))) return num(0);
        throw UsageError(fmt::format(
            "formula '{}': no gradient through {}(): it is not differentiable everywhere and kforge "
            "has no subgradients; write it smoothly (e.g. sqrt(u*u + eps) for abs(u))",
            f_.text(), name));
      }
    }
    return num(0);
  }

  // Fully parenthesized: the text parses back to the same tree's value.
  std::string print(const Node& n) const {
    static const char* kTerm[] = {"sqdist(x,y)", "dot(x,y)"};
    auto p = [this](const Ptr& q) { return print(*q); };
    switch (n.kind) {
      case Kind::number: return n.number < 0 ? fmt::format("({})", n.number) : fmt::format("{}", n.number);
      case Kind::scalar: return n.name;
      case Kind::term: return kTerm[static_cast<int>(f_.terms_[static_cast<std::size_t>(n.term)])];
      case Kind::neg: return "(-" + p(n.a) + ")";
      case Kind::add: return "(" + p(n.a) + " + " + p(n.b) + ")";
      case Kind::sub: return "(" + p(n.a) + " - " + p(n.b) + ")";
      case Kind::mul: return "(" + p(n.a) + " * " + p(n.b) + ")";
      case Kind::div: return "(" + p(n.a) + " / " + p(n.b) + ")";
      case Kind::pow: return "pow(" + p(n.a) + ", " + p(n.b) + ")";
      case Kind::exp: return "exp(" + p(n.a) + ")";
      case Kind::log: return "log(" + p(n.a) + ")";
      case Kind::sqrt: return "sqrt(" + p(n.a) + ")";
      case Kind::abs: return "abs(" + p(n.a) + ")";
      case Kind::min: return "min(" + p(n.a) + ", " + p(n.b) + ")";
      case Kind::max: return "max(" + p(n.a) + ", " + p(n.b) + ")";
    }
    return {};
  }

  const Formula& f_;
  int term_;
};

Formula Formula::derivative(int term) const { return FormulaDifferentiator(*this, term).run(); }

}  // namespace kforge
