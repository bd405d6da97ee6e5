#pragma once
// The one-minute load average, printed beside every bench figure: a loaded host's figures are
// not comparable with a quiet one's.
#include <fstream>
#include <string>

namespace kforge::bench {

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one;
  in >> one;
  return one;
}

}  // namespace kforge::bench
