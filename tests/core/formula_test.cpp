// The lazy-reduction formula language: parse errors name the position and what was expected;
// the double interpreter agrees with the formula written out by hand at random points; the C
// emitter writes each operation.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kforge/error.hpp"
#include "kforge/formula.hpp"

namespace kforge {
namespace {

std::string parse_error(const std::string& text) {
  try {
    (void)Formula::parse(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Formula, ParseErrorsNamePositionAndExpectedToken) {
  EXPECT_NE(parse_error("exp(-sqdist(x,y)/s").find("position 19: expected ')'"), std::string::npos)
      << parse_error("exp(-sqdist(x,y)/s");
  EXPECT_NE(parse_error("1 +").find("position 4: expected a number, a name"), std::string::npos);
  EXPECT_NE(parse_error("sqdist(x,z)").find("expected y"), std::string::npos);
  EXPECT_NE(parse_error("x + 1").find("x and y only inside sqdist"), std::string::npos);
  EXPECT_NE(parse_error("cosh(s)").find("position 1: expected a function"), std::string::npos);
  EXPECT_NE(parse_error("s s").find("position 3: expected an operator or the end"), std::string::npos);
  EXPECT_NE(parse_error("pow(s)").find("expected ','"), std::string::npos);
}

TEST(Formula, InterpreterMatchesTheFormulaByHand) {
  const Formula f = Formula::parse("exp(-sqdist(x,y)/s) * pow(2, dot(x,y)) + max(sqrt(sqdist(x,y)), -1.5) - log(s)");
  EXPECT_EQ(f.scalar_names(), std::vector<std::string>{"s"});
  ASSERT_EQ(f.terms().size(), 2u);
  std::mt19937 rng(7);
  std::normal_distribution<double> n(0, 1);
  for (int trial = 0; trial < 50; ++trial) {
    const int D = 1 + trial % 7;
    std::vector<double> x(D), y(D);
    double sq = 0, dt = 0;
    for (int d = 0; d < D; ++d) x[d] = n(rng), y[d] = n(rng), sq += (x[d] - y[d]) * (x[d] - y[d]), dt += x[d] * y[d];
    const double s = 0.5 + trial * 0.1;
    const double want = std::exp(-sq / s) * std::pow(2, dt) + std::max(std::sqrt(sq), -1.5) - std::log(s);
    const auto got = f.eval(x.data(), y.data(), D, {{"s", s}});
    EXPECT_NEAR(got.v, want, 1e-12 * (1 + std::fabs(want)));
    EXPECT_GT(got.err, 0);
  }
  EXPECT_THROW((void)f.eval(nullptr, nullptr, 0, {}), UsageError);  // s has no value
}

TEST(Formula, EmitsEveryOperationAsC) {
  const std::string c = Formula::parse("-exp(a)/log(b)+sqrt(abs(dot(x,y)))*min(1,max(2,pow(sqdist(x,y),3)))").emit_c();
  for (const char* w : {"expf(", "logf(", "sqrtf(", "fabsf(", "fminf(", "fmaxf(", "powf(", "t0", "t1", " / ", " * ", " + "})
    EXPECT_NE(c.find(w), std::string::npos) << w << " in " << c;
  EXPECT_EQ(c.find("1f"), std::string::npos) << "an integer literal must not end in 'f' in C: " << c;
}

}  // namespace
}  // namespace kforge
