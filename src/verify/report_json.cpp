// VerifyReport as JSON: the `verify` object of every result, read back from the worker.
#include <limits>

#include <nlohmann/json.hpp>

#include "kforge/verify.hpp"

namespace kforge {
namespace {

// JSON has no NaN: nlohmann writes it as null, and null reads back as NaN here.
double number_or_nan(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

nlohmann::json VerifyReport::to_json() const {
  nlohmann::json checks_json = nlohmann::json::array();
  for (const auto& c : checks) checks_json.push_back({{"name", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  nlohmann::json j = {{"passed", passed},
                      {"failure", failure},
                      {"failed_check", failed_check},
                      {"element_check", element_check},
                      {"seed", seed},
                      {"trials", trials_run},
                      {"shapes_tried", shapes_tried},
                      {"shapes_unclaimed", shapes_unclaimed},
                      {"checks", checks_json},
                      {"worst_distribution", worst_distribution},
                      {"elements", worst.elements},
                      {"bad_elements", worst.bad_elements},
                      {"unwritten", worst.unwritten},
                      {"non_finite", worst.non_finite},
                      {"max_abs_error", worst.max_abs_error},
                      {"max_rel_error", worst.max_rel_error},
                      {"mean_abs_error", worst.mean_abs_error},
                      {"mean_rel_error", worst.mean_rel_error},
                      {"rel_frobenius_error", worst.rel_frobenius_error},
                      {"max_error_over_bound", worst.max_bound_ratio},
                      {"ulp_p50", worst.ulp_p50},
                      {"ulp_p90", worst.ulp_p90},
                      {"ulp_p99", worst.ulp_p99}};
  if (!passed) j["failed_sizes"] = failed_sizes;
  if (worst.first_bad.index >= 0)
    j["first_bad"] = {{"tensor", worst.first_bad.tensor}, {"index", worst.first_bad.index},
                      {"got", worst.first_bad.got}, {"expected", worst.first_bad.expected},
                      {"bound", worst.first_bad.bound}};
  return j;
}

VerifyReport VerifyReport::from_json(const nlohmann::json& v) {
  VerifyReport r;
  r.passed = v.at("passed");
  r.failure = v.at("failure");
  r.failed_check = v.value("failed_check", "");
  r.element_check = v.value("element_check", "");
  r.seed = v.value("seed", std::uint64_t{0});
  r.trials_run = v.at("trials");
  r.shapes_tried = v.value("shapes_tried", std::vector<Sizes>{});
  r.shapes_unclaimed = v.value("shapes_unclaimed", 0);
  for (const auto& c : v.value("checks", nlohmann::json::array()))
    r.checks.push_back({c.at("name"), c.at("passed"), c.at("detail")});
  if (v.contains("failed_sizes")) r.failed_sizes = v.at("failed_sizes").get<Sizes>();
  r.worst_distribution = v.at("worst_distribution");
  Comparison& w = r.worst;
  w.passed = r.passed;
  w.elements = v.at("elements");
  w.bad_elements = v.at("bad_elements");
  w.unwritten = v.at("unwritten");
  w.non_finite = v.at("non_finite");
  w.max_abs_error = v.at("max_abs_error");
  w.max_rel_error = v.at("max_rel_error");
  w.mean_abs_error = v.value("mean_abs_error", 0.0);
  w.mean_rel_error = v.value("mean_rel_error", 0.0);
  w.rel_frobenius_error = v.at("rel_frobenius_error");
  w.max_bound_ratio = v.at("max_error_over_bound");
  w.ulp_p50 = v.value("ulp_p50", 0.0);
  w.ulp_p90 = v.value("ulp_p90", 0.0);
  w.ulp_p99 = v.value("ulp_p99", 0.0);
  if (v.contains("first_bad")) {
    const auto& b = v.at("first_bad");
    w.first_bad = {b.at("tensor"), b.at("index"), number_or_nan(b.at("got")), number_or_nan(b.at("expected")),
                   number_or_nan(b.at("bound"))};
  }
  return r;
}

}  // namespace kforge
