// The cpu prelude's SIMD math (kf_exp, kf_exp_clamped, kf_rcp), which the activation, softmax
// and norm kernels share, against the C library in double over their whole documented ranges,
// subnormal results of kf_exp included, at both vector widths (VW 8 and 16 take different
// reciprocal instructions).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kforge/backend.hpp"

namespace kforge {
namespace {

constexpr const char* kProbe = R"(
static void body(const kf_ctx&, const float* X, float* E, float* EC, float* R, int n) {
  for (long long j = 0; j + KF_VW <= n; j += KF_VW) {
    const kf_vf x = kf_load(X + j);
    kf_store(E + j, kf_exp(x));
    kf_store(EC + j, kf_exp_clamped(x));
    kf_store(R + j, kf_rcp(x));
  }
}
KF_KERNEL(probe, body))";

// |got - want| in units of the spacing of fp32 numbers at want (2^-149 for subnormals).
double ulps(float got, double want) {
  if (got == want) return 0;
  const double spacing = std::max(std::ldexp(1.0, std::ilogb(std::fabs(want)) - 23), std::ldexp(1.0, -149));
  return std::fabs(got - want) / spacing;
}

class PreludeMath : public ::testing::TestWithParam<int> {};

TEST_P(PreludeMath, ExpAndReciprocalWithinTwoUlps) {
  auto b = make_backend("cpu");
  auto m = b->compile(kProbe, "probe", {{"VW", std::to_string(GetParam())}});
  std::vector<float> x;
  for (double v = -110; v <= 88.5; v += 1.0 / 1024) x.push_back(static_cast<float>(v));
  for (float v : {-1000.0f, -INFINITY, 1e-30f, 3e37f, -7.25f}) x.push_back(v);
  while (x.size() % 16) x.push_back(0.5f);
  const int n = static_cast<int>(x.size());
  std::vector<float> e(n), ec(n), r(n);
  auto bx = b->alloc(n * 4), be = b->alloc(n * 4), bec = b->alloc(n * 4), br = b->alloc(n * 4);
  b->write(*bx, x.data(), n * 4);
  const Arg args[] = {Arg::buf(*bx), Arg::buf(*be), Arg::buf(*bec), Arg::buf(*br), Arg::i(n)};
  b->run(*m, LaunchGeometry{{1, 1, 1}, {1, 1, 1}}, args);
  b->read(*be, e.data(), n * 4);
  b->read(*bec, ec.data(), n * 4);
  b->read(*br, r.data(), n * 4);
  double worst_exp = 0, worst_clamped = 0, worst_rcp = 0;
  for (int i = 0; i < n; ++i) {
    const double xi = x[i];
    if (xi <= 88) {  // kf_exp: subnormal results too; below -104 exactly 0
      const double want = xi < -104 ? 0.0 : std::exp(xi);
      worst_exp = std::max(worst_exp, ulps(e[i], want));
      ASSERT_LE(ulps(e[i], want), 2) << "kf_exp(" << xi << ") = " << e[i] << ", want " << want;
    }
    const double xc = std::min(std::max(xi, -86.0), 88.0);  // kf_exp_clamped
    worst_clamped = std::max(worst_clamped, ulps(ec[i], std::exp(xc)));
    ASSERT_LE(ulps(ec[i], std::exp(xc)), 2) << "kf_exp_clamped(" << xi << ") = " << ec[i];
    if (std::isfinite(xi) && xi != 0) {
      worst_rcp = std::max(worst_rcp, ulps(r[i], 1 / xi));
      ASSERT_LE(ulps(r[i], 1 / xi), 2) << "kf_rcp(" << xi << ") = " << r[i];
    }
  }
  std::printf("[ prelude ] VW=%d worst ulps: kf_exp %.2f, kf_exp_clamped %.2f, kf_rcp %.2f\n", GetParam(),
              worst_exp, worst_clamped, worst_rcp);
}

INSTANTIATE_TEST_SUITE_P(Cpu, PreludeMath, ::testing::Values(8, 16),
                         [](const auto& info) { return "VW" + std::to_string(info.param); });

}  // namespace
}  // namespace kforge
