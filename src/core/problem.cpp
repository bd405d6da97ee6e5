#include "kforge/problem.hpp"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/util.hpp"

namespace kforge {

Sizes Problem::resolve_sizes(const Sizes& overrides) const {
  Sizes s = default_sizes();
  for (const auto& [k, v] : overrides) {
    if (!s.count(k)) {
      std::string names;
      for (const auto& n : size_names()) names += (names.empty() ? "" : ",") + n;
      throw UsageError("problem " + name() + " has no size '" + k + "' (its sizes: " + names + ")");
    }
    s[k] = v;
  }
  check_sizes(s);
  return s;
}

Scalars Problem::resolve_scalars(const Scalars& overrides) const {
  const auto names = scalar_names();
  for (const auto& [k, v] : overrides)
    if (std::find(names.begin(), names.end(), k) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ",") + n;
      throw UsageError("problem " + name() + " has no scalar '" + k + "' (its scalars: " +
                       (known.empty() ? "none" : known) + ")");
    }
  for (int trial = 0; trial < 2; ++trial) {  // the user's values beside each trial's others
    Scalars s = scalars_for_trial(trial);
    for (const auto& [k, v] : overrides) s[k] = v;
    check_scalars(s);
  }
  return overrides;
}

void Problem::check_scalars(const Scalars& s) const {
  for (const auto& [k, v] : s)
    if (!std::isfinite(v)) throw UsageError("scalar " + k + "=" + std::to_string(v) + " must be finite");
}

double Problem::bytes_written(const Instance& inst) const {
  const std::vector<TensorSpec> specs = tensors();
  double bytes = 0;
  for (std::size_t t = 0; t < specs.size() && t < inst.tensors.size(); ++t)
    if (is_output(specs[t].role))
      bytes += static_cast<double>(inst.tensors[t].size()) * static_cast<double>(dtype_size(storage_dtype(specs[t], inst.dtype)));
  return bytes;
}

void Problem::check_sizes(const Sizes& s) const {
  for (const auto& [k, v] : s)
    if (v < 1) throw UsageError("size " + k + "=" + std::to_string(v) + " must be at least 1");
}

double Problem::fuzz_work(const Sizes& s) const {
  double w = 1;
  for (const auto& [k, v] : s) w *= static_cast<double>(v);
  return w;
}

void Problem::perturb(Instance& inst, std::size_t t, std::size_t i) const {
  auto& v = inst.tensors[t];
  std::vector<double> moved{v[i] + (v[i] >= 0 ? -1 : 1) * (2 + 2 * std::fabs(v[i]))};
  round_to(storage_dtype(tensors().at(t), inst.dtype), moved);
  v[i] = moved[0];
}

Instance Problem::make_instance(const Sizes& s, DType t, Distribution dist, std::uint64_t seed,
                                int trial, const Scalars& fixed) const {
  Instance inst;
  inst.sizes = s;
  inst.dtype = t;
  inst.scalars = scalars_for_trial(trial);
  for (const auto& [k, v] : fixed) inst.scalars[k] = v;
  const auto specs = tensors();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].role == Role::scratch) {  // the runner sizes it; no values to draw or keep
      inst.tensors.emplace_back();
      continue;
    }
    std::vector<double> v(static_cast<std::size_t>(tensor_elements(i, s)));
    // fp16: products stay below 2^12 and above its normal range's floor 2^-14.
    fill_random(v, dist, seed, 1000 * static_cast<std::uint64_t>(trial) + i, t == DType::fp16 ? 6 : 20);
    round_to(storage_dtype(specs[i], t), v);
    inst.tensors.push_back(std::move(v));
  }
  condition_inputs(inst, seed, trial);
  return inst;
}

std::string Problem::signature(Lang lang) const {
  std::string sig = "(";
  for (const auto& t : tensors()) {
    const std::string cnst = t.role == Role::in ? "const " : "";
    // "T" is the dtype's storage type; a tensor of a fixed (integer) type has its C type.
    const std::string elem = !t.storage ? "T" : *t.storage == DType::int32 ? "int" : "signed char";
    if (lang == Lang::opencl) sig += "__global " + cnst + elem + "* " + t.name + ", ";
    else sig += cnst + elem + "* " + t.name + ", ";
  }
  for (const auto& n : size_names()) sig += "int " + n + ", ";
  for (const auto& n : scalar_names()) sig += "float " + n + ", ";
  sig.resize(sig.size() - 2);
  return sig + ")";
}

std::vector<KernelSpec> library_kernels(const Problem& p) {
  std::vector<KernelSpec> out;
  for (const std::string& path : p.kernel_specs()) {
    // A library problem's specs are embedded in kforge; a problem file's lie on disk.
    const bool on_disk = path.starts_with("/");
    const auto text = [&](const std::string& p) { return on_disk ? read_file(p) : embedded_file(p); };
    const std::string dir = path.substr(0, path.rfind('/') + 1);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text(path));
    } catch (const nlohmann::json::exception& e) {
      throw UsageError("kernel spec " + path + " is not valid JSON: " + e.what());
    }
    out.push_back(KernelSpec::from_json(j, [&](const std::string& f) { return text(dir + f); }));
    out.back().source_path = dir + out.back().source_path;
  }
  return out;
}

KernelSpec library_kernel(const Problem& p, Lang lang, const Sizes& s) {
  for (auto& k : library_kernels(p))
    if (k.lang == lang && k.applies_to(s)) return k;
  throw UsageError("problem " + p.name() + " has no " + std::string(lang_name(lang)) + " kernel");
}

KernelSpec library_kernel(const Problem& p, Lang lang) {
  return library_kernel(p, lang, p.default_sizes());
}

KernelSpec library_kernel_named(const Problem& p, Lang lang, const std::vector<std::string>& names) {
  const auto specs = library_kernels(p);
  std::string listing;  // "spmm.cpu (cpp), spmm.opencl (opencl), ..."
  for (const auto& k : specs)
    listing += (listing.empty() ? "" : ", ") + k.name + " (" + std::string(lang_name(k.lang)) + ")";
  if (listing.empty()) listing = "none";
  std::vector<const KernelSpec*> mine;
  for (const auto& n : names) {
    const auto it = std::find_if(specs.begin(), specs.end(), [&](const KernelSpec& k) { return k.name == n; });
    if (it == specs.end())
      throw UsageError("problem " + p.name() + " has no kernel '" + n + "' (--kernel); its kernels: " + listing);
    if (it->lang == lang) mine.push_back(&*it);
  }
  const std::string lname(lang_name(lang));
  if (mine.size() > 1)
    throw UsageError("--kernel names two " + lname + " kernels (" + mine[0]->name + ", " + mine[1]->name +
                     "): name one per backend language; problem " + p.name() + "'s kernels: " + listing);
  if (mine.empty()) {
    std::string given;
    for (const auto& n : names) given += (given.empty() ? "" : ",") + n;
    throw UsageError("--kernel " + given + " names no " + lname + " kernel, and a backend that runs " + lname +
                     " kernels was asked for: add one of problem " + p.name() + "'s " + lname +
                     " kernels, or drop that backend; its kernels: " + listing);
  }
  return *mine[0];
}

}  // namespace kforge
