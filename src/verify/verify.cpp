// The verification protocol (verify.hpp lists the checks). The kernel always runs before the
// reference of its inputs is computed, on fresh inputs at fresh addresses, so it can neither
// find the answer nor replay an earlier one.
#include "kforge/verify.hpp"

#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "kforge/alternative_answers.hpp"
#include "kforge/error.hpp"
#include "verify/progress.hpp"
#include "verify/structured_inputs.hpp"

namespace kforge {

namespace {

std::size_t reference_bytes(const Reference& r) {
  std::size_t n = 0;
  for (const auto& v : r.out) n += v.size();
  for (const auto& v : r.magnitude) n += v.size();
  return n * sizeof(double);
}

// What the cached references may take together (the newest is kept whatever its size): a
// quarter of the machine's memory (eight references of a tensor beyond the last-level cache once
// took ten gigabytes), an eighth of the address space where it is limited (an isolated worker).
std::size_t reference_cache_budget() {
  static const std::size_t budget = [] {
    std::size_t b = static_cast<std::size_t>(sysconf(_SC_PHYS_PAGES)) *
                    static_cast<std::size_t>(sysconf(_SC_PAGE_SIZE)) / 4;
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
      b = std::min<std::size_t>(b, limit.rlim_cur / 8);
    return b;
  }();
  return budget;
}

// For the index_width run alone: the address-space limit raised to its hard limit (an isolated
// worker is started with the wide run's extra space as the hard limit only, isolate.cpp), and
// put back after, so that every other run of the kernel keeps the ordinary limit.
class RaisedAddressSpace {
 public:
  RaisedAddressSpace() {
    if (getrlimit(RLIMIT_AS, &saved_) != 0 || saved_.rlim_cur == saved_.rlim_max) return;
    rlimit raised = saved_;
    raised.rlim_cur = saved_.rlim_max;
    raised_ = setrlimit(RLIMIT_AS, &raised) == 0;
  }
  ~RaisedAddressSpace() {
    if (raised_) (void)setrlimit(RLIMIT_AS, &saved_);
  }
  RaisedAddressSpace(const RaisedAddressSpace&) = delete;
  RaisedAddressSpace& operator=(const RaisedAddressSpace&) = delete;

 private:
  rlimit saved_{};
  bool raised_ = false;
};

// Memory the system can give without swapping: MemAvailable, or, where /proc/meminfo cannot be
// opened (the worker's sandbox refuses it), free plus buffer memory from sysinfo (lower: the
// page cache is not counted). Negative when neither answers.
double available_memory_bytes() {
  if (std::FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    double kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    std::fclose(f);
    if (kib >= 0) return kib * 1024;
  }
  struct sysinfo si{};
  if (sysinfo(&si) == 0)
    return (static_cast<double>(si.freeram) + static_cast<double>(si.bufferram)) * si.mem_unit;
  return -1;
}

}  // namespace

WideIndexBytes wide_index_bytes(const Problem& p, const Problem::WideIndexShape& w, DType t) {
  WideIndexBytes b;
  const auto specs = p.tensors();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const double esize = static_cast<double>(dtype_size(storage_dtype(specs[i], t)));
    const double wide = static_cast<double>(p.tensor_elements(i, w.sizes)) * esize;
    const double live = static_cast<double>(p.tensor_elements(i, w.live)) * esize;
    b.address += wide;
    b.resident += specs[i].role == Role::in && wide > live ? live : wide;
  }
  return b;
}

std::shared_ptr<const Reference> reference_for(const Problem& p, const Instance& inst,
                                               const std::string& key) {
  static std::mutex mutex;
  static std::list<std::pair<std::string, std::shared_ptr<const Reference>>> cache;  // newest first
  {
    std::lock_guard lock(mutex);
    for (auto it = cache.begin(); it != cache.end(); ++it)
      if (it->first == key) {
        cache.splice(cache.begin(), cache, it);  // used again: kept longest
        return cache.front().second;
      }
  }
  auto r = std::make_shared<Reference>();
  p.reference(inst, r->out, r->magnitude);
  std::lock_guard lock(mutex);
  cache.emplace_front(key, r);
  std::size_t held = 0, kept = 0;
  for (auto it = cache.begin(); it != cache.end(); ++it, ++kept) {
    held += reference_bytes(*it->second);
    if (kept >= 8 || (kept > 0 && held > reference_cache_budget())) {
      cache.erase(it, cache.end());
      break;
    }
  }
  return r;
}

namespace {

std::string sizes_text(const Sizes& s) {
  std::string out;
  for (const auto& [k, v] : s) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}

class Protocol {
 public:
  Protocol(const Problem& p, DType t, const KernelCall& call, const VerifyOptions& o)
      : p_(p), t_(t), call_(call), o_(o) {
    rep_.seed = o.seed;
  }

  VerifyReport run(const Sizes& s) {
    requested_ = s;
    if (trials(s) && o_.thorough)
      (void)(determinism() && perturbation() && reused_buffers() && special_scalars(s) && structured(s) &&
             shapes(s) && index_width(s));
    return std::move(rep_);
  }

 private:
  struct Judged {
    bool passed;
    KernelOutput out;
  };

  Instance instance(const Sizes& s, int trial, Distribution d, std::uint64_t seed) const {
    return p_.make_instance(s, t_, d, seed, trial, o_.scalars);
  }
  static std::string key(const Instance& inst, Distribution d, std::uint64_t seed, int trial,
                         const std::string& tag) {
    std::string scalars;
    for (const auto& [k, v] : inst.scalars) scalars += fmt::format("{}={},", k, v);
    return fmt::format("{}|{}|{}|{}|{}|{}|{}", dtype_name(inst.dtype), distribution_name(d), seed, trial,
                       sizes_text(inst.sizes), scalars, tag);
  }

  // One run of the kernel on `inst`, compared with its reference. A failure is charged to
  // `as_check` when given (the run's own check otherwise).
  Judged judge(const Instance& inst, Distribution d, const std::string& ref_key, const std::string& context,
               const char* as_check = nullptr, const KernelCall* via = nullptr) {
    {
      std::string scalars;
      for (const auto& [k, v] : inst.scalars) scalars += fmt::format(", {}={}", k, v);
      verify_progress(fmt::format("{} at {}, {} inputs{}, seed {}", context, sizes_text(inst.sizes),
                                  distribution_name(d), scalars, o_.seed));
    }
    KernelOutput out = (via ? *via : call_)(inst, !p_.reads_inout(inst));  // before the reference exists
    const auto ref = reference_for(p_, inst, p_.name() + "|" + ref_key);
    if (!degenerate_checked_) refuse_if_degenerate(inst, *ref, d);
    std::vector<std::vector<double>> accepted;  // the reference with the kernel's tie choices
    if (const auto* alt = dynamic_cast<const AlternativeAnswers*>(&p_)) {
      accepted = ref->out;
      alt->accept_alternatives(inst, out.tensors, accepted);
    }
    Comparison c = compare(p_, inst, out, accepted.empty() ? ref->out : accepted, ref->magnitude);
    const bool passed = conclude(std::move(c), out, inst, d, context, as_check);
    return {passed, std::move(out)};
  }

  // Records one compared run: the worst passing one, or the failure (charged to `as_check`
  // when given).
  bool conclude(Comparison c, const KernelOutput& out, const Instance& inst, Distribution d,
                const std::string& context, const char* as_check) {
    if (!out.fp_environment.empty()) {  // charged as itself, whatever the run was checking
      c.passed = false;
      c.failed_check = "fp_environment";
      c.failure = "the kernel left the floating-point environment changed: " + out.fp_environment +
                  " (restore it before returning)";
      as_check = nullptr;
    }
    ++rep_.trials_run;
    if (c.passed) {
      if (c.max_bound_ratio >= rep_.worst.max_bound_ratio) {
        rep_.worst = c;
        rep_.worst_distribution = std::string(distribution_name(d));
      }
      return true;
    }
    rep_.passed = false;
    rep_.worst = c;
    rep_.worst_distribution = std::string(distribution_name(d));
    rep_.failed_check = as_check ? as_check : c.failed_check;
    rep_.element_check = c.failed_check;
    rep_.failed_sizes = inst.sizes;
    std::string scalars;
    for (const auto& [k, v] : inst.scalars) scalars += fmt::format(", {}={}", k, v);
    rep_.failure = fmt::format("{} [{} at {}, {} inputs{}, seed {}]: {}", rep_.failed_check, context,
                               sizes_text(inst.sizes), distribution_name(d), scalars, o_.seed, c.failure);
    add(rep_.failed_check, false, rep_.failure);
    return false;
  }

  // Why an instance's reference cannot tell right from wrong ("" when it can): every element
  // within its bound of zero, or all equal. `distinguishable` counts the elements that are not.
  std::string degenerate_reason(const Instance& inst, const Reference& ref, std::int64_t* distinguishable_out = nullptr,
                                std::int64_t* n_out = nullptr) const {
    std::int64_t n = 0, distinguishable = 0;
    bool constant = true;
    const double first = ref.out.empty() || ref.out[0].empty() ? 0 : ref.out[0][0];
    const ErrorBound bound(p_, inst);
    for (std::size_t t = 0; t < ref.out.size(); ++t)
      for (std::size_t i = 0; i < ref.out[t].size(); ++i) {
        ++n;
        const double r = ref.out[t][i];
        if (std::fabs(r) > bound(r, ref.magnitude[t][i])) ++distinguishable;
        constant = constant && r == first;
      }
    if (distinguishable_out) *distinguishable_out = distinguishable;
    if (n_out) *n_out = n;
    if (distinguishable == 0) return "every reference element is within its error bound of zero, so an all-zero output would pass";
    if (n >= 2 && constant) return fmt::format("every reference element equals {}, so a constant output would pass", first);
    return "";
  }

  // An instance whose reference cannot tell right from wrong is refused before any verdict.
  // Before refusing, the same sizes are drawn at two other seeds (two references, only on this
  // path): the refusal says whether it holds for the problem at these sizes or only for the
  // inputs this seed drew (then naming a seed that works).
  void refuse_if_degenerate(const Instance& inst, const Reference& ref, Distribution d) {
    degenerate_checked_ = true;
    std::int64_t n = 0, distinguishable = 0;
    const std::string why = degenerate_reason(inst, ref, &distinguishable, &n);
    if (why.empty()) return add("degenerate", true, fmt::format("{} of {} reference elements distinguishable from zero", distinguishable, n));
    blame_fixed_scalars(inst);
    std::string seeds;
    for (std::uint64_t other : {o_.seed + 1, o_.seed + 2}) {
      const Instance again = p_.make_instance(inst.sizes, t_, d, other, 0, o_.scalars);
      Reference r;
      p_.reference(again, r.out, r.magnitude);
      if (degenerate_reason(again, r).empty())
        throw UsageError(fmt::format("problem {} at {} is degenerate at seed {} and cannot judge a kernel: {}; at "
                                     "seed {} it is not (the inputs drawn decide it): use --seed {} or other sizes",
                                     p_.name(), sizes_text(inst.sizes), o_.seed, why, other, other));
      seeds += fmt::format(", {}", other);
    }
    throw UsageError("problem " + p_.name() + " at " + sizes_text(inst.sizes) +
                     " is degenerate and cannot judge a kernel: " + why + " (the same at seeds " +
                     std::to_string(o_.seed) + seeds + "); choose other sizes");
  }

  // A degenerate instance caused by scalars the user fixed (`--scalar alpha=0`) is refused
  // naming them: the same instance with the trial's own scalars is not degenerate.
  void blame_fixed_scalars(const Instance& inst) {
    if (o_.scalars.empty()) return;
    Instance free = inst;
    free.scalars = p_.scalars_for_trial(0);
    Reference r;
    p_.reference(free, r.out, r.magnitude);
    if (!degenerate_reason(free, r).empty()) return;  // the sizes' fault, not the scalars'
    std::string fixed;
    for (const auto& [k, v] : o_.scalars) fixed += fmt::format("{}{}={}", fixed.empty() ? "" : ",", k, v);
    throw UsageError("problem " + p_.name() + " with --scalar " + fixed + " is degenerate and cannot judge a "
                     "kernel: with these scalar value(s) the reference output cannot tell a right kernel from "
                     "a wrong one (with the trials' own values it can); drop --scalar or choose other values");
  }

  // Two trials on different inputs with the very same reference: the output does not depend on
  // the inputs, so a kernel that returns a stored answer would pass.
  void refuse_if_input_independent(const Reference& first, const Reference& second, const Sizes& s) {
    if (first.out != second.out) return;
    throw UsageError("problem " + p_.name() + " at " + sizes_text(s) +
                     " is degenerate and cannot judge a kernel: its reference output is the same for "
                     "different inputs; choose other sizes");
  }

  bool trials(const Sizes& s) {
    const int n = o_.trial_count();
    for (int trial = 0; trial < n; ++trial) {
      const Distribution d = o_.distributions[trial % o_.distributions.size()];
      Instance inst = instance(s, trial, d, o_.seed);
      const std::string ref_key = key(inst, d, o_.seed, trial, "");
      Judged j = judge(inst, d, ref_key, fmt::format("trial {}", trial));
      if (!j.passed) return false;
      const auto ref = reference_for(p_, inst, p_.name() + "|" + ref_key);  // cached by judge
      if (trial == 0) first_output_ = std::move(j.out.tensors), first_reference_ = ref;
      if (trial == 1) refuse_if_input_independent(*first_reference_, *ref, s);
      if (trial == 0) first_instance_ = std::move(inst);  // kept: regenerating costs more than a copy
    }
    add("poison", true, "every output element written, in every run");
    add("guard", true, fmt::format("no write in the {}-byte guard bands", 4096));
    add("inputs_intact", true, "input tensors unchanged");
    add("finite", true, "no NaN/Inf where the reference is finite");
    add("bound", true, fmt::format("{} trial(s) at {}; worst error/bound {:.3g}, ULP p50/p90/p99 {:.3g}/{:.3g}/{:.3g}",
                                   n, sizes_text(s), rep_.worst.max_bound_ratio, rep_.worst.ulp_p50,
                                   rep_.worst.ulp_p90, rep_.worst.ulp_p99));
    return true;
  }

  // The first trial's inputs again, at fresh addresses: a race or an uninitialised read shows
  // as a run that fails where the first passed.
  bool determinism() {
    const Distribution d = o_.distributions[0];
    const Instance& inst = first_instance_;
    bool bitwise = true;
    std::string schedules;
    for (int r = 1; r <= o_.determinism_runs; ++r) {
      // Each repeat under another schedule where the backend has them (a race shows when the
      // order or the overlap of blocks changes); the ordinary one is back before anything else.
      std::string schedule = o_.schedule ? o_.schedule(r, o_.seed + static_cast<std::uint64_t>(r)) : "";
      const std::string context = fmt::format("repeat {} of trial 0{}", r, schedule.empty() ? "" : ", " + schedule);
      Judged j = judge(inst, d, key(inst, d, o_.seed, 0, ""), context, "determinism");
      if (o_.schedule) (void)o_.schedule(0, 0);
      if (!j.passed) return false;
      const bool same = j.out.tensors == first_output_;
      if (!same && o_.bitwise_repeats) return fail_bitwise(context);
      bitwise = bitwise && same;
      if (!schedule.empty() && schedules.find(schedule.substr(0, 12)) == std::string::npos)
        schedules += (schedules.empty() ? "" : "; ") + schedule.substr(0, schedule.find(','));
    }
    add("determinism", true, fmt::format("{} repeat(s) of trial 0 passed{}; results {}", o_.determinism_runs,
                                         schedules.empty() ? "" : " (schedules: " + schedules + ")",
                                         bitwise ? "bitwise identical" : "differ within rounding"));
    return true;
  }

  // A repeat within the bound but not bit for bit equal, from a kernel that claims it would be.
  bool fail_bitwise(const std::string& context) {
    rep_.passed = false;
    rep_.failed_check = "determinism";
    rep_.failed_sizes = first_instance_.sizes;
    rep_.failure = fmt::format("determinism [{} at {}, seed {}]: the output differs from trial 0's bit for bit, "
                               "although the kernel claims bitwise determinism", context,
                               sizes_text(first_instance_.sizes), o_.seed);
    add("determinism", false, rep_.failure);
    return false;
  }

  // New inputs in the very buffers of the previous run (the last perturbation's, at the
  // requested sizes), then one element of them changed in place, then those inputs at fresh
  // addresses: a result cache keyed by the output pointer, by pointer and a sample of the
  // values, or by the values alone returns a stale answer in one of them.
  bool reused_buffers() {
    if (!o_.call_same_buffers) return true;
    const Distribution d = o_.distributions[1 % o_.distributions.size()];
    const std::uint64_t seed = o_.seed ^ 0x7e05edull;
    Instance inst = instance(requested_, 0, d, seed);
    const KernelCall& same = o_.call_same_buffers;
    if (!judge(inst, d, key(inst, d, seed, 0, "reused"), "new inputs in the previous run's buffers",
               "reused_buffers", &same).passed)
      return false;
    const auto specs = p_.tensors();
    for (std::size_t t = 0; t < specs.size(); ++t) {
      if (specs[t].role != Role::in || inst.tensors[t].empty()) continue;
      const std::size_t i = random_bits(seed, 0x5ab + t, 0) % inst.tensors[t].size();
      p_.perturb(inst, t, i);
      const std::string what = fmt::format("{}[{}] changed in place", specs[t].name, i);
      if (!judge(inst, d, key(inst, d, seed, 0, what), what, "reused_buffers", &same).passed) return false;
      break;  // one input is enough: the buffers are the same, only the values moved
    }
    if (!judge(inst, d, key(inst, d, seed, 0, "moved"), "the same inputs at fresh addresses", "reused_buffers").passed)
      return false;
    add("reused_buffers", true, "new inputs in the same buffers, one element changed in place, and the same "
                                "inputs at fresh addresses: each passed");
    return true;
  }

  // One element of each input changed: a kernel that ignores an input, or replays an answer
  // it stored, gives the old output where the reference moved.
  bool perturbation() {
    const Distribution d = o_.distributions[0];
    const auto specs = p_.tensors();
    int changed = 0;
    for (std::size_t t = 0; t < specs.size(); ++t) {
      const bool read = specs[t].role == Role::in || (specs[t].role == Role::inout && p_.reads_inout(first_instance_));
      if (!read) continue;
      Instance inst = first_instance_;
      const std::size_t i = random_bits(o_.seed, 0x9e7 + t, 0) % inst.tensors[t].size();
      p_.perturb(inst, t, i);
      const std::string what = fmt::format("{}[{}] changed", specs[t].name, i);
      if (!judge(inst, d, key(inst, d, o_.seed, 0, what), what, "perturbation").passed) return false;
      ++changed;
    }
    add("perturbation", true, fmt::format("{} input tensor(s) perturbed in one element; the output followed", changed));
    return true;
  }

  // The problem's special scalar values (alpha = 0 with beta != 0, beta = 1, negatives) on
  // trial 0's inputs: a kernel with a shortcut for a special value shows here. Values the user
  // fixed stay fixed; a set that would change one is skipped.
  bool special_scalars(const Sizes& s) {
    const auto sets = p_.special_scalars();
    if (sets.empty()) return true;
    const Distribution d = o_.distributions[0];
    int run = 0, skipped = 0;
    std::string tried;
    for (std::size_t k = 0; k < sets.size(); ++k) {
      bool clashes = false;
      for (const auto& [name, v] : sets[k]) clashes = clashes || o_.scalars.count(name);
      if (clashes) { ++skipped; continue; }
      Instance inst = instance(s, 0, d, o_.seed ^ 0x5ca1ull);
      for (const auto& [name, v] : sets[k]) inst.scalars[name] = v;
      std::string what;
      for (const auto& [name, v] : sets[k]) what += fmt::format("{}{}={}", what.empty() ? "" : ",", name, v);
      if (!judge(inst, d, key(inst, d, o_.seed ^ 0x5ca1ull, 0, "special " + what), "special scalars " + what,
                 "special_scalars").passed)
        return false;
      tried += (tried.empty() ? "" : "; ") + what;
      ++run;
    }
    add("special_scalars", true, fmt::format("passed at {} special scalar set(s) ({}){}", run, tried,
                                             skipped ? fmt::format("; {} skipped (they change a --scalar value)", skipped) : ""));
    return true;
  }

  // Trials 0 and 1 when their scalar sets differ (trial 0 alone otherwise): every family's
  // schedule alternates its scalars' special choices between them (gemm: beta = 0 and beta !=
  // 0; fusedmm: the sigmoid and the plain product; gnn_aggregate: the mean and GCN's normalized
  // sum; lazy_reduce: s = 1 and a small s; activation: with and without bias). Two, not every
  // distinct set: the sparse families' `pattern` cycles over 7 and scan's discount over 4, which
  // would multiply the check's cost by up to 14. Values fixed with --scalar stay.
  std::vector<int> distinct_scalar_trials() const {
    std::vector<int> out;
    std::vector<Scalars> seen;
    for (int t = 0; t < 2; ++t) {
      Scalars sc = p_.scalars_for_trial(t);
      for (const auto& [k, v] : o_.scalars) sc[k] = v;
      if (std::find(seen.begin(), seen.end(), sc) != seen.end()) continue;
      seen.push_back(std::move(sc));
      out.push_back(t);
    }
    return out;
  }

  // Structured inputs (structured_inputs.hpp), where the problem declares them: zero rows and
  // columns, identical and one-hot rows, equal values, alternating signs, values near overflow,
  // subnormals, negative zero. Each pattern runs once under every distinct scalar set of the
  // trials (distinct_scalar_trials, on that trial's instance: its scalars and conditioning), so
  // a shortcut that only one set exposes (a zero row under fusedmm's sigmoid, not its plain
  // product) is seen whichever set it needs.
  bool structured(const Sizes& s) {
    const auto list = structures_for(p_, s);
    if (list.empty()) return true;
    const Distribution d = Distribution::normal;
    const auto trials = distinct_scalar_trials();
    for (std::size_t k = 0; k < list.size(); ++k)
      for (int trial : trials) {
        const std::uint64_t seed = o_.seed ^ (0x57a0ull + k);
        Instance inst = instance(s, trial, d, seed);
        apply_structure(p_, list[k], inst, seed);
        const std::string what(structure_name(list[k]));
        const std::string context = what + " inputs" + (trials.size() > 1 ? fmt::format(", trial {}'s scalars", trial) : "");
        if (!judge(inst, d, key(inst, d, seed, trial, "structured " + what), context, "structured").passed)
          return false;
      }
    std::string names;
    for (auto st : list) names += (names.empty() ? "" : ", ") + std::string(structure_name(st));
    add("structured", true, fmt::format("passed with {} structured input pattern(s) under {} scalar set(s): {}",
                                        list.size(), trials.size(), names));
    return true;
  }

  bool shapes(const Sizes& requested) {
    RefusedShapes refused;
    const auto list = fuzz_shapes(p_, requested, o_.tile_hints, o_.fuzz_shapes, o_.seed, &refused);
    std::string tried;
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (o_.supports && !o_.supports(list[i])) { ++rep_.shapes_unclaimed; continue; }
      rep_.shapes_tried.push_back(list[i]);
      tried += (tried.empty() ? "" : "; ") + sizes_text(list[i]);
      const int trial = static_cast<int>(i) + 1;
      const Distribution d = o_.distributions[(i + o_.distributions.size() - 1) % o_.distributions.size()];
      const Instance inst = instance(list[i], trial, d, o_.seed ^ 0xf022ull);
      if (!judge(inst, d, key(inst, d, o_.seed ^ 0xf022ull, trial, ""), "fuzzed shape", "shapes").passed) return false;
    }
    std::string skipped;
    if (refused.count > 0)
      skipped = fmt::format("; {} drawn shape(s) refused by the problem and skipped (first: {})", refused.count,
                            refused.first_reason.substr(0, 300));
    add("shapes", true, fmt::format("passed at {} fuzzed shape(s) ({}); {} not claimed by the kernel's constraints{}",
                                    rep_.shapes_tried.size(), tried, rep_.shapes_unclaimed, skipped));
    return true;
  }

  // One input tensor past 2^31 elements (Problem::wide_index_shape): all zeros but its last
  // rows, which are a small live instance's; the outputs must be the rows a zero input row gives,
  // then the live reference. A flat index kept in 32 bits wraps at 2^31 and reads or writes the
  // wrong rows (or faults: the worker's crash report then names this run). Every element past
  // 2^31 lies in the live rows, which are compared whole; an output that large (elementwise
  // families) is otherwise compared in eight sampled windows of the rows before them.
  bool index_width(const Sizes& requested) {
    if (!o_.index_width) return true;
    const Problem::WideIndexShape w = p_.wide_index_shape(requested);
    if (w.sizes.empty()) return true;  // not declared: no entry, as for every undeclared check
    const WideIndexBytes need = wide_index_bytes(p_, w, t_);
    const std::string gib = fmt::format("{:.1f} GiB", need.address / (1 << 30));
    // What is written and stays resident (an elementwise output past 2^31 elements: 8 GiB in
    // fp32, 4 GiB in fp16/bf16), with a quarter more for the verifier's own copies and room for
    // the rest of the system.
    const double resident = need.resident * 1.25 + (256 << 20);
    const std::string resident_gib = fmt::format("{:.1f} GiB", resident / (1 << 30));
    if (!o_.call_wide)
      return skip_index_width("needs " + gib + " of address space on pages that are never backed, which this "
                              "backend cannot map (the cpu backend can, and opencl on a device that works in the host's memory, "
                              "such as PoCL)");
    if (o_.supports && !o_.supports(w.sizes))
      return skip_index_width("the kernel's constraints do not claim " + sizes_text(w.sizes));
    // Where an output past 2^31 elements does not fit in the memory available (or the proxy is
    // asked for: KFORGE_INDEX_WIDTH_PROXY=1), the proxy: the same run with that output's rows
    // before the live ones folded onto 16 MiB, the live rows compared alone.
    std::string proxy;
    if (need.resident > double(64 << 20)) {
      const double available = available_memory_bytes();
      const char* forced = std::getenv("KFORGE_INDEX_WIDTH_PROXY");
      if (forced && std::string(forced) == "1")
        proxy = "asked for (KFORGE_INDEX_WIDTH_PROXY=1)";
      else if (available >= 0 && available < resident)
        proxy = fmt::format("the real check needs {} of memory (an output past 2^31 elements, written whole{}), and "
                            "{:.1f} GiB is available", resident_gib,
                            t_ == DType::fp32 ? "; fp16 or bf16 halves it" : "", available / (1 << 30));
    }
    const Distribution d = Distribution::normal;
    const std::uint64_t seed = o_.seed ^ 0x1d3ull;
    const Instance live = instance(w.live, 0, d, seed);
    Instance wide = live;  // what compare needs: sizes (the bound's reduction length), scalars, dtype
    wide.sizes = w.sizes;
    const std::string context = std::string("one input past 2^31 elements, zero rows but its last rows") +
                                (proxy.empty() ? "" : " (proxy: the output's earlier rows folded)");
    // The worker's crash report names this run by its first word (isolate.cpp).
    verify_progress(fmt::format("index_width: {} at {}, {} inputs, seed {}", context, sizes_text(w.sizes),
                                distribution_name(d), o_.seed));
    const RaisedAddressSpace wide_room;  // until the wide run's outputs are compared and freed
    KernelOutput out;
    try {
      out = o_.call_wide(live, w.sizes, !p_.reads_inout(live), !proxy.empty());
    } catch (const std::domain_error& e) {  // the backend cannot fold: neither check can run
      if (proxy.empty()) throw;
      return skip_index_width(proxy + "; its proxy cannot run: " + e.what());
    } catch (const std::bad_alloc&) {
      return skip_index_width("needs " + gib + " of address space (" + resident_gib + " of it resident), which "
                              "this process could not map (raise the memory limit; on opencl a tensor may pass the "
                              "device's largest buffer (PoCL: 8 GiB), which fp16 or bf16 halves; or verify with "
                              "--no-index-width)");
    }
    // The reference (after the run, as always). The problem's own expectation where it states
    // one (Problem::wide_index_reference: the column max and argmax; outputs that do not grow,
    // whole); otherwise the live rows', and the rows a zero input row gives (the live instance
    // with every growing tensor zeroed), repeated before them.
    Reference full;
    if (p_.wide_index_reference(live, w.sizes, full.out, full.magnitude)) {
      for (std::size_t o = 0; o < out.tensors.size() && o < full.out.size(); ++o)
        if (out.tensors[o].size() != full.out[o].size())
          throw std::logic_error(p_.name() + ": wide_index_reference's output " + std::to_string(o) +
                                 " does not match the wide run's");
      if (!conclude(compare(p_, wide, out, full.out, full.magnitude), out, wide, d, context, "index_width"))
        return false;
      add("index_width", true, fmt::format("passed at {}: one input past 2^31 elements, {} mapped, all but its "
                                           "last rows on the shared zero page; outputs as the live rows after one "
                                           "zero row", sizes_text(w.sizes), gib));
      return true;
    }
    const auto ref = reference_for(p_, live, p_.name() + "|" + key(live, d, seed, 0, "index_width live"));
    Instance zero = live;
    const auto specs = p_.tensors();
    for (std::size_t t = 0; t < specs.size(); ++t)
      if (specs[t].role != Role::scratch && p_.tensor_elements(t, w.sizes) > p_.tensor_elements(t, w.live))
        std::fill(zero.tensors[t].begin(), zero.tensors[t].end(), 0.0);
    const auto zref = reference_for(p_, zero, p_.name() + "|" + key(live, d, seed, 0, "index_width zero rows"));
    for (std::size_t t = 0, o = 0; t < specs.size(); ++t) {
      if (!is_output(specs[t].role)) continue;
      const auto n = static_cast<std::int64_t>(p_.tensor_elements(t, w.sizes));
      const auto& r = ref->out[o];
      const auto& m = ref->magnitude[o];
      const auto& zr = zref->out[o];
      const auto& zm = zref->magnitude[o];
      const auto live_n = static_cast<std::int64_t>(r.size()), prefix = n - live_n;
      // Element f of the whole tensor: a live one, or the zero rows' element in its column.
      const auto fill = [&](std::int64_t f, double& v, double& mag) {
        if (f >= prefix) {
          v = r[f - prefix], mag = m[f - prefix];
        } else {
          const std::int64_t j = ((f - prefix) % live_n + live_n) % live_n;
          v = zr[j], mag = zm[j];
        }
      };
      const std::size_t count = o < out.tensors.size() ? out.tensors[o].size() : 0;
      full.out.emplace_back(count);
      full.magnitude.emplace_back(count);
      for (std::size_t i = 0; i < count; ++i) fill(out.flat(o, i), full.out.back()[i], full.magnitude.back()[i]);
      ++o;
    }
    if (!conclude(compare(p_, wide, out, full.out, full.magnitude), out, wide, d, context, "index_width"))
      return false;
    std::string sampled;
    for (std::size_t o = 0; o < out.flat_index.size(); ++o)
      if (!out.flat_index[o].empty())
        sampled = proxy.empty()
                      ? fmt::format("; an output past 2^31 elements written whole ({:.1f} GiB resident), compared "
                                    "in its live rows and eight sampled windows before them ({} elements)",
                                    need.resident / (1 << 30), out.tensors[o].size())
                      : fmt::format("; proxy ({}): an output past 2^31 elements written whole onto 16 MiB folded "
                                    "again and again, its live rows compared ({} elements)", proxy,
                                    out.tensors[o].size());
    add("index_width", true, fmt::format("passed at {}: one input past 2^31 elements, {} mapped, all but its "
                                         "last rows on the shared zero page{}", sizes_text(w.sizes), gib, sampled));
    return true;
  }

  bool skip_index_width(const std::string& why) {
    add("index_width", true, "skipped: " + why);
    return true;
  }

  void add(const std::string& name, bool passed, std::string detail) {
    rep_.checks.push_back({name, passed, std::move(detail)});
  }

  const Problem& p_;
  DType t_;
  const KernelCall& call_;
  const VerifyOptions& o_;
  VerifyReport rep_;
  Sizes requested_;
  bool degenerate_checked_ = false;
  Instance first_instance_;  // trial 0's, which determinism and perturbation run again
  std::vector<std::vector<double>> first_output_;
  std::shared_ptr<const Reference> first_reference_;  // trial 0's, for the input-independence test
};

}  // namespace

VerifyReport verify(const Problem& p, const Sizes& s, DType t, const KernelCall& call,
                    const VerifyOptions& opts) {
  if (opts.distributions.empty()) throw UsageError("verification needs at least one input distribution");
  return Protocol(p, t, call, opts).run(s);
}

}  // namespace kforge
