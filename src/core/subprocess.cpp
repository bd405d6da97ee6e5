#include <algorithm>
#include "kforge/subprocess.hpp"
#include "kforge/resident_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace kforge {

namespace {

// The child's resident set in bytes (/proc/PID/statm's second field, in pages); -1 when gone.
long long resident_bytes_of(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/statm", static_cast<int>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  long long size = 0, resident = 0;
  if (std::sscanf(buf, "%lld %lld", &size, &resident) != 2) return -1;
  return resident * sysconf(_SC_PAGESIZE);
}

}  // namespace

std::string ProcessResult::describe() const {
  if (timed_out) return "timed out and was killed";
  if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" +
                     strsignal(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

std::string describe(const ProcessResult& p, const ResidentWatch& w) {
  if (w.exceeded_bytes > 0)
    return "held " + std::to_string(w.exceeded_bytes >> 20) + " MiB of resident memory, past its limit of " +
           std::to_string(w.limit_bytes >> 20) + " MiB, and was killed";
  return p.describe();
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input,
                          const ProcessLimits& limits) {
  ResidentWatch none;
  return run_process(argv, input, limits, none);
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& input,
                          const ProcessLimits& limits, ResidentWatch& watch) {
  watch.exceeded_bytes = 0;
  watch.stretched = false;
  double timeout_s = limits.timeout_s;
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC))
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    setpgid(0, 0);  // its own group, so a timeout kills whatever it started too
    if (limits.memory_bytes > 0) {
      const long long hard = std::max(limits.memory_bytes, limits.memory_hard_bytes);
      rlimit rl{static_cast<rlim_t>(limits.memory_bytes), static_cast<rlim_t>(hard)};
      setrlimit(RLIMIT_AS, &rl);
    }
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    execvp(args[0], args.data());
    const char msg[] = "exec failed\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProcessResult r;
  std::size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) { close(in_fd); in_fd = -1; }
  else fcntl(in_fd, F_SETFL, O_NONBLOCK);
  const auto start = std::chrono::steady_clock::now();
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  signal(SIGPIPE, SIG_IGN);
  while (out_fd >= 0 || err_fd >= 0) {
    pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    int wait_ms = watch.limit_bytes > 0 ? 20 : 100;
    if (watch.limit_bytes > 0) {
      const long long rss = resident_bytes_of(pid);
      if (rss > watch.limit_bytes) {
        watch.exceeded_bytes = rss;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        break;
      }
    }
    if (timeout_s > 0) {
      const double left = timeout_s -
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (left <= 0) {
        r.timed_out = true;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        break;
      }
      wait_ms = static_cast<int>(std::min(left * 1000.0 + 1, static_cast<double>(wait_ms)));
    }
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in_fd) {
        const ssize_t w = write(in_fd, input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<std::size_t>(w);
        if (w < 0 || written == input.size()) { close(in_fd); in_fd = -1; }
        continue;
      }
      char buf[65536];
      const ssize_t got = read(fds[i].fd, buf, sizeof buf);
      std::string& dst = fds[i].fd == out_fd ? r.out : r.err;
      if (got > 0) {
        dst.append(buf, static_cast<std::size_t>(got));
        // Searched in what just came, and the marker's length before it (a line split by reads).
        const std::size_t from = r.err.size() - std::min(r.err.size(), static_cast<std::size_t>(got) + watch.stretch_marker.size());
        if (&dst == &r.err && !watch.stretched && !watch.stretch_marker.empty() &&
            r.err.find(watch.stretch_marker, from) != std::string::npos) {
          watch.stretched = true;
          const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          if (timeout_s > 0) timeout_s = std::max(timeout_s, now + watch.stretch_timeout_s);
        }
      } else {
        close(fds[i].fd);
        (fds[i].fd == out_fd ? out_fd : err_fd) = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) if (fd >= 0) close(fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!r.timed_out) {
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
    else if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

namespace {
std::mutex helpers_mutex;
std::vector<int> helpers;
}  // namespace

void register_helper_process(int pid) {
  std::lock_guard lock(helpers_mutex);
  helpers.push_back(pid);
}

std::vector<int> helper_processes() {
  std::lock_guard lock(helpers_mutex);
  return helpers;
}

}  // namespace kforge
