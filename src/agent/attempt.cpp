// One attempt: the request, its files (for the replay line), and its journal entry.
#include <fmt/format.h>

#include "agent/session.hpp"
#include "kforge/util.hpp"

namespace kforge::agent {
namespace {
constexpr std::size_t kRecentFailures = 3;

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=,:") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string assignments(const auto& values) {
  std::string out;
  for (const auto& [k, v] : values) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k, v);
  return out;
}
}  // namespace

void Session::account(const AgentAttempt& a) {
  journal[a.candidate_hash] = a;
  numbers.insert(a.attempt);
  if (a.disposition == "passed" && a.median_s && (!best || *a.median_s < *best->median_s)) best = a;
  if (a.disposition != "passed") {
    recent_failures.push_back({{"attempt", a.attempt}, {"disposition", a.disposition},
                               {"gate", a.feedback.value("gate", "")}, {"note", a.note},
                               {"summary", a.feedback.value("summary", "")}});
    if (recent_failures.size() > kRecentFailures) recent_failures.pop_front();
  }
}

nlohmann::json Session::best_json() const {
  if (!best) return nullptr;
  return {{"attempt", best->attempt}, {"candidate_hash", best->candidate_hash}, {"note", best->note},
          {"median_s", *best->median_s}, {"speedup", best->speedup ? nlohmann::json(*best->speedup) : nlohmann::json()},
          {"sol_fraction", best->sol_fraction ? nlohmann::json(*best->sol_fraction) : nlohmann::json()},
          {"score", best->score}};
}

std::uint64_t derived_seed(std::uint64_t seed, const std::string& what) {
  return hash64(what, hash64(std::to_string(seed)));
}

void say(const AgentOptions& o, const std::string& line) {
  if (o.log) o.log(line);
}

std::string attempt_stem(int n) { return fmt::format("attempt-{:03}", n); }

std::string source_extension(Lang l) {
  switch (l) {
    case Lang::cpp: return ".cpp";
    case Lang::opencl: return ".cl";
    case Lang::cuda: return ".cu";
  }
  return ".txt";
}

EvalRequest request_for(const Session& s, const Candidate& c, std::uint64_t verify_seed) {
  EvalRequest req;
  req.problem = s.p.name();
  req.kernel = c.spec;
  req.sizes = s.o.sizes;
  req.scalars = s.o.scalars;
  req.dtype = s.o.dtype;
  req.params = c.params;
  req.backend = s.o.backend;
  req.backend_options.threads = s.o.threads;
  req.verify.thorough = true;
  req.verify.index_width = s.o.index_width;
  req.verify.tsan = s.o.tsan;
  req.verify.seed = verify_seed;
  req.bench = true;
  req.baseline = !s.p.baseline_name().empty();
  req.measure = s.o.measure;
  return req;
}

std::string write_candidate_files(const Session& s, const Candidate& c, const EvalRequest& req,
                                  const std::string& stem) {
  const auto source = s.o.out_dir / (stem + source_extension(c.lang));
  const auto spec = s.o.out_dir / (stem + ".json");
  write_file_atomic(source, c.source);
  KernelSpec k = c.spec;
  k.defaults = k.resolve(c.params);  // the values this attempt ran, as the spec's defaults
  nlohmann::json j = k.to_json();
  j.erase("source");
  write_file_atomic(spec, j.dump(2) + "\n");
  std::string line = fmt::format("kforge eval --problem {} --source {} --spec {} --backend {} --size {} --dtype {} --seed {}",
                                 shell_quote(s.p.name()), shell_quote(source.string()), shell_quote(spec.string()),
                                 s.o.backend, assignments(req.sizes), dtype_name(req.dtype), req.verify.seed);
  if (!s.o.scalars.empty()) line += " --scalar " + assignments(s.o.scalars);
  if (s.o.threads > 0) line += fmt::format(" --threads {}", s.o.threads);
  if (s.o.tsan) line += " --tsan";
  if (!s.o.index_width) line += " --no-index-width";
  return line + " --bench";
}

FeedbackContext feedback_context(const Session& s, const Candidate& c, const std::string& stem,
                                 const std::string& replay) {
  FeedbackContext ctx;
  ctx.problem = &s.p;
  ctx.task_sizes = s.o.sizes;
  ctx.baseline_s = s.baseline.median_s;
  ctx.baseline_name = s.baseline.name;
  ctx.counters = s.counters;
  ctx.source_name = stem + source_extension(c.lang);
  ctx.replay = replay;
  return ctx;
}

AgentAttempt journal_attempt(Session& s, int attempt, const Candidate& c, const Judged& j,
                             const std::string& diff, const EvalRequest* req, const EvalResult* r) {
  AgentAttempt a;
  a.run_id = s.run_id;
  a.attempt = attempt;
  a.candidate_hash = c.hash;
  a.source_hash = c.invalid.empty() ? kernel_source_hash(c.spec) : hex64(hash64(c.source));
  a.lang = std::string(lang_name(c.lang));
  a.source = c.source;
  a.note = c.note;
  a.diff = diff;
  a.disposition = j.disposition;
  a.candidate = c.message;
  a.feedback = j.feedback;
  a.score = j.score;
  a.speedup = j.speedup;
  a.sol_fraction = j.sol_fraction;
  a.median_s = j.median_s;
  if (req && r) {
    StoredEvaluation e = StoredEvaluation::from(*req, *r, machine_fingerprint(r->backend, r->device));
    e.kernel = fmt::format("{}.agent.{}", s.p.name(), attempt_stem(attempt));
    a.evaluation_id = s.store.record(s.run_id, e);
  }
  a.id = s.store.record_attempt(a);
  s.account(a);
  return a;
}

Candidate candidate_of(const Session& s, const AgentAttempt& a) {
  nlohmann::json m = a.candidate;
  m["source"] = a.source;
  m["type"] = "candidate";
  return *parse_message(m.dump(), s.p, s.lang, s.entry).candidate;
}

}  // namespace kforge::agent
