#pragma once
// Verification: the protocol that lets no wrong kernel pass and no right one fail. Each step is
// a named check, reported with its figures (docs/verification.md):
//   degenerate     the instance can tell right from wrong (else the verdict is refused)
//   guard          nothing written in the guard bands around any buffer
//   inputs_intact  input tensors unchanged
//   oob_read       no output NaN carries the guard bands' payload (a read out of bounds)
//   poison_read    no output NaN carries the poison's payload (an unwritten output was read)
//   poison         every output element written (outputs start as a signalling NaN)
//   finite         no NaN/Inf where the reference is finite
//   all_zero       not an all-zero output against a non-zero reference
//   bound          every element within its dtype-aware error bound
//   fp_environment the run left the floating-point control state (FTZ/DAZ, rounding) as it found it
//   determinism    the same inputs, run again at fresh addresses under other schedules (threads,
//                  block order: a race), pass again; bit for bit when the kernel claims so
//   perturbation   one changed input element changes the output where the reference changes
//   reused_buffers new inputs in the very buffers of the previous run, and those inputs again
//                  at fresh addresses, pass (a cache keyed by pointers or by values fails)
//   special_scalars  the problem's special scalar values (alpha = 0 with beta != 0, beta = 1, ...)
//   structured     structured inputs (zero rows, one-hot rows, subnormals, ...) where declared
//   shapes         the checks above at fuzzed shapes: 1, primes, tile±1, random
//   index_width    one input tensor past 2^31 elements (a 32-bit flat index wraps), where the
//                  problem and the backend allow it; skipped, saying what it needs, otherwise
// The caller adds timed_outputs and speed_of_light (evaluate.cpp), which need the timed runs.
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kforge/problem.hpp"

namespace kforge {

struct KernelOutput;

struct VerifyOptions {
  // Thorough (the default for final verdicts): every distribution, determinism, perturbation
  // and shape fuzzing. Quick (tuning): `trials` at the requested sizes, same per-run checks.
  bool thorough = true;
  // 0: three when thorough (the other distributions run at the fuzzed shapes), two when quick.
  int trials = 0;
  std::vector<Distribution> distributions{std::begin(kAllDistributions), std::end(kAllDistributions)};
  std::uint64_t seed = 0x6b666f726765ull;
  int fuzz_shapes = 8;        // thorough only
  int determinism_runs = 4;   // extra runs of trial 0's inputs, thorough only, each under schedule(r)
  // The kernel claims bitwise determinism: its repeats must equal trial 0's output bit for bit
  // (else within the bound, as every run).
  bool bitwise_repeats = false;
  // Values near which a tiled kernel's tails break (its parameter values); shape fuzzing tries
  // each t-1, t, t+1. Set by the caller; not part of the JSON.
  std::vector<std::int64_t> tile_hints;
  // Whether the kernel claims these sizes (its constraints hold); unclaimed fuzzed shapes are
  // skipped. Empty: every shape is claimed.
  std::function<bool(const Sizes&)> supports;
  // Scalars the user fixed: every trial uses them (the trials vary only the others). Set by
  // the caller from the request.
  Scalars scalars;
  // Race probing, set by the caller: switches the backend to schedule variant v (0: the
  // ordinary one) and returns it in words (empty: no variants). Not part of the JSON.
  std::function<std::string(int variant, std::uint64_t seed)> schedule;
  // Runs the kernel in the very buffers of the previous call (same sizes); empty: the
  // reused_buffers check is skipped. Set by the caller; not part of the JSON.
  std::function<KernelOutput(const Instance& inst, bool poison_inout)> call_same_buffers;
  // The index_width check (thorough only, where the problem declares a wide shape,
  // Problem::wide_index_shape): one input tensor past 2^31 elements. Off: `--no-index-width`.
  bool index_width = true;
  // Runs the kernel on the problem's wide instance: `live`'s tensors, those that are larger at
  // the `wide` sizes preceded by zeros that are mapped, never written (the shared zero page).
  // Empty: the backend cannot, and the check is skipped. Throws std::bad_alloc when the address
  // space is short. `fold`: the index_width proxy, where the memory is short: an output past
  // kWideSampledOutputBytes is folded (Backend::fold_region) and only its live rows come back;
  // throws std::domain_error when the backend cannot fold. Set by the caller; not in the JSON.
  std::function<KernelOutput(const Instance& live, const Sizes& wide, bool poison_inout, bool fold)> call_wide;
  // After a passed thorough verification of a cpu kernel (evaluate() in this process, or
  // evaluate_isolated's worker), a second worker runs it once more built with ThreadSanitizer,
  // each block on a thread of its own; a data race with an access in the kernel's code makes it
  // `nondeterministic` (check `race`). `--tsan` (eval, verify, tune, agent, MCP);
  // docs/verification.md, "ThreadSanitizer".
  bool tsan = false;
  [[nodiscard]] int trial_count() const { return trials > 0 ? trials : thorough ? 3 : 2; }
};

// What one run of the kernel left behind, as the runner read it back.
struct KernelOutput {
  std::vector<std::vector<double>> tensors;   // out/inout tensors in order, decoded
  std::vector<std::vector<bool>> unwritten;   // per element: still holds the poison
  int guard_violations = 0;                   // tensors with damaged guard bands
  std::string guard_detail;
  std::vector<std::string> inputs_modified;   // names of `in` tensors the kernel wrote
  std::string fp_environment;                 // the FP control state the run left changed; empty: none
  // NaNs that carry a poison payload (src/verify/poison.hpp), per out/inout tensor: computed
  // from an output's own poison (read before written) or from a guard band (read out of bounds).
  // Empty when the runner cannot tell (every count then reads as zero).
  struct NaNTrace {
    std::int64_t from_poison = 0, from_guard = 0;
    std::int64_t first_from_poison = -1, first_from_guard = -1;
  };
  std::vector<NaNTrace> nan_traces;
  // Per out/inout tensor, where its elements above sit in the whole tensor: empty, every element
  // in order; else tensors[t][i] is element flat_index[t][i] (a sampled output: the index_width
  // run's outputs past 2^31 elements, read back in their live rows and a few windows only).
  std::vector<std::vector<std::int64_t>> flat_index;
  [[nodiscard]] std::int64_t flat(std::size_t t, std::size_t i) const {
    return t < flat_index.size() && !flat_index[t].empty() ? flat_index[t][i] : static_cast<std::int64_t>(i);
  }
};

// The index_width run's outputs at least this large are sampled, not read back whole: the
// kernel writes all of them, the verifier reads the live rows and a few windows
// (KernelRunner::load_wide).
constexpr std::size_t kWideSampledOutputBytes = std::size_t{64} << 20;

// What the index_width run at `w` takes: address space (every tensor at the wide sizes, the
// growing inputs mapped on the zero page) and resident memory (what is written: outputs, inout
// and scratch tensors whole, growing inputs' live rows, small inputs), in bytes.
struct WideIndexBytes {
  double address = 0, resident = 0;
};
[[nodiscard]] WideIndexBytes wide_index_bytes(const Problem& p, const Problem::WideIndexShape& w, DType t);

// Runs the kernel once on an instance (fresh buffers) and returns what it left.
// `poison_inout`: the inout tensors are poisoned, not filled, before the run.
using KernelCall = std::function<KernelOutput(const Instance& inst, bool poison_inout)>;

// The first element that failed, for debugging.
struct BadElement {
  std::string tensor;
  std::int64_t index = -1;  // flat, row-major
  double got = 0, expected = 0, bound = 0;
};

// One comparison of a kernel's outputs with the reference.
struct Comparison {
  bool passed = true;
  std::string failed_check;       // the first check that failed, in the order listed above
  std::string failure;            // what was wrong, in words
  std::int64_t elements = 0;
  std::int64_t bad_elements = 0;  // beyond the bound
  std::int64_t unwritten = 0;     // still holding the poison
  std::int64_t non_finite = 0;    // NaN or Inf where the reference is finite
  double max_abs_error = 0, max_rel_error = 0, mean_abs_error = 0, mean_rel_error = 0;
  double rel_frobenius_error = 0;
  double max_bound_ratio = 0;     // the worst |error| / bound; must stay <= 1
  double ulp_p50 = 0, ulp_p90 = 0, ulp_p99 = 0;  // error in units in the last place of the dtype
  BadElement first_bad;
};

struct CheckResult {
  std::string name;
  bool passed = true;
  std::string detail;
};

struct VerifyReport {
  bool passed = true;
  std::string failure;
  std::string failed_check;       // empty when passed
  // The element-level check behind a failure found by an input-making check (shapes,
  // structured, special_scalars, determinism, perturbation): poison, bound, ...; else the same.
  std::string element_check;
  Sizes failed_sizes;             // where it failed (a fuzzed shape, or the requested one)
  std::uint64_t seed = 0;         // replays the verdict: --seed
  int trials_run = 0;             // kernel runs compared with a reference
  std::vector<Sizes> shapes_tried;
  int shapes_unclaimed = 0;       // fuzzed shapes the kernel's constraints exclude
  Comparison worst;               // the failing comparison, or the one with the largest bound ratio
  std::string worst_distribution;
  std::vector<CheckResult> checks;
  [[nodiscard]] bool nondeterministic() const { return failed_check == "determinism" || failed_check == "race"; }
  [[nodiscard]] nlohmann::json to_json() const;
  static VerifyReport from_json(const nlohmann::json& j);
};

[[nodiscard]] Comparison compare(const Problem& p, const Instance& inst, const KernelOutput& got,
                                 const std::vector<std::vector<double>>& ref,
                                 const std::vector<std::vector<double>>& magnitude);

// The per-element error bound (see the derivation in compare.cpp): its per-instance terms taken
// once, then one multiply-add per element.
class ErrorBound {
 public:
  ErrorBound(const Problem& p, const Instance& inst);
  [[nodiscard]] double operator()(double ref, double magnitude) const {
    if (exact_) return 0;
    return u_out_ * std::fabs(ref) + (1 + u_out_) * gamma_ * magnitude + floor_;
  }
  // The same bound for an element whose own reduction length is `n` (Problem::reduction_lengths).
  [[nodiscard]] double operator()(double ref, double magnitude, double n) const;

 private:
  bool exact_;
  double u_out_ = 0, gamma_ = 0, floor_ = 0, u_acc_ = 0, sub_out_ = 0, sub_acc_ = 0;
};

// The reference for an instance, cached for the most recently used instances keyed by `key`
// (tuning evaluates many configurations on the same inputs): eight at most, together within a
// quarter of the machine's memory, the newest always.
struct Reference {
  std::vector<std::vector<double>> out, magnitude;
};
[[nodiscard]] std::shared_ptr<const Reference> reference_for(const Problem& p, const Instance& inst,
                                                             const std::string& key);

// Fuzzed shapes for `requested`: all ones first, then sizes drawn from 1, small primes,
// tile-1/tile/tile+1 and requested±1, each shape's reduction work kept small. Seeded.
// Shapes the problem refuses (check_sizes) are skipped; `refused`, when given, receives how
// many distinct ones and the first one's reason.
struct RefusedShapes {
  int count = 0;
  std::string first_reason;
};
[[nodiscard]] std::vector<Sizes> fuzz_shapes(const Problem& p, const Sizes& requested,
                                             const std::vector<std::int64_t>& tile_hints, int count,
                                             std::uint64_t seed, RefusedShapes* refused = nullptr);

// Throws UsageError when the instance is degenerate (see degenerate in the list above).
[[nodiscard]] VerifyReport verify(const Problem& p, const Sizes& s, DType t, const KernelCall& call,
                                  const VerifyOptions& opts = {});

}  // namespace kforge
