// `--tsan` beyond `kforge eval`: the race worker runs after every passed thorough verification
// of a cpu kernel, whoever asked for it (tune's candidates and winner, the agent's candidates,
// the MCP evaluate call), because evaluate() itself starts it. The racy kernel here is
// tests/verify/wrong/race_lazy_init.cpp: every output is right under every schedule, so only
// ThreadSanitizer (check `race`) can reject it, and a rejection proves the race worker ran.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "eval/tsan_probe.hpp"
#include "kforge/backend.hpp"
#include "kforge/problem.hpp"
#include "kforge/tune.hpp"
#include "kforge/util.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;

const std::string kRacy = std::string(KFORGE_TEST_DATA) + "/../verify/wrong/race_lazy_init.cpp";

const json* check_named(const json& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.at("name") == name) return &c;
  return nullptr;
}

TEST(TsanEverywhere, EvalRejectsTheLazyInitRaceWithCheckRaceAlone) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const auto r = test::kforge_cli("eval --problem gemm --lang cpp --source '" + kRacy +
                                  "' --grid 'ceil_div(M,16)' --size M=45,N=23,K=19 --no-index-width --tsan --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const json j = test::parse_or_fail(r);
  EXPECT_EQ(j.at("disposition"), "nondeterministic") << j.value("error", "");
  EXPECT_EQ(j.at("verify").at("failed_check"), "race") << j.value("error", "");
  // Every other check passed: the race worker runs after a pass only.
  for (const auto& c : j.at("verify").at("checks"))
    if (c.at("name") != "race") EXPECT_TRUE(c.at("passed").get<bool>()) << c.dump();
  EXPECT_NE(j.value("error", "").find("race_lazy_init.cpp:"), std::string::npos) << j.value("error", "");
}

// tune() evaluates in this process (the library's kernels): evaluate() starts the race worker.
TEST(TsanEverywhere, TuneInProcessRejectsTheRacyCandidateWithCheckRace) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const auto p = find_problem("gemm");
  const json spec = {{"problem", "gemm"}, {"name", "racy"}, {"lang", "cpp"}, {"grid", {"ceil_div(M,16)"}},
                     {"dtypes", {"fp32"}}};
  EvalRequest base;
  base.problem = "gemm";
  base.kernel = KernelSpec::from_json_with_source(spec, read_file(kRacy));
  base.kernel.source_path = kRacy;
  base.sizes = p->resolve_sizes({{"M", 37}, {"N", 21}, {"K", 17}});
  base.backend = "cpu";
  base.backend_options.threads = 2;
  base.verify.thorough = true;
  base.verify.index_width = false;
  base.verify.tsan = true;
  base.measure.warmup = 1;
  base.measure.repetitions = 3;
  auto backend = make_backend("cpu", {.threads = 2});
  const TuneResult t = tune(base, *backend, {.strategy = "brute", .budget = 1});
  ASSERT_EQ(t.evaluations.size(), 1u);
  const EvalResult& e = t.evaluations[0];
  EXPECT_EQ(e.disposition, Disposition::nondeterministic) << e.error;
  ASSERT_TRUE(e.verify);
  EXPECT_EQ(e.verify->failed_check, "race") << e.error;
  EXPECT_EQ(t.best, -1);
}

// `kforge tune --tsan`: the winner's thorough re-verification runs the race worker (the
// library's gemm has no race: a passed `race` check); refused where no backend is cpu.
TEST(TsanEverywhere, TuneCliRunsTheRaceWorkerOnTheWinner) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const auto db = test::scratch_dir("kforge-tsan-tests", "tune") / "results.db";
  const auto r = test::kforge_cli("tune gemm --backend cpu --size M=40,N=33,K=21 --strategy brute --budget 1 --tsan --db " +
                                  db.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json j = test::parse_or_fail(r);
  const json& best = j.at(0).at("best");
  EXPECT_EQ(best.at("disposition"), "passed");
  const json* race = check_named(best.at("verify").at("checks"), "race");
  ASSERT_NE(race, nullptr) << best.at("verify").at("checks").dump();
  EXPECT_TRUE(race->at("passed").get<bool>()) << race->dump();
  // The store keeps it in the verdict's verification level: the winner's (thorough) with it,
  // the quick candidate's without (a quick verdict had no race worker).
  const auto exported = test::kforge_cli("db export --db " + db.string() + " --format json");
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  int thorough_with_tsan = 0;
  for (const auto& e : test::parse_or_fail(exported)) {
    const json& v = e.at("verification");
    if (v.value("thorough", false)) thorough_with_tsan += v.value("tsan", false) ? 1 : 0;
    else EXPECT_FALSE(v.value("tsan", true)) << v.dump();
  }
  EXPECT_EQ(thorough_with_tsan, 1) << exported.out;
  // cpu and opencl have a race worker (ThreadSanitizer, Oclgrind); cuda has none.
  const auto cu = test::kforge_cli("tune gemm --backend cuda --budget 1 --tsan");
  EXPECT_EQ(cu.exit_code, 2) << cu.err;
  EXPECT_NE(cu.err.find("--tsan (the race worker) sees cpu and opencl kernels only"), std::string::npos) << cu.err;
}

// `kforge agent --tsan`: the candidate's thorough verification runs the race worker, and the
// proposer's feedback names the check.
TEST(TsanEverywhere, AgentRejectsTheRacyCandidateWithCheckRace) {
  if (tsan_runtime().empty()) GTEST_SKIP() << "no ThreadSanitizer runtime in this build";
  const auto dir = test::scratch_dir("kforge-tsan-tests", "agent");
  {
    std::ofstream script(dir / "script.json");
    script << json::array({{{"source", kRacy}, {"grid", {"ceil_div(M,16)"}}}}).dump();
  }
  const std::string proposers = std::string(KFORGE_TEST_DATA) + "/../../examples/proposers";
  const auto log = dir / "log.jsonl";
  const auto r = test::kforge_cli(
      "agent --problem gemm --size M=48,N=32,K=24 --threads 2 --min-time 0.02 --max-time 0.2 --no-index-width "
      "--tsan --budget 1 --proposer 'python3 " + proposers + "/scripted.py " + (dir / "script.json").string() +
      " --log " + log.string() + "' --db " + (dir / "results.db").string() + " --out " + (dir / "out").string() +
      " --json");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;  // nothing passed
  const auto ms = test::read_json_lines(log);
  ASSERT_GE(ms.size(), 2u) << r.err;
  const json& f = ms[1];
  EXPECT_EQ(f.at("gate"), "thorough_verify") << f.dump(2);
  EXPECT_EQ(f.at("failure").at("check"), "race") << f.dump(2);
  const auto cu = test::kforge_cli("agent --problem gemm --backend cuda --tsan --proposer true");
  EXPECT_EQ(cu.exit_code, 2) << cu.err;
}

}  // namespace
}  // namespace kforge
