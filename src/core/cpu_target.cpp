// The compiler and instruction set of the cpu backend's kernels (include/kforge/cpu_target.hpp).
#include "kforge/cpu_target.hpp"

#include <cstdlib>
#include <map>
#include <mutex>

#include "kforge/error.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

namespace kforge {

std::string cpu_compiler() {
  if (const char* c = std::getenv("KFORGE_CXX"); c && *c) return c;
  return KFORGE_CXX_COMPILER;
}

// x86-64-v3 for a deployment machine older than this one, or to prove that every kernel still
// works without AVX-512.
std::string cpu_march() {
  const char* env = std::getenv("KFORGE_CPU_MARCH");
  const std::string march = env && *env ? trim(env) : "native";
  if (march == "native") return march;
  static std::mutex mutex;
  static std::map<std::string, std::string> checked;  // march -> "" (usable) or why not
  std::lock_guard lock(mutex);
  auto it = checked.find(march);
  if (it == checked.end()) {
    std::string why;
    if (march.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.+") !=
        std::string::npos) {
      why = "it is not a -march name";
    } else {  // the compiler's own verdict, on an empty translation unit
      const ProcessResult r = run_process({cpu_compiler(), "-march=" + march, "-x", "c++", "-E", "-o", "/dev/null", "/dev/null"},
                                          {}, {.timeout_s = 60});
      // Its first line ("bad value ... for '-march=' switch"), without the list of every name.
      if (!r.ok()) why = "the compiler refuses it: " + trim(r.err.substr(0, r.err.find('\n')));
    }
    it = checked.emplace(march, why).first;
  }
  if (!it->second.empty())
    throw UsageError("KFORGE_CPU_MARCH='" + march + "': " + it->second +
                     ". Set it to a -march name the compiler knows (x86-64-v3 for AVX2 without AVX-512, "
                     "x86-64-v4, haswell, znver3, ...) or unset it for native");
  return march;
}

int cpu_simd_floats() {
  const std::string march = cpu_march();
  static std::mutex mutex;
  static std::map<std::string, int> known;
  std::lock_guard lock(mutex);
  if (auto it = known.find(march); it != known.end()) return it->second;
  // The compiler's predefined macros for that march: what kernels/common/simd.hpp tests.
  const ProcessResult r = run_process({cpu_compiler(), "-march=" + march, "-dM", "-E", "-x", "c++", "/dev/null"},
                                      {}, {.timeout_s = 60});
  int floats = 8;
  if (r.ok()) floats = r.out.find("#define __AVX512F__ ") != std::string::npos ? 16 : 8;
#if defined(__x86_64__)
  else if (march == "native")  // no compiler to ask (a sandbox): the CPU itself
    floats = __builtin_cpu_supports("avx512f") ? 16 : 8;
#endif
  known.emplace(march, floats);
  return floats;
}

}  // namespace kforge
