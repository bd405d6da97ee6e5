// No false rejections across the whole library (issue 24's Proof): every library kernel of every
// family, on cpu and opencl, every dtype its problem has, and the correct-kernel corpus (the
// correct GEMMs in examples/), go through `kforge verify` / `kforge eval` with fresh seeds for
// KFORGE_NFR_TRIALS trials each; every verdict must be `passed`. Each verdict is thorough: its
// trials cycle through the five distributions, and it adds the structured patterns, the
// special scalars, determinism repeats, perturbations, reused buffers and fuzzed shapes.
//
// Long: the suite `NoFalseRejectionLong` runs only when KFORGE_NFR_TRIALS is set (CTest label
// `long`), e.g.
//   KFORGE_NFR_TRIALS=1000 ctest -L long --output-on-failure        (from build/)
// Without it, `NoFalseRejectionTiny` runs a few quick verdicts (< 5 s) so that the enumeration
// and the JSON reading below stay tested in the default run.
//
// Sizes: each problem's default sizes halved (largest first) until the instance costs at most
// kWorkCap in the problem's own fuzz_work units, keeping sizes the problem and the picked kernel
// accept: small enough that a thousand trials take seconds, large enough to span several tiles.
// Seeds: KFORGE_NFR_SEED (default fixed) mixed with a counter; every failure prints the command
// that replays it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "kforge/problem.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;

constexpr double kWorkCap = 1e5;

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

long long env_ll(const char* name, long long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoll(v) : fallback;
}

std::string sizes_arg(const Sizes& s) {
  std::string out;
  for (const auto& [k, v] : s) out += (out.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return out;
}

// The sizes at which a library kernel is verified: `start` halved, largest size first, until
// the problem's fuzz work fits the cap; only sizes the problem, the kernel's constraints (at its
// defaults) and its "applies" accept are kept.
Sizes small_sizes(const Problem& p, const KernelSpec& k, Sizes s) {
  const auto accepted = [&](const Sizes& x) {
    try {
      p.check_sizes(x);
    } catch (const std::exception&) {
      return false;
    }
    return k.applies_to(x) && !k.check(k.defaults, x);
  };
  Sizes best = s;
  for (int step = 0; step < 200; ++step) {
    if (accepted(s)) {
      best = s;
      if (p.fuzz_work(s) <= kWorkCap) return s;
    }
    auto largest = s.end();
    for (auto it = s.begin(); it != s.end(); ++it)
      if (it->second > 8 && (largest == s.end() || it->second > largest->second)) largest = it;
    if (largest == s.end()) break;
    largest->second = (largest->second + 1) / 2;
  }
  return best;
}

struct Case {
  std::string label;  // what is verified, for the summary
  std::string args;   // the kforge command line without --seed and --trials
  std::string kernel;
};

// Every library kernel of every problem, cpu and opencl, at every dtype both it and its problem
// have: first the kernels `kforge verify` picks by itself (the special cases with "applies" at
// sizes that select them), both backends in one command; then every other spec through
// `--kernel NAME` (label "... --kernel NAME": KFORGE_NFR_ONLY=--kernel keeps just those), so none
// is left out. `unreached` lists what neither reaches (nothing, unless a spec cannot be sized).
std::vector<Case> library_cases(std::vector<std::string>& unreached) {
  std::vector<Case> cases;
  std::set<std::string> reached;
  for (const auto& p : problems()) {
    const auto specs = library_kernels(*p);
    // Start sizes: the defaults, and for each special case the defaults with the sizes that
    // select it (conv2d's 1x1 and single-channel kernels).
    std::vector<Sizes> starts{p->default_sizes()};
    for (const auto& k : specs) {
      if (k.lang == Lang::cuda || k.applies.empty()) continue;
      Sizes s = p->default_sizes();
      if (p->name() == "conv2d" && k.name.find("1x1") != std::string::npos) s["R"] = s["S"] = 1;
      if (p->name() == "conv2d" && k.name.find("c1") != std::string::npos) s["C"] = 1;
      // Once per special case (its cpu and opencl specs select the same sizes).
      if (k.applies_to(s) && std::find(starts.begin(), starts.end(), s) == starts.end()) starts.push_back(s);
    }
    for (const Sizes& start : starts) {
      // Sizes small enough for both backends' kernels: the cpu kernel's picks them first.
      Sizes sizes = start;
      for (Lang lang : {Lang::cpp, Lang::opencl}) {
        try {
          sizes = small_sizes(*p, library_kernel(*p, lang, sizes), sizes);
        } catch (const std::exception&) {
        }
      }
      std::string names;
      for (Lang lang : {Lang::cpp, Lang::opencl}) {
        try {
          const auto k = library_kernel(*p, lang, sizes);
          reached.insert(k.name);
          names += (names.empty() ? "" : "+") + k.name;
        } catch (const std::exception&) {
        }
      }
      for (DType d : p->dtypes())
        cases.push_back({p->name() + " " + std::string(dtype_name(d)) + " " + sizes_arg(sizes),
                         "verify " + p->name() + " --backend cpu,opencl --threads 2 --dtype " +
                             std::string(dtype_name(d)) + " --size " + sizes_arg(sizes) + " --thorough --json",
                         names});
    }
    // The specs no size above picks (spmm_adaptive.cpu, signature.cpu.large, ...): by name, on
    // their own backend, at the defaults shrunk for them.
    for (const auto& k : specs) {
      if (k.lang == Lang::cuda || reached.count(k.name)) continue;
      const Sizes sizes = small_sizes(*p, k, p->default_sizes());
      if (k.check(k.defaults, sizes)) {
        unreached.push_back(k.name);
        continue;
      }
      reached.insert(k.name);
      const std::string backend = k.lang == Lang::cpp ? "cpu" : "opencl";
      for (DType d : p->dtypes()) {
        if (std::find(k.dtypes.begin(), k.dtypes.end(), d) == k.dtypes.end()) continue;
        cases.push_back({p->name() + " " + std::string(dtype_name(d)) + " " + sizes_arg(sizes) + " --kernel " + k.name,
                         "verify " + p->name() + " --backend " + backend + " --kernel " + k.name +
                             " --threads 2 --dtype " + std::string(dtype_name(d)) + " --size " + sizes_arg(sizes) +
                             " --thorough --json",
                         k.name});
      }
    }
  }
  return cases;
}

// The correct-kernel corpus: outside sources that are right (examples/), through `kforge eval`
// (index_width off: one fixed wide instance whatever the seed, tested in index_width_test.cpp).
std::vector<Case> corpus_cases(bool thorough = true) {
  const std::string ex = KFORGE_TEST_DATA "/../../examples/";
  const std::string size =
      std::string(" --size M=67,N=45,K=37 --no-index-width --json") + (thorough ? " --thorough" : " --quick");
  return {
      {"examples/naive_gemm.cpp",
       "eval --problem gemm --lang cpp --source " + ex + "naive_gemm.cpp --grid 'ceil_div(M,16)'" + size,
       "naive_gemm.cpp"},
      {"examples/naive_gemm.cl",
       "eval --problem gemm --lang opencl --source " + ex +
           "naive_gemm.cl --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16" + size,
       "naive_gemm.cl"},
      {"examples/proposers/gemm/naive.cpp",
       "eval --problem gemm --lang cpp --source " + ex +
           "proposers/gemm/naive.cpp --grid 'ceil_div(M,16)' --params BM=16" + size,
       "naive.cpp"},
      {"examples/proposers/gemm/tiled_fixed.cpp",
       "eval --problem gemm --lang cpp --source " + ex +
           "proposers/gemm/tiled_fixed.cpp --grid 'ceil_div(M,16)' --params BM=16,BN=16" + size,
       "tiled_fixed.cpp"},
      {"examples/proposers/gemm/row_axpy.cpp",
       "eval --problem gemm --lang cpp --source " + ex +
           "proposers/gemm/row_axpy.cpp --grid 'ceil_div(M,16)' --params BM=16" + size,
       "row_axpy.cpp"},
  };
}

struct Tally {
  long long verdicts = 0, trials = 0, rejections = 0;
  double worst_ratio = 0;
  std::string worst_case;
};

// One command, `trials` trials, each verdict in its JSON must pass.
void run_case(const Case& c, int trials, std::uint64_t seed, Tally& t) {
  const std::string args = c.args + " --trials " + std::to_string(trials) + " --seed " + std::to_string(seed);
  const auto r = test::kforge_cli(args);
  json doc;
  try {
    doc = json::parse(r.out);
  } catch (const std::exception& e) {
    ++t.rejections;
    ADD_FAILURE() << "kforge " << args << ": not JSON (" << e.what() << ", exit " << r.exit_code << ")\n"
                  << r.out.substr(0, 2000) << r.err.substr(0, 2000);
    return;
  }
  if (!doc.is_array()) doc = json::array({doc});
  bool any_rejected = false;
  for (const auto& res : doc) {
    ++t.verdicts;
    // A kernel named with --kernel is the one verified, not the library's pick.
    if (c.args.find("--kernel ") != std::string::npos) EXPECT_EQ(res.value("kernel", "?"), c.kernel) << args;
    const json v = res.value("verify", json::object());
    t.trials += trials;
    const double ratio = v.value("max_error_over_bound", 0.0);
    if (ratio > t.worst_ratio) {
      t.worst_ratio = ratio;
      t.worst_case = res.value("backend", "?") + " " + c.label + " seed " + std::to_string(seed);
    }
    if (res.value("disposition", "?") != "passed") {
      any_rejected = true;
      ++t.rejections;
      ADD_FAILURE() << "false rejection of " << c.kernel << " on " << res.value("backend", "?") << ": "
                    << res.value("disposition", "?") << " (" << v.value("failed_check", std::string())
                    << ")\n  replay: kforge " << args << "\n  " << res.value("error", std::string())
                    << "\n  failed_sizes " << v.value("failed_sizes", json::object()).dump();
    }
  }
  EXPECT_EQ(r.exit_code, any_rejected ? 1 : 0) << "kforge " << args << "\n" << r.err.substr(0, 2000);
}

void report(const char* what, std::size_t cases, long long per_kernel, const Tally& t, double secs) {
  std::printf(
      "[ no-false-rejection ] %s: %zu cases, %lld trials each, %lld verdicts, %lld trials in all, "
      "%lld false rejections, %.0f s\n",
      what, cases, per_kernel, t.verdicts, t.trials, t.rejections, secs);
  std::printf("[ no-false-rejection ] worst error/bound among passing verdicts: %.3g at %s\n", t.worst_ratio,
              t.worst_case.c_str());
}

TEST(NoFalseRejectionLong, EveryLibraryKernelAndTheCorrectCorpusPassEveryTrial) {
  const long long per_kernel = env_ll("KFORGE_NFR_TRIALS", 0);
  if (per_kernel <= 0) GTEST_SKIP() << "long: set KFORGE_NFR_TRIALS (e.g. 1000) to run it";
  // Trials per verdict: each verdict also runs the thorough extras (structured, special scalars,
  // fuzzed shapes) under a new seed.
  const long long chunk = std::max(1LL, env_ll("KFORGE_NFR_CHUNK", 100));
  const std::uint64_t base = static_cast<std::uint64_t>(env_ll("KFORGE_NFR_SEED", 20261205));
  const std::string only = std::getenv("KFORGE_NFR_ONLY") ? std::getenv("KFORGE_NFR_ONLY") : "";
  std::vector<std::string> unreached;
  auto cases = library_cases(unreached);
  for (auto& c : corpus_cases()) cases.push_back(c);
  const auto t0 = std::chrono::steady_clock::now();
  Tally t;
  std::uint64_t counter = 0;
  std::size_t ran = 0;
  for (const Case& c : cases) {
    if (!only.empty() && c.label.find(only) == std::string::npos) continue;
    ++ran;
    const auto c0 = std::chrono::steady_clock::now();
    const long long rej0 = t.rejections;
    for (long long done = 0; done < per_kernel; done += chunk)
      run_case(c, static_cast<int>(std::min(chunk, per_kernel - done)), mix(base + counter++) >> 16, t);
    std::printf("[ no-false-rejection ] %-60s %-50s %lld trials, %lld rejected, %.1f s\n", c.label.c_str(),
                c.kernel.c_str(), per_kernel, t.rejections - rej0,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count());
    std::fflush(stdout);
  }
  std::string missed;
  for (const auto& n : unreached) missed += " " + n;
  std::printf("[ no-false-rejection ] library kernels neither picked nor sizable for --kernel (not run):%s\n",
              missed.c_str());
  report("library + correct corpus", ran, per_kernel, t,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  EXPECT_EQ(t.rejections, 0);
  EXPECT_LE(t.worst_ratio, 1.0);
}

// The default run's version: the enumeration finds every family, and a few cheap problems (and
// one corpus kernel) pass quick verdicts.
TEST(NoFalseRejectionTiny, TheEnumerationCoversEveryFamilyAndAFewCheapKernelsPass) {
  std::vector<std::string> unreached;
  const auto cases = library_cases(unreached);
  std::set<std::string> families;
  for (const auto& c : cases) families.insert(c.label.substr(0, c.label.find_first_of(". ")));
  for (const char* f : {"gemm", "scan", "softmax", "rmsnorm", "layernorm", "activation", "reduce", "attention",
                        "conv2d", "moe_grouped_gemm"})
    EXPECT_TRUE(families.count(f)) << f;
  // Every cpu and opencl spec is reached, the ones the library never picks through --kernel.
  std::string missed;
  for (const auto& n : unreached) missed += " " + n;
  EXPECT_TRUE(unreached.empty()) << "not reached:" << missed;
  bool by_name = false;
  for (const auto& c : cases) by_name = by_name || c.args.find("--kernel spmm_adaptive.cpu") != std::string::npos;
  EXPECT_TRUE(by_name) << "spmm_adaptive.cpu should be verified through --kernel";
  Tally t;
  const Case tiny[] = {
      {"activation.silu", "verify activation.silu --backend cpu --size M=37,N=45 --quick --json",
       "activation.silu.cpu"},
      {"reduce.sum_axis1", "verify reduce.sum_axis1 --backend cpu --size M=29,N=53 --quick --json",
       "reduce.sum_axis1.cpu"},
      {"naive_gemm.cpp", corpus_cases(false)[0].args, "naive_gemm.cpp"},
      {"spmm --kernel spmm_adaptive.cpu",
       "verify spmm --backend cpu --kernel spmm_adaptive.cpu --size M=23,N=37,K=29,NNZ=101 --quick --json",
       "spmm_adaptive.cpu"},
  };
  std::uint64_t counter = 0;
  for (const Case& c : tiny) run_case(c, 2, mix(20261205 + counter++) >> 16, t);
  EXPECT_EQ(t.rejections, 0);
}

}  // namespace
}  // namespace kforge
