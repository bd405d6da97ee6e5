#pragma once
// A problem file, parsed and checked: everything a compiled-in problem declares, as data.
// The format is documented in docs/problem-files.md; examples/problems/ holds real ones.
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kforge/dtype.hpp"
#include "kforge/expr.hpp"
#include "kforge/problem.hpp"

namespace kforge {

struct SizeDecl {
  std::string name;
  std::int64_t default_value = 1;
  std::int64_t min = 1;
};

struct RuleDecl {  // a validity rule over sizes: "H % HKV == 0"
  Expr expr;
};

// How a tensor's random draws are turned into valid inputs (after the draw, before rounding).
enum class Condition { none, index, flag, probability, positive, sorted, sparse };

struct TensorDecl {
  std::string name;
  Role role = Role::in;
  std::optional<DType> type;  // `type`: an input of a fixed integer type (int32 indices), whatever the dtype
  std::vector<Expr> shape;
  Condition condition = Condition::none;
  std::optional<Expr> low, high;  // index: integers in [low, high)
  double p = 1.0 / 16;            // flag: the chance of a 1
  double density = 0.1;           // sparse: the share of nonzeros
  std::string unread_when_zero;   // inout: not read when this scalar is 0 (the BLAS beta rule)
  // The `structured` check's patterns for this input: "matrix" (rows of the last dimension's
  // length), "elementwise", "none". Empty: the default (FileProblem::structured_rows).
  std::string structured;
};

struct ScalarDecl {
  std::string name;
  std::vector<double> trials;  // trial t uses trials[t % size], rounded to float (the ABI)
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
};

struct CodeDecl {  // a C++ function in a file beside the problem file
  std::string source;    // absolute path
  std::string function;
  std::vector<std::string> flags;  // extra compiler/linker words: ["-lopenblas"]
  std::string name;      // the baseline's name in reports
};

struct ProblemFile {
  std::string path;  // absolute
  std::string name, description;
  std::vector<SizeDecl> sizes;
  std::vector<RuleDecl> valid;
  std::vector<DType> dtypes;
  std::vector<TensorDecl> tensors;
  std::vector<ScalarDecl> scalars;
  std::vector<Scalars> special_scalars;  // each run once by the thorough check (rounded to float)
  Expr flops, reduction_length;
  std::optional<Expr> bytes;  // in bytes; may use `dtype_bytes`. Default: each in read once,
                              // each out written once, each inout both
  CodeDecl reference;
  std::optional<CodeDecl> condition, baseline;
  std::vector<std::string> kernels;  // absolute paths of kernel specs
  double timeout_s = 600;             // for one run of the reference or the conditioning hook
};

// Reads and checks a problem file; throws ProblemError naming the file, the field and the fix.
[[nodiscard]] ProblemFile parse_problem_file(const std::string& path);

}  // namespace kforge
