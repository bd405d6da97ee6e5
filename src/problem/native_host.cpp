#include "problem/native_host.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "problem/native_code.hpp"

namespace kforge {
namespace {

// The host's descriptors after exec: requests in, replies out, the shared buffers.
constexpr int kRequestFd = 3, kReplyFd = 4, kMemoryFd = 5;

struct RequestHeader {
  std::uint32_t entry, n_buffers, n_sizes, n_scalars;
  std::uint64_t seed;
  std::int32_t trial;
  std::uint32_t what_length;
  double timeout_s;
};

bool write_all(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w, n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t r = ::read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r, n -= static_cast<std::size_t>(r);
  }
  return true;
}

template <class T>
bool read_vector(int fd, std::vector<T>& v, std::size_t n) {
  v.resize(n);
  return n == 0 || read_all(fd, v.data(), n * sizeof(T));
}

// A reply: ok, or the error's text.
bool write_reply(int fd, const std::string& error) {
  const std::int32_t ok = error.empty();
  const auto length = static_cast<std::uint32_t>(error.size());
  return write_all(fd, &ok, sizeof ok) && write_all(fd, &length, sizeof length) &&
         write_all(fd, error.data(), error.size());
}

bool read_reply(int fd, std::string& error) {
  std::int32_t ok = 0;
  std::uint32_t length = 0;
  if (!read_all(fd, &ok, sizeof ok) || !read_all(fd, &length, sizeof length)) return false;
  error.resize(length);
  if (length > 0 && !read_all(fd, error.data(), length)) return false;
  if (ok && error.empty()) return true;
  if (error.empty()) error = "failed";
  return true;
}

// Byte offsets of the buffers in the shared memory (each 64-byte aligned) and the total.
std::vector<std::size_t> layout(const std::vector<std::uint64_t>& sizes, std::size_t& total) {
  std::vector<std::size_t> offsets;
  total = 0;
  for (const auto n : sizes) {
    offsets.push_back(total);
    total += (n * sizeof(double) + 63) / 64 * 64;
  }
  return offsets;
}

struct Mapping {
  void* base = nullptr;
  std::size_t bytes = 0;
  Mapping(int fd, std::size_t n) : bytes(n) {
    if (n == 0) return;
    base = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
      base = nullptr;
      throw ProblemError(fmt::format("the problem's native host cannot map {} bytes: {}", n, std::strerror(errno)));
    }
  }
  ~Mapping() {
    if (base) munmap(base, bytes);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  [[nodiscard]] double* at(std::size_t offset) const {
    return reinterpret_cast<double*>(static_cast<char*>(base) + offset);
  }
};

std::mutex& call_mutex() {  // one call at a time through the host's pipes and memory
  static std::mutex m;
  return m;
}

}  // namespace

void invoke_native(NativeEntry e, void* fn, double* const* buffers, const NativeArgs& a) {
  switch (e) {
    case NativeEntry::reference:
      reinterpret_cast<void (*)(double* const*, const long long*, const double*)>(fn)(buffers, a.sizes.data(),
                                                                                       a.scalars.data());
      return;
    case NativeEntry::condition:
      reinterpret_cast<void (*)(double* const*, const long long*, unsigned long long, int)>(fn)(
          buffers, a.sizes.data(), a.seed, a.trial);
      return;
  }
}

std::string native_host_program() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw ProblemError("cannot find this program to start the problem's native host: " + ec.message());
  return self.string();
}

NativeHost::NativeHost(const std::string& program, const std::vector<std::pair<std::string, std::string>>& entries) {
  int request[2], reply[2];
  if (pipe2(request, O_CLOEXEC) != 0) throw ProblemError("the problem's native host: pipe failed");
  if (pipe2(reply, O_CLOEXEC) != 0) {
    ::close(request[0]), ::close(request[1]);
    throw ProblemError("the problem's native host: pipe failed");
  }
  const int memory = memfd_create("kforge-native-host", MFD_CLOEXEC);
  if (memory < 0) {
    for (int fd : {request[0], request[1], reply[0], reply[1]}) ::close(fd);
    throw ProblemError(std::string("the problem's native host: memfd_create failed: ") + std::strerror(errno));
  }
  // Everything exec needs is built before fork: the worker may have threads by now.
  std::vector<std::string> words{program, "--native-host"};
  for (const auto& [object, symbol] : entries) words.insert(words.end(), {object.empty() ? "-" : object, symbol});
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  signal(SIGPIPE, SIG_IGN);  // a host that died is an error from write, not the worker's death
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the worker
    // Move the three descriptors above the fixed numbers first, so no dup2 clobbers another.
    const int in = fcntl(request[0], F_DUPFD, 10), out = fcntl(reply[1], F_DUPFD, 10),
              mem = fcntl(memory, F_DUPFD, 10);
    if (in < 0 || out < 0 || mem < 0 || dup2(in, kRequestFd) < 0 || dup2(out, kReplyFd) < 0 ||
        dup2(mem, kMemoryFd) < 0)
      _exit(126);
    close_range(kMemoryFd + 1, ~0U, 0);  // nothing else of the worker's: its result pipe above all
    execv(program.c_str(), argv.data());
    _exit(127);
  }
  const std::string fork_error = pid < 0 ? std::strerror(errno) : "";
  ::close(request[0]);
  ::close(reply[1]);
  request_fd_ = request[1], reply_fd_ = reply[0], memory_fd_ = memory, pid_ = pid;
  if (pid < 0) {
    shut();
    throw ProblemError("the problem's native host: fork failed: " + fork_error);
  }
  std::string error;  // the host's first word: its code loaded, or why not
  if (!read_reply(reply_fd_, error) || !error.empty()) {
    const std::string why = error.empty() ? "it exited at start (" + program + " --native-host)" : error;
    shut();
    throw ProblemError("the problem's native host could not start: " + why);
  }
}

NativeHost::~NativeHost() { shut(); }

void NativeHost::shut() {
  for (int* fd : {&request_fd_, &reply_fd_, &memory_fd_})
    if (*fd >= 0) ::close(*fd), *fd = -1;
  if (pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);  // it exits on the closed pipe
    pid_ = -1;
  }
}

void NativeHost::call(NativeEntry e, const std::string& what, double timeout_s, std::vector<NativeBuffer>& buffers,
                      const NativeArgs& a) {
  std::lock_guard lock(call_mutex());
  std::vector<std::uint64_t> sizes;
  for (const auto& b : buffers) sizes.push_back(b.size);
  std::size_t total = 0;
  const auto offsets = layout(sizes, total);
  if (ftruncate(memory_fd_, static_cast<off_t>(total)) != 0)
    throw ProblemError(fmt::format("{}: cannot size its buffers ({} bytes): {}", what, total, std::strerror(errno)));
  std::string error;
  bool answered = false;
  {
    const Mapping map(memory_fd_, total);
    for (std::size_t k = 0; k < buffers.size(); ++k)
      if (buffers[k].size > 0) std::memcpy(map.at(offsets[k]), buffers[k].data, buffers[k].size * sizeof(double));
    const RequestHeader h{static_cast<std::uint32_t>(e), static_cast<std::uint32_t>(buffers.size()),
                          static_cast<std::uint32_t>(a.sizes.size()), static_cast<std::uint32_t>(a.scalars.size()),
                          a.seed, a.trial, static_cast<std::uint32_t>(what.size()), timeout_s};
    answered = write_all(request_fd_, &h, sizeof h) &&
               write_all(request_fd_, sizes.data(), sizes.size() * sizeof(std::uint64_t)) &&
               write_all(request_fd_, a.sizes.data(), a.sizes.size() * sizeof(long long)) &&
               write_all(request_fd_, a.scalars.data(), a.scalars.size() * sizeof(double)) &&
               write_all(request_fd_, what.data(), what.size()) && read_reply(reply_fd_, error);
    if (answered && error.empty())
      for (std::size_t k = 0; k < buffers.size(); ++k)
        if (buffers[k].write_back && buffers[k].size > 0)
          std::memcpy(buffers[k].data, map.at(offsets[k]), buffers[k].size * sizeof(double));
  }
  if (ftruncate(memory_fd_, 0) != 0) {}  // the memory back to the system; a failure only keeps it
  if (!answered) throw ProblemError(what + ": the problem's native host exited");
  if (!error.empty()) throw ProblemError(error);
}

int serve_native_host(int argc, char** argv) {
  std::vector<void*> functions;
  std::string start_error;
  for (int i = 0; i + 1 < argc; i += 2) {
    const std::string object = argv[i], symbol = argv[i + 1];
    void* fn = nullptr;
    if (object != "-") {
      void* handle = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
      fn = handle ? dlsym(handle, symbol.c_str()) : nullptr;
      if (!fn && start_error.empty()) start_error = fmt::format("{} ({}): {}", object, symbol, dlerror());
    }
    functions.push_back(fn);
  }
  if (!write_reply(kReplyFd, start_error) || !start_error.empty()) return 1;
  for (;;) {
    RequestHeader h{};
    if (!read_all(kRequestFd, &h, sizeof h)) return 0;  // the worker is done
    std::vector<std::uint64_t> sizes;
    NativeArgs a;
    std::string what(h.what_length, '\0');
    if (!read_vector(kRequestFd, sizes, h.n_buffers) || !read_vector(kRequestFd, a.sizes, h.n_sizes) ||
        !read_vector(kRequestFd, a.scalars, h.n_scalars) ||
        (h.what_length > 0 && !read_all(kRequestFd, what.data(), what.size())))
      return 1;
    a.seed = h.seed, a.trial = h.trial;
    std::string error;
    try {
      if (h.entry >= functions.size() || !functions[h.entry])
        throw ProblemError(what + ": the problem file has no such function");
      std::size_t total = 0;
      const auto offsets = layout(sizes, total);
      const Mapping map(kMemoryFd, total);
      std::vector<double*> buffers;
      for (const auto off : offsets) buffers.push_back(map.at(off));
      run_forked(what, h.timeout_s, [&] {
        invoke_native(static_cast<NativeEntry>(h.entry), functions[h.entry], buffers.data(), a);
      });
    } catch (const std::exception& e) {
      error = e.what();
    }
    if (!write_reply(kReplyFd, error)) return 1;
  }
}

}  // namespace kforge
