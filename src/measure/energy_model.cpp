// The energy model used where no counter can be read (this 2-core VM has no powercap tree).
// Every constant is an assumption, stated with where its order of magnitude comes from; the
// model is labelled "model" wherever its figures appear. Within one problem instance the FLOP
// and byte terms are the same for every configuration, so the model ranks configurations as
// time does (energy and edp pick the time's winner); it is there so that energy figures exist
// and compare across sizes and problems, and so the tuner's energy path runs everywhere.
#include <fmt/format.h>

#include "kforge/energy.hpp"

namespace kforge {

double EnergyModel::joules(double seconds, double flops, double bytes, int cores) const {
  return watts_per_core * (cores > 0 ? cores : 1) * seconds + (pj_per_flop * flops + pj_per_byte * bytes) * 1e-12;
}

std::string EnergyModel::describe() const {
  return fmt::format("assumptions: {} W per busy core x time + {} pJ per FLOP + {} pJ per byte moved",
                     watts_per_core, pj_per_flop, pj_per_byte);
}

const EnergyModel& cpu_energy_model() {
  // watts_per_core: an AMD EPYC 9654's 360 W TDP over its 96 Zen 4 cores (AMD's product page),
  //   charged for every core the kernel keeps busy for its whole time.
  // pj_per_flop: an fp32 add (0.9 pJ) plus multiply (3.7 pJ) per 2 FLOPs at 45 nm (M. Horowitz,
  //   "Computing's energy problem", ISSCC 2014); today's 5 nm cores spend less: an upper figure.
  // pj_per_byte: a 64-bit DRAM access at 1.3 nJ (same source, lower end), i.e. ~160 pJ per byte,
  //   for the fewest bytes that must move (cache-resident data costs less: an upper figure).
  static const EnergyModel m{3.75, 2.3, 160.0};
  return m;
}

}  // namespace kforge
