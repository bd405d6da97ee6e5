// reduce.<op>_axis<a>: sum, max or argmax of X (M,N), row-major, along one axis, as numpy's
// np.<op>(X, axis=a): axis 1 reduces each row (Y has M elements), axis 0 each column (Y has N).
// Any M, N >= 1. sum and max: fp32, or fp16/bf16 storage with fp32 accumulation. argmax: fp32
// only; Y holds the index of the first maximum as an fp32 value, exact below 2^24, so the
// reduced length may not exceed 2^24.
#include <algorithm>
#include <cmath>

#include "kforge/error.hpp"
#include "kforge/problem.hpp"
#include "kforge/util.hpp"

namespace kforge {
namespace {

enum class Op { sum, max, argmax };

class Reduce final : public Problem {
 public:
  Reduce(Op op, int axis) : op_(op), axis_(axis) {}
  std::string name() const override {
    const char* op = op_ == Op::sum ? "sum" : op_ == Op::max ? "max" : "argmax";
    return std::string("reduce.") + op + "_axis" + std::to_string(axis_);
  }
  std::string description() const override {
    const char* op = op_ == Op::sum ? "sum" : op_ == Op::max ? "max" : "index of the first max";
    return std::string(op) + (axis_ == 1 ? " of each row: Y (M)" : " of each column: Y (N)") +
           " from X (M,N)";
  }
  std::vector<std::string> size_names() const override { return {"M", "N"}; }
  Sizes default_sizes() const override { return {{"M", 2048}, {"N", 8192}}; }
  std::vector<DType> dtypes() const override {
    if (op_ == Op::argmax) return {DType::fp32};
    return {DType::fp32, DType::fp16, DType::bf16};
  }
  std::vector<TensorSpec> tensors() const override { return {{"X", Role::in}, {"Y", Role::out}}; }
  std::vector<std::string> scalar_names() const override { return {}; }
  std::int64_t tensor_elements(std::size_t t, const Sizes& s) const override {
    if (t == 0) return s.at("M") * s.at("N");
    return axis_ == 1 ? s.at("M") : s.at("N");
  }
  std::map<std::string, double> scalars_for_trial(int) const override { return {}; }
  // X as rows of N, whichever axis is reduced (all-equal rows: argmax must take the first of
  // the ties, as numpy does); Y is an output.
  std::vector<std::int64_t> structured_rows(const Sizes& s) const override { return {s.at("N"), -1}; }

  void check_sizes(const Sizes& s) const override {
    Problem::check_sizes(s);
    const char* reduced = axis_ == 1 ? "N" : "M";
    if (op_ == Op::argmax && s.at(reduced) > (1 << 24))
      throw UsageError(std::string("size ") + reduced + "=" + std::to_string(s.at(reduced)) +
                       " is too long for argmax: indices are fp32 values, exact up to 16777216");
  }

  // The index_width check: X (M,N) with M*N = 2^31 + 2^15 elements, so row 2^16 starts at flat
  // index 2^31 where a 32-bit i*N + j wraps; the last two rows are live. Axis 1: a zero row's
  // sum, max and argmax are all 0, the promise the check needs. Axis 0, the sum only: the zero
  // rows add exact zeros to every column, so Y (N, which does not grow) is the live rows' column
  // sums. The column max and argmax have none: zero rows change a column's max (when its live
  // values are negative) and shift its argmax by the rows before, but predictably: each column's
  // result is the one of a single zero row followed by the live rows, argmax's index past that
  // row moved by the M - 3 zero rows between (wide_index_reference; a tie with the zero rows is
  // won by row 0, numpy's first maximum).
  WideIndexShape wide_index_shape(const Sizes& requested) const override {
    (void)requested;
    return {{{"M", (1 << 16) + 1}, {"N", 1 << 15}}, {{"M", 2}, {"N", 1 << 15}}};
  }
  bool wide_index_reference(const Instance& live, const Sizes& wide, std::vector<std::vector<double>>& out,
                            std::vector<std::vector<double>>& mag) const override {
    if (axis_ != 0 || op_ == Op::sum) return false;  // the zero rows' promise holds
    const std::int64_t rows = live.sizes.at("M"), N = live.sizes.at("N");
    Instance one = live;  // a zero row, then the live rows
    one.sizes["M"] = rows + 1;
    one.tensors[0].assign(static_cast<std::size_t>(N), 0.0);
    one.tensors[0].insert(one.tensors[0].end(), live.tensors[0].begin(), live.tensors[0].end());
    reference(one, out, mag);
    if (op_ == Op::argmax)
      for (double& y : out[0])
        if (y >= 1) y += static_cast<double>(wide.at("M") - rows - 1);
    return true;
  }

  // sum: any order of n additions errs by at most gamma_n * sum|x|; max and argmax are exact.
  void reference(const Instance& in, std::vector<std::vector<double>>& out,
                 std::vector<std::vector<double>>& mag) const override {
    const std::int64_t M = in.sizes.at("M"), N = in.sizes.at("N");
    const auto& X = in.tensors[0];
    const std::int64_t outer = axis_ == 1 ? M : N, len = axis_ == 1 ? N : M;
    const std::int64_t step = axis_ == 1 ? 1 : N;  // between reduced elements
    std::vector<double> y(outer), m(outer, 0.0);
    parallel_for(outer, [&](std::int64_t o0, std::int64_t o1) {
      for (std::int64_t o = o0; o < o1; ++o) {
        const double* x = &X[axis_ == 1 ? o * N : o];
        double s = 0, a = 0, best = x[0];
        std::int64_t at = 0;
        for (std::int64_t k = 0; k < len; ++k) {
          const double v = x[k * step];
          s += v;
          a += std::fabs(v);
          if (v > best) best = v, at = k;
        }
        if (op_ == Op::sum) y[o] = s, m[o] = a;
        else if (op_ == Op::max) y[o] = best;
        else y[o] = static_cast<double>(at);
      }
    });
    out = tensor_list(std::move(y));
    mag = tensor_list(std::move(m));
  }

  double reduction_length(const Sizes& s) const override {
    return static_cast<double>(axis_ == 1 ? s.at("N") : s.at("M"));
  }
  double flops(const Sizes& s) const override { return 1.0 * s.at("M") * s.at("N"); }
  // X read once, Y written once.
  double bytes(const Sizes& s, DType t) const override {
    return (1.0 * s.at("M") * s.at("N") + (axis_ == 1 ? s.at("M") : s.at("N"))) * dtype_size(t);
  }

  std::vector<std::string> kernel_specs() const override {
    const std::string base = "kernels/reduce/" + name().substr(7);
    return {base + "_cpu.json", base + "_opencl.json", base + "_cuda.json"};
  }

 private:
  Op op_;
  int axis_;
};

}  // namespace

// `op`: sum, max or argmax; `axis`: 0 or 1.
std::shared_ptr<Problem> make_reduce_problem(const std::string& op, int axis) {
  const Op o = op == "sum" ? Op::sum : op == "max" ? Op::max : Op::argmax;
  return std::make_shared<Reduce>(o, axis);
}

}  // namespace kforge
