#pragma once
// The floating-point control state of the calling thread: what a kernel must leave as it found
// it. A block that switches on flush-to-zero or denormals-are-zero (or changes the rounding
// mode, or unmasks an exception) and returns changes every later computation on that worker
// thread, kforge's own and the next kernel's, so the cpu backend reads this before and after
// every block, puts it back when it changed, and reports the change (the `fp_environment`
// check, docs/verification.md).
//
// Only the control bits are compared: the sticky exception flags (MXCSR bits 0-5, the x87
// status word, what fetestexcept reports) change in any correct kernel that rounds.
#include <cfenv>
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace kforge::cpu {

//
// On x86-64 MXCSR and the x87 control word hold every control bit (fegetround reads them too),
// and reading them takes a few cycles, where fegetenv (fnstenv + fldenv, microcoded) took about
// a tenth of a microsecond per block, twice: most of a small launch's overhead. So there only
// they are read, and a change is put back from the default environment plus the two words.
struct FpControl {
  std::uint32_t mxcsr = 0;  // SSE/AVX control and status (x86-64)
  std::uint16_t x87 = 0;    // x87 control word (x86-64)
  int rounding = 0;         // fegetround(): the portable part (elsewhere than x86-64)
  std::fenv_t env{};        // the whole C environment (elsewhere than x86-64)

  static FpControl read() {
    FpControl c;
#if defined(__x86_64__)
    __asm__ volatile("stmxcsr %0" : "=m"(c.mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(c.x87));
    c.rounding = rounding_from(c.x87);
#else
    c.rounding = std::fegetround();
    std::fegetenv(&c.env);
#endif
    return c;
  }
  [[nodiscard]] bool same_controls(const FpControl& o) const {
    constexpr std::uint32_t kMxcsrFlags = 0x3f;  // IE DE ZE OE UE PE: sticky, not control
    return (mxcsr & ~kMxcsrFlags) == (o.mxcsr & ~kMxcsrFlags) && x87 == o.x87 && rounding == o.rounding;
  }
  void restore() const {
#if defined(__x86_64__)
    std::fesetenv(FE_DFL_ENV);  // the x87 status and tag words too (an unbalanced stack)
    __asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
    __asm__ volatile("fldcw %0" : : "m"(x87));
#else
    std::fesetenv(&env);
#endif
  }
#if defined(__x86_64__)
  // What fegetround() reports, from the x87 control word's rounding field (glibc reads the same
  // field; fesetround sets it and MXCSR's alike).
  static int rounding_from(std::uint16_t x87_cw) {
    switch (x87_cw & 0x0c00) {
      case 0x0000: return FE_TONEAREST;
      case 0x0400: return FE_DOWNWARD;
      case 0x0800: return FE_UPWARD;
      default: return FE_TOWARDZERO;
    }
  }
#endif
  // What changed from `before` to this, in words.
  [[nodiscard]] std::string change_from(const FpControl& before) const {
    std::string what;
    auto bit = [&](std::uint32_t mask, const char* name) {
      if ((mxcsr & mask) != (before.mxcsr & mask))
        what += fmt::format("{}{} {}", what.empty() ? "" : ", ", name, (mxcsr & mask) ? "on" : "off");
    };
    bit(0x8000, "flush-to-zero (MXCSR.FZ)");
    bit(0x0040, "denormals-are-zero (MXCSR.DAZ)");
    if ((mxcsr & 0x6000) != (before.mxcsr & 0x6000)) what += (what.empty() ? "" : ", ") + std::string("SSE rounding mode");
    if ((mxcsr & 0x1f80) != (before.mxcsr & 0x1f80)) what += (what.empty() ? "" : ", ") + std::string("SSE exception masks");
    if (x87 != before.x87) what += fmt::format("{}x87 control word {:#06x} -> {:#06x}", what.empty() ? "" : ", ", before.x87, x87);
    if (rounding != before.rounding && what.find("rounding") == std::string::npos)
      what += (what.empty() ? "" : ", ") + std::string("rounding mode (fegetround)");
    return what.empty() ? "floating-point control state" : what;
  }
};

}  // namespace kforge::cpu
