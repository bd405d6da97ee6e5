// `kforge agent` end to end with the scripted proposer of examples/proposers/: the tail bug is
// caught at a held-out shape with feedback an agent can act on, the run ends on the fast kernel,
// a second run repeats no evaluation, `kforge db` shows the history, and a proposer that
// crashes or prints garbage ends the run with a clear error and an intact store.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <algorithm>
#include <map>

#include "kforge/backend.hpp"
#include "kforge/store.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;
using test::kforge_cli;
using test::parse_or_fail;

const std::string kExamples = std::string(KFORGE_TEST_DATA) + "/../../examples/proposers";
const std::string kDocs = std::string(KFORGE_TEST_DATA) + "/../../docs/schemas";
// Sizes that are whole tiles: the tail bug passes them and only a held-out shape catches it.
// One thread: a two-thread pool on a loaded two-core host waits at every barrier, and its times
// swing tenfold (the fast kernel once timed slower than the slow one).
const std::string kInstance = "--problem gemm --size M=64,N=64,K=64 --threads 1 --min-time 0.05 --max-time 0.5";
// The index_width check costs seconds a candidate; the tests that are not about it leave it out
// (AgentRun and AgentResume keep the default, with it).
const std::string kQuick = kInstance + " --no-index-width";

std::filesystem::path scratch(const std::string& name) { return test::scratch_dir("kforge-agent-tests", name); }

std::vector<json> read_lines(const std::filesystem::path& p) { return test::read_json_lines(p); }

json schema(const std::string& name) {
  std::ifstream in(kDocs + "/" + name + ".json");
  return json::parse(in);
}

// Every field the message's schema requires is there (the top level and its nested objects).
void expect_required(const json& msg, const json& sch, const std::string& where) {
  if (!sch.contains("required")) return;
  for (const auto& f : sch.at("required")) {
    ASSERT_TRUE(msg.contains(f.get<std::string>())) << where << " lacks '" << f << "': " << msg.dump();
    const auto& sub = sch.at("properties").at(f.get<std::string>());
    if (sub.contains("required") && msg.at(f.get<std::string>()).is_object())
      expect_required(msg.at(f.get<std::string>()), sub, where + "." + f.get<std::string>());
  }
}

class AgentRun : public ::testing::Test {
 protected:
  static inline std::filesystem::path dir_;
  static inline test::CommandResult first_, second_;

  // The same command twice (the proposer's command line is part of the run key); the proposer
  // appends what it receives to one log, each run's messages starting at its task.
  static std::string command() {
    return "agent " + kInstance + " --budget 4 --proposer 'python3 " + kExamples + "/scripted.py " + kExamples +
           "/gemm/script.json --log " + (dir_ / "log.jsonl").string() + "' --db " + (dir_ / "results.db").string() +
           " --out " + (dir_ / "out").string() + " --json";
  }
  static void SetUpTestSuite() {
    dir_ = scratch("scripted");
    first_ = kforge_cli(command());
    second_ = kforge_cli(command());
  }
  // The messages the proposer received in run `run` (0: the first).
  static std::vector<json> messages(int run) {
    std::vector<json> out;
    int seen = -1;
    for (const auto& m : read_lines(dir_ / "log.jsonl")) {
      if (m.at("type") == "task") ++seen;
      if (seen == run) out.push_back(m);
    }
    return out;
  }
  static std::map<int, json> feedback(int run) {
    std::map<int, json> out;
    for (const auto& m : messages(run))
      if (m.at("type") == "feedback") out[m.at("attempt").get<int>()] = m;
    return out;
  }
};

TEST_F(AgentRun, EveryMessageHasTheFieldsItsSchemaRequires) {
  ASSERT_EQ(first_.exit_code, 0) << first_.out << first_.err;
  for (int run : {0, 1}) {
    const auto ms = messages(run);
    ASSERT_EQ(ms.size(), 6u) << run;  // task, four feedbacks, done
    for (const auto& m : ms) expect_required(m, schema(m.at("type").get<std::string>()), m.at("type"));
  }
  const json task = messages(0).at(0);
  EXPECT_EQ(task.at("sizes"), (json{{"M", 64}, {"N", 64}, {"K", 64}}));
  EXPECT_EQ(task.at("batch"), 1);
  EXPECT_GT(task.at("baseline").at("median_s").get<double>(), 0);
  EXPECT_GT(task.at("sol_s").get<double>(), 0);
  EXPECT_FALSE(task.at("signature").at("cpp").get<std::string>().empty());
  // A resumed run's task already knows the best and the recent failures.
  EXPECT_EQ(messages(1).at(0).at("best").at("attempt"), 4);
  EXPECT_EQ(messages(1).at(0).at("recent_failures").size(), 1u);
}

TEST_F(AgentRun, TheTailBugIsCaughtAtAHeldOutShapeWithUsableFeedback) {
  ASSERT_EQ(first_.exit_code, 0) << first_.out << first_.err;
  const auto fb = feedback(0);
  const json& bug = fb.at(2);
  EXPECT_EQ(bug.at("disposition"), "incorrect") << bug.dump(2);
  EXPECT_EQ(bug.at("gate"), "thorough_verify");
  const json& f = bug.at("failure");
  EXPECT_TRUE(f.at("held_out").get<bool>()) << f.dump(2);
  EXPECT_NE(f.at("sizes"), (json{{"M", 64}, {"N", 64}, {"K", 64}}));
  EXPECT_FALSE(f.at("check").get<std::string>().empty());
  ASSERT_TRUE(f.contains("first_bad")) << f.dump(2);
  EXPECT_EQ(f.at("first_bad").at("tensor"), "C");
  ASSERT_TRUE(f.at("first_bad").contains("indices")) << f.dump(2);
  // The bug leaves the columns past the last whole tile of 16: the first bad one is there.
  EXPECT_GE(f.at("first_bad").at("indices").at("N").get<int>(), f.at("sizes").at("N").get<int>() / 16 * 16)
      << f.dump(2);
  EXPECT_GT(f.at("bad_elements").get<long long>() + f.at("unwritten").get<long long>(), 0);
  EXPECT_NE(bug.at("summary").get<std::string>().find(f.at("check").get<std::string>()), std::string::npos);
  EXPECT_EQ(bug.at("score"), 20.0);
  EXPECT_EQ(bug.at("recent_failures").size(), 1u);
  // The replay line reproduces the verdict.
  std::string replay = f.at("replay");
  ASSERT_EQ(replay.rfind("kforge eval ", 0), 0u) << replay;
  const auto r = kforge_cli(replay.substr(7) + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(parse_or_fail(r).value("disposition", ""), "incorrect");
}

TEST_F(AgentRun, TheRunEndsOnTheFastKernel) {
  ASSERT_EQ(first_.exit_code, 0) << first_.out << first_.err;
  const json s = parse_or_fail(first_);
  EXPECT_EQ(s.at("attempts"), 4);
  EXPECT_EQ(s.at("evaluated"), 4);
  EXPECT_EQ(s.at("best").at("attempt"), 4) << s.dump(2);
  EXPECT_TRUE(s.at("final_passed").get<bool>());
  const auto fb = feedback(0);
  for (int a : {1, 3, 4}) {
    EXPECT_EQ(fb.at(a).at("disposition"), "passed") << fb.at(a).dump(2);
    EXPECT_GT(fb.at(a).at("score").get<double>(), 120.0);
    EXPECT_GT(fb.at(a).at("sol").at("fraction").get<double>(), 0.0);
    EXPECT_NE(fb.at(a).at("counters").get<std::string>(), "");
  }
  EXPECT_LT(fb.at(4).at("timing").at("median_s").get<double>(), fb.at(3).at("timing").at("median_s").get<double>());
  EXPECT_FALSE(fb.at(4).at("diff_vs_best").get<std::string>().empty());
  EXPECT_EQ(test::run_command("cmp -s '" + (dir_ / "out/best.cpp").string() + "' '" + kExamples +
                              "/gemm/row_axpy.cpp'").exit_code, 0);
}

TEST_F(AgentRun, ASecondRunRepeatsNoEvaluation) {
  ASSERT_EQ(second_.exit_code, 0) << second_.out << second_.err;
  const json s = parse_or_fail(second_);
  EXPECT_TRUE(s.at("resumed").get<bool>());
  EXPECT_EQ(s.at("evaluated"), 0);
  EXPECT_EQ(s.at("from_journal"), 4);
  EXPECT_TRUE(s.at("final_from_journal").get<bool>());
  EXPECT_EQ(s.at("run"), parse_or_fail(first_).at("run"));
  for (const auto& [a, f] : feedback(1)) EXPECT_TRUE(f.at("from_journal").get<bool>()) << a;
}

TEST_F(AgentRun, DbListsTheRunAndShowsItsAttempts) {
  const std::string db = " --db " + (dir_ / "results.db").string();
  const auto list = kforge_cli("db list --json" + db);
  ASSERT_EQ(list.exit_code, 0) << list.err;
  const json runs = parse_or_fail(list);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_NE(runs[0].at("command").get<std::string>().find("agent"), std::string::npos);
  const auto show = kforge_cli("db show " + std::to_string(runs[0].at("id").get<int>()) + db);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_NE(show.out.find("blocked over columns"), std::string::npos) << show.out;  // the notes
  EXPECT_NE(show.out.find("incorrect"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("thorough_verify"), std::string::npos) << show.out;
}

std::size_t journaled(const std::filesystem::path& db) {
  try {
    const auto s = open_store_if_exists(db);
    if (!s) return 0;
    const auto runs = s->runs();
    return runs.empty() ? 0 : s->agent_attempts(runs[0].id).size();
  } catch (const StoreError&) {
    return 0;  // not created yet
  }
}

// Candidates get the index_width check by default, and none with --no-index-width, whose
// verdicts belong to a run of their own (a different run key: never resumed from the other).
TEST(AgentIndexWidth, OnByDefaultAndOffAsARunOfItsOwn) {
  const auto dir = scratch("index-width");
  const auto db = dir / "results.db";
  // The checks of the run's evaluations, read before the next run: the store keeps one
  // evaluation per kernel, configuration and instance, the latest.
  const auto checks_of = [&](const json& summary) {
    std::vector<std::string> names;
    const Store store(db);
    for (const auto& a : store.agent_attempts(summary.at("run").get<std::int64_t>())) {
      if (!a.evaluation_id) continue;
      const auto e = store.evaluation(*a.evaluation_id);
      for (const auto& c : e->verify.at("checks")) names.push_back(c.at("name").get<std::string>());
    }
    return names;
  };
  const std::string tail = " --budget 1 --proposer 'python3 " + kExamples + "/scripted.py " + kExamples +
                           "/gemm/script.json' --db " + db.string() + " --out " + (dir / "out").string() + " --json";
  const auto off = kforge_cli("agent " + kQuick + tail);
  ASSERT_EQ(off.exit_code, 0) << off.out << off.err;
  const json s_off = parse_or_fail(off);
  const auto without = checks_of(s_off);
  const auto on = kforge_cli("agent " + kInstance + tail);
  ASSERT_EQ(on.exit_code, 0) << on.out << on.err;
  const json s_on = parse_or_fail(on);
  EXPECT_FALSE(s_on.at("resumed").get<bool>()) << "a run with the check resumed one without it";
  EXPECT_NE(s_on.at("run_key"), s_off.at("run_key"));
  const auto with = checks_of(s_on);
  ASSERT_FALSE(with.empty());
  ASSERT_FALSE(without.empty());
  EXPECT_NE(std::find(with.begin(), with.end(), "index_width"), with.end());
  EXPECT_EQ(std::find(without.begin(), without.end(), "index_width"), without.end());
}

TEST(AgentResume, AfterKillNineNoAttemptIsRepeated) {
  const auto dir = scratch("kill");
  const auto db = dir / "results.db";
  const std::string args = "agent " + kInstance + " --budget 4 --proposer 'python3 " + kExamples +
                           "/scripted.py " + kExamples + "/gemm/script.json' --db " + db.string() +
                           " --out " + (dir / "out").string() + " --json";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = std::string("exec '") + KFORGE_CLI_PATH + "' " + args + " >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (journaled(db) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // an attempt takes >= 0.1 s here
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run ended before it was killed";
  const std::size_t before = journaled(db);
  ASSERT_GE(before, 2u);
  ASSERT_LT(before, 4u);
  EXPECT_EQ(Store(db).integrity_check(), "ok");
  const auto r = kforge_cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = parse_or_fail(r);
  EXPECT_TRUE(s.at("resumed").get<bool>());
  EXPECT_EQ(s.at("from_journal").get<std::size_t>(), before);
  EXPECT_EQ(s.at("evaluated").get<std::size_t>(), 4 - before);
  EXPECT_EQ(journaled(db), 4u);
  EXPECT_EQ(s.at("best").at("attempt"), 4);
}

TEST(AgentParallel, ABatchOfTwoIsEvaluatedAtOnceAndAnsweredInOrder) {
  const auto dir = scratch("parallel");
  const auto log = dir / "log.jsonl";
  const auto r = kforge_cli("agent " + kQuick + " --budget 4 --parallel 2 --proposer 'python3 " + kExamples +
                            "/scripted.py " + kExamples + "/gemm/script.json --log " + log.string() + "' --db " +
                            (dir / "results.db").string() + " --out " + (dir / "out").string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ms = read_lines(log);
  ASSERT_EQ(ms.size(), 6u);
  EXPECT_EQ(ms[0].at("batch"), 2);
  std::vector<int> attempts, next;
  for (std::size_t i = 1; i <= 4; ++i) {
    attempts.push_back(ms[i].at("attempt"));
    next.push_back(ms[i].at("next_batch"));
    EXPECT_EQ(ms[i].at("batch_size"), 2);
  }
  EXPECT_EQ(attempts, (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(next, (std::vector<int>{2, 2, 0, 0}));
  EXPECT_EQ(ms[2].at("disposition"), "incorrect");
  EXPECT_EQ(parse_or_fail(r).at("best").at("attempt"), 4);
}

TEST(AgentFeedback, ACompileErrorNamesTheLineOfTheCandidatesOwnSource) {
  const auto dir = scratch("compile");
  {
    std::ofstream script(dir / "script.json");
    script << json::array({{{"source", test::data_path("syntax_error.cpp")}, {"grid", {"ceil_div(M,16)"}}}}).dump();
  }
  const auto log = dir / "log.jsonl";
  // A budget of 2 for a script of 1: the proposer stops after it.
  const auto r = kforge_cli("agent " + kQuick + " --budget 2 --proposer 'python3 " + kExamples + "/scripted.py " +
                            (dir / "script.json").string() + " --log " + log.string() + "' --db " +
                            (dir / "results.db").string() + " --out " + (dir / "out").string() + " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // nothing passed
  EXPECT_EQ(parse_or_fail(r).value("stop_reason", ""), "the proposer stopped: the script has no more candidates");
  EXPECT_TRUE(parse_or_fail(r).at("best").is_null());
  const auto ms = read_lines(log);
  ASSERT_GE(ms.size(), 2u);
  const json& f = ms[1];
  EXPECT_EQ(f.at("gate"), "compile") << f.dump(2);
  ASSERT_FALSE(f.at("compile_errors").empty()) << f.dump(2);
  const json& e = f.at("compile_errors")[0];
  EXPECT_EQ(e.at("file"), "attempt-001.cpp");
  // The line in tests/data/syntax_error.cpp that names the undeclared identifier.
  const std::string src = test::data_file("syntax_error.cpp");
  const auto at = src.find("undeclared_thing_kf");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(e.at("line").get<long>(), 1 + std::count(src.begin(), src.begin() + static_cast<long>(at), '\n'));
  EXPECT_EQ(f.at("score"), 0.0);
}

// The run's scores come from its final check (the re-verified, re-timed best), the run counted
// once although it was resumed.
TEST_F(AgentRun, DbScoresCountTheRunByItsFinalCheck) {
  const auto r = kforge_cli("db scores --json --db " + (dir_ / "results.db").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json s = parse_or_fail(r), final_check = parse_or_fail(first_).at("final");
  ASSERT_EQ(s.at("instances"), 1);
  const json& run = s.at("runs")[0];
  EXPECT_EQ(run.at("problem"), "gemm");
  EXPECT_EQ(run.at("attempts"), 4);
  EXPECT_EQ(run.at("correct"), final_check.at("passed"));
  EXPECT_EQ(run.at("speedup"), final_check.at("speedup"));
  EXPECT_EQ(run.at("arena"), final_check.at("score"));
  EXPECT_EQ(s.at("fast_p").at("fast_0"), final_check.at("passed").get<bool>() ? 1.0 : 0.0);
  EXPECT_EQ(s.at("fast_p").at("fast_1.0"),
            final_check.at("passed").get<bool>() && final_check.at("speedup").get<double>() >= 1 ? 1.0 : 0.0);
  const auto table = kforge_cli("db scores --db " + (dir_ / "results.db").string());
  EXPECT_NE(table.out.find("fast_1.5"), std::string::npos) << table.out;
  EXPECT_EQ(kforge_cli("db scores 999 --db " + (dir_ / "results.db").string()).exit_code, 2);
}

// A script of one candidate: the library's own `lang` kernel of gemm with its spec (or, with
// `broken`, its source with a line that does not compile), for `kforge agent --backend`.
std::filesystem::path library_script(const std::filesystem::path& dir, const std::string& backend, const std::string& ext,
                                     const std::string& broken = "") {
  const std::string gemm = std::string(KFORGE_TEST_DATA) + "/../../kernels/gemm/";
  json spec = json::parse(test::data_file("../../kernels/gemm/gemm_" + backend + ".json"));
  spec.erase("source");
  std::string src = test::data_file("../../kernels/gemm/gemm." + ext);
  if (!broken.empty()) src = broken + "\n" + src;
  std::ofstream(dir / ("gemm." + ext)) << src;
  std::ofstream(dir / "script.json") << json::array({{{"source", "gemm." + ext}, {"lang", backend}, {"spec", spec}}}).dump();
  return dir / "script.json";
}

// The task and the feedback the proposer received, in order (the closing `done` left out).
std::vector<json> task_and_feedback(const std::filesystem::path& dir) {
  std::vector<json> out;
  for (const auto& m : read_lines(dir / "log.jsonl"))
    if (m.at("type") != "done") out.push_back(m);
  return out;
}

test::CommandResult agent_on(const std::string& backend, const std::filesystem::path& dir) {
  return kforge_cli("agent " + kQuick + " --backend " + backend + " --budget 1 --proposer 'python3 " + kExamples +
                    "/scripted.py " + (dir / "script.json").string() + " --log " + (dir / "log.jsonl").string() +
                    "' --db " + (dir / "results.db").string() + " --out " + (dir / "out").string() + " --json");
}

// On OpenCL (PoCL here) the library's kernel passes through the loop, and the feedback carries
// the driver's report: the local memory its tiles declare, (MWG + NWG) x KWG floats.
TEST(AgentBackends, OpenClCandidatePassesWithTheDriversReport) {
  const auto dir = scratch("opencl");
  library_script(dir, "opencl", "cl");
  const auto r = agent_on("opencl", dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ms = task_and_feedback(dir);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_TRUE(ms[0].at("compile_only").is_null());
  const json& f = ms[1];
  EXPECT_EQ(f.at("disposition"), "passed") << f.dump(2);
  const json d = json::parse(test::data_file("../../kernels/gemm/gemm_opencl.json")).at("defaults");
  EXPECT_EQ(f.at("compiler").at("reported_by"), "OpenCL driver");
  EXPECT_EQ(f.at("compiler").at("shared_bytes"),
            (d.at("MWG").get<int>() + d.at("NWG").get<int>()) * d.at("KWG").get<int>() * 4);
  EXPECT_GT(f.at("compiler").at("max_block_threads").get<int>(), 0);
}

#ifdef KFORGE_WITH_CUDA
// Without a GPU, `--backend cuda` is a compile-only loop: the task says so, the candidate stops
// at the gate `launch` with ptxas's registers and spills, and a broken one gets NVRTC's errors at
// its own lines.
TEST(AgentBackends, CudaWithoutAGpuCompilesAndReportsPtxas) {
  if (make_backend("cuda")->can_run()) GTEST_SKIP() << "this machine runs CUDA: the loop is the full one";
  const auto dir = scratch("cuda");
  library_script(dir, "cuda", "cu");
  const auto r = agent_on("cuda", dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // nothing passed: nothing ran
  auto ms = task_and_feedback(dir);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_NE(ms[0].at("compile_only").get<std::string>().find("cannot launch"), std::string::npos) << ms[0].dump(2);
  EXPECT_EQ(ms[1].at("disposition"), "not_supported") << ms[1].dump(2);
  EXPECT_EQ(ms[1].at("gate"), "launch");
  EXPECT_EQ(ms[1].at("compiler").at("reported_by"), "ptxas sm_90");
  EXPECT_GT(ms[1].at("compiler").at("registers").get<int>(), 0);
  EXPECT_EQ(ms[1].at("compiler").at("spill_store_bytes"), 0);
  EXPECT_EQ(ms[1].at("score"), 20.0);  // compiled

  const auto broken = scratch("cuda_broken");
  library_script(broken, "cuda", "cu", "__device__ int broken_kf() { return undeclared_kf; }");
  EXPECT_EQ(agent_on("cuda", broken).exit_code, 1);
  ms = task_and_feedback(broken);
  ASSERT_EQ(ms.size(), 2u);
  EXPECT_EQ(ms[1].at("gate"), "compile") << ms[1].dump(2);
  ASSERT_FALSE(ms[1].at("compile_errors").empty()) << ms[1].dump(2);
  EXPECT_EQ(ms[1].at("compile_errors")[0].at("line"), 1);
  EXPECT_EQ(ms[1].at("compile_errors")[0].at("file"), "attempt-001.cu");
}
#endif

void expect_clean_failure(const std::string& name, const std::string& proposer, const std::string& says) {
  const auto dir = scratch(name);
  const auto db = dir / "results.db";
  const auto r = kforge_cli("agent " + kQuick + " --budget 2 --proposer \"" + proposer + "\" --db " + db.string() +
                            " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  EXPECT_EQ(Store(db).integrity_check(), "ok");
  EXPECT_EQ(Store(db).runs().size(), 1u);
}

TEST(AgentProposer, ThatCrashesEndsTheRunWithAClearError) {
  expect_clean_failure("crash", "read task; exit 3", "ended its output (exit code 3) before sending candidate 1");
}

TEST(AgentProposer, ThatPrintsGarbageEndsTheRunWithAClearError) {
  expect_clean_failure("garbage", "read task; echo hello world; sleep 1", "not JSON: 'hello world'");
}

}  // namespace
}  // namespace kforge
