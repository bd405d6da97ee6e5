#include "agent/task.hpp"

#include <fmt/format.h>

#include "kforge/error.hpp"

namespace kforge::agent {

nlohmann::json Baseline::to_json() const {
  return {{"name", name},           {"median_s", median_s}, {"sol_s", sol_s},
          {"sol_bound", sol_bound}, {"device", device},     {"compile_only", compile_only}};
}

Baseline Baseline::from_json(const nlohmann::json& j) {
  return {j.value("name", ""),      j.value("median_s", 0.0), j.value("sol_s", 0.0),
          j.value("sol_bound", ""), j.value("device", ""),    j.value("compile_only", "")};
}

Lang backend_lang(const std::string& backend) {
  if (backend == "cpu") return Lang::cpp;
  if (backend == "opencl") return Lang::opencl;
  if (backend == "cuda") return Lang::cuda;
  throw UsageError("unknown backend '" + backend + "' (cpu, opencl or cuda)");
}

std::string default_entry(const Problem& p, Lang lang, const Sizes& s) {
  try {
    return library_kernel(p, lang, s).entry;
  } catch (const UsageError&) {
    return kforge::default_entry(p.name());
  }
}

Baseline measure_baseline(const AgentOptions& o, const Problem& p) {
  Baseline b;
  EvalRequest req;
  try {
    req.kernel = library_kernel(p, backend_lang(o.backend), o.sizes);
  } catch (const UsageError&) {
    return b;  // nothing to time: speedups stay unknown, SOL fractions still come with each result
  }
  req.problem = p.name();
  req.sizes = o.sizes;
  req.scalars = o.scalars;
  req.dtype = o.dtype;
  req.backend = o.backend;
  req.backend_options.threads = o.threads;
  req.verify.thorough = false;
  req.verify.seed = o.seed;
  req.bench = true;
  req.baseline = !p.baseline_name().empty();
  req.measure = o.measure;
  const EvalResult r = evaluate_isolated(req, o.limits);
  b.device = r.device;
  if (r.disposition == Disposition::not_supported && r.compiled) {
    b.compile_only = r.error;  // no GPU: the candidates are compiled and reported on, never run
    return b;
  }
  if (!r.passed() || !r.timing)
    throw UsageError("the library kernel " + req.kernel.name + " did not pass at these sizes (" + r.error +
                     "): pick other --size values");
  b.name = r.baseline ? r.baseline_name : "the library kernel " + req.kernel.name;
  b.median_s = r.baseline ? r.baseline->median_s : r.timing->median_s;
  if (r.roofline) {
    b.sol_s = r.roofline->t_sol_s;
    b.sol_bound = r.roofline->bound;
  }
  return b;
}

nlohmann::json task_message(const AgentOptions& o, const Problem& p, const Baseline& b,
                            const std::string& entry, const std::string& counters) {
  nlohmann::json sig = nlohmann::json::object();
  for (Lang l : {Lang::cpp, Lang::opencl, Lang::cuda}) sig[std::string(lang_name(l))] = p.signature(l);
  nlohmann::json tensors = nlohmann::json::array();
  const auto specs = p.tensors();
  for (std::size_t t = 0; t < specs.size(); ++t) {
    const auto& ts = specs[t];
    tensors.push_back({{"name", ts.name}, {"role", role_name(ts.role)},
                       {"elements", p.tensor_elements(t, o.sizes)}});
    if (ts.storage) tensors.back()["type"] = dtype_name(*ts.storage);  // int32 indices, whatever the dtype
  }
  nlohmann::json dtypes = nlohmann::json::array();
  for (DType d : p.dtypes()) dtypes.push_back(dtype_name(d));
  const Lang lang = backend_lang(o.backend);
  const std::string conventions =
      lang == Lang::cpp
          ? "static void body(const kf_ctx& ctx, <signature with T = the dtype's type>) {...} KF_KERNEL(" + entry +
                ", body)  -- the grid's blocks run on a thread pool; ctx.block_idx/grid_dim/block_dim are "
                "{x,y,z}; the parameters arrive as #define NAME value"
          : "the entry point '" + entry + "' takes the signature above; the parameters arrive as #define NAME value";
  return {
      {"type", "task"},
      {"protocol", "kforge-agent/1"},
      {"problem", p.name()},
      {"description", p.description()},
      {"backend", o.backend},
      {"lang", lang_name(lang)},
      {"entry", entry},
      {"signature", sig},
      {"conventions", conventions},
      {"sizes", o.sizes},
      {"size_names", p.size_names()},
      {"scalars", p.scalar_names()},
      {"dtype", dtype_name(o.dtype)},
      {"dtypes", dtypes},
      {"tensors", tensors},
      {"flops", p.flops(o.sizes)},
      {"bytes", p.bytes(o.sizes, o.dtype)},
      {"tolerance",
       {{"policy", "every output element written, finite, and within u*|ref| + (1+u)*gamma_n*magnitude + floor "
                   "of the high-precision reference (n: the reduction length; magnitude: the same sum over "
                   "absolute values); repeated runs must agree"},
        {"unit_roundoff", unit_roundoff(o.dtype)},
        {"reduction_length", p.reduction_length(o.sizes)}}},
      {"held_out", "correctness is also checked at shapes this task does not list (fuzzed around the "
                   "parameters' values, primes, 1) under a seed it does not give, and the best candidate "
                   "is re-verified with fresh inputs at the end"},
      {"baseline", b.median_s > 0 ? nlohmann::json{{"name", b.name}, {"median_s", b.median_s}} : nlohmann::json()},
      {"sol_s", b.sol_s > 0 ? nlohmann::json(b.sol_s) : nlohmann::json()},
      {"sol_bound", b.sol_bound},
      {"counters", counters},
      {"score", "arena: compiled 20 + correct 100 + 100 x speedup over the baseline"},
      {"budget", o.budget},
      {"compile_only", b.compile_only.empty()
                           ? nlohmann::json()
                           : nlohmann::json(b.compile_only + ": every candidate is compiled and gets the "
                                                             "compiler's report (registers, spills, shared memory); "
                                                             "none is verified or timed")},
  };
}

}  // namespace kforge::agent
