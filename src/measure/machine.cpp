// The host as the measurements see it: CPU model, logical CPUs, SIMD flags, caches, memory.
// Read once from /proc and /sys; part of the ceilings' fingerprint and of every report's
// context.
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "kforge/measure.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

// "32K", "1024K", "32M" (sysfs cache sizes) in bytes; 0 when unreadable.
std::int64_t parse_size(std::string s) {
  s = trim(s);
  if (s.empty()) return 0;
  std::int64_t mult = 1;
  const char unit = s.back();
  if (unit == 'K') mult = 1024;
  if (unit == 'M') mult = 1024 * 1024;
  if (unit == 'G') mult = 1024ll * 1024 * 1024;
  try {
    return std::stoll(s) * mult;
  } catch (const std::exception&) {
    return 0;
  }
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

void read_caches(MachineInfo& m) {
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    const std::string level = first_line(dir + "level"), type = first_line(dir + "type");
    if (level.empty()) break;
    const std::int64_t size = parse_size(first_line(dir + "size"));
    if (level == "1" && type == "Data") m.l1d_bytes = size;
    if (level == "2") m.l2_bytes = size;
    if (level == "3" || (level == "2" && m.llc_bytes == 0)) m.llc_bytes = size;
  }
  if (m.llc_bytes == 0) {
    const long s = sysconf(_SC_LEVEL3_CACHE_SIZE);
    m.llc_bytes = s > 0 ? s : 32ll << 20;  // unknown: assume a large one, so arrays stay big
  }
}

MachineInfo read_machine() {
  MachineInfo m;
  m.logical_cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::ifstream in("/proc/cpuinfo");
  std::string line, all_flags;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
    if (key == "model name" && m.cpu_model.empty()) m.cpu_model = value;
    if (key == "flags" && all_flags.empty()) all_flags = value;
  }
  if (m.cpu_model.empty()) m.cpu_model = "unknown CPU";
  m.flags_hash = hex64(hash64(all_flags));
  static const std::set<std::string> simd = {
      "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
      "avx_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8", "asimd",
      "sve", "sve2"};
  std::istringstream words(all_flags);
  for (std::string f; words >> f;)
    if (simd.count(f)) m.flags.push_back(f);
  read_caches(m);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  m.memory_bytes = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.host_name = host;
  utsname u{};
  if (uname(&u) == 0) m.os = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return m;
}

}  // namespace

const MachineInfo& machine_info() {
  static const MachineInfo m = read_machine();
  return m;
}

nlohmann::json MachineInfo::to_json() const {
  return {{"host_name", host_name},     {"os", os},
          {"cpu_model", cpu_model},     {"num_cpus", logical_cpus},
          {"simd_flags", flags},        {"flags_hash", flags_hash},
          {"caches", {{"l1d_bytes", l1d_bytes}, {"l2_bytes", l2_bytes}, {"llc_bytes", llc_bytes}}},
          {"memory_bytes", memory_bytes}};
}

}  // namespace kforge
