// Features that need no hardware: a configuration's parameters plus derived counts, and a
// problem instance's sizes and work. Trees split on one feature at a time, so a product of
// parameters (threads per block, tile area) is worth giving them directly: it is what the
// hardware sees, and no single parameter carries it.
#include <cmath>
#include <map>

#include "kforge/predict.hpp"

namespace kforge {

nlohmann::json Features::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (std::size_t i = 0; i < names.size(); ++i) j[names[i]] = values[i];
  return j;
}

namespace {

struct Derived {
  const char* name;
  std::vector<const char*> product, over;  // product of `product` / product of `over`
};

// Kernel Tuner's conventional names and CLBlast's gemm names; a derived feature is added only
// when every name it needs is a parameter.
const std::vector<Derived>& derived_rules() {
  static const std::vector<Derived> rules = {
      {"d_threads_xy", {"block_size_x", "block_size_y"}, {}},
      {"d_threads_xyz", {"block_size_x", "block_size_y", "block_size_z"}, {}},
      {"d_tile_area", {"tile_size_x", "tile_size_y"}, {}},
      {"d_block_work", {"block_size_x", "block_size_y", "tile_size_x", "tile_size_y"}, {}},
      {"d_threads_clblast", {"MDIMC", "NDIMC"}, {}},
      {"d_tile_area_clblast", {"MWG", "NWG"}, {}},
      {"d_work_per_thread", {"MWG", "NWG"}, {"MDIMC", "NDIMC"}},
      {"d_vector_width", {"VWM", "VWN"}, {}},
      {"d_local_mem_words", {"MWG", "KWG"}, {}},
      {"d_threads_tile", {"block_size_x", "tile_size"}, {}},
  };
  return rules;
}

}  // namespace

Features param_features(const std::vector<std::pair<std::string, double>>& params) {
  Features f;
  std::map<std::string, double> by_name;
  for (const auto& [name, v] : params) {
    f.add(name, v);
    by_name[name] = v;
  }
  for (const Derived& d : derived_rules()) {
    double v = 1;
    bool all = true;
    for (const char* n : d.product) {
      auto it = by_name.find(n);
      if (it == by_name.end()) { all = false; break; }
      v *= it->second;
    }
    for (const char* n : d.over) {
      auto it = by_name.find(n);
      if (it == by_name.end() || it->second == 0) { all = false; break; }
      v /= it->second;
    }
    if (all) f.add(d.name, v);
  }
  return f;
}

Features config_features(const Space& space, const Config& c) {
  std::vector<std::pair<std::string, double>> params;
  for (std::size_t i = 0; i < space.dims(); ++i)
    params.emplace_back(space.params()[i].name, space.params()[i].numbers[static_cast<std::size_t>(c[i])]);
  return param_features(params);
}

Features problem_features(const Problem& p, const Sizes& s, DType t) {
  Features f;
  for (const auto& [name, v] : s) f.add("size_" + name, static_cast<double>(v));
  const double flops = p.flops(s), bytes = p.bytes(s, t);
  f.add("flops", flops);
  f.add("bytes", bytes);
  f.add("arithmetic_intensity", bytes > 0 ? flops / bytes : 0.0);
  f.add("reduction_length", p.reduction_length(s));
  f.add("dtype_bytes", static_cast<double>(dtype_size(t)));
  f.add("dtype_is_float", is_float(t) ? 1.0 : 0.0);
  return f;
}

}  // namespace kforge
