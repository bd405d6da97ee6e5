// Constraint and geometry expressions: C-like precedence, Python-style words, a few functions,
// and errors that name the bad token.
#include <gtest/gtest.h>

#include <string>

#include "kforge/error.hpp"
#include "kforge/expr.hpp"

namespace kforge {
namespace {

std::int64_t ev(const std::string& text, const Bindings& b = {}) { return Expr::parse(text).eval(b); }

// The UsageError message of parsing (and evaluating) `text`, or "" if none was thrown.
std::string error_of(const std::string& text, const Bindings& b = {}) {
  try {
    (void)Expr::parse(text).eval(b);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(Expr, ArithmeticPrecedenceAndAssociativity) {
  EXPECT_EQ(ev("2 + 3 * 4"), 14);
  EXPECT_EQ(ev("(2 + 3) * 4"), 20);
  EXPECT_EQ(ev("10 - 4 - 3"), 3);   // left to right
  EXPECT_EQ(ev("100 / 10 / 5"), 2);
  EXPECT_EQ(ev("2 * 7 % 4"), 2);    // (2*7) % 4
  EXPECT_EQ(ev("2 + 7 % 4"), 5);
  EXPECT_EQ(ev("-2 * 3"), -6);
  EXPECT_EQ(ev("- -3"), 3);
  EXPECT_EQ(ev("2 - -3"), 5);
  EXPECT_EQ(ev("7 / 2"), 3);
  EXPECT_EQ(ev("-7 / 2"), -3);      // division truncates
  EXPECT_EQ(ev("3000000000 * 3"), 9000000000);  // 64-bit
  EXPECT_EQ(ev("  1+2  "), 3);
}

TEST(Expr, ComparisonsAndLogic) {
  EXPECT_EQ(ev("1 + 2 == 3"), 1);
  EXPECT_EQ(ev("2 * 3 < 5"), 0);
  EXPECT_EQ(ev("5 <= 5"), 1);
  EXPECT_EQ(ev("5 >= 6"), 0);
  EXPECT_EQ(ev("5 > 4"), 1);
  EXPECT_EQ(ev("5 != 5"), 0);
  EXPECT_EQ(ev("1 || 0 && 0"), 1);  // && binds tighter than ||
  EXPECT_EQ(ev("(1 || 0) && 0"), 0);
  EXPECT_EQ(ev("!0 && 1"), 1);
  EXPECT_EQ(ev("!(1 + 1)"), 0);
  EXPECT_EQ(ev("7 && 3"), 1);       // logic yields 0 or 1
}

TEST(Expr, PythonStyleWords) {
  EXPECT_EQ(ev("1 or 0 and 0"), 1);
  EXPECT_EQ(ev("not 0 and 0"), 0);  // not binds tighter than and
  EXPECT_EQ(ev("not 1 == 2"), 1);   // as in Python: not (1 == 2)
  EXPECT_EQ(ev("not not 5"), 1);
  EXPECT_EQ(ev("17 // 5"), 3);
  EXPECT_EQ(ev("2 + 17 // 5 * 2"), 8);
  const Bindings b{{"MWG", 64}, {"MDIMC", 8}, {"VWM", 4}, {"order", 3}, {"android", 2}};
  EXPECT_EQ(ev("MWG % (MDIMC * VWM) == 0 and MWG // VWM >= MDIMC", b), 1);
  // Words only count as whole tokens: these are names that begin with a keyword.
  EXPECT_EQ(ev("order + android", b), 5);
}

TEST(Expr, Functions) {
  EXPECT_EQ(ev("min(3, 5)"), 3);
  EXPECT_EQ(ev("max(3, 5)"), 5);
  EXPECT_EQ(ev("min(-3, -5)"), -5);
  EXPECT_EQ(ev("ceil_div(10, 3)"), 4);
  EXPECT_EQ(ev("ceil_div(9, 3)"), 3);
  EXPECT_EQ(ev("ceil_div(1, 64)"), 1);
  EXPECT_EQ(ev("abs(-4) + abs(4)"), 8);
  EXPECT_EQ(ev("max(VW, 16) * NV", {{"VW", 0}, {"NV", 3}}), 48);
  EXPECT_EQ(ev("ceil_div(N, min(NC, 2 * 32))", {{"N", 1000}, {"NC", 512}}), 16);
  EXPECT_EQ(ev("max(1 + 1, 3 == 3)"), 2);
}

TEST(Expr, NamesListsEveryIdentifierOnce) {
  const Expr e = Expr::parse("MC % MR == 0 and ceil_div(N, NC) * MR > M + MC");
  EXPECT_EQ(e.names(), (std::vector<std::string>{"M", "MC", "MR", "N", "NC"}));
  EXPECT_EQ(e.text(), "MC % MR == 0 and ceil_div(N, NC) * MR > M + MC");
  EXPECT_TRUE(Expr::parse("1 + 2").names().empty());
}

TEST(Expr, SyntaxErrorsNameTheBadToken) {
  struct Case { const char* text; const char* token; };
  for (const Case& c : {Case{"2 $ 3", "$"}, Case{"MR @ 2", "@"}, Case{"foo(1)", "foo"},
                        Case{"min(1)", "min"}, Case{"ceil_div(1, 2, 3)", "ceil_div"},
                        Case{"3abc + 1", "3abc"}, Case{"1 2", "2"}, Case{"(1 + 2", ")"},
                        Case{"1 + * 2", "*"}, Case{"MC MR", "MR"}, Case{"a & b", "&"}}) {
    const std::string msg = error_of(c.text);
    ASSERT_FALSE(msg.empty()) << "accepted '" << c.text << "'";
    EXPECT_NE(msg.find(c.token), std::string::npos) << c.text << " -> " << msg;
    EXPECT_NE(msg.find(c.text), std::string::npos) << "should quote the expression: " << msg;
  }
  for (const char* text : {"", "   ", "2 +", "(", "min(1,", "not"}) {
    EXPECT_THROW((void)Expr::parse(text), UsageError) << "'" << text << "'";
  }
}

TEST(Expr, UnboundNameIsAnErrorNamingIt) {
  const std::string msg = error_of("MR * 2 + NV", {{"MR", 4}});
  ASSERT_FALSE(msg.empty());
  EXPECT_NE(msg.find("NV"), std::string::npos) << msg;
  EXPECT_EQ(ev("MR * 2 + NV", {{"MR", 4}, {"NV", 1}}), 9);
}

TEST(Expr, DivisionByZeroIsAnError) {
  for (const char* text : {"1 / 0", "1 % 0", "1 // 0", "ceil_div(1, 0)", "N / (M - M)"}) {
    const std::string msg = error_of(text, {{"N", 8}, {"M", 3}});
    EXPECT_FALSE(msg.empty()) << text;
    EXPECT_NE(msg.find("zero"), std::string::npos) << text << " -> " << msg;
  }
  EXPECT_EQ(ev("VW == 0 or NC % VW == 0", {{"VW", 0}, {"NC", 64}}), 1);  // short-circuit
  EXPECT_EQ(ev("VW != 0 and NC % VW == 0", {{"VW", 0}, {"NC", 64}}), 0);
}

}  // namespace
}  // namespace kforge
