// `mpirun -n R kforge overlap ag_gemm|gemm_rs|moe_dist|gnn_dist|kernel_kmeans_dist`: the multi-rank
// problems of kforge/dist.hpp, verified against the single-rank problem's double reference and
// timed serial (the baseline) beside overlapped (docs/overlap.md). Without mpirun it runs on one
// rank (nothing to overlap).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "kforge/dist.hpp"
#include "kforge/error.hpp"
#include "kforge/kernel.hpp"

namespace kforge::cli {
namespace {

struct Options {
  dist::OverlapOptions run;
  std::string sizes;
  double latency_us = 5, gbps = 0.25;
  bool json = false;
};

std::string shape_text(const Sizes& s) {
  std::string t;
  for (const auto& [k, v] : s) t += (t.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return t;
}

// moe_dist, gnn_dist: what each rank moved, exactly (checked against the routing / the graph).
void print_counts(const nlohmann::json& c) {
  if (c.is_null() || !c.contains("per_rank")) return;
  const auto names = c["names"].get<std::vector<std::string>>();
  fmt::print("  {:<6}", "rank");
  for (const auto& n : names) fmt::print(" {:>15}", n);
  fmt::print("\n");
  for (std::size_t r = 0; r < c["per_rank"].size(); ++r) {
    fmt::print("  {:<6}", r);
    for (const auto& v : c["per_rank"][r]) fmt::print(" {:>15}", v.get<std::int64_t>());
    fmt::print("\n");
  }
  fmt::print("  counts equal the ones worked out from the instance in every verified run; context: {}\n",
             c["context"].dump());
}

void print(const dist::OverlapResult& r) {
  const auto& o = r.options;
  fmt::print("{} on {} rank(s), {}; link: {}\n", o["problem"].get<std::string>(), r.ranks,
             r.shapes.empty() ? std::string() : shape_text(r.shapes.front()), r.link);
  fmt::print("  verify: {} ({} runs over {} shapes, both forms; worst error/bound {:.3g})\n",
             r.verified ? "passed" : "FAILED", r.runs_checked, r.shapes.size(), r.worst_bound_ratio);
  if (!r.verified) {
    fmt::print("  failure: {}\n", r.failure);
    return;
  }
  // kernel_kmeans_dist's forms are two distributions of the kernel matrix, not chunked overlap.
  const bool distributions = o["problem"] == "kernel_kmeans_dist";
  if (!distributions) fmt::print("  chunks: {} ({})\n", r.overlapped.chunks, r.chunk_choice);
  fmt::print("  {:<11} {:>7} {:>10} {:>11} {:>11}\n", "form", "chunks", "time ms", "compute ms", "exposed ms");
  for (const auto* f : {&r.serial, &r.overlapped})
    fmt::print("  {:<11} {:>7} {:>10.3f} {:>11.3f} {:>11.3f}\n", f->name, distributions ? 1 : f->chunks,
               f->time_s * 1e3, f->compute_s * 1e3, f->exposed_s * 1e3);
  if (distributions)
    fmt::print("  2d against 1d: time {:.2f}x, exposed communication {:.2f}x; medians of {} rounds; CPU timings\n",
               r.overlapped.time_s / std::max(r.serial.time_s, 1e-12),
               r.overlapped.exposed_s / std::max(r.serial.exposed_s, 1e-12), r.serial.times_s.size());
  else
    fmt::print("  overlap efficiency {:.2f} (1 - exposed overlapped / exposed serial), {:.0f}% of ideal "
               "(max(compute, communication) / overlapped time), speedup {:.2f}x; medians of {} rounds; CPU timings\n",
               r.overlap_efficiency, r.percent_of_ideal, r.serial.time_s / std::max(r.overlapped.time_s, 1e-12),
               r.serial.times_s.size());
  print_counts(r.counts);
}

}  // namespace

void add_overlap(CLI::App& app, int& code) {
  auto o = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("overlap", "multi-rank kernels that overlap communication with compute (run under "
                                 "mpirun)");
  cmd->add_option("problem", o->run.problem, "ag_gemm (all-gather of A, then GEMM), gemm_rs (GEMM, then "
                  "reduce-scatter of C), moe_dist (MoE layer, experts over ranks, one-sided dispatch), gnn_dist "
                  "(GNN aggregation over a row-partitioned graph) or kernel_kmeans_dist (one kernel k-means step, "
                  "1d against 2d distribution of the kernel matrix, words counted)")->required();
  cmd->add_option("--size,-s", o->sizes, "sizes of the whole problem: M,N,K (GEMMs), T,H,F,E,K (moe_dist, as "
                  "moe_grouped_gemm), M,N,NNZ (gnn_dist, as gnn_aggregate), N,D,K (kernel_kmeans_dist, as kernel_kmeans)");
  cmd->add_option("--chunks", o->run.chunks, "chunks per block/peer in the overlapped form (0: chosen from the "
                  "measured rates for the GEMMs, 4 for moe_dist and gnn_dist)")->capture_default_str();
  cmd->add_option("--link-latency-us", o->latency_us, "emulated link: latency per message")->capture_default_str();
  cmd->add_option("--link-gbps", o->gbps, "emulated link: GB/s per sending rank (0: MPI's own transfers only; the default gives a CPU rank an NVLink GPU's bytes per FLOP)")
      ->capture_default_str();
  cmd->add_option("--rounds", o->run.rounds, "timed rounds, the two forms in turn")->capture_default_str();
  cmd->add_option("--trials", o->run.trials, "verification trials per input distribution")->capture_default_str();
  cmd->add_option("--seed", o->run.seed, "seed of the input generator");
  cmd->add_option("--fault", o->run.fault, "for tests: drop_chunk (the overlapped form skips a chunk / batch)")->group("");
  cmd->add_flag("--json", o->json, "print one JSON document");
  cmd->callback([o, &code] {
    o->run.sizes = parse_assignments(o->sizes);
    o->run.link_latency_s = o->latency_us * 1e-6;
    o->run.link_bytes_per_s = o->gbps * 1e9;
    if (o->latency_us < 0 || o->gbps < 0) throw UsageError("--link-latency-us and --link-gbps must be >= 0");
    if (!o->run.fault.empty() && o->run.fault != "drop_chunk") throw UsageError("--fault takes drop_chunk");
    const dist::OverlapResult r = dist::run_overlap(o->run);
    if (o->json) fmt::print("{}\n", r.to_json().dump(2));
    else print(r);
    code = r.verified ? kExitPassed : kExitFailedGate;
  });
}

}  // namespace kforge::cli
