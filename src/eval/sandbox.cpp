// The worker's seccomp-BPF filter (sandbox.hpp), written by hand with linux/filter.h: a list
// of what is denied, not of what is allowed. The worker runs, in one process and beside the
// candidate, glibc, libstdc++, OpenBLAS (the baseline), PoCL with its LLVM (the OpenCL
// backend) and kforge's own verification and timing; an allow-list would have to foresee every
// call those make on every path (a thread, a page of memory, a futex, a clock read, a sysconf,
// a lazy symbol), and a correct kernel would crash on the first it missed. What an untrusted
// author could do outside the process is in a few families, and those are denied, each below
// with its reason; everything else (memory: mmap, munmap, mprotect, madvise, brk, mremap;
// threads: clone with CLONE_THREAD, futex, set_robust_list, rseq, sched_yield; time:
// clock_gettime, nanosleep; I/O on descriptors already open: read, write, close, fstat) stays
// allowed, because kforge's own code in this process needs it and it reaches nothing outside.
#include "kforge/sandbox.hpp"
#include "kforge/subprocess.hpp"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace kforge {
namespace {

#if defined(__x86_64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
#endif

struct Denied {
  long nr;
  const char* name;
};

// Every call that traps, by family. Not every one exists on every architecture.
#define KF_DENY(call) Denied{__NR_##call, #call}
const std::vector<Denied>& denied_calls() {
  static const std::vector<Denied> calls = {
      // Starting a process or a program: fork, vfork and clone without CLONE_THREAD (checked
      // on its flags below) make a process; execve runs a program (system() and popen() are
      // fork + exec).
#ifdef __NR_fork
      KF_DENY(fork),
#endif
#ifdef __NR_vfork
      KF_DENY(vfork),
#endif
      KF_DENY(execve), KF_DENY(execveat),
      // Reaching another process: its memory, its tracing, its signals by pidfd, leaving
      // the process group (the timeout kills the worker's whole group), new namespaces.
      KF_DENY(ptrace), KF_DENY(process_vm_readv), KF_DENY(process_vm_writev),
      KF_DENY(pidfd_open), KF_DENY(pidfd_send_signal), KF_DENY(pidfd_getfd), KF_DENY(kcmp),
      KF_DENY(process_madvise), KF_DENY(tkill), KF_DENY(setsid), KF_DENY(setpgid),
      KF_DENY(unshare), KF_DENY(setns),
      // Files: opening or creating one (the reference's source, /etc/passwd, a cache, a
      // file left for the next run), and changing the file system by name. Metadata calls
      // (stat, access, readlink) stay allowed: glibc's dlopen and sysconf use them and they
      // read no file's contents.
#ifdef __NR_open
      KF_DENY(open),
#endif
#ifdef __NR_creat
      KF_DENY(creat),
#endif
      KF_DENY(openat), KF_DENY(openat2), KF_DENY(open_by_handle_at),
      KF_DENY(name_to_handle_at), KF_DENY(memfd_create), KF_DENY(truncate),
#ifdef __NR_mknod
      KF_DENY(mknod),
#endif
      KF_DENY(mknodat),
#ifdef __NR_link
      KF_DENY(link), KF_DENY(symlink), KF_DENY(unlink), KF_DENY(rename),
      KF_DENY(mkdir), KF_DENY(rmdir), KF_DENY(chmod), KF_DENY(chown),
      KF_DENY(lchown), KF_DENY(utime), KF_DENY(utimes), KF_DENY(futimesat),
#endif
      KF_DENY(linkat), KF_DENY(symlinkat), KF_DENY(unlinkat), KF_DENY(renameat2),
      KF_DENY(mkdirat), KF_DENY(fchmodat), KF_DENY(fchownat), KF_DENY(utimensat),
#ifdef __NR_renameat
      KF_DENY(renameat),
#endif
      KF_DENY(inotify_init1), KF_DENY(fanotify_init),
      // Changing what the file system is (refused even where files are allowed).
      KF_DENY(chroot), KF_DENY(mount), KF_DENY(umount2), KF_DENY(pivot_root), KF_DENY(fsopen),
      KF_DENY(fsmount), KF_DENY(fspick), KF_DENY(open_tree), KF_DENY(move_mount),
      // io_uring opens files and sockets without the calls above.
      KF_DENY(io_uring_setup), KF_DENY(io_uring_enter), KF_DENY(io_uring_register),
      // The network, and local sockets to other processes.
      KF_DENY(socket), KF_DENY(socketpair), KF_DENY(connect), KF_DENY(bind), KF_DENY(listen),
      KF_DENY(accept), KF_DENY(accept4),
      // The kernel's larger attack surfaces, none of which a kernel needs: BPF programs,
      // performance counters (also a finer clock), user-space page-fault handling, keys,
      // modules, the kernel log, swap, reboot.
      KF_DENY(bpf), KF_DENY(perf_event_open), KF_DENY(userfaultfd), KF_DENY(add_key),
      KF_DENY(request_key), KF_DENY(keyctl), KF_DENY(init_module), KF_DENY(finit_module),
      KF_DENY(delete_module), KF_DENY(kexec_load), KF_DENY(syslog), KF_DENY(swapon),
      KF_DENY(swapoff), KF_DENY(reboot), KF_DENY(acct), KF_DENY(quotactl),
  };
  return calls;
}
#undef KF_DENY

std::atomic<bool> g_sandboxed{false};

// The names of the calls with their own rules below.
const char* special_name(long nr) {
  if (nr == __NR_clone) return "clone (a process, not a thread)";
  if (nr == __NR_kill) return "kill (another process)";
  if (nr == __NR_tgkill) return "tgkill (another process)";
  if (nr == __NR_rt_sigqueueinfo) return "rt_sigqueueinfo (another process)";
  if (nr == __NR_rt_tgsigqueueinfo) return "rt_tgsigqueueinfo (another process)";
  if (nr == __NR_prlimit64) return "prlimit64 (another process)";
  return nullptr;
}

const char* name_of(long nr) {
  if (const char* s = special_name(nr)) return s;
  for (const auto& d : denied_calls())
    if (d.nr == nr) return d.name;
  return "?";
}

bool is_open(long nr) {
#ifdef __NR_open
  if (nr == __NR_open) return true;
#endif
  return nr == __NR_openat;
}

// Files that glibc reads for sysconf(_SC_NPROCESSORS_*) and std::thread::hardware_concurrency,
// which kforge's own code and OpenBLAS call while the kernel runs: their opening fails softly
// (EACCES, as if unreadable), and glibc falls back to sched_getaffinity. Nothing is opened.
bool probe_path(const char* p) {
  static const char* const probes[] = {"/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
                                       "/proc/stat", "/proc/cpuinfo", "/proc/meminfo"};
  if (p == nullptr) return false;
  for (const char* q : probes)
    if (std::strcmp(p, q) == 0) return true;
  return false;
}

void put(char*& at, const char* end, const char* s) {
  while (*s && at < end) *at++ = *s++;
}

// Runs in the thread that made the forbidden call, which was not executed.
void on_sigsys(int, siginfo_t* info, void* context) {
  const long nr = info->si_syscall;
  auto* uc = static_cast<ucontext_t*>(context);
  const char* path = nullptr;  // of an open: named in the report
  if (is_open(nr)) {
#if defined(__x86_64__)
    greg_t* r = uc->uc_mcontext.gregs;
    path = reinterpret_cast<const char*>(nr == __NR_openat ? r[REG_RSI] : r[REG_RDI]);
    if (probe_path(path)) {
      r[REG_RAX] = -EACCES;
      return;
    }
#elif defined(__aarch64__)
    path = reinterpret_cast<const char*>(uc->uc_mcontext.regs[1]);
    if (probe_path(path)) {
      uc->uc_mcontext.regs[0] = static_cast<unsigned long long>(-EACCES);
      return;
    }
#endif
  }
  char line[256];
  char* at = line;
  const char* end = line + sizeof line - 1;
  put(at, end, kSandboxMarker);
  put(at, end, name_of(nr));
  if (path != nullptr) {  // the kernel's own pointer: a bad one ends the process with SIGSEGV here
    put(at, end, " \"");
    char* stop = at + 96 < end ? at + 96 : const_cast<char*>(end);
    put(at, stop, path);
    put(at, end, "\"");
  }
  put(at, end, " (");
  char digits[24];
  int n = 0;
  for (long v = nr < 0 ? 0 : nr; n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  while (n > 0 && at < end) *at++ = digits[--n];
  put(at, end, ")\n");
  (void)!write(2, line, static_cast<std::size_t>(at - line));
  // The filter kills the whole process for this call: the parent sees SIGSYS.
  syscall(__NR_rt_sigaction, SIGSYS, nullptr, nullptr, 8);
  _exit(125);  // not reached
}

using Program = std::vector<sock_filter>;

void stmt(Program& p, std::uint16_t code, std::uint32_t k) { p.push_back(BPF_STMT(code, k)); }
void jump(Program& p, std::uint16_t code, std::uint32_t k, std::uint8_t jt, std::uint8_t jf) {
  p.push_back(BPF_JUMP(code, k, jt, jf));
}

constexpr std::uint32_t kArg0 = offsetof(seccomp_data, args[0]);  // its low 32 bits (little-endian)
constexpr std::uint32_t kArg1 = offsetof(seccomp_data, args[1]);
constexpr std::uint32_t kArg2 = offsetof(seccomp_data, args[2]);  // +4: its high 32 bits

// A call allowed only when its first argument (low 32 bits) is one of `values`.
void only_if_first_arg_in(Program& p, long nr, const std::vector<std::uint32_t>& values) {
  const auto n = static_cast<std::uint8_t>(values.size());
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(nr), 0, static_cast<std::uint8_t>(n + 3));
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg0);
  for (std::uint8_t i = 0; i < n; ++i)  // a match jumps over the comparisons left and the TRAP
    jump(p, BPF_JMP | BPF_JEQ | BPF_K, values[i], static_cast<std::uint8_t>(n - i), 0);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRAP);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
}

void only_if_first_arg_is(Program& p, long nr, std::uint32_t value) { only_if_first_arg_in(p, nr, {value}); }

Program build() {
  const auto self = static_cast<std::uint32_t>(getpid());
  Program p;
  // Another architecture's numbering (a 32-bit call on x86-64) would bypass the numbers below.
  stmt(p, BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr));
#if defined(__x86_64__)
  // The x32 ABI's numbers (bit 30 set) reach the same kernel functions under other numbers.
  jump(p, BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRAP);
#endif
  for (const auto& d : denied_calls()) {
    jump(p, BPF_JMP | BPF_JEQ | BPF_K, static_cast<std::uint32_t>(d.nr), 0, 1);
    stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRAP);
  }
  // clone3 passes its flags in memory, which a filter cannot read: "not implemented" makes
  // glibc's pthread_create fall back to clone, whose flags are checked here.
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
  // clone: a thread (CLONE_THREAD) is allowed, anything else is a new process.
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 4);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg0);
  jump(p, BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRAP);
  // kill: only this process itself (abort() and raise() signal themselves) and the helpers
  // started for it (a Python bridge killed past its time limit).
  std::vector<std::uint32_t> killable{self};
  for (const int pid : helper_processes()) killable.push_back(static_cast<std::uint32_t>(pid));
  if (killable.size() > 32) killable.resize(32);  // jump offsets are 8 bits; a worker starts one or two
  only_if_first_arg_in(p, __NR_kill, killable);
  // tgkill, and signals with data: a thread of this process (pthread_kill, raise,
  // sigqueue to itself).
  only_if_first_arg_is(p, __NR_tgkill, self);
  only_if_first_arg_is(p, __NR_rt_sigqueueinfo, self);
  only_if_first_arg_is(p, __NR_rt_tgsigqueueinfo, self);
  // prlimit64: this process's own limits (pid 0, as glibc's getrlimit and setrlimit pass, or its
  // own pid), never another's (lowering kforge's limits). Reading them (no new limit) is
  // allowed; setting one fails with EPERM, so a kernel cannot raise its soft limits to the hard
  // ones (nor, as root, raise the hard ones). One exception: where the worker was started with
  // room above its address-space limit (soft < hard: the index_width run's, isolate.cpp), the
  // address space may be set, which the worker does around that run (verify.cpp); a kernel
  // could raise it too, up to the hard limit, so its parent also watches the worker's resident
  // memory at the ordinary limit (kforge/resident_watch.hpp), which nothing here can raise.
  rlimit as{};
  const bool address_space_room = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur < as.rlim_max;
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, __NR_prlimit64, 0, address_space_room ? 12 : 10);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg0);
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0);
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, self, 1, 0);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_TRAP);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg2);  // the new limit's pointer: null for a read
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg2 + 4);
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, 0, address_space_room ? 3 : 1, 0);
  if (address_space_room) {
    stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg1);
    jump(p, BPF_JMP | BPF_JEQ | BPF_K, RLIMIT_AS, 1, 0);
  }
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
#ifdef __NR_setrlimit
  // The older call (glibc sets limits through prlimit64): setting is refused the same way.
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, __NR_setrlimit, 0, 1);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
#endif
  // The SIGSYS handler is the sandbox's report: replacing it (or asking for it) ends the
  // process at once; the handler itself ends the process this way.
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, __NR_rt_sigaction, 0, 4);
  stmt(p, BPF_LD | BPF_W | BPF_ABS, kArg0);
  jump(p, BPF_JMP | BPF_JEQ | BPF_K, SIGSYS, 0, 1);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  stmt(p, BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  return p;
}

}  // namespace

void enter_sandbox() {
#if !defined(__x86_64__) && !defined(__aarch64__)
  throw std::runtime_error("the sandbox supports x86-64 and aarch64 only");
#else
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGSYS, &sa, nullptr) != 0)
    throw std::runtime_error(std::string("sandbox: sigaction(SIGSYS): ") + std::strerror(errno));
  Program p = build();
  sock_fprog prog{static_cast<unsigned short>(p.size()), p.data()};
  // No new privileges (no set-uid program could gain any anyway, exec being denied): the
  // kernel requires it of an unprivileged process that installs a filter.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    throw std::runtime_error(std::string("sandbox: PR_SET_NO_NEW_PRIVS: ") + std::strerror(errno));
  // TSYNC: the same filter on every thread that exists (the cpu backend's pool, OpenBLAS's and
  // PoCL's threads); threads created later inherit it.
  const long rc = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog);
  if (rc != 0)
    throw std::runtime_error(rc > 0 ? "sandbox: thread " + std::to_string(rc) + " could not take the filter"
                                    : std::string("sandbox: seccomp: ") + std::strerror(errno));
  g_sandboxed = true;
#endif
}

bool sandboxed() { return g_sandboxed; }

std::string sandbox_violation(const std::string& worker_stderr) {
  std::string call;
  const auto at = worker_stderr.find(kSandboxMarker);
  if (at != std::string::npos) {
    const auto from = at + sizeof kSandboxMarker - 1;
    call = worker_stderr.substr(from, worker_stderr.find('\n', from) - from);
    const auto paren = call.rfind(" (");
    if (paren != std::string::npos) call.resize(paren);
  }
  return "the kernel made a forbidden system call" + (call.empty() ? std::string() : ": " + call) +
         " (sandbox: a kernel may not start processes, open files or sockets, or reach other "
         "processes)";
}

}  // namespace kforge
