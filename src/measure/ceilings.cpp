// The ceilings record: JSON in and out, the machine fingerprint it belongs to, and the cache
// (one file per fingerprint under the cache folder) that spares re-measuring.
#include <algorithm>
#include <filesystem>
#include <utility>

#include <nlohmann/json.hpp>

#include "kforge/backend.hpp"
#include "kforge/measure.hpp"
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
          {"measure_s", measure_s},
          {"bandwidth_GBs", bandwidth_bytes_s() * 1e-9},
          {"llc_bandwidth_GBs", llc_bandwidth_bytes_s() * 1e-9},
          {"fp32_GFLOPs", all.compute.fp32 * 1e-9},
          {"fp64_GFLOPs", all.compute.fp64 * 1e-9},
          {"all_threads", roofs_json(all)},
          {"one_thread", roofs_json(one)}};
}

Ceilings Ceilings::from_json(const nlohmann::json& j) {
  Ceilings c;
  c.fingerprint = j.at("fingerprint");
  c.backend = j.value("backend", "");
  c.device = j.value("device", "");
  c.llc_bytes = j.value("llc_bytes", std::int64_t{0});
  c.l2_bytes = j.value("l2_bytes", std::int64_t{0});
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

Ceilings ceilings(Backend& b, bool remeasure,
                  const std::function<void(const std::string&)>& progress) {
  const std::string fingerprint = ceilings_fingerprint(b);
  const auto path = cache_dir("ceilings") /
                    (hex64(hash64(fingerprint + micro_sources() +
                                  std::to_string(kCacheVersion))) + ".json");
  if (!remeasure && std::filesystem::exists(path)) {
    try {
      const auto j = nlohmann::json::parse(read_file(path));
      if (j.value("version", 0) == kCacheVersion) return Ceilings::from_json(j);
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
  return c;
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

void Ceilings::keep_best(const Ceilings& o) {
  auto best = [](double& a, double b) { a = std::max(a, b); };
  auto compute = [&](Compute& a, const Compute& b) {
    best(a.fp64, b.fp64), best(a.fp32, b.fp32), best(a.fp16, b.fp16), best(a.bf16, b.bf16),
        best(a.int8, b.int8);
  };
  for (auto [mine, theirs] : {std::pair{&all, &o.all}, std::pair{&one, &o.one}}) {
    mine->dram.keep_best(theirs->dram);
    mine->llc.keep_best(theirs->llc);
    mine->l2.keep_best(theirs->l2);
    compute(mine->compute, theirs->compute);
  }
}

}  // namespace kforge
