// The ceilings record: JSON in and out, the machine fingerprint it belongs to, and the cache
// (one file per fingerprint under the cache folder) that spares re-measuring.
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <utility>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/error.hpp"
#include "kforge/measure.hpp"
#include "kforge/sandbox.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

constexpr int kCacheVersion = 3;  // 3: the L2 roof

nlohmann::json roofs_json(const Roofs& r) {
  const Compute& c = r.compute;
  return {{"dram_GBs", r.dram.to_json()},
          {"llc_GBs", r.llc.to_json()},
          {"l2_GBs", r.l2.to_json()},
          {"GFLOPs", {{"fp64", c.fp64 * 1e-9}, {"fp32", c.fp32 * 1e-9}, {"fp16", c.fp16 * 1e-9},
                      {"bf16", c.bf16 * 1e-9}, {"int8", c.int8 * 1e-9}}}};
}

Roofs roofs_from(const nlohmann::json& j) {
  Roofs r;
  r.dram = Bandwidth::from_json(j.at("dram_GBs"));
  r.llc = Bandwidth::from_json(j.at("llc_GBs"));
  if (j.contains("l2_GBs")) r.l2 = Bandwidth::from_json(j.at("l2_GBs"));
  const auto& f = j.at("GFLOPs");
  r.compute = {f.at("fp64").get<double>() * 1e9, f.at("fp32").get<double>() * 1e9,
               f.at("fp16").get<double>() * 1e9, f.at("bf16").get<double>() * 1e9,
               f.at("int8").get<double>() * 1e9};
  return r;
}

std::string micro_sources() {
  std::string all;
  for (const auto& p : embedded_paths("src/measure/ceilings/")) all += embedded_file(p);
  return all;
}

}  // namespace

nlohmann::json Ceilings::to_json() const {
  return {{"version", kCacheVersion},
          {"fingerprint", fingerprint},
          {"backend", backend},
          {"device", device},
          {"llc_bytes", llc_bytes},
          {"l2_bytes", l2_bytes},
          {"workers", workers},
          {"measure_s", measure_s},
          {"bandwidth_GBs", bandwidth_bytes_s() * 1e-9},
          {"llc_bandwidth_GBs", llc_bandwidth_bytes_s() * 1e-9},
          {"fp32_GFLOPs", all.compute.fp32 * 1e-9},
          {"fp64_GFLOPs", all.compute.fp64 * 1e-9},
          {"all_threads", roofs_json(all)},
          {"one_thread", roofs_json(one)},
          {"doubts", doubts()}};
}

Ceilings Ceilings::from_json(const nlohmann::json& j) {
  Ceilings c;
  c.fingerprint = j.at("fingerprint");
  c.backend = j.value("backend", "");
  c.device = j.value("device", "");
  c.llc_bytes = j.value("llc_bytes", std::int64_t{0});
  c.l2_bytes = j.value("l2_bytes", std::int64_t{0});
  c.workers = j.value("workers", 0);
  c.measure_s = j.value("measure_s", 0.0);
  c.all = roofs_from(j.at("all_threads"));
  c.one = roofs_from(j.at("one_thread"));
  return c;
}

std::string ceilings_fingerprint(Backend& b) {
  const MachineInfo& m = machine_info();
  return b.name() + " | " + b.device() + " | host " + m.cpu_model + ", " +
         std::to_string(m.logical_cpus) + " CPUs, flags " + m.flags_hash;
}

std::string ceilings_cache_path(Backend& b) {
  return (cache_dir("ceilings") / (hex64(hash64(ceilings_fingerprint(b) + micro_sources() +
                                                std::to_string(kCacheVersion))) + ".json"))
      .string();
}

namespace {
// The host part of a fingerprint ("cpu | AMD EPYC (2 threads) | host ..." -> "host ...").
std::string host_of(const std::string& fingerprint) {
  const auto at = fingerprint.find(" | host ");
  return at == std::string::npos ? std::string() : fingerprint.substr(at);
}

// The cpu backend's pools of other sizes on this host have cache files of their own (one per
// fingerprint); each is a floor for this one's figures (Ceilings::keep_best_of_pool).
void lift_from_other_pools(Ceilings& c, const std::string& own_path) {
  if (c.backend != "cpu" || host_of(c.fingerprint).empty()) return;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(own_path).parent_path(), ec)) {
    if (e.path() == own_path || e.path().extension() != ".json") continue;
    try {
      const auto j = nlohmann::json::parse(read_file(e.path().string()));
      if (j.value("version", 0) != kCacheVersion || j.value("backend", "") != "cpu") continue;
      const Ceilings other = Ceilings::from_json(j);
      if (host_of(other.fingerprint) == host_of(c.fingerprint)) c.keep_best_of_pool(other);
    } catch (const std::exception&) {
      // a damaged or foreign file: not a floor
    }
  }
}
}  // namespace

Ceilings ceilings(Backend& b, bool remeasure,
                  const std::function<void(const std::string&)>& progress) {
  // Kept for the process's life: the sandboxed worker, which can open no file, reads the ones
  // it loaded before the sandbox (evaluate.cpp), and keeps what it measures again in memory.
  static std::mutex mutex;
  static std::map<std::string, Ceilings> loaded;  // by cache path
  const std::string path = ceilings_cache_path(b);
  const auto keep = [&](const Ceilings& c) {
    std::lock_guard lock(mutex);
    return loaded[path] = c;
  };
  if (sandboxed()) {
    std::unique_lock lock(mutex);
    const auto it = loaded.find(path);
    if (it == loaded.end()) throw NotSupported("the ceilings were not loaded before the sandbox");
    if (!remeasure) return it->second;
    lock.unlock();
    Ceilings c = measure_ceilings(b, progress);
    lock.lock();
    c.keep_best(loaded.at(path));
    return loaded[path] = c;
  }
  if (!remeasure && std::filesystem::exists(path)) {
    try {
      const auto j = nlohmann::json::parse(read_file(path));
      if (j.value("version", 0) == kCacheVersion) {
        Ceilings c = Ceilings::from_json(j);
        // Figures that contradict each other are measured again once; the doubts that survive
        // are written with them (and shown by `kforge ceilings`), so they are not re-measured
        // on every run, nor trusted silently.
        const auto doubts = c.doubts();
        if (doubts.empty() || j.value("doubts", std::vector<std::string>{}) == doubts) {
          lift_from_other_pools(c, path);
          return keep(c);
        }
      }
    } catch (const std::exception&) {
      // a damaged cache file: measure again
    }
  }
  Ceilings c = measure_ceilings(b, progress);
  if (std::filesystem::exists(path)) {
    try {
      const auto j = nlohmann::json::parse(read_file(path));
      if (j.value("version", 0) == kCacheVersion) c.keep_best(Ceilings::from_json(j));
    } catch (const std::exception&) {
      // a damaged cache file: the new measurement alone
    }
  }
  write_file_atomic(path, c.to_json().dump(2));
  lift_from_other_pools(c, path);  // not written: the other pools' files stay theirs
  return keep(c);
}

nlohmann::json Bandwidth::to_json() const {
  return {{"read", read * 1e-9}, {"write", write * 1e-9}, {"copy", copy * 1e-9}, {"triad", triad * 1e-9}};
}

Bandwidth Bandwidth::from_json(const nlohmann::json& j) {
  return {j.at("read").get<double>() * 1e9, j.at("write").get<double>() * 1e9,
          j.at("copy").get<double>() * 1e9, j.at("triad").get<double>() * 1e9};
}

void Bandwidth::keep_best(const Bandwidth& o) {
  read = std::max(read, o.read), write = std::max(write, o.write);
  copy = std::max(copy, o.copy), triad = std::max(triad, o.triad);
}

namespace {
void keep_best_roofs(Roofs& mine, const Roofs& theirs) {
  auto best = [](double& a, double b) { a = std::max(a, b); };
  mine.dram.keep_best(theirs.dram);
  mine.llc.keep_best(theirs.llc);
  mine.l2.keep_best(theirs.l2);
  Compute& a = mine.compute;
  const Compute& b = theirs.compute;
  best(a.fp64, b.fp64), best(a.fp32, b.fp32), best(a.fp16, b.fp16), best(a.bf16, b.bf16), best(a.int8, b.int8);
}
}  // namespace

void Ceilings::keep_best(const Ceilings& o) {
  keep_best_roofs(all, o.all);
  keep_best_roofs(one, o.one);
}

void Ceilings::keep_best_of_pool(const Ceilings& o) {
  if (workers < 1 || o.workers < 1) return;  // an older cache: its pool size is not known
  keep_best_roofs(one, o.one);
  if (o.workers == 1) keep_best_roofs(one, o.all);
  if (workers == 1) keep_best_roofs(all, o.one);
  if (o.workers <= workers) keep_best_roofs(all, o.all);
}

namespace {
// A cache level's all-threads figure is at most this much above one thread's before it looks
// like a neighbour held a core (each core streams from its own L2 and its own share of the LLC).
constexpr double kMinThreadGain = 1.1;

int threads_of(const Ceilings& c) {
  if (c.workers > 0) return c.workers;
  return c.backend == "cpu" ? machine_info().logical_cpus : 0;  // an older cache: the pool's default
}
}  // namespace

std::vector<std::string> Ceilings::doubts() const {
  std::vector<std::string> d;
  const int threads = threads_of(*this);
  for (MemoryLevel l : {MemoryLevel::l2, MemoryLevel::llc}) {
    const double a = all.at(l).best(), o = one.at(l).best();
    if (threads > 1 && a > 0 && o > 0 && a < kMinThreadGain * o)
      d.push_back(fmt::format("all {} threads' {} roof {:.1f} GB/s is no faster than one thread's {:.1f} GB/s",
                              threads, level_name(l), a * 1e-9, o * 1e-9));
  }
  for (auto [upper, lower] : {std::pair{MemoryLevel::l2, MemoryLevel::llc},
                              std::pair{MemoryLevel::llc, MemoryLevel::dram}}) {
    const double u = all.at(upper).best(), w = all.at(lower).best();
    if (u > 0 && w > 0 && u < w)
      d.push_back(fmt::format("the {} roof {:.1f} GB/s is slower than the {} roof below it, {:.1f} GB/s",
                              level_name(upper), u * 1e-9, level_name(lower), w * 1e-9));
  }
  return d;
}

Bandwidth Ceilings::upper_bound_at(MemoryLevel l) const {
  Bandwidth u = all.at(l);
  const int threads = threads_of(*this);
  const Bandwidth& o = one.at(l);
  if (l != MemoryLevel::dram && threads > 1 && u.best() < kMinThreadGain * o.best())
    u.keep_best({o.read * threads, o.write * threads, o.copy * threads, o.triad * threads});
  // A level is at least as fast as the level below it (the data could stream from there).
  if (l == MemoryLevel::l2 && all.llc.best() > 0) u.keep_best(upper_bound_at(MemoryLevel::llc));
  if (l != MemoryLevel::dram) u.keep_best(all.dram);
  return u;
}

}  // namespace kforge
