#include "agent/feedback.hpp"

#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace kforge::agent {
namespace {

constexpr double kCompiled = 20, kCorrect = 100, kPerSpeedup = 100;  // the arena score

// A flat index as indices "in the problem's terms": which sizes multiply to the tensor's element
// count is read off at sizes that are distinct primes (unique factors), so it holds at any shape,
// all ones included; the order is the problem's size order, row-major (gemm's C: M, N). Nothing
// when the count is not such a product (conv2d's output plane), so no layout is ever guessed.
nlohmann::json indices_of(const Problem& p, const std::string& tensor, std::int64_t flat, const Sizes& s) {
  static constexpr std::int64_t kPrimes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37};
  const auto tensors = p.tensors();
  std::size_t t = tensors.size();
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == tensor) t = i;
  const auto names = p.size_names();
  if (t == tensors.size() || names.size() > std::size(kPrimes) || flat < 0) return nullptr;
  Sizes probe;
  for (std::size_t i = 0; i < names.size(); ++i) probe[names[i]] = kPrimes[i];
  std::int64_t rest = p.tensor_elements(t, probe);
  std::vector<std::string> dims;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (rest % kPrimes[i] == 0) {
      rest /= kPrimes[i];
      dims.push_back(names[i]);
    }
  if (rest != 1 || dims.empty()) return nullptr;  // a power, a constant factor, or no product
  nlohmann::json idx = nlohmann::json::object();
  std::int64_t left = flat;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    const std::int64_t extent = s.count(*it) ? s.at(*it) : 0;
    if (extent <= 0) return nullptr;
    idx[*it] = left % extent;
    left /= extent;
  }
  std::string list;
  for (const auto& d : dims) list += (list.empty() ? "" : ", ") + d;
  return {{"indices", idx},
          {"layout", "row-major over (" + list + "), in the problem's size order, inferred from the element count"}};
}

std::string gate_of(const EvalResult& r, const Sizes& task_sizes) {
  switch (r.disposition) {
    case Disposition::invalid_config: return "static";
    // Compiled, but this machine cannot launch it (cuda without a GPU): the compile gate and
    // the compiler's report are all it gets.
    case Disposition::not_supported: return r.compiled ? "launch" : "static";
    case Disposition::compile_error: return "compile";
    case Disposition::crashed:
    case Disposition::timeout: return r.verify && r.verify->passed ? "timing" : "run";
    case Disposition::suspect: return "sol";
    case Disposition::passed: return "passed";
    case Disposition::incorrect:
    case Disposition::nondeterministic: break;
  }
  if (!r.verify) return "quick_verify";
  const std::string& check = r.verify->failed_check;
  if (check == "timed_outputs") return "timing";
  const bool thorough_only = check == "determinism" || check == "perturbation" || check == "shapes" ||
                             check == "special_scalars" || check == "structured" || check == "race";
  return !thorough_only && r.verify->failed_sizes == task_sizes ? "quick_verify" : "thorough_verify";
}

nlohmann::json failure_of(const EvalResult& r, const FeedbackContext& ctx) {
  const VerifyReport& v = *r.verify;
  const Comparison& w = v.worst;
  nlohmann::json f = {{"check", v.failed_check}, {"detail", v.failure}, {"sizes", v.failed_sizes},
                      {"held_out", v.failed_sizes != ctx.task_sizes}, {"seed", v.seed},
                      {"distribution", v.worst_distribution}, {"elements", w.elements},
                      {"bad_elements", w.bad_elements}, {"unwritten", w.unwritten},
                      {"non_finite", w.non_finite}, {"max_bound_ratio", w.max_bound_ratio},
                      {"replay", ctx.replay}};
  if (w.first_bad.index >= 0) {
    nlohmann::json b = {{"tensor", w.first_bad.tensor}, {"index", w.first_bad.index},
                        {"got", w.first_bad.got}, {"expected", w.first_bad.expected},
                        {"bound", w.first_bad.bound}};
    if (auto idx = indices_of(*ctx.problem, w.first_bad.tensor, w.first_bad.index, v.failed_sizes); !idx.is_null())
      b.update(idx);
    f["first_bad"] = b;
  }
  return f;
}

std::string where(const nlohmann::json& first_bad) {
  if (!first_bad.contains("indices")) return fmt::format("[{}]", first_bad.at("index").get<long long>());
  std::string s;
  for (const auto& [k, v] : first_bad.at("indices").items()) s += fmt::format("{}{}={}", s.empty() ? "" : ",", k, v.dump());
  return "[" + s + "]";
}

}  // namespace

nlohmann::json compile_errors(const std::string& log, const std::string& source_name, int max_errors) {
  // gcc and clang (PoCL) write `file:line:column: error: ...`; NVRTC writes `file(line): error: ...`.
  static const std::regex kDiag(R"(^(.*?)(?::(\d+):(?:(\d+):)?|\((\d+)\):) (?:fatal )?error: (.*)$)");
  static const std::regex kHeader(R"(^(.*?)(?::(\d+):(?:(\d+):)?|\((\d+)\):) )");
  nlohmann::json out = nlohmann::json::array();
  std::istringstream in(log);
  std::string line;
  nlohmann::json* open = nullptr;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, kDiag)) {
      if (static_cast<int>(out.size()) >= max_errors) break;
      const std::string file = m[1].str().find("prelude") != std::string::npos ? "prelude" : source_name;
      out.push_back({{"file", file}, {"line", std::stoi(m[2].matched ? m[2] : m[4])},
                     {"column", m[3].matched ? std::stoi(m[3]) : 0}, {"message", m[5].str()}, {"excerpt", ""}});
      open = &out.back();
    } else if (open && !std::regex_search(line, kHeader) && (*open)["excerpt"].get<std::string>().size() < 400) {
      (*open)["excerpt"] = (*open)["excerpt"].get<std::string>() + line + "\n";  // gcc's code and caret
    } else {
      open = nullptr;
    }
  }
  return out;
}

Judged rejected(const std::string& why) {
  Judged j;
  j.disposition = "rejected";
  j.gate = "static";
  j.summary = "rejected by the static checks: " + why;
  j.feedback = {{"disposition", j.disposition}, {"gate", j.gate}, {"passed", false}, {"error", why},
                {"summary", j.summary}, {"score", 0.0}};
  return j;
}

Judged judge(const EvalResult& r, const FeedbackContext& ctx) {
  Judged j;
  j.disposition = std::string(disposition_name(r.disposition));
  j.gate = gate_of(r, ctx.task_sizes);
  nlohmann::json& f = j.feedback;
  f = {{"disposition", j.disposition}, {"gate", j.gate}, {"passed", r.passed()}};
  if (!r.passed()) f["error"] = r.error;
  const bool compiled = j.gate != "static" && j.gate != "compile";
  j.score = compiled ? kCompiled : 0;
  if (r.disposition == Disposition::compile_error) {
    f["compile_errors"] = compile_errors(r.compile_log, ctx.source_name);
    const auto& e = f["compile_errors"];
    j.summary = e.empty() ? "compile error: " + r.error
                          : fmt::format("compile error at {}:{}: {}", ctx.source_name, e[0]["line"].get<int>(),
                                        e[0]["message"].get<std::string>());
  } else if (r.verify && !r.verify->passed) {
    f["failure"] = failure_of(r, ctx);
    const auto& fl = f["failure"];
    j.summary = fmt::format("{}: check '{}' failed at {}{}", j.disposition, r.verify->failed_check,
                            nlohmann::json(r.verify->failed_sizes).dump(),
                            fl["held_out"].get<bool>() ? " (a held-out shape)" : "");
    if (fl.contains("first_bad"))
      j.summary += fmt::format(", first bad element {}{}: got {:g}, expected {:g}", fl["first_bad"]["tensor"].get<std::string>(),
                               where(fl["first_bad"]), fl["first_bad"]["got"].get<double>(),
                               fl["first_bad"]["expected"].get<double>());
  } else if (j.gate == "launch") {
    const CompilerResources& c = r.resources;
    j.summary = c.known() ? fmt::format("compiled only ({}): {} registers, {} B spill stores, {} B spill loads, {} B "
                                        "shared memory; {}",
                                        c.reported_by, c.registers, c.spill_store_bytes, c.spill_load_bytes,
                                        c.shared_bytes, r.error)
                          : "compiled only: " + r.error;
  } else if (!r.passed()) {
    j.summary = j.disposition + ": " + r.error;
  }
  if (r.timing) {
    const Timing& t = *r.timing;
    j.median_s = t.median_s;
    // The spread as a robust relative sigma (1.4826 MAD / median): one preempted run on a shared
    // machine would make the stdev say nothing about the others.
    const double spread = t.median_s > 0 ? 1.4826 * t.mad_s / t.median_s : 0;
    f["timing"] = {{"median_s", t.median_s}, {"min_s", t.min_s}, {"stdev_s", t.stdev_s},
                   {"rel_stdev", t.rel_stdev()}, {"rel_spread", spread}, {"repetitions", t.repetitions()},
                   {"outliers", t.outliers}};
    const double base = r.baseline ? r.baseline->median_s : ctx.baseline_s;
    if (base > 0 && t.median_s > 0) j.speedup = base / t.median_s;
    f["baseline"] = {{"name", r.baseline ? r.baseline_name : ctx.baseline_name}, {"median_s", base}};
    f["gflops"] = r.gflops;
    f["gbytes_s"] = r.gbytes_s;
    if (r.roofline) {
      j.sol_fraction = r.roofline->sol_fraction;
      f["sol"] = {{"fraction", r.roofline->sol_fraction}, {"bound", r.roofline->bound},
                  {"memory_roof", r.roofline->memory_roof}, {"t_sol_s", r.roofline->t_sol_s}};
    }
  }
  // What the compiler says the kernel uses (registers and spills from ptxas, an OpenCL
  // kernel's local and private memory): known after a compile, with or without a GPU.
  if (r.resources.known()) f["compiler"] = resources_json(r.resources);
  f["counters"] = ctx.counters;
  if (r.passed()) {
    j.score += kCorrect + kPerSpeedup * j.speedup.value_or(0);
    j.summary = j.median_s ? fmt::format("passed: {:.4g} ms (+-{:.2g}%), {:.2f}x the baseline, {:.1f}% of the speed of "
                                         "light ({}-bound), {:.2f} GFLOP/s, {:.2f} GB/s",
                                         *j.median_s * 1e3, f["timing"]["rel_spread"].get<double>() * 100, j.speedup.value_or(0),
                                         100 * j.sol_fraction.value_or(0), r.roofline ? r.roofline->bound : "?",
                                         r.gflops, r.gbytes_s)
                           : "passed";
  } else if (r.verify && r.verify->passed) {
    j.score += kCorrect;  // right on every check, stopped at the timing's own checks
  }
  f["speedup"] = j.speedup ? nlohmann::json(*j.speedup) : nlohmann::json();
  f["score"] = j.score;
  f["summary"] = j.summary;
  return j;
}

}  // namespace kforge::agent
