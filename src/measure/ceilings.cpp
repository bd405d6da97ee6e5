// Measures a backend's ceilings with kforge's own micro-benchmarks (src/measure/ceilings/),
// compiled and launched through the backend like any kernel, and caches them per fingerprint.
#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

std::string micro_source(Lang l) {
  switch (l) {
    case Lang::cpp: return embedded_file("src/measure/ceilings/ceilings.cpp");
    case Lang::opencl: return embedded_file("src/measure/ceilings/ceilings.cl");
    case Lang::cuda: return embedded_file("src/measure/ceilings/ceilings.cu");
  }
  return {};
}

// Blocks and threads per block for `work_items` independent pieces of work.
LaunchGeometry spread(Lang l, std::int64_t work_items) {
  if (l == Lang::cpp) return {{work_items, 1, 1}, {1, 1, 1}};
  const std::int64_t block = 256;
  return {{(work_items + block - 1) / block, 1, 1}, {block, 1, 1}};
}

// Best FLOP/s of a peak kernel; the iteration count doubles until one launch takes >= 50 ms,
// then the best of five launches counts.
double peak_flops(Backend& b, Module& m, bool fp64) {
  const Lang l = b.lang();
  const std::int64_t items = l == Lang::cpp ? 64 : (l == Lang::opencl ? 8192 : 1 << 20);
  const LaunchGeometry g = spread(l, items);
  const std::int64_t launched = g.grid.x * g.block.x;
  const std::size_t elem = fp64 ? 8 : 4;
  auto out = b.alloc((launched + 1) * elem);
  auto flops_per_s = [&](int iters, double& seconds) {
    const Arg args[] = {Arg::buf(*out), Arg::i(iters)};
    seconds = b.run(m, g, args);
    double lanes = 0;  // the kernel reports its lanes per chain in the last element
    if (fp64) {
      std::vector<double> h(launched + 1);
      b.read(*out, h.data(), h.size() * elem);
      lanes = h.back();
    } else {
      std::vector<float> h(launched + 1);
      b.read(*out, h.data(), h.size() * elem);
      lanes = h.back();
    }
    return 2.0 * 12 * lanes * iters * static_cast<double>(launched) / seconds;
  };
  int iters = 256;
  double seconds = 0, best = flops_per_s(iters, seconds);
  while (seconds < 0.05 && iters < (1 << 28)) best = flops_per_s(iters *= 2, seconds);
  for (int rep = 0; rep < 4; ++rep) best = std::max(best, flops_per_s(iters, seconds));
  return best;
}

double triad_bandwidth(Backend& b, Module& m) {
  const std::int64_t n = 32ll << 20;  // 3 arrays x 128 MiB: far beyond any last-level cache
  const std::size_t bytes = static_cast<std::size_t>(n) * 4;
  auto a = b.alloc(bytes), x = b.alloc(bytes), y = b.alloc(bytes);
  std::vector<float> init(static_cast<std::size_t>(n), 1.0f);
  b.write(*a, init.data(), bytes);  // first touch outside the timing
  b.write(*x, init.data(), bytes);
  b.write(*y, init.data(), bytes);
  const LaunchGeometry g = b.lang() == Lang::cpp ? LaunchGeometry{{256, 1, 1}, {1, 1, 1}}
                                                 : spread(b.lang(), n);
  const Arg args[] = {Arg::buf(*a), Arg::buf(*x), Arg::buf(*y), Arg::i(static_cast<int>(n)), Arg::f(0.5f)};
  double best_s = 1e30;
  for (int rep = 0; rep < 7; ++rep) best_s = std::min(best_s, b.run(m, g, args));
  return 3.0 * static_cast<double>(bytes) / best_s;
}

Ceilings measure_now(Backend& b, const std::string& fingerprint) {
  Ceilings c;
  c.fingerprint = fingerprint;
  const std::string src = micro_source(b.lang());
  auto p32 = b.compile(src, "peak_fp32", {});
  c.flops_fp32 = peak_flops(b, *p32, false);
  try {
    auto p64 = b.compile(src, "peak_fp64", {});
    c.flops_fp64 = peak_flops(b, *p64, true);
  } catch (const std::exception&) {
    c.flops_fp64 = 0;  // a device without fp64
  }
  auto tr = b.compile(src, "triad", {});
  c.bandwidth_bytes_s = triad_bandwidth(b, *tr);
  return c;
}

}  // namespace

Ceilings ceilings(Backend& b, bool remeasure) {
  const std::string fingerprint = b.name() + " | " + b.device();
  const auto path = cache_dir("ceilings") /
                    (hex64(hash64(fingerprint + micro_source(b.lang()))) + ".json");
  if (!remeasure && std::filesystem::exists(path)) {
    try {
      const auto j = nlohmann::json::parse(read_file(path));
      Ceilings c;
      c.fingerprint = j.at("fingerprint");
      c.bandwidth_bytes_s = j.at("bandwidth_GBs").get<double>() * 1e9;
      c.flops_fp32 = j.at("fp32_GFLOPs").get<double>() * 1e9;
      c.flops_fp64 = j.at("fp64_GFLOPs").get<double>() * 1e9;
      return c;
    } catch (const std::exception&) {
      // a damaged cache file: measure again
    }
  }
  Ceilings c = measure_now(b, fingerprint);
  write_file_atomic(path, c.to_json().dump(2));
  return c;
}

}  // namespace kforge
