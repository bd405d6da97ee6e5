#pragma once
// What a bench program reads from the host: the clock it times with, and the one-minute load
// average it prints beside every figure (a loaded host's figures are not comparable with a
// quiet one's).
#include <time.h>

#include <fstream>
#include <string>

namespace kforge::bench {

// Seconds on the thread's CPU clock (a loaded host disturbs it less) or the monotonic wall clock.
inline double clock_s(bool thread_cpu) {
  timespec ts;
  clock_gettime(thread_cpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

}  // namespace kforge::bench
