// The driver of the multi-rank problems built on a library problem (multirank.hpp): rank 0
// verifies both forms against the problem's double reference at the requested and odd shapes,
// checks every rank's transfer counts exactly, then times the forms in turn.
#include "dist/multirank.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "kforge/measure.hpp"
#include "kforge/rng.hpp"
#include "kforge/verify.hpp"

namespace kforge::dist::multirank {
namespace {

constexpr int kTagRows = 997;  // below overlap.cpp's 998, 999 and 1000+

Sizes sizes_of(const App& app, const Command& c) {
  Sizes s;
  const auto names = app.problem()->size_names();
  for (std::size_t i = 0; i < names.size(); ++i) s[names[i]] = c.sizes[i];
  return s;
}

Instance instance_of(const App& app, const Command& c) {
  return app.problem()->make_instance(sizes_of(app, c), DType::fp32, static_cast<Distribution>(c.distribution),
                                      c.seed, c.trial, app.fixed_scalars(c.trial));
}

struct Gathered {
  double total_s = 0, compute_s = 0, exposed_s = 0;  // the slowest rank's, the largest exposed
  std::vector<float> output;                          // rank 0, when c.gather
  std::vector<std::vector<std::int64_t>> counts;      // rank 0: per rank
};

// One collective run; every rank calls it with the same command and instance.
Gathered run_everywhere(const App& app, const Command& c, const Instance& in) {
  int rank = 0, ranks = 1;
  if (mpi_on()) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  const RankOutput r = app.run(c, in, rank, ranks);
  Gathered g;
  const double mine[3] = {r.total_s, r.compute_s, r.total_s - r.compute_s};
  double worst[3] = {mine[0], mine[1], mine[2]};
  const int n_counts = static_cast<int>(app.count_names().size());
  std::vector<std::int64_t> all(static_cast<std::size_t>(n_counts * ranks));
  if (mpi_on()) {
    MPI_Reduce(mine, worst, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Gather(r.counts.data(), n_counts, MPI_INT64_T, all.data(), n_counts, MPI_INT64_T, 0, MPI_COMM_WORLD);
  } else {
    all = r.counts;
  }
  g.total_s = worst[0], g.compute_s = worst[1], g.exposed_s = worst[2];
  if (rank == 0)
    for (int j = 0; j < ranks; ++j) g.counts.emplace_back(all.begin() + j * n_counts, all.begin() + (j + 1) * n_counts);
  if (!c.gather) return g;
  const Sizes s = sizes_of(app, c);
  const std::int64_t rows = app.output_rows(s), cols = app.output_cols(s);
  if (rank != 0) {  // an empty part (fewer rows than ranks) sends nothing
    if (!r.rows.empty())
      MPI_Send(r.rows.data(), static_cast<int>(r.rows.size()), MPI_FLOAT, 0, kTagRows, MPI_COMM_WORLD);
    return g;
  }
  g.output.assign(static_cast<std::size_t>(rows * cols), std::numeric_limits<float>::quiet_NaN());
  for (int j = 0; j < ranks; ++j) {
    const overlap::Part p = overlap::part(rows, ranks, j);
    float* dst = g.output.data() + p.begin * cols;
    if (j == 0) std::copy(r.rows.begin(), r.rows.end(), dst);
    else if (p.size * cols > 0)
      MPI_Recv(dst, static_cast<int>(p.size * cols), MPI_FLOAT, j, kTagRows, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  return g;
}

void broadcast(Command& c) {
  if (mpi_on()) MPI_Bcast(&c, sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
}

// Rank 0: one run on every rank.
Gathered lead_run(const App& app, Command c, const Instance& in) {
  broadcast(c);
  return run_everywhere(app, c, in);
}

void stop_followers() {
  Command c;
  c.run = 0;
  broadcast(c);
}

std::string shape_text(const Sizes& s) {
  std::string t;
  for (const auto& [k, v] : s) t += (t.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return t;
}

}  // namespace

void follow(const App& app, const OverlapOptions&) {
  Command last;
  std::unique_ptr<Instance> in;
  for (;;) {
    Command c;
    broadcast(c);
    if (!c.run) return;
    // The timed rounds repeat one instance: build it once.
    const bool same = in && c.seed == last.seed && c.trial == last.trial && c.distribution == last.distribution &&
                      std::equal(std::begin(c.sizes), std::end(c.sizes), std::begin(last.sizes));
    if (!same) in = std::make_unique<Instance>(instance_of(app, c));
    last = c;
    (void)run_everywhere(app, c, *in);
  }
}

OverlapResult lead(const App& app, const OverlapOptions& o) {
  if (o.chunks < 0 || o.chunks > 4096) throw UsageError("--chunks must be 0 (the default, 4) to 4096");
  if (o.rounds < 1) throw UsageError("--rounds must be at least 1");
  if (o.trials < 1) throw UsageError("--trials must be at least 1");
  auto problem = app.problem();
  const auto names = problem->size_names();
  for (const auto& [k, v] : o.sizes)
    if (std::find(names.begin(), names.end(), k) == names.end())
      throw UsageError(fmt::format("{} has no size '{}': its sizes are {}", app.name(), k, fmt::join(names, ", ")));
  const Sizes requested = problem->resolve_sizes(o.sizes);
  problem->check_sizes(requested);
  app.check(requested);
  Session* session = current();
  const int ranks = session ? session->size() : 1;
  openblas_set_num_threads(1);  // the ranks are the parallelism
  for (int r = 1; r < ranks && mpi_on(); ++r) {  // the other ranks join through serve()
    Outbox out;
    out.post(r, kTagOverlap, o.to_json());
    (void)out.drain(30.0);
  }
  const int chunks = o.chunks > 0 ? o.chunks : 4;
  OverlapResult res;
  res.options = o.to_json();
  res.ranks = ranks;
  res.link = o.link_bytes_per_s > 0
                 ? fmt::format("emulated: {:g} us + bytes / {:g} GB/s per rank, on top of MPI's transfer",
                               o.link_latency_s * 1e6, o.link_bytes_per_s * 1e-9)
                 : "MPI's own transfers (no emulated link)";
  res.chunk_choice = o.chunks > 0 ? "given (--chunks)" : "the default, 4 (no timeline model for this problem)";
  auto command = [&](const Sizes& s, int form, int trial, Distribution d, bool gather) {
    Command c;
    c.run = 1, c.form = form, c.chunks = chunks, c.gather = gather, c.trial = trial;
    c.distribution = static_cast<int>(d);
    c.seed = o.seed;
    for (std::size_t i = 0; i < names.size(); ++i) c.sizes[i] = s.at(names[i]);
    c.link_latency_s = o.link_latency_s, c.link_bytes_per_s = o.link_bytes_per_s;
    c.fault = o.fault == "drop_chunk" ? 1 : 0;
    return c;
  };
  const char* form_name[2] = {"baseline", "overlapped"};
  try {
    // 1. Verification: both forms, every trial of the app, a few distributions, odd shapes.
    res.verified = true;
    std::vector<Sizes> shapes{requested};
    for (const Sizes& s : app.odd_shapes(ranks)) shapes.push_back(problem->resolve_sizes(s));
    for (const Sizes& s : shapes) {
      res.shapes.push_back(s);
      // Large requested shapes: the normal distribution only (the reference and the instance,
      // built on every rank, cost more than the runs); the odd shapes take every one.
      const bool big = s == requested && (problem->flops(s) > 2e7 || app.output_rows(s) * app.output_cols(s) > (1 << 20));
      for (int rep = 0; rep < o.trials && res.verified; ++rep)
        for (int trial : app.trials())
          for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::wide}) {
            if (!res.verified) break;
            if (big && d != Distribution::normal) continue;  // the double reference costs: fewer draws
            const Command c0 = command(s, 0, trial, d, true);
            Command cs = c0;
            cs.seed = o.seed + static_cast<std::uint64_t>(rep);
            const Instance inst = instance_of(app, cs);
            std::vector<std::vector<double>> ref, mag;
            problem->reference(inst, ref, mag);
            for (int form : {0, 1}) {
              const auto expected = app.expected_counts_of_form(inst, ranks, form);
              Command c = cs;
              c.form = form;
              const Gathered g = lead_run(app, c, inst);
              KernelOutput got;
              std::vector<std::vector<double>> want = ref;  // outputs() may accept a near-tie
              app.outputs(inst, g.output, got, want);
              const Comparison cmp = compare(*problem, inst, got, want, mag);
              ++res.runs_checked;
              res.worst_bound_ratio = std::max(res.worst_bound_ratio, cmp.max_bound_ratio);
              std::string why;
              if (!cmp.passed) why = cmp.failure;
              else if (g.counts != expected) {
                why = "transfer counts differ from the ones worked out from the instance:";
                for (int j = 0; j < ranks; ++j)
                  why += fmt::format(" rank {} got [{}] expected [{}];", j, fmt::join(g.counts[j], ","),
                                     fmt::join(expected[j], ","));
              }
              if (!why.empty()) {
                res.verified = false;
                res.failure = fmt::format("{} form ({}), {} chunk(s), {}, {} inputs, trial {}, seed {}: {}",
                                          form_name[form], form == 0 ? app.baseline_name() : app.overlapped_name(),
                                          form == 0 ? 1 : chunks, shape_text(s), distribution_name(d), trial, cs.seed,
                                          why);
                break;
              }
            }
          }
      if (!res.verified) break;
    }
    // 2. Timing at the requested shape, the forms in turn, only when both were right.
    res.serial.name = app.baseline_name();
    res.overlapped.name = app.overlapped_name();
    res.overlapped.chunks = chunks;
    const Command probe = command(requested, 0, app.timed_trial(), Distribution::normal, false);
    const Instance inst = instance_of(app, probe);
    res.counts = {{"names", app.count_names()}, {"context", app.count_context(inst, ranks)}};
    if (res.verified) {
      std::vector<double> st, sc, se, ot, oc, oe;
      Gathered last;
      for (int round = 0; round < o.rounds; ++round) {
        Command a = probe, b = probe;
        b.form = 1;
        const Gathered x = lead_run(app, a, inst);
        last = lead_run(app, b, inst);
        st.push_back(x.total_s), sc.push_back(x.compute_s), se.push_back(x.exposed_s);
        ot.push_back(last.total_s), oc.push_back(last.compute_s), oe.push_back(last.exposed_s);
      }
      res.counts["per_rank"] = last.counts;
      res.counts["expected_per_rank"] = app.expected_counts_of_form(inst, ranks, 1);  // as `last`
      res.serial.times_s = st;
      res.overlapped.times_s = ot;
      res.serial.time_s = median_of(st), res.serial.compute_s = median_of(sc), res.serial.exposed_s = median_of(se);
      res.overlapped.time_s = median_of(ot), res.overlapped.compute_s = median_of(oc);
      res.overlapped.exposed_s = median_of(oe);
      res.overlap_efficiency = res.serial.exposed_s > 0 ? 1 - res.overlapped.exposed_s / res.serial.exposed_s : 0;
      res.percent_of_ideal = res.overlapped.time_s > 0
                                 ? 100 * std::max(res.overlapped.compute_s, res.serial.exposed_s) / res.overlapped.time_s
                                 : 0;
    }
  } catch (...) {
    stop_followers();
    throw;
  }
  stop_followers();
  return res;
}

}  // namespace kforge::dist::multirank
