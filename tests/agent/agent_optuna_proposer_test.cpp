// examples/proposers/optuna_params.py speaks the protocol, without Optuna installed: its
// --sampler random fallback (Python's random, the same ask/tell shape) drives `kforge agent` over
// gemm.cpu's parameters. The Optuna (TPE) path itself runs in bench/agent_optuna_vs_tune.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "test_util.hpp"

namespace kforge {
namespace {

using nlohmann::json;
using test::kforge_cli;
using test::parse_or_fail;

const std::string kRoot = std::string(KFORGE_TEST_DATA) + "/../..";
const std::string kProposer = kRoot + "/examples/proposers/optuna_params.py";
const std::string kSpec = kRoot + "/kernels/gemm/gemm_cpu.json";
const std::string kInstance = "--problem gemm --size M=64,N=64,K=64 --threads 1 --min-time 0.05 --max-time 0.5";

std::filesystem::path scratch(const std::string& name) { return test::scratch_dir("kforge-optuna-tests", name); }

std::vector<json> read_lines(const std::filesystem::path& p) { return test::read_json_lines(p); }

json read_json(const std::string& p) {
  std::ifstream in(p);
  return json::parse(in);
}

test::CommandResult run_agent(const std::filesystem::path& dir, const std::string& spec, int budget,
                              const std::string& extra) {
  return kforge_cli("agent " + kInstance + " --budget " + std::to_string(budget) + " --proposer 'python3 " +
                    kProposer + " " + spec + " --sampler random --seed 7 " + extra + " --log " +
                    (dir / "log.jsonl").string() + "' --db " + (dir / "results.db").string() + " --out " +
                    (dir / "out").string() + " --json");
}

TEST(OptunaProposer, TheRandomFallbackSendsValidDistinctConfigurationsFromTheSpecsSpace) {
  const auto dir = scratch("random");
  const auto r = run_agent(dir, kSpec, 3, "");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json s = parse_or_fail(r);
  EXPECT_EQ(s.at("attempts"), 3);
  EXPECT_EQ(s.at("evaluated"), 3);
  EXPECT_TRUE(s.at("final_passed").get<bool>());

  const auto ms = read_lines(dir / "log.jsonl");
  ASSERT_EQ(ms.size(), 5u);  // task, three feedbacks, done
  EXPECT_EQ(ms.front().at("type"), "task");
  EXPECT_EQ(ms.back().at("type"), "done");
  for (int i = 1; i <= 3; ++i) {
    const json& f = ms[i];
    EXPECT_EQ(f.at("attempt"), i);
    // Every candidate made a kernel: none stopped at the static gate or the compiler.
    EXPECT_TRUE(f.at("disposition") == "passed" || f.at("disposition") == "invalid_config") << f.dump(2);
  }
  // The first attempt is the spec's default configuration (as `kforge tune` starts), and it passes.
  EXPECT_EQ(ms[1].at("disposition"), "passed") << ms[1].dump(2);

  // What was sent: each configuration's values come from the spec's lists, no two alike, and the
  // spec travels with the candidate (its constraints are kforge's to check).
  const json spec = read_json(kSpec);
  const auto show = kforge_cli("db show " + std::to_string(s.at("run").get<int>()) + " --json --db " +
                               (dir / "results.db").string());
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const json attempts = parse_or_fail(show).at("agent_attempts");
  ASSERT_EQ(attempts.size(), 3u) << attempts.dump(2);
  std::set<std::string> configs;
  for (const auto& a : attempts) {
    const json& c = a.at("candidate");
    ASSERT_TRUE(c.contains("params")) << c.dump(2);
    ASSERT_TRUE(c.contains("spec")) << c.dump(2);
    EXPECT_EQ(c.at("spec").at("constraints"), spec.at("constraints"));
    EXPECT_EQ(c.at("params").size(), spec.at("params").size());
    for (const auto& [name, v] : c.at("params").items()) {
      const auto& values = spec.at("params").at(name);
      EXPECT_NE(std::find(values.begin(), values.end(), v), values.end()) << name << "=" << v;
    }
    configs.insert(c.at("params").dump());
  }
  EXPECT_EQ(configs.size(), 3u);
  EXPECT_EQ(attempts[0].at("candidate").at("params"), spec.at("defaults"));
}

// A space of two configurations, one breaking a constraint: it comes back invalid_config (no
// compile), the proposer records it and sends the other one rather than repeat it.
TEST(OptunaProposer, AnInvalidConfigurationIsAnsweredAndNotRepeated) {
  const auto dir = scratch("invalid");
  json spec = read_json(kSpec);
  for (auto& [name, values] : spec.at("params").items()) values = json::array({spec.at("defaults").at(name)});
  spec["params"]["MR"] = json::array({5, 6});  // MC = 96: 96 % 5 != 0
  std::filesystem::copy_file(kRoot + "/kernels/gemm/" + spec.at("source").get<std::string>(),
                             dir / spec.at("source").get<std::string>());
  {
    std::ofstream out(dir / "spec.json");
    out << spec.dump(2);
  }
  const auto r = run_agent(dir, (dir / "spec.json").string(), 2, "--no-default");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto ms = read_lines(dir / "log.jsonl");
  ASSERT_EQ(ms.size(), 4u);
  std::multiset<std::string> dispositions{ms[1].at("disposition"), ms[2].at("disposition")};
  EXPECT_EQ(dispositions, (std::multiset<std::string>{"invalid_config", "passed"}));
  for (int i : {1, 2})
    if (ms[i].at("disposition") == "invalid_config")
      EXPECT_NE(ms[i].at("summary").get<std::string>().find("MC % MR"), std::string::npos) << ms[i].dump(2);
  EXPECT_EQ(parse_or_fail(r).at("best").at("candidate").at("params").at("MR"), 6);
}

}  // namespace
}  // namespace kforge
