// The store through the `kforge` command: tune records and resumes (also after kill -9), `db`
// lists, shows and exports, a Kernel Tuner export imports back, and bench reads the best-known
// parameters.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "store_fixtures.hpp"

namespace kforge {
namespace {

using nlohmann::json;
using test::kforge_cli;
using test::parse_or_fail;

const std::string kInstance = "gemm --backend cpu --size M=40,N=24,K=16 --threads 2";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::size_t stored(const std::filesystem::path& db) {
  try {
    const auto s = open_store_if_exists(db);
    return s ? s->evaluations().size() : 0;
  } catch (const StoreError&) {
    return 0;  // not created yet
  }
}

TEST(StoreCli, TuneResumesAfterKillNineWithoutRepeatingAnEvaluation) {
  const auto db = test::fresh_db("cli-kill");
  const std::string tune = "tune " + kInstance + " --strategy brute --budget 4 --db " + db.string();
  // The first run, killed once two evaluations are stored.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string cmd = std::string("exec '") + KFORGE_CLI_PATH + "' " + tune + " --json >/dev/null 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (stored(db) < 2 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the tune ended before it was killed";
  const std::size_t before = stored(db);
  ASSERT_GE(before, 2u);
  EXPECT_EQ(Store(db).integrity_check(), "ok");

  // The second run uses what was stored and evaluates only the rest.
  const auto r = kforge_cli(tune + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = parse_or_fail(r);
  ASSERT_EQ(doc.size(), 1u);
  const json& st = doc[0].at("store");
  EXPECT_EQ(st.at("resumed").get<std::size_t>(), before);
  EXPECT_EQ(doc[0].at("evaluations").size(), 4u);
  EXPECT_EQ(stored(db), 4u) << "an evaluation was stored twice, or one was lost";
  // A third run evaluates nothing but re-times the winner.
  const json again = parse_or_fail(kforge_cli(tune + " --json"));
  EXPECT_EQ(again[0].at("store").at("resumed"), 4);
  EXPECT_EQ(again[0].at("store").at("recorded"), 1) << "only the winner, re-timed beside the baseline";
}

TEST(StoreCli, DbListShowExportImportAndBenchReadTheStore) {
  const auto db = test::fresh_db("cli-db");
  const std::string dbopt = " --db " + db.string();
  ASSERT_EQ(kforge_cli("tune " + kInstance + " --strategy random --budget 3" + dbopt + " --json").exit_code, 0);

  const json runs = parse_or_fail(kforge_cli("db list --json" + dbopt));
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_GE(runs[0].at("evaluations").get<int>(), 3);
  EXPECT_NE(runs[0].at("command").get<std::string>().find("tune gemm"), std::string::npos);
  const auto human = kforge_cli("db list" + dbopt);
  EXPECT_NE(human.out.find("tune gemm"), std::string::npos) << human.out;

  const json show = parse_or_fail(kforge_cli("db show 1 --json" + dbopt));
  EXPECT_EQ(show.at("evaluation_list").size(), runs[0].at("evaluations").get<std::size_t>());
  EXPECT_EQ(kforge_cli("db show 99" + dbopt).exit_code, 2);

  const auto csv = kforge_cli("db export --format csv" + dbopt);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("id,run_id,problem,", 0), 0u) << csv.out;
  const json all = parse_or_fail(kforge_cli("db export --format json" + dbopt));
  EXPECT_EQ(all.size(), runs[0].at("evaluations").get<std::size_t>());

  // Kernel Tuner format out, into another database, and out again: the same file.
  const auto kt = db.string() + ".kt.json";
  ASSERT_EQ(kforge_cli("db export --format kerneltuner -o " + kt + dbopt).exit_code, 0);
  const auto db2 = test::fresh_db("cli-db-2");
  const auto imp = kforge_cli("db import " + kt + " --db " + db2.string());
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  EXPECT_EQ(kforge_cli("db export --format kerneltuner --db " + db2.string()).out, read_text(kt));

  // bench without --params runs the best stored configuration, and says so.
  double best = 1e9;
  json best_params;
  for (const auto& e : all)
    if (e.at("disposition") == "passed" && e.at("median_s").get<double>() < best) {
      best = e.at("median_s");
      best_params = e.at("params");
    }
  const json bench = parse_or_fail(kforge_cli("bench " + kInstance + " --no-baseline --json" + dbopt));
  EXPECT_EQ(bench.at("params_source"), "store");
  EXPECT_EQ(bench.at("params"), best_params);
  const json user = parse_or_fail(kforge_cli("bench " + kInstance + " --no-baseline --params MR=4 --json" + dbopt));
  EXPECT_EQ(user.at("params_source"), "user");
  const json other = parse_or_fail(kforge_cli("bench gemm --size M=41,N=24,K=16 --threads 2 --no-baseline --json" + dbopt));
  EXPECT_EQ(other.at("params_source"), "default") << "no tuned configuration for these sizes";

  // So does the suite, problem by problem.
  const json suite = parse_or_fail(kforge_cli("suite --problem gemm --backend cpu --size M=40,N=24,K=16 "
                                              "--threads 2 --quick --repetitions 3 --json" + dbopt));
  ASSERT_EQ(suite.at("benchmarks").size(), 1u);
  EXPECT_EQ(suite.at("benchmarks")[0].at("params_source"), "store");
  EXPECT_EQ(suite.at("benchmarks")[0].at("params"), best_params);
}

// The store keeps the verification each verdict had (docs/verification.md, "Reusing a stored
// verdict"): tune's quick candidates do not answer a thorough tune; its thoroughly re-verified
// winner does, and everything answers a quick tune afterwards.
TEST(StoreCli, AThoroughTuneReusesOnlyThoroughVerdicts) {
  const auto db = test::fresh_db("cli-verification");
  const std::string tune = "tune " + kInstance + " --strategy brute --budget 2 --db " + db.string() + " --json";
  const json quick = parse_or_fail(kforge_cli(tune));
  ASSERT_EQ(quick.size(), 1u);
  EXPECT_EQ(quick[0].at("store").at("resumed"), 0);
  const json thorough = parse_or_fail(kforge_cli(tune + " --thorough"));
  ASSERT_EQ(thorough.size(), 1u);
  EXPECT_EQ(thorough[0].at("store").at("resumed"), 1) << "only the winner was verified thoroughly";
  const json again = parse_or_fail(kforge_cli(tune));
  EXPECT_EQ(again[0].at("store").at("resumed"), 2) << "thorough verdicts answer a quick tune";
}

}  // namespace
}  // namespace kforge
