// list_problems and describe_problem: what there is to solve, and everything a kernel author
// needs to know about one problem (its ABI per language, sizes, dtypes, scalars, the error bound
// a result must meet, the baseline, the library's kernels and their parameter spaces).
#include <fmt/format.h>

#include "kforge/backend.hpp"
#include "kforge/problem_file.hpp"
#include "mcp/tool_common.hpp"

namespace kforge::mcp {
namespace {


json dtypes_of(const std::vector<DType>& ds) {
  json a = json::array();
  for (DType d : ds) a.push_back(dtype_name(d));
  return a;
}

json summary_of(const Problem& p) {
  json kernels = json::array();
  for (const auto& k : library_kernels(p))
    kernels.push_back({{"name", k.name}, {"lang", lang_name(k.lang)}});
  json j = {{"name", p.name()},
            {"description", p.description()},
            {"sizes", p.default_sizes()},
            {"dtypes", dtypes_of(p.dtypes())},
            {"scalars", p.scalar_names()},
            {"baseline", p.baseline_name()},
            {"kernels", kernels}};
  if (!p.source_file().empty()) j["file"] = p.source_file();
  return j;
}

ToolResult list_problems(const ToolCall& c) {
  std::vector<std::shared_ptr<Problem>> listed;
  std::vector<std::string> dirs = c.options->problem_dirs;
  for (const auto& d : problem_path()) dirs.push_back(d);  // $KFORGE_PROBLEM_PATH
  if (c.args.contains("folder"))
    dirs = {c.args["folder"].get<std::string>()};
  else
    listed = problems();
  for (const auto& dir : dirs)
    for (const auto& p : problems_in(dir)) listed.push_back(p);
  ToolResult r;
  r.structured["problems"] = json::array();
  std::string text = fmt::format("{} problem(s):\n", listed.size());
  for (const auto& p : listed) {
    r.structured["problems"].push_back(summary_of(*p));
    text += fmt::format("- {}: {}\n", p->name(), p->description());
  }
  r.structured["folders"] = dirs;
  r.text = text + "\ndescribe_problem gives one problem's ABI, sizes, tolerance and kernels.";
  return r;
}

// The bound verify/compare.cpp applies, in words and numbers at these sizes.
json tolerance_of(const Problem& p, const Sizes& s, DType t) {
  // Accumulation in fp64 for fp64, else fp32 (as verify/compare.cpp bounds it).
  const DType acc = t == DType::fp64 ? DType::fp64 : DType::fp32;
  const double n = p.reduction_length(s), u_acc = unit_roundoff(acc), u_out = unit_roundoff(t);
  const double gamma = n * u_acc < 1 ? n * u_acc / (1 - n * u_acc) : -1;
  return {
      {"formula",
       "|got - ref| <= u_out*|ref| + (1 + u_out)*gamma_n*magnitude + floor, for every output "
       "element; gamma_n = n*u_acc/(1 - n*u_acc) (Higham §3.1), n = the reduction length, "
       "magnitude = the reference computed over absolute values, floor = half a subnormal of the "
       "output plus n subnormals of the accumulator. Every element must also be written and "
       "finite, "
       "and repeated runs must agree."},
      {"exact", !is_float(t)},
      {"reduction_length", n},
      {"u_out", u_out},
      {"u_acc", u_acc},
      {"accumulation_dtype", dtype_name(acc)},
      {"gamma_n",
       gamma >= 0 ? json(gamma) : json("infinite: the reduction is too long for the accumulator")}};
}

std::string conventions(Lang l, const std::string& entry) {
  switch (l) {
    case Lang::cpp:
      return "static void body(const kf_ctx& ctx, <the signature, T = the dtype's type>) {...} "
             "KF_KERNEL(" +
             entry +
             ", body). The grid's blocks run on a thread pool; ctx.block_idx, ctx.grid_dim and "
             "ctx.block_dim are "
             "{x,y,z}. Parameters arrive as #define NAME value.";
    case Lang::opencl:
      return "__kernel void " + entry +
             "(<the signature>) with the launch's grid x block work-items; parameters "
             "arrive as #define NAME value.";
    case Lang::cuda:
      return "extern \"C\" __global__ void " + entry +
             "(<the signature>); parameters arrive as #define NAME value.";
  }
  return {};
}

ToolResult describe_problem(const ToolCall& c) {
  const auto p = problem_of(c.args, *c.options);
  const Sizes s = sizes_of(c.args, *p);
  const DType t = parse_dtype(c.args.value("dtype", std::string(dtype_name(p->dtypes().front()))));
  json abi = json::object(), conv = json::object();
  for (Lang l : {Lang::cpp, Lang::opencl, Lang::cuda}) {
    abi[std::string(lang_name(l))] = p->signature(l);
    conv[std::string(lang_name(l))] = conventions(l, default_entry(p->name()));
  }
  const auto specs = p->tensors();
  json tensors = json::array();
  for (std::size_t i = 0; i < specs.size(); ++i) {
    tensors.push_back({{"name", specs[i].name},
                       {"role", role_name(specs[i].role)},
                       {"elements", p->tensor_elements(i, s)}});
    if (specs[i].storage) tensors.back()["type"] = dtype_name(*specs[i].storage);  // int32 indices
  }
  json trials = json::array();
  for (int trial = 0; trial < 3; ++trial) trials.push_back(p->scalars_for_trial(trial));
  json kernels = json::array();
  for (const auto& k : library_kernels(*p)) {
    json kj = k.to_json();
    kj["space_size"] = k.space_size();
    kj["signature"] = p->signature(k.lang);
    kj["valid_here"] = !k.check(k.resolve({}), s).has_value();  // its defaults at these sizes
    kj["applies_here"] = k.applies_to(s);
    kernels.push_back(kj);
  }
  ToolResult r;
  r.structured = {
      {"name", p->name()},
      {"description", p->description()},
      {"size_names", p->size_names()},
      {"default_sizes", p->default_sizes()},
      {"sizes", s},
      {"dtypes", dtypes_of(p->dtypes())},
      {"dtype", dtype_name(t)},
      {"tensors", tensors},
      {"scalar_names", p->scalar_names()},
      {"scalars_per_trial", trials},
      {"abi", abi},
      {"abi_rule",
       "the problem's tensors in order (pointers to the dtype's storage; inputs const), "
       "then its sizes as int in size order, then its scalars as float"},
      {"default_entry", default_entry(p->name())},
      {"conventions", conv},
      {"flops", p->flops(s)},
      {"bytes", p->bytes(s, t)},
      {"tolerance", tolerance_of(*p, s, t)},
      {"baseline", p->baseline_name().empty() ? json() : json(p->baseline_name())},
      {"kernels", kernels}};
  if (!p->source_file().empty()) r.structured["file"] = p->source_file();
  r.text = fmt::format(
      "{}: {}\nABI (cpp): {}\nsizes {}; dtypes {}; baseline {}; {} library kernel(s)\n\n{}",
      p->name(), p->description(), p->signature(Lang::cpp), json(s).dump(),
      r.structured["dtypes"].dump(), p->baseline_name().empty() ? "none" : p->baseline_name(),
      kernels.size(), r.structured.dump(-1, ' ', false, json::error_handler_t::replace));
  return r;
}

}  // namespace

Tool list_problems_tool() {
  return {"list_problems",
          "List problems",
          "The problems kforge can judge kernels for: the library's, and the problem files of the "
          "server's "
          "--problems folders and $KFORGE_PROBLEM_PATH (or of `folder` alone). Each with its "
          "sizes, dtypes, "
          "scalars, baseline and library kernels.",
          object_schema({},
                        {{"folder",
                          {{"type", "string"},
                           {"description",
                            "list the problem files in this folder "
                            "instead of the library"}}}},
                        {}),
          true,
          list_problems};
}

Tool describe_problem_tool() {
  return {"describe_problem",
          "Describe a problem",
          "Everything a kernel author needs for one problem: the ABI per language (cpp, opencl, "
          "cuda) and the "
          "entry-point conventions, sizes, dtypes, tensors, scalars, FLOP and byte counts, the "
          "error bound a "
          "result must meet (formula and its numbers at these sizes), the baseline, and the "
          "library's kernels "
          "with their parameter spaces.",
          object_schema({"problem", "sizes", "dtype"}, json::object(), {"problem"}),
          true,
          describe_problem};
}

}  // namespace kforge::mcp
