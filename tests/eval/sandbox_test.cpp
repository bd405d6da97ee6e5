// The worker's sandbox (include/kforge/sandbox.hpp): hostile candidates (tests/data/hostile/)
// that start processes, open files or sockets, or signal kforge go through `kforge eval` and
// must end `crashed`, with the forbidden call named; the same candidates run with the sandbox
// off show that the hostile act, not a bug, is what stops them; correct kernels (cpu with its
// thread pool and OpenBLAS baseline, OpenCL on PoCL's threads) still pass and are timed; and
// candidates that keep state between launches or read the clock to detect timing are caught
// by verification (the sandbox cannot stop a clock read, see docs/commands/eval.md).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/evaluate.hpp"
#include "kforge/kernel.hpp"
#include "kforge/sandbox.hpp"
#include "test_util.hpp"

namespace kforge {
namespace {

using json = nlohmann::json;

const std::string kRoot = std::filesystem::path(KFORGE_TEST_DATA).parent_path().parent_path().string();
const char* const kGemm64 = "--lang cpp --grid 'ceil_div(M,16)' --size M=64,N=64,K=64";

struct Eval {
  test::CommandResult cmd;
  json doc = json::object();
  [[nodiscard]] std::string disposition() const { return doc.value("disposition", std::string("?")); }
  [[nodiscard]] std::string error() const { return doc.value("error", std::string()); }
  [[nodiscard]] std::string failed_check() const {
    return doc.value("verify", json::object()).value("failed_check", std::string());
  }
  [[nodiscard]] std::string summary() const {
    return "disposition " + disposition() + ", failed_check '" + failed_check() + "', error: " + error() +
           "\nstderr: " + cmd.err.substr(0, 2000);
  }
};

// `kforge eval` of `source` (relative to the checkout) from the checkout's root, so that a
// relative path a kernel opens resolves there.
Eval eval(const std::string& source, const std::string& args, const std::string& extra = "",
          const std::string& env = "", const std::string& problem = "gemm") {
  const std::string cmd = "cd '" + kRoot + "' && " + (env.empty() ? "" : "env " + env + " ") + "'" +
                          KFORGE_CLI_PATH + "' eval --problem '" + problem + "' --source '" + source + "' " + args +
                          " " + extra + " --timeout 60 --json";
  Eval r{test::run_command(cmd)};
  try {
    r.doc = json::parse(r.cmd.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << source << ": not JSON (" << e.what() << "):\n" << r.cmd.out << "\nstderr:\n" << r.cmd.err;
  }
  return r;
}

// The verification's checks include a passed timed_outputs (every timed run's outputs).
bool timed_outputs_checked(const Eval& r) {
  for (const auto& c : r.doc.value("verify", json::object()).value("checks", json::array()))
    if (c.value("name", std::string()) == "timed_outputs") return c.value("passed", false);
  return false;
}

struct Hostile {
  std::string file;  // in tests/data/hostile/
  std::string call;  // what the error must name ("" when the call cannot be named)
};

void PrintTo(const Hostile& h, std::ostream* os) { *os << h.file; }

class HostileCandidate : public ::testing::TestWithParam<Hostile> {};

TEST_P(HostileCandidate, IsStoppedAndTheCallNamed) {
  const Hostile& h = GetParam();
  const Eval r = eval("tests/data/hostile/" + h.file, kGemm64);
  EXPECT_EQ(r.disposition(), "crashed") << r.summary();
  EXPECT_NE(r.error().find("the kernel made a forbidden system call"), std::string::npos) << r.summary();
  EXPECT_NE(r.error().find("(sandbox:"), std::string::npos) << r.summary();
  if (!h.call.empty()) EXPECT_NE(r.error().find(": " + h.call), std::string::npos) << r.summary();
  EXPECT_FALSE(r.doc.contains("verify") && r.doc["verify"].value("passed", false)) << r.summary();
}

INSTANTIATE_TEST_SUITE_P(
    Sandbox, HostileCandidate,
    ::testing::Values(Hostile{"fork_bomb.cpp", "clone (a process, not a thread)"},
                      // posix_spawn blocks every signal around its clone: the kernel then ends
                      // the process with SIGSYS before the handler could name the call.
                      Hostile{"system_shell.cpp", ""},
                      Hostile{"execve.cpp", "execve"},
                      Hostile{"read_file.cpp", "openat \"/etc/passwd\""},
                      Hostile{"read_reference_source.cpp", "openat \"kernels/gemm/problem.cpp\""},
                      Hostile{"write_file.cpp", "openat \"/tmp/kforge-hostile-write.txt\""},
                      Hostile{"socket.cpp", "socket"},
                      Hostile{"kill_parent.cpp", "kill (another process)"},
                      Hostile{"limits_parent.cpp", "prlimit64 (another process)"},
                      // Its own SIGSYS handler is refused: the process ends at once, unnamed.
                      Hostile{"replaces_sigsys_handler.cpp", ""}),
    [](const ::testing::TestParamInfo<Hostile>& info) {
      std::string n = info.param.file.substr(0, info.param.file.find('.'));
      return n;
    });

// A copy of hostile source `file` whose target path `from` is replaced by one under this test's
// own scratch directory: CTest runs tests in parallel processes, and two tests that watched the
// same /tmp path saw each other's files (the sandbox-off test writes it on purpose).
struct Retargeted {
  std::string source;  // the copy, absolute
  std::string target;  // the path the copy writes to
};
Retargeted retargeted(const std::string& file, const std::string& from, const std::string& test_name) {
  const auto dir = test::scratch_dir("kforge-sandbox-test", test_name);
  std::ifstream in(kRoot + "/tests/data/hostile/" + file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << file << " no longer names " << from;
  Retargeted r{(dir / file).string(), (dir / "written.txt").string()};
  if (at != std::string::npos) text.replace(at, from.size(), r.target);
  std::ofstream(r.source) << text;
  return r;
}

// Nothing the stopped candidates tried reached the file system.
TEST(Sandbox, StoppedWritesLeaveNoFile) {
  const auto written = retargeted("write_file.cpp", "/tmp/kforge-hostile-write.txt", "stopped_write");
  const auto shell = retargeted("system_shell.cpp", "/tmp/kforge-hostile-system.txt", "stopped_shell");
  EXPECT_EQ(eval(written.source, kGemm64).disposition(), "crashed");
  EXPECT_EQ(eval(shell.source, kGemm64).disposition(), "crashed");
  EXPECT_FALSE(std::filesystem::exists(written.target));
  EXPECT_FALSE(std::filesystem::exists(shell.target));
}

// With the sandbox off (the debugging switch), the same candidates do what they try and pass:
// the sandbox, not a bug of theirs, is what stopped them above.
TEST(Sandbox, OffTheHostileActsSucceedAndTheKernelsPass) {
  const auto written = retargeted("write_file.cpp", "/tmp/kforge-hostile-write.txt", "off_write");
  const Eval w = eval(written.source, kGemm64, "--no-sandbox");
  EXPECT_EQ(w.disposition(), "passed") << w.summary();
  EXPECT_TRUE(std::filesystem::exists(written.target)) << "the file was not written with the sandbox off";
  const Eval r = eval("tests/data/hostile/read_reference_source.cpp", kGemm64, "", "KFORGE_NO_SANDBOX=1");
  EXPECT_EQ(r.disposition(), "passed") << r.summary();
  const Eval s = eval("tests/data/hostile/socket.cpp", kGemm64, "--no-sandbox");
  EXPECT_EQ(s.disposition(), "passed") << s.summary();
}

// OpenCL C on PoCL is host code with inline assembly: raw system calls are stopped and named as
// cpu code's are, and with the sandbox off the same kernel writes its file and passes.
TEST(Sandbox, OpenClKernelsRawSystemCallsAreStopped) {
  const char* const geometry = "--lang opencl --backend opencl --grid M --block 1 --size M=64,N=64,K=64";
  const Eval f = eval("tests/data/hostile/asm_fork.cl", geometry);
  EXPECT_EQ(f.disposition(), "crashed") << f.summary();
  EXPECT_NE(f.error().find("forbidden system call: fork"), std::string::npos) << f.summary();
  const auto written = retargeted("asm_write_file.cl", "/tmp/kforge-hostile-asm-write.txt", "opencl_write");
  const Eval w = eval(written.source, geometry);
  EXPECT_EQ(w.disposition(), "crashed") << w.summary();
  EXPECT_NE(w.error().find("open \"" + written.target + "\""), std::string::npos) << w.summary();
  EXPECT_FALSE(std::filesystem::exists(written.target));
  const Eval off = eval(written.source, geometry, "--no-sandbox");
  EXPECT_EQ(off.disposition(), "passed") << off.summary();
  EXPECT_TRUE(std::filesystem::exists(written.target)) << "the file was not written with the sandbox off";
  const Eval forked_off = eval("tests/data/hostile/asm_fork.cl", geometry, "--no-sandbox");
  EXPECT_EQ(forked_off.disposition(), "passed") << forked_off.summary();
}

// Library kernels run in-process, with no sandbox: evaluate() in this process leaves it free to
// open files and start processes afterwards.
TEST(Sandbox, InProcessEvaluationIsNotSandboxed) {
  const nlohmann::json spec = {{"name", "naive"}, {"problem", "gemm"}, {"lang", "cpp"}, {"entry", "gemm"},
                               {"dtypes", {"fp32"}}, {"grid", {"ceil_div(M, 16)"}}};
  EvalRequest req;
  req.problem = "gemm";
  req.kernel = KernelSpec::from_json_with_source(spec, test::data_file("naive_gemm.cpp"));
  req.sizes = {{"M", 37}, {"N", 29}, {"K", 41}};
  req.backend_options.threads = 2;
  const auto backend = make_backend("cpu", req.backend_options);
  const EvalResult r = evaluate(req, *backend);
  EXPECT_EQ(r.disposition, Disposition::passed) << r.error;
  EXPECT_FALSE(sandboxed());
  EXPECT_TRUE(std::filesystem::exists(test::data_path("naive_gemm.cpp")));
  EXPECT_FALSE(test::data_file("naive_gemm.cpp").empty());  // an open still works
  EXPECT_EQ(test::run_command("true").exit_code, 0);           // and so does a process
}

// A problem file's reference runs in the native host, a process of its own started before the
// filter: the worker holds the whole sandbox (no fork either), a correct kernel passes, timed
// beside the file's baseline, and a kernel that looks for the reference in its own process to
// call it finds nothing (it does find it with the sandbox off, where the worker loads it).
TEST(Sandbox, ProblemFileReferenceIsOutOfTheKernelsReach) {
  const std::string args = "--entry gemm --lang cpp --grid 'ceil_div(M,16)' --size M=64,N=64,K=64";
  const std::string problem = "examples/problems/gemm.json";
  const Eval ok = eval("examples/naive_gemm.cpp", args, "--bench", "", problem);
  EXPECT_EQ(ok.disposition(), "passed") << ok.summary();
  EXPECT_GT(ok.doc.value("median_s", 0.0), 0.0) << ok.summary();
  const Eval sock = eval("tests/data/hostile/socket.cpp", args, "", "", problem);
  EXPECT_EQ(sock.disposition(), "crashed") << sock.summary();
  EXPECT_NE(sock.error().find("forbidden system call: socket"), std::string::npos) << sock.summary();
  const Eval read = eval("tests/data/hostile/read_file.cpp", args, "", "", problem);
  EXPECT_NE(read.error().find("forbidden system call: openat \"/etc/passwd\""), std::string::npos)
      << read.summary();
  const Eval fork = eval("tests/data/hostile/fork_bomb.cpp", args, "", "", problem);
  EXPECT_EQ(fork.disposition(), "crashed") << fork.summary();
  EXPECT_NE(fork.error().find("clone (a process, not a thread)"), std::string::npos) << fork.summary();
  const Eval call = eval("tests/data/hostile/calls_reference.cpp", args, "", "", problem);
  EXPECT_EQ(call.disposition(), "passed") << "the kernel reached the reference: " << call.summary();
  const Eval off = eval("tests/data/hostile/calls_reference.cpp", args, "--no-sandbox", "", problem);
  EXPECT_EQ(off.disposition(), "incorrect") << off.summary();
  EXPECT_NE(off.error().find("first bad element C[0]"), std::string::npos) << "its tell: " << off.summary();
}

// Correct kernels pass under the sandbox, verified and timed: the cpu backend's thread pool,
// OpenBLAS's baseline threads, the speed-of-light gate and the ceilings all work inside it.
TEST(Sandbox, CorrectCpuKernelPassesAndIsTimed) {
  const Eval r = eval("examples/naive_gemm.cpp", "--lang cpp --grid 'ceil_div(M,16)' --size M=300,N=200,K=77",
                      "--bench");
  ASSERT_EQ(r.disposition(), "passed") << r.summary();
  EXPECT_GT(r.doc.value("median_s", 0.0), 0.0) << r.summary();
  EXPECT_GT(r.doc.value("baseline", json::object()).value("median_s", 0.0), 0.0)
      << "the OpenBLAS baseline ran inside the sandbox";
  EXPECT_TRUE(timed_outputs_checked(r)) << r.summary();
}

TEST(Sandbox, CorrectOpenClKernelPassesAndIsTimed) {
  // A kernel PoCL has never seen (a constant of this run in its code), so that its compile and
  // link at the first launch happen in the worker: with a warm PoCL cache a filter that breaks
  // them went unnoticed.
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-sandbox-cl-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string fresh = (dir / "gemm.cl").string();
  std::string text = test::run_command("cat '" + kRoot + "/examples/naive_gemm.cl'").out;
  const std::string anchor = "float s = 0.0f;";
  ASSERT_NE(text.find(anchor), std::string::npos);
  text.replace(text.find(anchor), anchor.size(),
               "float s = 0.0f; if (K == -" + std::to_string(getpid() + std::time(nullptr) % 100000) + ") return;");
  std::ofstream(fresh) << text;
  const Eval first = eval(fresh,
                          "--lang opencl --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=300,N=200,K=77");
  if (first.disposition() != "not_supported") EXPECT_EQ(first.disposition(), "passed") << first.summary();
  std::filesystem::remove_all(dir);
  const Eval r = eval("examples/naive_gemm.cl",
                      "--lang opencl --grid 'ceil_div(N,16),ceil_div(M,16)' --block 16,16 --size M=300,N=200,K=77",
                      "--bench");
  if (r.disposition() == "not_supported") GTEST_SKIP() << "no OpenCL device: " << r.error();
  ASSERT_EQ(r.disposition(), "passed") << r.summary();
  EXPECT_GT(r.doc.value("median_s", 0.0), 0.0) << r.summary();
  EXPECT_TRUE(timed_outputs_checked(r)) << r.summary();
}

// Reading the clock cannot be stopped (rdtsc and the vDSO's clock_gettime make no system
// call); what a kernel does with it is checked: every timed run's outputs are verified. With
// --quick, so that the thorough checks' many launches (which it also takes for timing) do not
// stop it first.
TEST(Sandbox, ClockReadToDetectTimingIsCaughtByVerification) {
  const Eval r = eval("tests/data/hostile/clock_when_timed.cpp",
                      "--lang cpp --grid 'ceil_div(M,16)' --size M=128,N=128,K=128", "--bench --quick");
  EXPECT_EQ(r.disposition(), "incorrect") << r.summary();
  EXPECT_EQ(r.failed_check(), "timed_outputs") << r.summary();
}

// State kept between launches in the kernel's globals, replayed later: caught by verification
// inside the sandbox as outside it (fresh inputs at fresh addresses, perturbation, and every
// timed run's outputs checked; --quick for the last, as thorough mode's reused-buffer runs
// would stop it first).
TEST(Sandbox, StateKeptBetweenLaunchesIsCaught) {
  const Eval stale = eval("tests/verify/wrong/stale_replay.cpp", kGemm64);
  EXPECT_EQ(stale.disposition(), "incorrect") << stale.summary();
  const Eval lazy = eval("tests/verify/wrong/lazy_when_timed.cpp",
                         "--lang cpp --grid 'ceil_div(M,16)' --size M=128,N=128,K=128", "--bench --quick");
  EXPECT_EQ(lazy.disposition(), "incorrect") << lazy.summary();
  EXPECT_EQ(lazy.failed_check(), "timed_outputs") << lazy.summary();
}

// "Calling into the reference" through memory: a kernel that searches the heap for the
// reference's output finds none while it is timed, because the timed runs' reference is
// computed only after the last of them (evaluate.cpp). The same search during verification
// finds trial 0's cached reference on its repeat: the search itself works. (--quick for the
// timed case: thorough mode's reused-buffer runs find an earlier run's reference and reject it.)
TEST(Sandbox, ReferenceOfTheTimedRunsIsNotInMemoryWhileTheyRun) {
  const std::string f = "tests/data/hostile/reads_reference_when_timed.cpp";
  const Eval timed = eval(f, kGemm64, "--bench --quick");
  EXPECT_EQ(timed.disposition(), "passed") << timed.summary();
  const Eval always = eval(f, kGemm64, "--params SEARCH_ALWAYS=1");
  EXPECT_EQ(always.failed_check(), "determinism") << always.summary();
}

}  // namespace
}  // namespace kforge
