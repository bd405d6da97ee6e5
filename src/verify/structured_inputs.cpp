// The structured input patterns of structured_inputs.hpp.
#include "verify/structured_inputs.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kforge/dtype.hpp"
#include "kforge/rng.hpp"
#include "kforge/structured_reconditioning.hpp"

namespace kforge {

namespace {

// The largest finite value and the smallest normal of a float dtype.
double largest(DType t) {
  switch (t) {
    case DType::fp64: return std::numeric_limits<double>::max();
    case DType::fp16: return 65504.0;
    default: return static_cast<double>(std::numeric_limits<float>::max());  // fp32, bf16
  }
}
int min_normal_exponent(DType t) {  // the smallest normal is 2^this
  switch (t) {
    case DType::fp64: return -1022;
    case DType::fp16: return -14;
    default: return -126;  // fp32, bf16
  }
}

// Every element scaled so that the largest magnitude is `top`.
void scale_to(std::vector<double>& v, double top) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  if (m == 0) return;
  for (double& x : v) x = x / m * top;
}

}  // namespace

std::string_view structure_name(Structure s) {
  switch (s) {
    case Structure::zero_rows: return "zero_rows";
    case Structure::zero_columns: return "zero_columns";
    case Structure::identical_rows: return "identical_rows";
    case Structure::one_hot_rows: return "one_hot_rows";
    case Structure::all_equal: return "all_equal";
    case Structure::alternating_signs: return "alternating_signs";
    case Structure::near_overflow: return "near_overflow";
    case Structure::subnormal_inputs: return "subnormal_inputs";
    case Structure::subnormal_products: return "subnormal_products";
    case Structure::negative_zero: return "negative_zero";
  }
  return "?";
}

std::vector<Structure> structures_for(const Problem& p, const Sizes& s) {
  const auto rows = p.structured_rows(s);
  bool any = false, matrix = false;
  for (auto r : rows) any = any || r >= 0, matrix = matrix || r > 0;
  if (!any) return {};
  std::vector<Structure> out;
  if (matrix)
    out = {Structure::zero_rows, Structure::zero_columns, Structure::identical_rows, Structure::one_hot_rows};
  for (auto st : {Structure::all_equal, Structure::alternating_signs, Structure::near_overflow,
                  Structure::subnormal_inputs, Structure::subnormal_products, Structure::negative_zero})
    out.push_back(st);
  return out;
}

void apply_structure(const Problem& p, Structure st, Instance& inst, std::uint64_t seed) {
  const auto rows = p.structured_rows(inst.sizes);
  const auto specs = p.tensors();
  std::vector<std::size_t> reshaped;
  for (std::size_t t = 0; t < rows.size() && t < inst.tensors.size(); ++t)
    if (rows[t] >= 0 && !specs[t].storage) reshaped.push_back(t);  // integer tensors (indices) never
  if (reshaped.empty() || !is_float(inst.dtype)) return;
  // Near overflow: the exact sum of a reduction's products reaches max/4 when every scaled
  // tensor is at most (max / (4 L))^(1/n), L the longest sum a correct kernel forms and n the
  // tensors scaled, so the exact result and every partial sum stay finite in the dtype.
  const double length = std::max(1.0, p.near_overflow_length(inst.sizes));
  std::size_t scaled = 0;
  for (std::size_t t : reshaped) scaled += p.near_overflow_scales(t) ? 1 : 0;
  const double near_top =
      std::pow(largest(inst.dtype) / (4 * length), 1.0 / static_cast<double>(std::max<std::size_t>(scaled, 1)));
  // Subnormal products: each of the n factors 2^(e/n) with 2^e four binades below the normal range.
  const double product_factor =
      std::ldexp(1.0, (min_normal_exponent(inst.dtype) - 4) / static_cast<int>(reshaped.size()));

  for (std::size_t k = 0; k < reshaped.size(); ++k) {
    const std::size_t t = reshaped[k];
    auto& v = inst.tensors[t];
    const auto n = static_cast<std::int64_t>(v.size());
    const std::int64_t len = rows[t] > 0 ? rows[t] : n;  // element-wise: one long row
    const std::int64_t row_count = len > 0 ? n / len : 0;
    switch (st) {
      case Structure::zero_rows:
      case Structure::negative_zero: {
        const double zero = st == Structure::negative_zero ? -0.0 : 0.0;
        for (std::int64_t r = 0; r < row_count; r += 3) std::fill_n(v.begin() + r * len, len, zero);
        if (st == Structure::negative_zero)
          for (std::int64_t i = 0; i < n; i += 5) v[static_cast<std::size_t>(i)] = -0.0;
        break;
      }
      case Structure::zero_columns:
        for (std::int64_t r = 0; r < row_count; ++r)
          for (std::int64_t c = 0; c < len; c += 3) v[static_cast<std::size_t>(r * len + c)] = 0;
        break;
      case Structure::identical_rows:
        for (std::int64_t r = 1; r < row_count; ++r) std::copy_n(v.begin(), len, v.begin() + r * len);
        break;
      case Structure::one_hot_rows:
        std::fill(v.begin(), v.end(), 0.0);
        for (std::int64_t r = 0; r < row_count; ++r)
          v[static_cast<std::size_t>(r * len + static_cast<std::int64_t>(random_bits(seed, 0x0e + t, r) %
                                                                          static_cast<std::uint64_t>(len)))] = 1;
        break;
      case Structure::all_equal:
        std::fill(v.begin(), v.end(), 0.75);
        break;
      case Structure::alternating_signs:
        for (std::int64_t i = 0; i < n; ++i) v[i] = (i % 2 ? -1 : 1) * std::fabs(v[i]);
        break;
      case Structure::near_overflow:
        if (p.near_overflow_scales(t)) scale_to(v, near_top);
        break;
      case Structure::subnormal_inputs:
        // The first tensor below the normal range, the others normal: products subnormal too.
        if (k == 0) scale_to(v, std::ldexp(1.0, min_normal_exponent(inst.dtype) - 2));
        break;
      case Structure::subnormal_products:
        scale_to(v, product_factor);
        break;
    }
    round_to(inst.dtype, v);
  }
  if (const auto* r = dynamic_cast<const StructuredReconditioning*>(&p)) r->recondition_structured(inst);
}

}  // namespace kforge
