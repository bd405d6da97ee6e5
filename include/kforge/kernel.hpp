#pragma once
// A kernel is a source in one language plus its tunable parameter space. Parameters reach the
// source as `#define NAME value` on every backend. Library kernels and outside candidates are
// the same kind of thing, described by the same JSON spec:
//   { "name": "gemm.cpu", "problem": "gemm", "lang": "cpp", "source": "gemm.cpp",
//     "entry": "gemm", "dtypes": ["fp32", "fp16", "bf16"],
//     "params": { "MC": [48, 96], ... }, "defaults": { "MC": 96, ... },
//     "constraints": ["MC % MR == 0", ...],
//     "grid": ["ceil_div(N, NC)", "ceil_div(M, MC)", "1"], "block": ["1", "1", "1"] }
// Optionally "applies": ["C == 1"]: expressions over sizes, all of which must hold for the
// library to pick this kernel for an instance (a special case). Without it the kernel is general.
// Besides the sizes they may read CPU_SIMD_FLOATS (cpu_target.hpp: 8 on AVX2, 16 with AVX-512).
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kforge/dtype.hpp"
#include "kforge/expr.hpp"

namespace kforge {

enum class Lang { cpp, opencl, cuda };
[[nodiscard]] std::string_view lang_name(Lang l);
[[nodiscard]] Lang parse_lang(std::string_view name);  // throws UsageError
// A kernel's entry point when its spec names none: the problem's name with every character other
// than letters and digits made '_' (a problem file's "examples.gemm": examples_gemm).
[[nodiscard]] std::string default_entry(std::string problem);

using ParamValues = std::map<std::string, std::int64_t>;
using Sizes = std::map<std::string, std::int64_t>;

struct Param {
  std::string name;
  std::vector<std::int64_t> values;
};

struct Dim3 {
  std::int64_t x = 1, y = 1, z = 1;
};

struct LaunchGeometry {
  Dim3 grid;   // number of blocks (work-groups) in each dimension
  Dim3 block;  // threads (work-items) in each block
};

struct KernelSpec {
  std::string name, problem;
  Lang lang = Lang::cpp;
  std::string entry;
  std::string source;       // the text
  std::string source_path;  // where it came from, for messages
  std::vector<DType> dtypes{DType::fp32};
  std::vector<Param> params;
  ParamValues defaults;
  std::vector<Expr> constraints;
  std::vector<Expr> applies;  // when the library picks it (sizes, CPU_SIMD_FLOATS); empty: always
  std::array<Expr, 3> grid{Expr::parse("1"), Expr::parse("1"), Expr::parse("1")};
  std::array<Expr, 3> block{Expr::parse("1"), Expr::parse("1"), Expr::parse("1")};

  // Parses a spec; `load_source(name)` returns the text of the file the spec names.
  // Throws UsageError naming the bad field.
  template <class Loader>
  static KernelSpec from_json(const nlohmann::json& j, Loader&& load_source);
  static KernelSpec from_json_with_source(const nlohmann::json& j, std::string source);
  [[nodiscard]] nlohmann::json to_json(bool with_source = false) const;

  // Defaults overridden by `overrides`; throws UsageError on a name the space lacks. A value
  // outside its list is kept: check() refuses it, so it becomes an invalid_config disposition.
  [[nodiscard]] ParamValues resolve(const ParamValues& overrides) const;
  // Empty when the configuration is valid for these sizes, else the reason (the constraint
  // that fails), so invalid combinations are refused before compiling.
  [[nodiscard]] std::optional<std::string> check(const ParamValues& p, const Sizes& s) const;
  [[nodiscard]] LaunchGeometry geometry(const ParamValues& p, const Sizes& s) const;
  [[nodiscard]] std::uint64_t space_size() const;  // the Cartesian product, before constraints
  // Whether every "applies" expression holds at these sizes.
  [[nodiscard]] bool applies_to(const Sizes& s) const;
};

// Parses "A=1,B=2" into values; throws UsageError naming the bad item.
[[nodiscard]] std::map<std::string, std::int64_t> parse_assignments(const std::string& text);
// The same for real values ("gamma=0.99,lambda=0.95"): scalars.
[[nodiscard]] std::map<std::string, double> parse_real_assignments(const std::string& text);

}  // namespace kforge

#include "kforge/kernel_json.hpp"
