// The proposer's messages parsed and judged without running anything: candidates and stops,
// lines that break the protocol, the static gate, compiler errors trimmed to the first ones at
// the candidate's own lines, and the diff against the best so far.
#include <gtest/gtest.h>

#include "agent/candidate.hpp"
#include "agent/diff.hpp"
#include "agent/feedback.hpp"
#include "kforge/agent.hpp"
#include "test_util.hpp"

namespace kforge::agent {
namespace {

using nlohmann::json;

const Problem& gemm() { return *find_problem("gemm"); }

Message parse(const json& j) { return parse_message(j.dump(), gemm(), Lang::cpp, "gemm"); }

TEST(AgentProtocol, ACandidateBecomesAKernelSpecWithItsParameters) {
  const auto m = parse({{"type", "candidate"}, {"source", test::data_file("naive_gemm.cpp")},
                        {"grid", {"ceil_div(M,BM)"}}, {"params", {{"BM", 16}}}, {"note", "first"}});
  ASSERT_TRUE(m.candidate);
  const Candidate& c = *m.candidate;
  EXPECT_TRUE(c.invalid.empty()) << c.invalid;
  EXPECT_EQ(c.note, "first");
  EXPECT_EQ(c.spec.entry, "gemm");
  EXPECT_EQ(c.params.at("BM"), 16);
  EXPECT_EQ(c.spec.geometry(c.spec.resolve(c.params), {{"M", 33}, {"N", 1}, {"K", 1}}).grid.x, 3);
  EXPECT_FALSE(c.message.contains("source"));
  EXPECT_EQ(static_check(c, Lang::cpp), "");
}

TEST(AgentProtocol, TheNoteIsNotPartOfTheCandidateHash) {
  const json a = {{"type", "candidate"}, {"source", "x gemm"}, {"note", "a"}};
  json b = a;
  b["note"] = "b";
  EXPECT_EQ(parse(a).candidate->hash, parse(b).candidate->hash);
  b["params"] = {{"X", 1}};
  EXPECT_NE(parse(a).candidate->hash, parse(b).candidate->hash);
}

TEST(AgentProtocol, AStopEndsTheBatch) {
  const auto m = parse({{"type", "stop"}, {"reason", "out of ideas"}});
  EXPECT_TRUE(m.stop);
  EXPECT_EQ(m.reason, "out of ideas");
}

TEST(AgentProtocol, LinesThatAreNotMessagesAreProtocolErrors) {
  EXPECT_THROW(parse_message("hello", gemm(), Lang::cpp, "gemm"), ProposerError);
  EXPECT_THROW(parse_message("[1,2]", gemm(), Lang::cpp, "gemm"), ProposerError);
  EXPECT_THROW(parse_message(R"({"type":"poem"})", gemm(), Lang::cpp, "gemm"), ProposerError);
  EXPECT_THROW(parse_message(R"({"type":"candidate"})", gemm(), Lang::cpp, "gemm"), ProposerError);
}

TEST(AgentProtocol, BadFieldsAreRejectedByTheStaticGateNotTheRun) {
  const auto bad_grid = parse({{"type", "candidate"}, {"source", "gemm"}, {"grid", "M"}});
  EXPECT_NE(static_check(*bad_grid.candidate, Lang::cpp).find("grid"), std::string::npos);
  const auto no_entry = parse({{"type", "candidate"}, {"source", "void f() {}"}});
  EXPECT_NE(static_check(*no_entry.candidate, Lang::cpp).find("KF_KERNEL(gemm"), std::string::npos);
  const auto cl = parse({{"type", "candidate"}, {"source", "gemm"}, {"lang", "opencl"}});
  EXPECT_NE(static_check(*cl.candidate, Lang::cpp).find("backend runs cpp"), std::string::npos);
  const Judged j = rejected("why");
  EXPECT_EQ(j.feedback.at("gate"), "static");
  EXPECT_EQ(j.score, 0);
}

TEST(AgentFeedback, CompileErrorsAreTrimmedToTheFirstAtTheCandidatesLines) {
  const std::string log =
      "/tmp/kfcache/cpu/0123abcd.cpp: In function 'void body(...)':\n"
      "/tmp/kfcache/cpu/0123abcd.cpp:7:11: error: 'undeclared_thing' was not declared in this scope\n"
      "    7 |   s += undeclared_thing;\n"
      "      |        ^~~~~~~~~~~~~~~~\n"
      "/tmp/kfcache/cpu/0123abcd.cpp:9:3: error: expected ';' before '}' token\n"
      "/tmp/kfcache/cpu/0123abcd.cpp:10:3: error: third\n"
      "/tmp/kfcache/cpu/0123abcd.cpp:11:3: error: fourth\n";
  const json e = compile_errors(log, "attempt-002.cpp");
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].at("file"), "attempt-002.cpp");
  EXPECT_EQ(e[0].at("line"), 7);
  EXPECT_EQ(e[0].at("column"), 11);
  EXPECT_NE(e[0].at("excerpt").get<std::string>().find("undeclared_thing;"), std::string::npos);
  EXPECT_EQ(e[1].at("line"), 9);
}

// NVRTC's own format, `file(line): error: ...`, with its excerpt and caret on the next lines.
TEST(AgentFeedback, NvrtcCompileErrorsGiveTheLineToo) {
  const std::string log =
      "attempt-003.cu(12): error: identifier \"acc\" is undefined\n"
      "      acc += a * b;\n"
      "      ^\n"
      "\n"
      "attempt-003.cu(20): warning #177-D: variable \"t\" was declared but never referenced\n"
      "attempt-003.cu(31): error: expected a \";\"\n"
      "2 errors detected in the compilation of \"attempt-003.cu\".\n";
  const json e = compile_errors(log, "attempt-003.cu");
  ASSERT_EQ(e.size(), 2u) << e.dump(2);
  EXPECT_EQ(e[0].at("line"), 12);
  EXPECT_EQ(e[0].at("column"), 0);
  EXPECT_EQ(e[0].at("message"), "identifier \"acc\" is undefined");
  EXPECT_NE(e[0].at("excerpt").get<std::string>().find("acc += a * b;"), std::string::npos);
  EXPECT_EQ(e[1].at("line"), 31);
}

TEST(AgentFeedback, HardwareCountersAreStatedNeverInvented) {
  const std::string c = hardware_counters();
  EXPECT_TRUE(c.rfind("unavailable: ", 0) == 0 || c.rfind("available", 0) == 0) << c;
}

TEST(AgentDiff, ShowsTheChangedLinesWithContext) {
  EXPECT_EQ(line_diff("a\nb\n", "a\nb\n"), "");
  const std::string d = line_diff("1\n2\n3\n4\n5\n6\n7\n", "1\n2\n3\nfour\n5\n6\n7\n");
  EXPECT_EQ(d, "@@ line 2 @@\n  2\n  3\n- 4\n+ four\n  5\n  6\n");
}

}  // namespace
}  // namespace kforge::agent
