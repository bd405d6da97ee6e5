#pragma once
// A problem is *what* is computed: named sizes, tensors, scalars, a reference in double, exact
// FLOP and byte counts, and how close a result must be. It knows nothing of kernels or devices.
//
// The kernel ABI follows from the problem: a kernel's arguments are the problem's tensors in
// order (pointers to the dtype's storage, or to the tensor's own fixed type: a sparse matrix's
// indices are `int` whatever the dtype), then its sizes as `int` in size order, then its
// scalars as `float`. For gemm: (const T* A, const T* B, T* C, int M, int N, int K,
// float alpha, float beta); for spmm: (const int* row_ptr, const int* col_idx, const T* values, ...).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/dtype.hpp"
#include "kforge/kernel.hpp"
#include "kforge/rng.hpp"

namespace kforge {

// in: read only. out: written, compared with the reference. inout: both. scratch: a workspace
// the kernel may use as it likes (the intermediate levels of a backward pass, a grid too large
// for private memory): sized by tensor_elements from the sizes alone (a problem knows nothing
// of kernels; a kernel whose parameters change its need declares the most it can use), allocated
// for every launch like an output, poisoned before every run (no state carried between runs),
// guard-banded, never compared with the reference, absent from the reference's tensors and from
// the fewest bytes (bytes(), bytes_written()). An Instance leaves its scratch tensors empty.
enum class Role { in, out, inout, scratch };

// Compared with the reference (the reference's `out` holds one vector per such tensor, in order).
[[nodiscard]] constexpr bool is_output(Role r) { return r == Role::out || r == Role::inout; }
// Holds input values (an inout tensor's only where Problem::reads_inout says so).
[[nodiscard]] constexpr bool is_input(Role r) { return r == Role::in || r == Role::inout; }
// Written by the kernel: poisoned before each run, put back between runs.
[[nodiscard]] constexpr bool is_written(Role r) { return r != Role::in; }
[[nodiscard]] constexpr const char* role_name(Role r) {
  return r == Role::in ? "in" : r == Role::out ? "out" : r == Role::inout ? "inout" : "scratch";
}

using Scalars = std::map<std::string, double>;

struct TensorSpec {
  std::string name;
  Role role;
  // An integer type of its own (int32 or int8), whatever the instance's dtype: indices and
  // offsets (a sparse matrix's row pointers pass 2^24, which fp32 cannot hold exactly). Empty:
  // the instance's dtype. Only inputs have one (an output is compared with the dtype's bound).
  std::optional<DType> storage = std::nullopt;
};

// The element type tensor `spec` is stored in on the device, in an instance of dtype `instance`.
[[nodiscard]] inline DType storage_dtype(const TensorSpec& spec, DType instance) {
  return spec.storage.value_or(instance);
}

// One concrete instance: sizes, dtype, scalar values and every tensor's values (already rounded
// to each tensor's storage type, so the reference sees exactly what the kernel sees).
struct Instance {
  Sizes sizes;
  DType dtype = DType::fp32;
  Scalars scalars;
  std::vector<std::vector<double>> tensors;  // in the order of Problem::tensors(); scratch ones empty
};

// The tensors of a reference, moved in: `out = {std::move(y)}` would copy each one out of the
// initializer list, hundreds of megabytes at large sizes.
template <class... V>
[[nodiscard]] std::vector<std::vector<double>> tensor_list(V&&... v) {
  std::vector<std::vector<double>> list;
  list.reserve(sizeof...(v));
  (list.push_back(std::forward<V>(v)), ...);
  return list;
}

class Problem {
 public:
  virtual ~Problem() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  [[nodiscard]] virtual std::string description() const = 0;
  [[nodiscard]] virtual std::vector<std::string> size_names() const = 0;
  [[nodiscard]] virtual Sizes default_sizes() const = 0;
  [[nodiscard]] virtual std::vector<DType> dtypes() const = 0;
  [[nodiscard]] virtual std::vector<TensorSpec> tensors() const = 0;
  [[nodiscard]] virtual std::vector<std::string> scalar_names() const = 0;
  // Element count of tensor `t` at these sizes.
  [[nodiscard]] virtual std::int64_t tensor_elements(std::size_t t, const Sizes& s) const = 0;
  // Scalar values for verification trial `trial` (e.g. gemm checks beta = 0 and beta != 0).
  [[nodiscard]] virtual Scalars scalars_for_trial(int trial) const = 0;
  // Throws UsageError naming the scalar when a value is outside the problem's domain (default:
  // every value finite). Scan: a discount or a trace decay outside [0, 1].
  virtual void check_scalars(const Scalars& s) const;
  // Whether an inout tensor's input value matters (gemm: beta != 0). When it does not, the
  // verifier poisons it like an output.
  [[nodiscard]] virtual bool reads_inout(const Instance& inst) const { (void)inst; return true; }
  // Throws UsageError naming the size when `s` is not a valid instance (default: every size at
  // least 1). Families with sizes that may be 0 (padding) or must divide each other (heads)
  // override it; shape fuzzing skips the sizes it refuses.
  virtual void check_sizes(const Sizes& s) const;
  // What verifying one instance at `s` costs, in the units of shape fuzzing's work cap
  // (src/verify/shapes.cpp): fuzzed shapes shrink until it fits. Default: the product of the
  // sizes. Families whose work grows faster (signature: D^LEVEL terms per step) override it.
  [[nodiscard]] virtual double fuzz_work(const Sizes& s) const;
  // Called last by make_instance: turns the random values of tensors that are not plain data
  // (done flags, indices, probabilities) into valid ones. Values must stay exact in the dtype.
  virtual void condition_inputs(Instance& inst, std::uint64_t seed, int trial) const {
    (void)inst;
    (void)seed;
    (void)trial;
  }
  // Scalar values at their special points, each run once by the thorough protocol's
  // `special_scalars` check (gemm: alpha = 0 with beta != 0, beta = 1, negative scalars). Only
  // where the problem's math gives them meaning; default none.
  [[nodiscard]] virtual std::vector<Scalars> special_scalars() const { return {}; }
  // Which input tensors the `structured` check may reshape (src/verify/structured_inputs.hpp),
  // one entry per tensor: > 0 a matrix with rows that long (zero rows and columns, identical
  // rows, one-hot rows and every element-wise pattern), 0 element-wise patterns only (all
  // equal, alternating signs, near overflow, subnormals, negative zero), -1 left as drawn
  // (indices, flags, anything conditioned). Default (empty): every tensor left as drawn.
  [[nodiscard]] virtual std::vector<std::int64_t> structured_rows(const Sizes& s) const {
    (void)s;
    return {};
  }
  // The near_overflow pattern's scale: the length of the longest sum of products of the
  // reshaped tensors that a correct kernel forms (default: reduction_length, which is that sum
  // for gemm-like problems but a bound's unit for some: attention's is 1, its flash kernels sum
  // over S keys), and whether reshaped tensor t is scaled (default all; attention scales V only,
  // its Q and K stay conditioned).
  [[nodiscard]] virtual double near_overflow_length(const Sizes& s) const { return reduction_length(s); }
  [[nodiscard]] virtual bool near_overflow_scales(std::size_t t) const {
    (void)t;
    return true;
  }
  // The index_width check (docs/verification.md): sizes at which one input tensor passes 2^31
  // elements, and `live`, the same sizes cut to the last rows of the split dimension (gemm: M =
  // 2^16 + 1 rows of K = 2^15, live M = 2). The problem promises: a wide instance whose tensors
  // are the live instance's, those that grow with the split size preceded by zero rows, has as
  // its outputs the live outputs preceded by the rows that a zero input row gives, the same for
  // every row (gemm, reduce: zeros; activation: f(bias); softmax: 1/N; layernorm: beta). Those
  // rows' reference is the live instance's with its growing tensors zeroed, repeated. So the
  // wide input is mapped, not filled (its zeros are the shared zero page), and only the live rows
  // and a zero instance have a reference. An output that grows past 2^31 elements too (the
  // elementwise families) is written whole by the kernel and compared in its live rows and a few
  // sampled windows (verify.cpp). Empty sizes (the default): the problem does not support it.
  struct WideIndexShape {
    Sizes sizes, live;
  };
  [[nodiscard]] virtual WideIndexShape wide_index_shape(const Sizes& requested) const {
    (void)requested;
    return {};
  }
  // The wide instance's expected outputs where the promise above does not describe them (the
  // column max and argmax: the zero rows change a column's result, but as one zero row before
  // the live ones would, with argmax's indices past it shifted by the rows between): the whole
  // outputs at the `wide` sizes from `live`, returned true. Only for outputs that do not grow
  // with the split size. Default: false, the promise above.
  virtual bool wide_index_reference(const Instance& live, const Sizes& wide, std::vector<std::vector<double>>& out,
                                    std::vector<std::vector<double>>& magnitude) const {
    (void)live, (void)wide, (void)out, (void)magnitude;
    return false;
  }
  // Changes element `i` of input tensor `t` so that the exact result changes (the perturbation
  // check). Default: moves the value by 2 + 2|v| away from zero's side, rounded to the dtype.
  virtual void perturb(Instance& inst, std::size_t t, std::size_t i) const;

  // The reference in double. For every out/inout tensor (not scratch), `out` receives the exact result and
  // `magnitude` a per-element error scale: the same computation over absolute values (so
  // a sum of products gets the bound n·u·Σ|a·b| that any summation order satisfies).
  virtual void reference(const Instance& inst, std::vector<std::vector<double>>& out,
                         std::vector<std::vector<double>>& magnitude) const = 0;
  // The length of the longest reduction behind one output element (gemm: K); the error bound
  // grows with it.
  [[nodiscard]] virtual double reduction_length(const Sizes& s) const = 0;
  // Per-element reduction lengths where they differ by element (spmm: output row r sums that
  // row's nonzeros, not K, so a row of 3 gets a 3-term bound): one vector per out/inout tensor,
  // sized like it. Empty (the default): reduction_length(sizes) for every element.
  [[nodiscard]] virtual std::vector<std::vector<double>> reduction_lengths(const Instance& inst) const {
    (void)inst;
    return {};
  }
  [[nodiscard]] virtual double flops(const Sizes& s) const = 0;
  // The fewest bytes that must move: each input read once, each output written once (a
  // scratch tensor's traffic is the kernel's choice, not counted: the SOL stays the problem's).
  [[nodiscard]] virtual double bytes(const Sizes& s, DType t) const = 0;
  // How many of those bytes are stores: every out and inout tensor of `inst` written once
  // (scratch tensors are the kernel's own traffic, not the problem's).
  [[nodiscard]] double bytes_written(const Instance& inst) const;

  // The peer a user would otherwise call (OpenBLAS for gemm), prepared on `inst` to use
  // `threads` threads (0: all cores), as the kernel does; each call of the returned function
  // runs it once. Empty when the problem has no baseline.
  [[nodiscard]] virtual std::function<void()> baseline(const Instance& inst, int threads) const {
    (void)inst;
    (void)threads;
    return {};
  }
  [[nodiscard]] virtual std::string baseline_name() const { return {}; }

  // Kernel specs shipped with the problem: paths of embedded JSON specs, or absolute paths of
  // files on disk (a problem file's kernels).
  [[nodiscard]] virtual std::vector<std::string> kernel_specs() const = 0;
  // The problem file this problem was loaded from; empty for the library's compiled-in ones.
  // A worker subprocess loads it again from there.
  [[nodiscard]] virtual std::string source_file() const { return {}; }

  // Sizes from defaults overridden by `overrides`; throws UsageError on an unknown name or a
  // size < 1.
  [[nodiscard]] Sizes resolve_sizes(const Sizes& overrides) const;
  // Scalar values the user fixes (`--scalar gamma=0.9`), checked: throws UsageError on an
  // unknown name or a value check_scalars refuses.
  [[nodiscard]] Scalars resolve_scalars(const Scalars& overrides) const;
  // Fresh inputs: every tensor but scratch ones (left empty) filled from `dist` under `seed`,
  // rounded to the dtype; the trial's scalars, except those `fixed` by the user.
  [[nodiscard]] Instance make_instance(const Sizes& s, DType t, Distribution dist,
                                       std::uint64_t seed, int trial, const Scalars& fixed = {}) const;
  [[nodiscard]] std::string signature(Lang lang) const;  // the ABI, for `kforge list`
};

// The library: every problem and its kernels, from kernels/registry.cpp.
[[nodiscard]] const std::vector<std::shared_ptr<Problem>>& problems();
// A library problem by name, or a problem file (src/problem/): `name` may be a path to a
// problem file, or the name of one already loaded or found in $KFORGE_PROBLEM_PATH's folders.
// Throws UsageError (unknown name) or ProblemError (a bad file).
[[nodiscard]] std::shared_ptr<Problem> find_problem(const std::string& name);
[[nodiscard]] std::vector<KernelSpec> library_kernels(const Problem& p);
// The library kernel of `problem` for `lang` at sizes `s`: the first spec of that language whose
// "applies" holds (a special case listed before the general kernel); throws UsageError if none.
[[nodiscard]] KernelSpec library_kernel(const Problem& p, Lang lang, const Sizes& s);
// The same at the problem's default sizes.
[[nodiscard]] KernelSpec library_kernel(const Problem& p, Lang lang);
// The library kernel the user named (`--kernel NAME,...`: spec names, as `kforge list` shows) for
// a backend of language `lang`, whatever its "applies" says (a special case is correct at any
// size its constraints accept; "applies" only says where the library prefers it). Throws
// UsageError listing the problem's kernels when a name is unknown, or when no name, or more than
// one, is of language `lang`.
[[nodiscard]] KernelSpec library_kernel_named(const Problem& p, Lang lang, const std::vector<std::string>& names);

}  // namespace kforge
