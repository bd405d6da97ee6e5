// Energy measured from Linux powercap (RAPL): the counters of the top-level zones read around
// each timed run. Since 2020 energy_uj is readable by root only on most distributions, so a
// tree that exists but cannot be read counts as absent, and the caller falls back to the model.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/energy.hpp"

namespace kforge {
namespace fs = std::filesystem;

namespace {

std::optional<std::uint64_t> read_number(const fs::path& p) {
  std::ifstream in(p);
  std::uint64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

nlohmann::json Energy::to_json() const { return {{"joules", joules}, {"source", source}, {"detail", detail}}; }

Energy Energy::from_json(const nlohmann::json& j) {
  return {j.value("joules", 0.0), j.value("source", std::string()), j.value("detail", std::string())};
}

std::optional<EnergyReader> EnergyReader::open() {
  const char* root = std::getenv("KFORGE_POWERCAP_ROOT");
  return open(root && *root ? root : "/sys/class/powercap");
}

std::optional<EnergyReader> EnergyReader::open(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return std::nullopt;
  EnergyReader r;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string id = entry.path().filename().string();
    // Top-level zones only ("intel-rapl:0", not its parts "intel-rapl:0:0"), and not the MMIO
    // interface that repeats the package zone on recent Intel parts.
    const auto colon = id.find(':');
    if (colon == std::string::npos || id.find(':', colon + 1) != std::string::npos) continue;
    if (id.find("mmio") != std::string::npos) continue;
    if (!read_number(entry.path() / "energy_uj")) continue;  // absent or not readable by us
    r.zones_.push_back({entry.path().string(), read_line(entry.path() / "name"),
                        read_number(entry.path() / "max_energy_range_uj").value_or(0)});
  }
  if (r.zones_.empty()) return std::nullopt;
  std::sort(r.zones_.begin(), r.zones_.end(), [](const Zone& a, const Zone& b) { return a.path < b.path; });
  return r;
}

std::vector<std::uint64_t> EnergyReader::read() const {
  std::vector<std::uint64_t> v;
  v.reserve(zones_.size());
  for (const Zone& z : zones_) v.push_back(read_number(fs::path(z.path) / "energy_uj").value_or(0));
  return v;
}

double EnergyReader::joules_between(const std::vector<std::uint64_t>& before,
                                    const std::vector<std::uint64_t>& after) const {
  double uj = 0;
  for (std::size_t i = 0; i < zones_.size() && i < before.size() && i < after.size(); ++i) {
    if (after[i] >= before[i]) uj += static_cast<double>(after[i] - before[i]);
    else if (zones_[i].max_uj >= before[i]) uj += static_cast<double>(zones_[i].max_uj - before[i] + after[i]);
    else uj += static_cast<double>(after[i]);  // range unknown: at least what it counted since 0
  }
  return uj * 1e-6;
}

std::string EnergyReader::describe() const {
  std::string s = "RAPL";
  for (const Zone& z : zones_)
    s += fmt::format(" {} ({})", z.name.empty() ? "?" : z.name, fs::path(z.path).filename().string());
  return s;
}

}  // namespace kforge
