#pragma once
// Energy per run beside time. Measured where Linux powercap exposes readable RAPL counters (the
// package zones' energy_uj, read just before and just after each timed run; the counter wraps at
// max_energy_range_uj); else an energy MODEL, labelled "model" in every output and never mixed
// with measurements. The model's constants are assumptions with their sources (energy_model.cpp).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kforge {

// Joules per run of one evaluation, and where the figure comes from.
struct Energy {
  double joules = 0;       // per run of the kernel
  std::string source;      // "measured" (RAPL through powercap) or "model"
  std::string detail;      // which zones were read, or the model's constants
  [[nodiscard]] nlohmann::json to_json() const;
  static Energy from_json(const nlohmann::json& j);
};

// The top-level zones of a powercap tree (`intel-rapl:0`, ...; their sub-zones are parts of
// them, and the MMIO copy of the package zone is left out, so nothing counts twice).
class EnergyReader {
 public:
  // The tree at $KFORGE_POWERCAP_ROOT (tests point it at a scratch directory), else
  // /sys/class/powercap. None when no zone's energy_uj can be read (absent, or root-only).
  static std::optional<EnergyReader> open();
  static std::optional<EnergyReader> open(const std::string& root);

  // Every zone's counter now, in microjoules (a zone that cannot be read now reads 0).
  [[nodiscard]] std::vector<std::uint64_t> read() const;
  // Joules between two reads, summed over the zones; a counter that went down wrapped around
  // at its max_energy_range_uj.
  [[nodiscard]] double joules_between(const std::vector<std::uint64_t>& before,
                                      const std::vector<std::uint64_t>& after) const;
  [[nodiscard]] std::string describe() const;  // "RAPL package-0 (intel-rapl:0)"

 private:
  struct Zone {
    std::string path, name;
    std::uint64_t max_uj = 0;  // 0: unknown (a wrap then counts from zero)
  };
  std::vector<Zone> zones_;
};

// The model where no counter can be read: a static power per busy core over the run's time,
// plus an energy per FLOP and per byte that must move (the problem's own counts).
struct EnergyModel {
  double watts_per_core = 0, pj_per_flop = 0, pj_per_byte = 0;
  [[nodiscard]] double joules(double seconds, double flops, double bytes, int cores) const;
  [[nodiscard]] std::string describe() const;
};
[[nodiscard]] const EnergyModel& cpu_energy_model();

}  // namespace kforge
