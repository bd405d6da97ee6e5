// `kforge ceilings`: this machine's bandwidths and peak operation rates per backend, measured
// by kforge's own micro-benchmarks (src/measure/ceilings/) and cached per machine fingerprint.
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/backend.hpp"
#include "kforge/measure.hpp"

namespace kforge::cli {
namespace {

void print_table(const Ceilings& c) {
  fmt::print("{} [{}]  measured in {:.1f} s\n", c.backend, c.device, c.measure_s);
  fmt::print("  {:<24} {:>12} {:>12}\n", "", "all threads", "one thread");
  auto row = [](const std::string& name, double all, double one, double scale) {
    auto cell = [&](double v) { return v > 0 ? fmt::format("{:.1f}", v * scale) : std::string("-"); };
    fmt::print("  {:<24} {:>12} {:>12}\n", name, cell(all), cell(one));
  };
  const struct { const char* name; double Bandwidth::*field; } bws[] = {
      {"read", &Bandwidth::read}, {"write", &Bandwidth::write}, {"copy", &Bandwidth::copy},
      {"triad", &Bandwidth::triad}};
  for (const auto& b : bws) row(fmt::format("DRAM {} GB/s", b.name), c.all.dram.*b.field, c.one.dram.*b.field, 1e-9);
  for (const auto& b : bws) row(fmt::format("LLC {} GB/s", b.name), c.all.llc.*b.field, c.one.llc.*b.field, 1e-9);
  if (c.l2_bytes > 0)
    for (const auto& b : bws) row(fmt::format("L2 {} GB/s", b.name), c.all.l2.*b.field, c.one.l2.*b.field, 1e-9);
  const struct { const char* name; double Compute::*field; } ops[] = {
      {"fp64 GFLOP/s", &Compute::fp64}, {"fp32 GFLOP/s", &Compute::fp32},
      {"fp16 GFLOP/s", &Compute::fp16}, {"bf16 GFLOP/s (dot)", &Compute::bf16},
      {"int8 GOP/s (dot)", &Compute::int8}};
  for (const auto& o : ops) row(o.name, c.all.compute.*o.field, c.one.compute.*o.field, 1e-9);
  const std::string l2 = c.l2_bytes > 0 ? fmt::format(", L2 {:.1f} GB/s ({} KiB in all threads)",
                                                     c.all.l2.best() * 1e-9, c.l2_bytes >> 10)
                                         : "";
  fmt::print("  speed-of-light roofs: DRAM {:.1f} GB/s, LLC {:.1f} GB/s (last-level cache {} MiB){}, "
             "fp32 {:.1f} GFLOP/s, fp64 {:.1f} GFLOP/s\n\n",
             c.bandwidth_bytes_s() * 1e-9, c.llc_bandwidth_bytes_s() * 1e-9, c.llc_bytes >> 20, l2,
             c.flops_for(DType::fp32) * 1e-9, c.flops_for(DType::fp64) * 1e-9);
  // Measured twice and still contradicting each other: said, so that nobody trusts them silently.
  for (const auto& d : c.doubts())
    fmt::print("  in doubt (measured again, still so; a neighbour's load?): {}\n", d);
}

}  // namespace

void add_ceilings(CLI::App& app, int& code) {
  auto* cmd = app.add_subcommand(
      "ceilings",
      "measure (or show cached) memory bandwidth (DRAM and last-level cache: read, write, copy, "
      "triad) and peak operation rates (fp64, fp32, fp16, bf16, int8), all threads and one");
  struct Opts { std::string backends = "all"; bool remeasure = false, json = false; int threads = 0; };
  auto o = std::make_shared<Opts>();
  cmd->add_option("--backend,-b", o->backends, "backends, comma-separated, or all")->capture_default_str();
  cmd->add_flag("--remeasure", o->remeasure, "measure again; keep the best of each figure, new or cached");
  cmd->add_option("--threads", o->threads, "cpu backend threads (0: all cores)");
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, &code] {
    nlohmann::json doc = nlohmann::json::array();
    std::vector<Ceilings> all;
    bool unavailable = false;
    for (const auto& name : backend_list(o->backends)) {
      auto b = make_backend(name, {.threads = o->threads});
      if (!b->can_run()) {  // named explicitly (`all` lists only backends that run here)
        fmt::print(stderr, "kforge ceilings: backend {} cannot run here: {}\n", name, b->device());
        unavailable = true;
        continue;
      }
      const auto progress = [&](const std::string& what) {
        if (isatty(2)) fmt::print(stderr, "\r\033[Kceilings {}: {}", name, what);
      };
      all.push_back(ceilings(*b, o->remeasure, progress));
      if (isatty(2)) fmt::print(stderr, "\r\033[K");
      doc.push_back(all.back().to_json());
    }
    code = unavailable ? kExitFailedGate : kExitPassed;
    if (o->json) {
      fmt::print("{}\n", doc.dump(2));
      return;
    }
    for (const auto& c : all) print_table(c);
  });
}

}  // namespace kforge::cli
