#pragma once
// Integer expressions over named values: parameter constraints (`MWG % (MDIMC*VWM) == 0`) and
// launch geometry (`ceil_div(N, NWG)`). Grammar, loosest first:
//   or: and ('||'|'or' and)*          and: not ('&&'|'and' not)*     not: ('!'|'not') not | cmp
//   cmp: sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?   sum: prod (('+'|'-') prod)*
//   prod: unary (('*'|'/'|'//'|'%') unary)*         unary: '-' unary | atom
//   atom: INT | NAME | NAME '(' args ')' | '(' or ')'      functions: min, max, ceil_div, abs
// Comparisons and logic yield 0 or 1. Division truncates; by zero is an error.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace kforge {

using Bindings = std::map<std::string, std::int64_t>;

class Expr {
 public:
  // Throws UsageError naming the bad token and its position.
  static Expr parse(const std::string& text);
  // Throws UsageError on an unbound name or a division by zero.
  [[nodiscard]] std::int64_t eval(const Bindings& names) const;
  [[nodiscard]] const std::string& text() const { return text_; }
  [[nodiscard]] std::vector<std::string> names() const;  // every identifier it reads

  struct Node;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace kforge
