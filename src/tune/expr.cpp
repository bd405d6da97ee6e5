#include "kforge/expr.hpp"

#include <cctype>
#include <set>

#include "kforge/error.hpp"

namespace kforge {

struct Expr::Node {
  enum Kind { kNum, kName, kUnary, kBinary, kCall } kind;
  std::int64_t value = 0;
  std::string name;  // identifier, operator or function name
  std::vector<std::shared_ptr<const Node>> kids;
};

namespace {
using NodeP = std::shared_ptr<const Expr::Node>;

class Parser {
 public:
  explicit Parser(const std::string& t) : text_(t) { next(); }

  NodeP parse_all() {
    NodeP n = parse_or();
    if (!tok_.empty()) fail("unexpected '" + tok_ + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError("bad expression '" + text_ + "': " + why + " at position " +
                     std::to_string(tok_pos_));
  }

  void next() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    tok_pos_ = pos_;
    if (pos_ >= text_.size()) { tok_.clear(); return; }
    const char c = text_[pos_];
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t e = pos_;
      while (e < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[e])) || text_[e] == '_')) ++e;
      tok_ = text_.substr(pos_, e - pos_);
      pos_ = e;
      return;
    }
    static const char* two[] = {"==", "!=", "<=", ">=", "&&", "||", "//"};
    for (const char* op : two)
      if (text_.compare(pos_, 2, op) == 0) { tok_ = op; pos_ += 2; return; }
    if (std::string("+-*/%()<>!,").find(c) == std::string::npos)
      fail(std::string("unexpected character '") + c + "'");
    tok_ = std::string(1, c);
    ++pos_;
  }

  bool accept(const std::string& t) {
    if (tok_ != t) return false;
    next();
    return true;
  }

  static NodeP bin(const std::string& op, NodeP a, NodeP b) {
    return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kBinary, 0, op, {a, b}});
  }

  NodeP parse_or() {
    NodeP n = parse_and();
    while (tok_ == "||" || tok_ == "or") { next(); n = bin("||", n, parse_and()); }
    return n;
  }
  NodeP parse_and() {
    NodeP n = parse_not();
    while (tok_ == "&&" || tok_ == "and") { next(); n = bin("&&", n, parse_not()); }
    return n;
  }
  NodeP parse_not() {
    if (tok_ == "!" || tok_ == "not") {
      next();
      return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kUnary, 0, "!", {parse_not()}});
    }
    return parse_cmp();
  }
  NodeP parse_cmp() {
    NodeP n = parse_sum();
    for (const char* op : {"==", "!=", "<=", ">=", "<", ">"})
      if (tok_ == op) { next(); return bin(op, n, parse_sum()); }
    return n;
  }
  NodeP parse_sum() {
    NodeP n = parse_prod();
    while (tok_ == "+" || tok_ == "-") { const std::string op = tok_; next(); n = bin(op, n, parse_prod()); }
    return n;
  }
  NodeP parse_prod() {
    NodeP n = parse_unary();
    while (tok_ == "*" || tok_ == "/" || tok_ == "//" || tok_ == "%") {
      const std::string op = tok_ == "//" ? "/" : tok_;
      next();
      n = bin(op, n, parse_unary());
    }
    return n;
  }
  NodeP parse_unary() {
    if (accept("-"))
      return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kUnary, 0, "-", {parse_unary()}});
    return parse_atom();
  }
  NodeP parse_atom() {
    if (tok_.empty()) fail("unexpected end");
    if (accept("(")) {
      NodeP n = parse_or();
      if (!accept(")")) fail("expected ')'");
      return n;
    }
    const std::string t = tok_;
    if (std::isdigit(static_cast<unsigned char>(t[0]))) {
      for (char c : t) if (!std::isdigit(static_cast<unsigned char>(c))) fail("bad number '" + t + "'");
      next();
      return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kNum, std::stoll(t), {}, {}});
    }
    if (!std::isalpha(static_cast<unsigned char>(t[0])) && t[0] != '_') fail("unexpected '" + t + "'");
    next();
    if (!accept("(")) return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kName, 0, t, {}});
    static const std::set<std::string> fns = {"min", "max", "ceil_div", "abs"};
    if (!fns.count(t)) fail("unknown function '" + t + "' (known: min, max, ceil_div, abs)");
    std::vector<NodeP> args;
    if (!accept(")")) {
      do { args.push_back(parse_or()); } while (accept(","));
      if (!accept(")")) fail("expected ')' after arguments of " + t);
    }
    const std::size_t want = t == "abs" ? 1 : 2;
    if (args.size() != want) fail(t + " takes " + std::to_string(want) + " argument(s)");
    return std::make_shared<Expr::Node>(Expr::Node{Expr::Node::kCall, 0, t, args});
  }

  const std::string& text_;
  std::size_t pos_ = 0, tok_pos_ = 0;
  std::string tok_;
};

std::int64_t eval_node(const Expr::Node& n, const Bindings& b, const std::string& text) {
  switch (n.kind) {
    case Expr::Node::kNum: return n.value;
    case Expr::Node::kName: {
      auto it = b.find(n.name);
      if (it == b.end()) throw UsageError("expression '" + text + "' reads '" + n.name + "', which is neither a parameter nor a size");
      return it->second;
    }
    case Expr::Node::kUnary: {
      const std::int64_t v = eval_node(*n.kids[0], b, text);
      return n.name == "-" ? -v : !v;
    }
    case Expr::Node::kCall: {
      const std::int64_t a = eval_node(*n.kids[0], b, text);
      if (n.name == "abs") return a < 0 ? -a : a;
      const std::int64_t c = eval_node(*n.kids[1], b, text);
      if (n.name == "min") return std::min(a, c);
      if (n.name == "max") return std::max(a, c);
      if (c == 0) throw UsageError("expression '" + text + "': ceil_div by zero");
      return (a + c - 1) / c;
    }
    case Expr::Node::kBinary: break;
  }
  const std::string& op = n.name;
  const std::int64_t a = eval_node(*n.kids[0], b, text);
  if (op == "&&") return a && eval_node(*n.kids[1], b, text);
  if (op == "||") return a || eval_node(*n.kids[1], b, text);
  const std::int64_t c = eval_node(*n.kids[1], b, text);
  if (op == "+") return a + c;
  if (op == "-") return a - c;
  if (op == "*") return a * c;
  if (op == "/" || op == "%") {
    if (c == 0) throw UsageError("expression '" + text + "': division by zero");
    return op == "/" ? a / c : a % c;
  }
  if (op == "==") return a == c;
  if (op == "!=") return a != c;
  if (op == "<") return a < c;
  if (op == "<=") return a <= c;
  if (op == ">") return a > c;
  return a >= c;
}

void collect_names(const Expr::Node& n, std::set<std::string>& out) {
  if (n.kind == Expr::Node::kName) out.insert(n.name);
  for (const auto& k : n.kids) collect_names(*k, out);
}
}  // namespace

Expr Expr::parse(const std::string& text) {
  Expr e;
  e.text_ = text;
  e.root_ = Parser(e.text_).parse_all();
  return e;
}

std::int64_t Expr::eval(const Bindings& names) const { return eval_node(*root_, names, text_); }

std::vector<std::string> Expr::names() const {
  std::set<std::string> s;
  collect_names(*root_, s);
  return {s.begin(), s.end()};
}

}  // namespace kforge
