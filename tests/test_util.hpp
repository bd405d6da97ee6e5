#pragma once
// Helpers shared by kforge's tests: a cache folder of their own, running a command and
// capturing what it says, and reading the test data sources.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kforge::test {

// Tests never touch the user's cache (compiled kernels, results, and ceilings that a test run
// under load would measure too low): they use $KFORGE_TEST_CACHE_DIR, else /tmp/kfcache-tests.
inline const char* test_cache_dir() {
  const char* d = std::getenv("KFORGE_TEST_CACHE_DIR");
  return d && *d ? d : "/tmp/kfcache-tests";
}
inline const bool kCacheDirSet = [] {
  setenv("KFORGE_CACHE_DIR", test_cache_dir(), /*overwrite=*/1);
  return true;
}();

// The text of tests/data/<name>.
inline std::string data_file(const std::string& name) {
  const std::string path = std::string(KFORGE_TEST_DATA) + "/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("missing test data file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string data_path(const std::string& name) {
  return std::string(KFORGE_TEST_DATA) + "/" + name;
}

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `cmd` through the shell; stdout and stderr are captured separately.
inline CommandResult run_command(const std::string& cmd) {
  static int counter = 0;
  const std::string err_path = "/tmp/kforge-test-stderr-" + std::to_string(getpid()) + "-" +
                               std::to_string(counter++);
  CommandResult r;
  FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::ostringstream s;
  s << in.rdbuf();
  r.err = s.str();
  std::remove(err_path.c_str());
  return r;
}

// The kforge binary with arguments.
inline CommandResult kforge_cli(const std::string& args) {
  return run_command(std::string("'") + KFORGE_CLI_PATH + "' " + args);
}

// `r`'s stdout as JSON; a test failure that shows what was printed when it is not JSON.
inline nlohmann::json parse_or_fail(const CommandResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON (" << e.what() << "):\n" << r.out << "\nstderr:\n" << r.err;
    return nlohmann::json::object();
  }
}

// A fresh, empty folder /tmp/<prefix>-<pid>/<name> for one test's files.
inline std::filesystem::path scratch_dir(const std::string& prefix, const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(getpid())) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Each non-empty line of a JSON-lines file.
inline std::vector<nlohmann::json> read_json_lines(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

}  // namespace kforge::test
