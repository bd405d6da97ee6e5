// The lazy-reduction formula: parser, double interpreter with error scales, C emitter.
#include "kforge/formula.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "kforge/error.hpp"

namespace kforge {

using Node = Formula::Node;
using Kind = Formula::Kind;
using Ptr = std::shared_ptr<const Node>;

// Recursive descent over the text; every error names the position and what was expected.
class FormulaParser {
 public:
  explicit FormulaParser(Formula& f) : f_(f), t_(f.text_) {}

  Ptr parse() {
    Ptr r = sum();
    skip();
    if (p_ != t_.size()) fail("an operator or the end");
    return r;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) {
    skip();
    const std::string found = p_ < t_.size() ? "'" + t_.substr(p_, 12) + "'" : "the end";
    throw UsageError(fmt::format("formula '{}': at position {}: expected {}, found {}", t_, p_ + 1,
                                 expected, found));
  }
  void skip() { while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_; }
  bool eat(char c) {
    skip();
    if (p_ < t_.size() && t_[p_] == c) return ++p_, true;
    return false;
  }
  void expect(char c) { if (!eat(c)) fail(std::string("'") + c + "'"); }
  static Ptr make(Kind k, Ptr a = {}, Ptr b = {}) {
    auto n = std::make_shared<Node>();
    n->kind = k, n->a = std::move(a), n->b = std::move(b);
    return n;
  }

  Ptr sum() {
    Ptr l = prod();
    for (;;) {
      if (eat('+')) l = make(Kind::add, l, prod());
      else if (eat('-')) l = make(Kind::sub, l, prod());
      else return l;
    }
  }
  Ptr prod() {
    Ptr l = unary();
    for (;;) {
      if (eat('*')) l = make(Kind::mul, l, unary());
      else if (eat('/')) l = make(Kind::div, l, unary());
      else return l;
    }
  }
  Ptr unary() {
    if (eat('-')) return make(Kind::neg, unary());
    Ptr a = atom();
    if (eat('^')) return make(Kind::pow, a, unary());
    return a;
  }
  std::string name() {
    skip();
    const std::size_t b = p_;
    while (p_ < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_])) || t_[p_] == '_')) ++p_;
    return t_.substr(b, p_ - b);
  }
  Ptr atom() {
    skip();
    if (eat('(')) {
      Ptr r = sum();
      expect(')');
      return r;
    }
    if (p_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[p_])) || t_[p_] == '.')) {
      const char* b = t_.c_str() + p_;
      char* e = nullptr;
      const double v = std::strtod(b, &e);
      if (e == b) fail("a number");
      p_ += static_cast<std::size_t>(e - b);
      auto n = std::make_shared<Node>();
      n->kind = Kind::number, n->number = v;
      return n;
    }
    const std::size_t at = p_;
    const std::string id = name();
    if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])))
      fail("a number, a name, '-' or '('");
    if (!eat('(')) {
      if (id == "x" || id == "y") { p_ = at; fail("x and y only inside sqdist(x,y) or dot(x,y)"); }
      if (std::find(f_.scalars_.begin(), f_.scalars_.end(), id) == f_.scalars_.end())
        f_.scalars_.push_back(id);
      auto n = std::make_shared<Node>();
      n->kind = Kind::scalar, n->name = id;
      return n;
    }
    if (id == "sqdist" || id == "dot") {
      if (name() != "x") fail("x");
      expect(',');
      if (name() != "y") fail("y");
      expect(')');
      const auto term = id == "sqdist" ? Formula::Term::sqdist : Formula::Term::dot;
      auto n = std::make_shared<Node>();
      n->kind = Kind::term;
      const auto it = std::find(f_.terms_.begin(), f_.terms_.end(), term);
      n->term = static_cast<int>(it - f_.terms_.begin());
      if (it == f_.terms_.end()) f_.terms_.push_back(term);
      return n;
    }
    static const std::pair<const char*, Kind> one[] = {
        {"exp", Kind::exp}, {"log", Kind::log}, {"sqrt", Kind::sqrt}, {"abs", Kind::abs}};
    static const std::pair<const char*, Kind> two[] = {
        {"pow", Kind::pow}, {"min", Kind::min}, {"max", Kind::max}};
    for (const auto& [n, k] : one)
      if (id == n) {
        Ptr a = sum();
        expect(')');
        return make(k, a);
      }
    for (const auto& [n, k] : two)
      if (id == n) {
        Ptr a = sum();
        expect(',');
        Ptr b = sum();
        expect(')');
        return make(k, a, b);
      }
    p_ = at;
    fail("a function (exp log sqrt abs pow min max sqdist dot)");
  }

  Formula& f_;
  const std::string& t_;
  std::size_t p_ = 0;
};

Formula Formula::parse(const std::string& text) {
  Formula f;
  f.text_ = text;
  f.root_ = FormulaParser(f).parse();
  return f;
}

namespace {

using Value = Formula::Value;

Value eval_node(const Node& n, const std::vector<Value>& terms, const Scalars& s);

// Underflow: an fp32 result below the normal range errs by up to 2^-126 absolute (flushed to
// zero on devices that flush), whatever its relative error scale says: 2^-102 in units of u.
constexpr double kUnderflow = 0x1p-102;

Value eval_op(const Node& n, const std::vector<Value>& terms, const Scalars& s) {
  auto sub = [&](const Ptr& p) { return eval_node(*p, terms, s); };
  switch (n.kind) {
    case Kind::number: return {n.number, std::fabs(n.number)};
    case Kind::scalar: {
      const auto it = s.find(n.name);
      if (it == s.end()) throw UsageError("formula scalar '" + n.name + "' has no value: give it with --scalar " + n.name + "=VALUE");
      return {it->second, std::fabs(it->second)};
    }
    case Kind::term: return terms[static_cast<std::size_t>(n.term)];
    case Kind::neg: { const Value a = sub(n.a); return {-a.v, a.err}; }
    default: break;
  }
  const Value a = sub(n.a);
  if (n.kind == Kind::exp) { const double v = std::exp(a.v); return {v, v * (a.err + 2)}; }
  if (n.kind == Kind::log) { const double v = std::log(a.v); return {v, a.err / std::fabs(a.v) + 2 * std::fabs(v) + 1}; }
  if (n.kind == Kind::sqrt) {
    const double v = std::sqrt(a.v);
    return {v, (v > 0 ? a.err / (2 * v) : std::sqrt(a.err)) + v};
  }
  if (n.kind == Kind::abs) return {std::fabs(a.v), a.err};
  const Value b = sub(n.b);
  switch (n.kind) {
    case Kind::add: return {a.v + b.v, a.err + b.err + std::fabs(a.v + b.v)};
    case Kind::sub: return {a.v - b.v, a.err + b.err + std::fabs(a.v - b.v)};
    case Kind::mul: return {a.v * b.v, a.err * std::fabs(b.v) + b.err * std::fabs(a.v) + std::fabs(a.v * b.v)};
    case Kind::div: {
      const double v = a.v / b.v;
      return {v, a.err / std::fabs(b.v) + b.err * std::fabs(v / b.v) + std::fabs(v)};
    }
    case Kind::pow: {
      const double v = std::pow(a.v, b.v);
      const double da = a.v != 0 ? std::fabs(b.v * v / a.v) * a.err : 0;
      const double db = a.v > 0 ? std::fabs(v * std::log(a.v)) * b.err : 0;
      return {v, da + db + 2 * std::fabs(v)};
    }
    case Kind::min: return {std::min(a.v, b.v), std::max(a.err, b.err)};
    case Kind::max: return {std::max(a.v, b.v), std::max(a.err, b.err)};
    default: return {0, 0};
  }
}

Value eval_node(const Node& n, const std::vector<Value>& terms, const Scalars& s) {
  Value r = eval_op(n, terms, s);
  if (n.kind != Kind::number && n.kind != Kind::scalar && n.kind != Kind::neg) r.err += kUnderflow;
  return r;
}

std::string emit_node(const Node& n) {
  auto sub = [](const Ptr& p) { return emit_node(*p); };
  switch (n.kind) {
    case Kind::number: return fmt::format("{:.9e}f", n.number);  // "1f" is not C; "1.0e+00f" is
    case Kind::scalar: return n.name;
    case Kind::term: return "t" + std::to_string(n.term);
    case Kind::neg: return "(-" + sub(n.a) + ")";
    case Kind::add: return "(" + sub(n.a) + " + " + sub(n.b) + ")";
    case Kind::sub: return "(" + sub(n.a) + " - " + sub(n.b) + ")";
    case Kind::mul: return "(" + sub(n.a) + " * " + sub(n.b) + ")";
    case Kind::div: return "(" + sub(n.a) + " / " + sub(n.b) + ")";
    case Kind::pow: return "powf(" + sub(n.a) + ", " + sub(n.b) + ")";
    case Kind::exp: return "expf(" + sub(n.a) + ")";
    case Kind::log: return "logf(" + sub(n.a) + ")";
    case Kind::sqrt: return "sqrtf(" + sub(n.a) + ")";
    case Kind::abs: return "fabsf(" + sub(n.a) + ")";
    case Kind::min: return "fminf(" + sub(n.a) + ", " + sub(n.b) + ")";
    case Kind::max: return "fmaxf(" + sub(n.a) + ", " + sub(n.b) + ")";
  }
  return {};
}

}  // namespace

Formula::Value Formula::eval(const double* x, const double* y, int D, const Scalars& s) const {
  std::vector<Value> t;
  for (const Term term : terms_) {
    // D products (or squared differences) summed: gamma_D-style error over the absolute terms,
    // plus the rounding of each difference.
    double v = 0, a = 0;
    for (int d = 0; d < D; ++d) {
      const double p = term == Term::sqdist ? (x[d] - y[d]) * (x[d] - y[d]) : x[d] * y[d];
      v += p;
      a += std::fabs(p);
    }
    t.push_back({v, (D + 3) * a});
  }
  return eval_node(*root_, t, s);
}

std::string Formula::emit_c() const { return emit_node(*root_); }

}  // namespace kforge
