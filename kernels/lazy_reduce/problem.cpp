// lazy_reduce.*: a formula f(x_i, y_j) over points X (N,D) and Y (M,D), reduced over j for each
// i without ever holding the N x M matrix (KeOps' "lazy tensors"). Reductions:
//   sum        OUT (N,E) = sum_j f(x_i,y_j) * B (M,E)_j      (B: weights of width E >= 1)
//   logsumexp  OUT (N)   = log sum_j exp f(x_i,y_j)          (kernels shift by a running max)
//   min        OUT (N)   = min_j f;   argmin  IDX (N) = the first j of the minimum
//   kmin       DIST (N,K), IDX (N,K): the K smallest f in ascending order and their j (KNN)
// Indices are fp32 values, exact below 2^24, so M <= 2^24. fp32 only. The library's three
// (gauss_sum, logsumexp, knn) are fixed formulas; "lazy_reduce:<reduction>:<formula>" is any
// formula (the kernel source is generated from it: kernels/lazy_reduce/README.md).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kforge/alternative_answers.hpp"
#include "kforge/error.hpp"
#include "kforge/formula.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"
#include "grad.hpp"

namespace kforge {
namespace {

enum class Reduce { sum, logsumexp, min, argmin, kmin };
constexpr const char* kReduceNames[] = {"sum", "logsumexp", "min", "argmin", "kmin"};

Reduce parse_reduce(const std::string& r) {
  for (int k = 0; k < 5; ++k)
    if (r == kReduceNames[k]) return static_cast<Reduce>(k);
  throw UsageError("unknown reduction '" + r + "': use one of sum, logsumexp, min, argmin, kmin");
}

}  // namespace

// Scalars become kernel parameters by name: they may not shadow the kernels' own names.
void check_lazy_scalar_names(const Formula& f) {
  static const char* reserved[] = {"N", "M", "D", "E", "K", "X", "Y", "B", "G", "OUT", "DIST", "IDX", "T",
                                   "x", "y", "s_", "c", "i", "j", "d", "e", "k", "f", "int", "float",
                                   "double", "long", "return", "const", "if", "for", "while"};
  for (const auto& n : f.scalar_names()) {
    bool bad = std::find(std::begin(reserved), std::end(reserved), n) != std::end(reserved) ||
               n.starts_with("lz") || n.starts_with("kf") || n.starts_with("KF") || n.starts_with("__") ||
               (n.size() > 1 && n[0] == 't' && std::isdigit(static_cast<unsigned char>(n[1])));
    if (bad)
      throw UsageError("formula '" + f.text() + "': scalar name '" + n +
                       "' is reserved by the kernel: rename it (e.g. 's' or 'sigma')");
  }
}

namespace {

// Unit roundoff of fp32 with a factor 2 of safety for the first-order error analysis.
constexpr double kTieMargin = 2.0 * 0x1p-24;

class LazyReduce final : public Problem, public AlternativeAnswers {
 public:
  LazyReduce(std::string name, const std::string& formula, Reduce r, Scalars trial_values)
      : name_(std::move(name)), f_(Formula::parse(formula)), r_(r), trial_(std::move(trial_values)) {
    check_lazy_scalar_names(f_);
  }
  std::string name() const override { return name_; }
  std::string description() const override {
    return std::string(kReduceNames[static_cast<int>(r_)]) + " over j of " + f_.text() +
           ", X (N,D), Y (M,D)" + (r_ == Reduce::sum ? ", B (M,E)" : "");
  }
  std::vector<std::string> size_names() const override {
    if (r_ == Reduce::sum) return {"N", "M", "D", "E"};
    if (r_ == Reduce::kmin) return {"N", "M", "D", "K"};
    return {"N", "M", "D"};
  }
  Sizes default_sizes() const override {
    Sizes s{{"N", 4096}, {"M", 4096}, {"D", 3}};
    if (r_ == Reduce::sum) s["E"] = 1;
    if (r_ == Reduce::kmin) s["K"] = 10;
    return s;
  }
  std::vector<DType> dtypes() const override { return {DType::fp32}; }
  std::vector<TensorSpec> tensors() const override {
    std::vector<TensorSpec> t{{"X", Role::in}, {"Y", Role::in}};
    if (r_ == Reduce::sum) t.push_back({"B", Role::in});
    if (r_ == Reduce::kmin) t.push_back({"DIST", Role::out});
    t.push_back({r_ == Reduce::argmin || r_ == Reduce::kmin ? "IDX" : "OUT", Role::out});
    return t;
  }
  std::vector<std::string> scalar_names() const override { return f_.scalar_names(); }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    const std::int64_t N = s.at("N"), M = s.at("M"), D = s.at("D");
    if (t == 0) return N * D;
    if (t == 1) return M * D;
    if (r_ == Reduce::sum) return t == 2 ? M * s.at("E") : N * s.at("E");
    if (r_ == Reduce::kmin) return N * s.at("K");
    return N;
  }
  // Each scalar its trial value (1 where the library gives none); user values override.
  Scalars scalars_for_trial(int trial) const override {
    Scalars s;
    for (const auto& n : f_.scalar_names()) {
      const auto it = trial_.find(n + std::to_string(trial % 2));
      s[n] = it != trial_.end() ? it->second : 1.0;
    }
    return s;
  }
  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    if (s.at("M") > (1 << 24))
      throw UsageError("size M=" + std::to_string(s.at("M")) + " is too large: indices are fp32, exact up to 16777216");
    if (s.at("D") > 4096) throw UsageError("size D=" + std::to_string(s.at("D")) + " is above 4096, the kernels' limit");
    if (r_ == Reduce::kmin && (s.at("K") > 64 || s.at("K") > s.at("M")))
      throw UsageError("size K=" + std::to_string(s.at("K")) + " must be at most 64 and at most M");
  }

  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override;
  void accept_alternatives(const Instance& in, const std::vector<std::vector<double>>& got,
                           std::vector<std::vector<double>>& ref) const override;

  // The magnitude carries the whole error scale (see reference()), so the verifier's gamma_n
  // is taken with n = 1.
  double reduction_length(const Sizes&) const override { return 1; }
  // Structured inputs, the library's gauss_sum only: its weights B as a matrix of rows of E
  // (zero rows: points that weigh nothing, identical and one-hot rows, equal weights, alternating
  // signs, subnormal weights, -0.0 weights). near_overflow scales B to max / (4 M): the formula
  // exp(-sqdist/s) is in (0, 1], so a sum over M points stays finite. The points X and Y stay
  // as drawn: they are the formula's arguments, and for a formula in general a pattern can leave
  // its domain (a zero in a log, an overflowing sqdist in exp) or make argmin/kmin ties; a user's
  // formula (lazy_reduce:<reduction>:<formula>) declares nothing, since the bound |f| <= 1 that
  // near_overflow's scale needs is the library formula's, not every formula's.
  //
  // knn and logsumexp (struct8) take the patterns on the points X and Y, as matrices of rows of
  // D: their formulas (sqdist, -sqdist/s) are defined for every point, so no pattern leaves the
  // domain. Zero, identical, one-hot and all-equal points give distance ties (knn accepts any
  // tied index: accept_alternatives) and every distance 0 (logsumexp = log M exactly);
  // near_overflow scales both to sqrt(max / (4 L)), L = 4000 D: each squared difference is at
  // most (2 top)^2, the distance at most D max / L = max / 4000, so -sqdist/s stays finite down
  // to the trials' s = 0.001 and exp of it underflows (the max shift is what keeps logsumexp
  // finite). gauss_sum_grad and user formulas stay undeclared (see the verification docs).
  // A user's sum whose formula is the library's Gaussian (lazy_reduce:sum:exp(-sqdist(x,y)/s))
  // takes gauss_sum's declaration.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override {
    if (r_ == Reduce::sum && is_library_gaussian(f_)) return {-1, -1, s.at("E"), -1};
    if (name_ == "lazy_reduce.knn") return {s.at("D"), s.at("D"), -1, -1};
    if (name_ == "lazy_reduce.logsumexp") return {s.at("D"), s.at("D"), -1};
    return {};
  }
  double near_overflow_length(const Sizes& s) const override {
    if (r_ == Reduce::sum) return static_cast<double>(s.at("M"));
    return 4000.0 * static_cast<double>(s.at("D"));
  }
  // Per pair: D coordinates (a subtraction and an FMA for sqdist) plus the formula's rest,
  // counted as 2 D + 8; the sum's weights 2 E.
  double flops(const Sizes& s) const override {
    const double per = 2.0 * s.at("D") + 8 + (r_ == Reduce::sum ? 2.0 * s.at("E") : 0.0);
    return per * s.at("N") * s.at("M");
  }
  double bytes(const Sizes& s, DType t) const override {
    double e = 0;
    for (std::size_t k = 0; k < tensors().size(); ++k) e += static_cast<double>(tensor_elements(k, s));
    return e * dtype_size(t);
  }
  std::vector<std::string> kernel_specs() const override;

 private:
  // f(x_i, y_j) in double with its error scale.
  Formula::Value pair(const Instance& in, std::int64_t i, std::int64_t j) const {
    const int D = static_cast<int>(in.sizes.at("D"));
    return f_.eval(&in.tensors[0][i * D], &in.tensors[1][j * D], D, in.scalars);
  }
  std::string generated_prefix() const;

  std::string name_;
  Formula f_;
  Reduce r_;
  Scalars trial_;  // "<scalar><trial % 2>" -> value
};

// Error scales (magnitudes), in units of the fp32 roundoff u, so that |kernel - exact| <= u*mag:
//   sum:       sum_j (err_j |b_j| + (M+1) |f_j b_j|)      (each term's error, then any-order sum)
//   logsumexp: sum_j w_j err_j + M + 4, w = softmax(f)    (d log S = sum w_j df_j; the sum's and
//              exp's roundings are relative in S, so absolute in log S)
//   min / the k-th smallest v: a kernel's computed k-th value lies within u*err_j of some f_j
//              whose true value is close to v: the largest err_j among j with
//              f_j - u err_j <= v + u err(v) bounds it.
//   argmin / indices: exact; a different index is accepted by accept_alternatives.
void LazyReduce::reference(const Instance& in, std::vector<std::vector<double>>& out,
                           std::vector<std::vector<double>>& mag) const {
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M");
  const std::int64_t E = r_ == Reduce::sum ? in.sizes.at("E") : 1;
  const std::int64_t K = r_ == Reduce::kmin ? in.sizes.at("K") : 1;
  const std::int64_t width = r_ == Reduce::sum ? E : K;
  std::vector<double> y(static_cast<std::size_t>(N * width)), m(y.size(), 0.0);
  std::vector<double> idx(r_ == Reduce::kmin ? y.size() : 0), idx_mag(idx.size(), 0.0);
  parallel_for(N, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<Formula::Value> f(static_cast<std::size_t>(M));
    std::vector<std::int64_t> order(static_cast<std::size_t>(M));
    for (std::int64_t i = i0; i < i1; ++i) {
      for (std::int64_t j = 0; j < M; ++j) f[j] = pair(in, i, j);
      if (r_ == Reduce::sum) {
        const auto& B = in.tensors[2];
        for (std::int64_t e = 0; e < E; ++e) {
          double s = 0, a = 0;
          for (std::int64_t j = 0; j < M; ++j) {
            const double b = B[j * E + e];
            s += f[j].v * b;
            a += f[j].err * std::fabs(b) + static_cast<double>(M + 1) * std::fabs(f[j].v * b);
            // A product below fp32's normal range rounds to the subnormal grid: up to half of
            // 2^-149 absolute, which is u * 2^-126 (in the magnitude's units of u), not relative.
            if (std::fabs(f[j].v * b) < 0x1p-126) a += 0x1p-126;
          }
          y[i * E + e] = s, m[i * E + e] = 2 * a;
        }
      } else if (r_ == Reduce::logsumexp) {
        double mx = -std::numeric_limits<double>::infinity();
        for (const auto& v : f) mx = std::max(mx, v.v);
        double s = 0, w = 0;
        for (const auto& v : f) s += std::exp(v.v - mx);
        for (const auto& v : f) w += std::exp(v.v - mx) / s * v.err;
        y[i] = mx + std::log(s), m[i] = 2 * (w + static_cast<double>(M) + 4);
      } else {
        // Ascending by value, ties by index: the first minimum, as the kernels keep it.
        for (std::int64_t j = 0; j < M; ++j) order[j] = j;
        const std::int64_t take = std::min<std::int64_t>(K, M);
        std::partial_sort(order.begin(), order.begin() + take, order.end(), [&](auto a, auto b) {
          return f[a].v < f[b].v || (f[a].v == f[b].v && a < b);
        });
        for (std::int64_t k = 0; k < take; ++k) {
          const auto& v = f[order[k]];
          double err = v.err;
          for (std::int64_t j = 0; j < M; ++j)
            if (f[j].v - kTieMargin * f[j].err <= v.v + kTieMargin * v.err) err = std::max(err, f[j].err);
          y[i * width + k] = r_ == Reduce::argmin ? static_cast<double>(order[k]) : v.v;
          m[i * width + k] = r_ == Reduce::argmin ? 0.0 : 2 * err;
          if (r_ == Reduce::kmin) idx[i * K + k] = static_cast<double>(order[k]);
        }
      }
    }
  });
  if (r_ == Reduce::kmin) {
    out = tensor_list(std::move(y), std::move(idx));
    mag = tensor_list(std::move(m), std::move(idx_mag));
  } else {
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }
}

// A kernel's index is right where its pair's exact value lies within the bound of the reference's
// value at that rank (a tie within rounding), and a row names no index twice.
void LazyReduce::accept_alternatives(const Instance& in, const std::vector<std::vector<double>>& got,
                                     std::vector<std::vector<double>>& ref) const {
  const std::int64_t N = in.sizes.at("N"), M = in.sizes.at("M");
  const std::int64_t K = r_ == Reduce::kmin ? in.sizes.at("K") : 1;
  if (r_ != Reduce::argmin && r_ != Reduce::kmin) return;  // values only: one right answer
  const std::size_t it = r_ == Reduce::kmin ? 1 : 0;  // the index tensor
  if (got.size() <= it) return;
  std::vector<double> dist_ref;
  if (r_ == Reduce::argmin) {
    dist_ref.resize(static_cast<std::size_t>(N));
    for (std::int64_t i = 0; i < N; ++i) dist_ref[i] = pair(in, i, static_cast<std::int64_t>(ref[0][i])).v;
  }
  for (std::int64_t i = 0; i < N; ++i) {
    // A row with an index out of range or named twice is compared as it is (and fails).
    std::vector<double> row(got[it].begin() + i * K, got[it].begin() + (i + 1) * K);
    const bool valid = std::all_of(row.begin(), row.end(), [&](double g) {
      return g >= 0 && g < static_cast<double>(M) && g == std::floor(g);
    });
    std::sort(row.begin(), row.end());
    if (!valid || std::adjacent_find(row.begin(), row.end()) != row.end()) continue;
    for (std::int64_t k = 0; k < K; ++k) {
      const double g = got[it][i * K + k];
      const auto j = static_cast<std::int64_t>(g);
      if (g == ref[it][i * K + k]) continue;
      const auto v = pair(in, i, j);
      const double want = r_ == Reduce::kmin ? ref[0][i * K + k] : dist_ref[i];
      const auto w = pair(in, i, static_cast<std::int64_t>(ref[it][i * K + k]));
      if (std::fabs(v.v - want) <= kTieMargin * (v.err + w.err)) ref[it][i * K + k] = g;
    }
  }
}

// The formula and reduction as #defines in front of the family's template source.
std::string LazyReduce::generated_prefix() const {
  std::string p = "// Generated by kforge from formula '" + f_.text() + "', reduction " +
                  kReduceNames[static_cast<int>(r_)] + ".\n";
  p += fmt::format("#define LZ_REDUCE {}\n", static_cast<int>(r_));
  return p + formula_defines(f_);
}

// The family's specs with the generated source, written once per formula under the cache
// folder (the worker subprocess finds the same files by the same problem name).
std::vector<std::string> LazyReduce::kernel_specs() const {
  return write_generated_specs("lazy_reduce", name_, generated_prefix());
}

}  // namespace

std::string formula_defines(const Formula& f) {
  const auto& t = f.terms();
  std::string p = fmt::format("#define LZ_NTERMS {}\n", t.size());
  for (std::size_t k = 0; k < 2; ++k)
    p += fmt::format("#define LZ_TERM{} {}\n", k, k < t.size() && t[k] == Formula::Term::dot ? 1 : 0);
  p += "#define LZ_F(t0, t1) (" + f.emit_c() + ")\n";
  std::string params;
  for (const auto& n : f.scalar_names()) params += ", float " + n;
  return p + "#define LZ_SCALAR_PARAMS " + params + "\n";
}

std::vector<std::string> write_generated_specs(const std::string& stem, const std::string& name,
                                               const std::string& prefix,
                                               const std::function<void(nlohmann::json&)>& adjust) {
  // Keyed by everything written: the prefix and the family's specs and templates.
  std::string key = prefix + name;
  for (const char* f : {"_cpu.json", "_opencl.json", "_cuda.json", ".cpp", ".cl", ".cu"})
    key += embedded_file("kernels/lazy_reduce/" + stem + f);
  const auto dir = cache_dir("lazy_reduce") / fmt::format("{:016x}", hash64(key));
  std::filesystem::create_directories(dir);
  std::vector<std::string> paths;
  for (const char* lang : {"cpu", "opencl", "cuda"}) {
    auto spec = nlohmann::json::parse(embedded_file("kernels/lazy_reduce/" + stem + "_" + lang + ".json"));
    spec["problem"] = name;
    spec["name"] = name + "." + lang;
    if (adjust) adjust(spec);
    const std::string source = spec["source"];
    const auto spec_path = dir / (stem + "_" + lang + ".json");
    if (!std::filesystem::exists(spec_path)) {
      write_file_atomic(dir / source, prefix + embedded_file("kernels/lazy_reduce/" + source));
      write_file_atomic(spec_path, spec.dump(2));
    }
    paths.push_back(spec_path.string());
  }
  return paths;
}

std::shared_ptr<Problem> make_lazy_reduce_problem(const std::string& which) {
  if (which == "gauss_sum")
    return std::make_shared<LazyReduce>("lazy_reduce.gauss_sum", "exp(-sqdist(x,y)/s)", Reduce::sum,
                                        Scalars{{"s0", 1.0}, {"s1", 0.25}});
  if (which == "gauss_sum_grad")  // its gradient in x (kernels/lazy_reduce/grad_problem.cpp)
    return make_lazy_grad_problem("lazy_reduce.gauss_sum_grad", "exp(-sqdist(x,y)/s)", 'x', "sum",
                                  Scalars{{"s0", 1.0}, {"s1", 0.25}});
  if (which == "logsumexp_grad")  // logsumexp's gradient in x; s = 0.001: a softmax without the shift is 0/0
    return make_lazy_grad_problem("lazy_reduce.logsumexp_grad", "-sqdist(x,y)/s", 'x', "logsumexp",
                                  Scalars{{"s0", 1.0}, {"s1", 0.001}});
  if (which == "logsumexp")  // s = 0.001: exp underflows everywhere without the max shift
    return std::make_shared<LazyReduce>("lazy_reduce.logsumexp", "-sqdist(x,y)/s", Reduce::logsumexp,
                                        Scalars{{"s0", 1.0}, {"s1", 0.001}});
  return std::make_shared<LazyReduce>("lazy_reduce.knn", "sqdist(x,y)", Reduce::kmin, Scalars{});
}

// "lazy_reduce:<reduction>:<formula>", e.g. "lazy_reduce:sum:exp(-sqdist(x,y)/s)"; one object
// per name, so its generated kernels are written once.
std::shared_ptr<Problem> make_lazy_reduce_formula_problem(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Problem>> made;
  std::lock_guard lock(mutex);
  if (auto it = made.find(name); it != made.end()) return it->second;
  // "lazy_reduce:grad_<x|y|b>:<sum|logsumexp|min|kmin>:<formula>": the reduction's gradient.
  if (name.compare(12, 5, "grad_") == 0) {
    const std::string wrt = name.substr(17, name.find(':', 17) - 17);
    const auto colon = name.find(':', 19);
    const std::string reduce = colon == std::string::npos ? "" : name.substr(19, colon - 19);
    if ((wrt != "x" && wrt != "y" && wrt != "b") || name.size() < 19 || name[18] != ':' ||
        (reduce != "sum" && reduce != "logsumexp" && reduce != "min" && reduce != "kmin"))
      throw UsageError("problem '" + name + "': write lazy_reduce:grad_<x|y|b>:<sum|logsumexp|min|kmin>:<formula> "
                       "(argmin's indices have no gradient; only the sum has b), e.g. "
                       "lazy_reduce:grad_x:sum:exp(-sqdist(x,y)/s)");
    const std::string formula = name.substr(colon + 1);
    auto p = reduce == "min" || reduce == "kmin" ? make_lazy_min_grad_problem(name, formula, wrt[0], reduce == "kmin")
                                                 : make_lazy_grad_problem(name, formula, wrt[0], reduce, Scalars{});
    made[name] = p;
    return p;
  }
  const auto colon = name.find(':', 12);
  if (colon == std::string::npos)
    throw UsageError("problem '" + name + "': write lazy_reduce:<reduction>:<formula>, e.g. "
                     "lazy_reduce:sum:exp(-sqdist(x,y)/s)");
  auto p = std::make_shared<LazyReduce>(name, name.substr(colon + 1),
                                        parse_reduce(name.substr(12, colon - 12)), Scalars{});
  made[name] = p;
  return p;
}

}  // namespace kforge
