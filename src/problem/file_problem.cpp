// A Problem whose declarations come from a problem file and whose reference, conditioning hook
// and baseline are the file's own C++: the reference and the hook run in a forked child, so a
// crash or a hang there is reported as the problem's fault (ProblemError, exit 2).
#include "problem/file_problem.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/rng.hpp"
#include "kforge/util.hpp"
#include "problem/native_code.hpp"

namespace kforge {
namespace {

constexpr const char* kExport = "extern \"C\" __attribute__((visibility(\"default\"))) void ";

// "FN(t[0], t[1], ..., s[0], ..., x[0], ...)" for the adapters.
std::string call(const std::string& fn, std::size_t tensors, std::size_t sizes, std::size_t scalars,
                 const std::string& tail = {}) {
  std::vector<std::string> a;
  for (std::size_t i = 0; i < tensors; ++i) a.push_back(fmt::format("t[{}]", i));
  for (std::size_t i = 0; i < sizes; ++i) a.push_back(fmt::format("s[{}]", i));
  for (std::size_t i = 0; i < scalars; ++i) a.push_back(fmt::format("x[{}]", i));
  if (!tail.empty()) a.push_back(tail);
  return fmt::format("{}({});", fn, fmt::join(a, ", "));
}

std::int64_t count_inputs(const ProblemFile& f) {
  return std::count_if(f.tensors.begin(), f.tensors.end(), [](const TensorDecl& t) { return is_input(t.role); });
}
std::int64_t count_outputs(const ProblemFile& f) {
  return std::count_if(f.tensors.begin(), f.tensors.end(), [](const TensorDecl& t) { return is_output(t.role); });
}

std::string format_bindings(const Sizes& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

}  // namespace

FileProblem::FileProblem(ProblemFile f) : f_(std::move(f)) {
  const std::size_t n_sizes = f_.sizes.size(), n_scalars = f_.scalars.size();
  // Each input, each output and its magnitude; scratch tensors are the kernel's alone.
  const auto only_in = std::count_if(f_.tensors.begin(), f_.tensors.end(), [](const TensorDecl& t) { return t.role == Role::in; });
  const std::size_t n_ref = only_in + 2 * count_outputs(f_);
  reference_ = std::make_unique<NativeCode>(
      "reference of problem " + f_.name, f_.reference.source,
      fmt::format("{}kforge_reference(double* const* t, const long long* s, const double* x) {{ {} }}\n",
                  kExport, call(f_.reference.function, n_ref, n_sizes, n_scalars)),
      f_.reference.flags);
  if (f_.condition)
    condition_ = std::make_unique<NativeCode>(
        "input conditioning of problem " + f_.name, f_.condition->source,
        fmt::format("{}kforge_condition(double* const* t, const long long* s, unsigned long long seed, "
                    "int trial) {{ {} }}\n",
                    kExport, call(f_.condition->function, count_inputs(f_), n_sizes, 0, "seed, trial")),
        f_.condition->flags);
  if (f_.baseline)
    baseline_ = std::make_unique<NativeCode>(
        "baseline of problem " + f_.name, f_.baseline->source,
        fmt::format("{}kforge_baseline(float* const* t, const int* s, const float* x, int threads) {{ {} }}\n",
                    kExport, call(f_.baseline->function, f_.tensors.size(), n_sizes, n_scalars, "threads")),
        f_.baseline->flags);
}

FileProblem::~FileProblem() = default;

std::vector<std::string> FileProblem::size_names() const {
  std::vector<std::string> out;
  for (const auto& s : f_.sizes) out.push_back(s.name);
  return out;
}

Sizes FileProblem::default_sizes() const {
  Sizes out;
  for (const auto& s : f_.sizes) out[s.name] = s.default_value;
  return out;
}

std::vector<TensorSpec> FileProblem::tensors() const {
  std::vector<TensorSpec> out;
  for (const auto& t : f_.tensors) out.push_back({t.name, t.role, t.type});
  return out;
}

std::vector<std::string> FileProblem::scalar_names() const {
  std::vector<std::string> out;
  for (const auto& s : f_.scalars) out.push_back(s.name);
  return out;
}

std::int64_t FileProblem::tensor_elements(std::size_t t, const Sizes& s) const {
  std::int64_t n = 1;
  for (const auto& e : f_.tensors.at(t).shape) n *= e.eval(s);
  return n;
}

Scalars FileProblem::scalars_for_trial(int trial) const {
  Scalars out;
  for (const auto& s : f_.scalars) out[s.name] = s.trials[static_cast<std::size_t>(trial) % s.trials.size()];
  return out;
}

void FileProblem::check_scalars(const Scalars& values) const {
  Problem::check_scalars(values);
  for (const auto& s : f_.scalars)
    if (auto v = values.find(s.name); v != values.end() && !(v->second >= s.min && v->second <= s.max))
      throw UsageError(fmt::format("scalar {}={} of problem {} must be in [{}, {}]", s.name, v->second,
                                   f_.name, s.min, s.max));
}

// By default an unconditioned input of a problem without a conditioning hook takes every
// pattern: a matrix (rows of its last dimension) when it has two dimensions or more, else
// element-wise ones. Conditioned tensors, outputs and a hook's problem keep their draws.
std::vector<std::int64_t> FileProblem::structured_rows(const Sizes& s) const {
  std::vector<std::int64_t> rows;
  for (const auto& t : f_.tensors) {
    std::string how = t.structured;
    if (how.empty())
      how = t.role != Role::in || t.condition != Condition::none || f_.condition ? "none"
            : t.shape.size() >= 2                                               ? "matrix"
                                                                                : "elementwise";
    rows.push_back(how == "none" ? -1 : how == "elementwise" ? 0 : t.shape.back().eval(s));
  }
  return rows;
}

bool FileProblem::reads_inout(const Instance& inst) const {
  for (const auto& t : f_.tensors)
    if (t.role == Role::inout && (t.unread_when_zero.empty() || inst.scalars.at(t.unread_when_zero) != 0))
      return true;
  return false;
}

void FileProblem::check_sizes(const Sizes& s) const {
  for (const auto& d : f_.sizes)
    if (s.at(d.name) < d.min)
      throw UsageError(fmt::format("size {}={} must be at least {}", d.name, s.at(d.name), d.min));
  for (const auto& r : f_.valid)
    if (r.expr.eval(s) == 0)
      throw UsageError(fmt::format("sizes {} break the rule '{}' of problem {}", format_bindings(s),
                                   r.expr.text(), f_.name));
}

double FileProblem::reduction_length(const Sizes& s) const {
  return static_cast<double>(f_.reduction_length.eval(s));
}
double FileProblem::flops(const Sizes& s) const { return static_cast<double>(f_.flops.eval(s)); }

double FileProblem::bytes(const Sizes& s, DType t) const {
  if (f_.bytes) {
    Bindings b = s;
    b["dtype_bytes"] = static_cast<std::int64_t>(dtype_size(t));
    return static_cast<double>(f_.bytes->eval(b));
  }
  double n = 0;  // a scratch tensor's traffic is the kernel's choice: not counted
  for (std::size_t i = 0; i < f_.tensors.size(); ++i)
    n += static_cast<double>(tensor_elements(i, s)) *
         (f_.tensors[i].role == Role::inout ? 2 : f_.tensors[i].role == Role::scratch ? 0 : 1) *
         static_cast<double>(dtype_size(f_.tensors[i].type.value_or(t)));
  return n;
}

std::vector<std::string> FileProblem::kernel_specs() const { return f_.kernels; }

std::string FileProblem::baseline_name() const { return f_.baseline ? f_.baseline->name : std::string(); }

}  // namespace kforge
