// Parsing a problem file: every field checked, every error naming the file, the field and what
// would be right, so that a bad file is a clear exit 2 and never a crash later.
#include "problem/problem_file.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/error.hpp"
#include "kforge/subprocess.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

using Json = nlohmann::ordered_json;  // sizes keep the file's order: it is the kernel ABI's

class Parser {
 public:
  explicit Parser(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw ProblemError(fmt::format("problem file {}: {}: {}", path_, field, what));
  }

  const Json& need(const Json& j, const std::string& key, const std::string& field) const {
    if (!j.is_object() || !j.contains(key)) fail(field + key, "missing");
    return j.at(key);
  }
  std::string text(const Json& j, const std::string& field) const {
    if (!j.is_string()) fail(field, "must be a string, not " + j.dump());
    return j.get<std::string>();
  }
  double number(const Json& j, const std::string& field) const {
    if (!j.is_number()) fail(field, "must be a number, not " + j.dump());
    return j.get<double>();
  }
  std::int64_t integer(const Json& j, const std::string& field) const {
    if (!j.is_number_integer()) fail(field, "must be an integer, not " + j.dump());
    return j.get<std::int64_t>();
  }

  // An expression that reads only `allowed` names.
  Expr expr(const Json& j, const std::string& field, const std::set<std::string>& allowed) const {
    std::string t = j.is_number_integer() ? std::to_string(j.get<std::int64_t>()) : text(j, field);
    Expr e = [&] {
      try {
        return Expr::parse(t);
      } catch (const UsageError& err) {
        fail(field, fmt::format("'{}' is not an expression: {}", t, err.what()));
      }
    }();
    for (const auto& n : e.names())
      if (!allowed.count(n)) {
        std::string known;
        for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
        fail(field, fmt::format("'{}' reads '{}', which is not a size (sizes: {})", t, n, known));
      }
    return e;
  }

  // A file named relative to the problem file; it must exist.
  std::string beside(const Json& j, const std::string& field) const {
    const auto p = std::filesystem::path(path_).parent_path() / text(j, field);
    if (!std::filesystem::exists(p)) fail(field, fmt::format("no file {}", p.string()));
    return std::filesystem::weakly_canonical(p).string();
  }

  CodeDecl code(const Json& j, const std::string& field) const {
    CodeDecl c;
    c.source = beside(need(j, "source", field + "."), field + ".source");
    c.function = text(need(j, "function", field + "."), field + ".function");
    if (j.contains("flags"))
      for (std::size_t i = 0; i < j.at("flags").size(); ++i)
        c.flags.push_back(text(j.at("flags")[i], fmt::format("{}.flags[{}]", field, i)));
    if (j.contains("packages")) {  // pkg-config names: their compile and link flags
      std::vector<std::string> argv{"pkg-config", "--cflags", "--libs"};
      for (std::size_t i = 0; i < j.at("packages").size(); ++i)
        argv.push_back(text(j.at("packages")[i], fmt::format("{}.packages[{}]", field, i)));
      const ProcessResult r = run_process(argv, {}, {.timeout_s = 30});
      if (!r.ok()) fail(field + ".packages", "pkg-config does not know them: " + trim(r.err));
      for (const auto& w : split(trim(r.out), ' '))
        if (!w.empty()) c.flags.push_back(w);
    }
    c.name = j.contains("name") ? text(j.at("name"), field + ".name") : c.function;
    return c;
  }

 private:
  std::string path_;
};

Role parse_role(const Parser& p, const Json& j, const std::string& field) {
  const std::string r = p.text(j, field);
  if (r == "in") return Role::in;
  if (r == "out") return Role::out;
  if (r == "inout") return Role::inout;
  if (r == "scratch") return Role::scratch;
  p.fail(field, "'" + r + "' is not one of in, out, inout, scratch");
}

Condition parse_condition(const Parser& p, const std::string& c, const std::string& field) {
  static const std::pair<const char*, Condition> kNames[] = {
      {"index", Condition::index},       {"flag", Condition::flag},
      {"probability", Condition::probability}, {"positive", Condition::positive},
      {"sorted", Condition::sorted},     {"sparse", Condition::sparse}};
  for (const auto& [n, v] : kNames)
    if (c == n) return v;
  p.fail(field, "'" + c + "' is not one of index, flag, probability, positive, sorted, sparse");
}

TensorDecl parse_tensor(const Parser& p, const Json& j, const std::string& field,
                        const std::set<std::string>& sizes, const std::set<std::string>& scalars) {
  TensorDecl t;
  t.name = p.text(p.need(j, "name", field + "."), field + ".name");
  t.role = parse_role(p, p.need(j, "role", field + "."), field + ".role");
  if (j.contains("type")) {
    const std::string name = p.text(j.at("type"), field + ".type");
    if (name != "int32" && name != "int8") p.fail(field + ".type", "'" + name + "' is not one of int32, int8");
    if (t.role != Role::in) p.fail(field + ".type", "only an input (role in) can have a type of its own");
    t.type = parse_dtype(name);
  }
  const Json& shape = p.need(j, "shape", field + ".");
  if (!shape.is_array() || shape.empty()) p.fail(field + ".shape", "must be a list of size expressions");
  for (std::size_t d = 0; d < shape.size(); ++d)
    t.shape.push_back(p.expr(shape[d], fmt::format("{}.shape[{}]", field, d), sizes));
  if (j.contains("condition")) {
    const Json& c = j.at("condition");
    const std::string cf = field + ".condition";
    t.condition = parse_condition(p, c.is_object() ? p.text(p.need(c, "kind", cf + "."), cf + ".kind")
                                                   : p.text(c, cf), cf);
    if (t.role != Role::in && t.role != Role::inout) p.fail(cf, "only inputs are conditioned");
    if (t.condition == Condition::index) {
      if (!c.is_object()) p.fail(cf, "an index needs its range: {\"kind\": \"index\", \"low\": \"0\", \"high\": \"E\"}");
      t.low = p.expr(p.need(c, "low", cf + "."), cf + ".low", sizes);
      t.high = p.expr(p.need(c, "high", cf + "."), cf + ".high", sizes);
    }
    if (c.is_object() && c.contains("p")) t.p = p.number(c.at("p"), cf + ".p");
    if (c.is_object() && c.contains("density")) t.density = p.number(c.at("density"), cf + ".density");
    if (!(t.p > 0 && t.p < 1)) p.fail(cf + ".p", "must be in (0, 1)");
    if (!(t.density > 0 && t.density <= 1)) p.fail(cf + ".density", "must be in (0, 1]");
  }
  if (j.contains("structured")) {
    t.structured = p.text(j.at("structured"), field + ".structured");
    if (t.structured != "matrix" && t.structured != "elementwise" && t.structured != "none")
      p.fail(field + ".structured", "'" + t.structured + "' is not one of matrix, elementwise, none");
    if (t.structured != "none" && t.role != Role::in)
      p.fail(field + ".structured", "only an input (role in) can be given structured values");
    if (t.structured != "none" && t.condition != Condition::none)
      p.fail(field + ".structured", "a conditioned tensor keeps its conditioning: use \"none\"");
  }
  if (j.contains("unread_when_zero")) {
    t.unread_when_zero = p.text(j.at("unread_when_zero"), field + ".unread_when_zero");
    if (t.role != Role::inout) p.fail(field + ".unread_when_zero", "only an inout tensor can go unread");
    if (!scalars.count(t.unread_when_zero))
      p.fail(field + ".unread_when_zero", "'" + t.unread_when_zero + "' is not a scalar of the problem");
  }
  return t;
}

}  // namespace

ProblemFile parse_problem_file(const std::string& given) {
  const std::string path = std::filesystem::weakly_canonical(std::filesystem::absolute(given)).string();
  Parser p(path);
  if (!std::filesystem::is_regular_file(path)) throw ProblemError("no problem file " + given);
  Json j;
  try {
    j = Json::parse(read_file(path));
  } catch (const Json::exception& e) {
    throw ProblemError(fmt::format("problem file {} is not valid JSON: {}", path, e.what()));
  }
  if (!j.is_object()) p.fail("top level", "must be a JSON object");
  static const std::set<std::string> kKnown = {
      "name", "description", "sizes", "valid", "dtypes", "tensors", "scalars", "flops", "bytes",
      "reduction_length", "reference", "condition", "baseline", "kernels", "timeout_s", "$schema",
      "special_scalars"};
  for (const auto& [key, v] : j.items())
    if (!kKnown.count(key)) p.fail(key, "unknown field (a typo? see docs/problem-files.md)");

  ProblemFile f;
  f.path = path;
  f.name = p.text(p.need(j, "name", ""), "name");
  f.description = j.contains("description") ? p.text(j.at("description"), "description") : f.name;

  std::set<std::string> sizes;
  const Json& sj = p.need(j, "sizes", "");
  if (!sj.is_object() || sj.empty()) p.fail("sizes", "must be an object of size names and defaults");
  for (const auto& [n, v] : sj.items()) {
    SizeDecl s{n};
    if (v.is_object()) {
      s.default_value = p.integer(p.need(v, "default", "sizes." + n + "."), "sizes." + n + ".default");
      if (v.contains("min")) s.min = p.integer(v.at("min"), "sizes." + n + ".min");
    } else {
      s.default_value = p.integer(v, "sizes." + n);
    }
    if (s.default_value < s.min) p.fail("sizes." + n, fmt::format("default {} is below its minimum {}", s.default_value, s.min));
    sizes.insert(n);
    f.sizes.push_back(s);
  }
  if (j.contains("valid"))
    for (std::size_t i = 0; i < j.at("valid").size(); ++i)
      f.valid.push_back({p.expr(j.at("valid")[i], fmt::format("valid[{}]", i), sizes)});

  for (const auto& d : j.contains("dtypes") ? j.at("dtypes") : Json::array({"fp32"})) {
    try {
      f.dtypes.push_back(parse_dtype(p.text(d, "dtypes")));
    } catch (const ProblemError&) {
      throw;
    } catch (const UsageError& e) {
      p.fail("dtypes", e.what());
    }
  }

  std::set<std::string> scalar_names;
  if (j.contains("scalars")) {
    for (const auto& [n, v] : j.at("scalars").items()) {
      ScalarDecl s;
      s.name = n;
      const std::string sf = "scalars." + n;
      const Json& trials = p.need(v, "trials", sf + ".");
      if (!trials.is_array() || trials.empty()) p.fail(sf + ".trials", "must be a non-empty list of values");
      for (std::size_t i = 0; i < trials.size(); ++i)
        s.trials.push_back(static_cast<float>(p.number(trials[i], fmt::format("{}.trials[{}]", sf, i))));
      if (v.contains("min")) s.min = p.number(v.at("min"), sf + ".min");
      if (v.contains("max")) s.max = p.number(v.at("max"), sf + ".max");
      for (double t : s.trials)
        if (!(t >= s.min && t <= s.max)) p.fail(sf + ".trials", fmt::format("{} is outside [{}, {}]", t, s.min, s.max));
      scalar_names.insert(n);
      f.scalars.push_back(s);
    }
  }

  if (j.contains("special_scalars")) {
    const Json& sp = j.at("special_scalars");
    if (!sp.is_array()) p.fail("special_scalars", "must be a list of objects such as {\"alpha\": 0, \"beta\": 0.5}");
    for (std::size_t i = 0; i < sp.size(); ++i) {
      const std::string sf = fmt::format("special_scalars[{}]", i);
      if (!sp[i].is_object() || sp[i].empty()) p.fail(sf, "must be an object of scalar names and values");
      Scalars set;
      for (const auto& [n, v] : sp[i].items()) {
        if (!scalar_names.count(n)) p.fail(sf + "." + n, "'" + n + "' is not a scalar of the problem");
        set[n] = static_cast<float>(p.number(v, sf + "." + n));
      }
      f.special_scalars.push_back(set);
    }
  }

  const Json& tj = p.need(j, "tensors", "");
  if (!tj.is_array() || tj.empty()) p.fail("tensors", "must be a non-empty list");
  std::set<std::string> tensor_names;
  bool any_output = false;
  for (std::size_t i = 0; i < tj.size(); ++i) {
    f.tensors.push_back(parse_tensor(p, tj[i], fmt::format("tensors[{}]", i), sizes, scalar_names));
    if (!tensor_names.insert(f.tensors.back().name).second)
      p.fail(fmt::format("tensors[{}].name", i), "'" + f.tensors.back().name + "' is declared twice");
    any_output = any_output || is_output(f.tensors.back().role);
  }
  if (!any_output) p.fail("tensors", "no tensor has role out or inout: nothing to verify");

  f.flops = p.expr(p.need(j, "flops", ""), "flops", sizes);
  f.reduction_length = p.expr(p.need(j, "reduction_length", ""), "reduction_length", sizes);
  if (j.contains("bytes")) {
    std::set<std::string> with_dtype = sizes;
    with_dtype.insert("dtype_bytes");
    f.bytes = p.expr(j.at("bytes"), "bytes", with_dtype);
  }
  f.reference = p.code(p.need(j, "reference", ""), "reference");
  if (j.contains("condition")) f.condition = p.code(j.at("condition"), "condition");
  if (j.contains("baseline")) f.baseline = p.code(j.at("baseline"), "baseline");
  if (j.contains("kernels"))
    for (std::size_t i = 0; i < j.at("kernels").size(); ++i)
      f.kernels.push_back(p.beside(j.at("kernels")[i], fmt::format("kernels[{}]", i)));
  if (j.contains("timeout_s")) f.timeout_s = p.number(j.at("timeout_s"), "timeout_s");
  return f;
}

}  // namespace kforge
