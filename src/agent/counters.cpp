// Hardware counters: whether this machine has them, asked of perf_event_open itself. A VM
// without a virtual PMU refuses cycles (ENOENT or EOPNOTSUPP); kforge says so and invents nothing.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "agent/feedback.hpp"

namespace kforge::agent {

std::string hardware_counters() {
  perf_event_attr attr{};
  attr.type = PERF_TYPE_HARDWARE;
  attr.size = sizeof attr;
  attr.config = PERF_COUNT_HW_CPU_CYCLES;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0)
    return std::string("unavailable: perf_event_open cannot count CPU cycles here (") + std::strerror(errno) +
           "; no PMU, as in most VMs, or perf_event_paranoid forbids it)";
  ::close(static_cast<int>(fd));
  return "available on this machine, but not collected by kforge agent yet";
}

}  // namespace kforge::agent
