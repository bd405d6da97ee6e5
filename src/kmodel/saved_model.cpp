// A fitted kernel model as a file: written by `kforge kmodel svm|logreg --save`, read back by
// `kforge kmodel predict`. The training rows travel with the coefficients (the model is
// f(x) = sum_j alpha_j k(x, x_j) + b).
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

namespace kforge::kmodel {
namespace {

constexpr const char* kFormat = "kforge-kmodel-1";

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("--model {}: {} (a file written by `kforge kmodel svm|logreg --save`)", path, why));
}

double finite_number(const nlohmann::json& j, const char* key, const std::string& path) {
  if (!j.contains(key) || !j[key].is_number()) bad(path, fmt::format("no number '{}'", key));
  const double v = j[key].get<double>();
  if (!std::isfinite(v)) bad(path, fmt::format("'{}' is not finite", key));
  return v;
}

}  // namespace

nlohmann::json SavedModel::to_json() const {
  std::vector<std::vector<double>> rows(static_cast<std::size_t>(x.rows()), std::vector<double>(static_cast<std::size_t>(x.cols())));
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) rows[i][j] = x(i, j);
  return {{"format", kFormat},
          {"model", model_name(loss)},
          {"loss", loss_name(loss)},
          {"kernel", {{"kind", kernel_kind_name(kernel.kind)}, {"gamma", kernel.gamma}, {"degree", kernel.degree}, {"coef0", kernel.coef0}}},
          {"lambda", lambda},
          {"delta", delta},
          {"b", fit.b},
          {"alpha", std::vector<double>(fit.alpha.data(), fit.alpha.data() + fit.alpha.size())},
          {"x", rows}};
}

SavedModel load_model(const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot open the file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    bad(path, fmt::format("not JSON ({})", e.what()));
  }
  if (!j.is_object() || j.value("format", "") != kFormat)
    bad(path, fmt::format("format is not \"{}\"", kFormat));
  SavedModel m;
  try {
    // "loss" since the hinge became svm's default; a file without it is from before, when svm
    // meant the Huberized hinge (the decision function is read the same way either way).
    const std::string model = j.value("model", "");
    m.loss = loss_of_model(model, j.contains("loss") ? j.value("loss", "") : model == "svm" ? "huberized-hinge" : "");
    m.kernel.kind = parse_kernel_kind(j.at("kernel").value("kind", ""));
  } catch (const std::exception& e) {
    bad(path, e.what());
  }
  m.kernel.gamma = finite_number(j["kernel"], "gamma", path);
  if (m.kernel.kind == KernelFunction::Kind::poly) {
    m.kernel.coef0 = finite_number(j["kernel"], "coef0", path);
    const double degree = finite_number(j["kernel"], "degree", path);
    if (degree < 1 || degree > 32 || degree != std::floor(degree)) bad(path, "the kernel's degree is not an integer 1..32");
    m.kernel.degree = static_cast<int>(degree);
  }
  m.lambda = finite_number(j, "lambda", path);
  m.delta = finite_number(j, "delta", path);
  m.fit.b = finite_number(j, "b", path);
  m.fit.lambda = m.lambda;
  if (!j.contains("alpha") || !j["alpha"].is_array() || !j.contains("x") || !j["x"].is_array())
    bad(path, "no arrays 'alpha' and 'x'");
  const auto& alpha = j["alpha"];
  const auto& rows = j["x"];
  if (alpha.empty() || alpha.size() != rows.size())
    bad(path, fmt::format("{} coefficients for {} training rows", alpha.size(), rows.size()));
  const std::size_t d = rows[0].is_array() ? rows[0].size() : 0;
  if (d == 0) bad(path, "the training rows have no features");
  m.fit.alpha.resize(static_cast<Eigen::Index>(alpha.size()));
  m.x.resize(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(d));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!alpha[i].is_number() || !std::isfinite(alpha[i].get<double>())) bad(path, fmt::format("alpha[{}] is not a finite number", i));
    m.fit.alpha[static_cast<Eigen::Index>(i)] = alpha[i].get<double>();
    if (!rows[i].is_array() || rows[i].size() != d) bad(path, fmt::format("training row {} does not have {} features", i, d));
    for (std::size_t k = 0; k < d; ++k) {
      if (!rows[i][k].is_number() || !std::isfinite(rows[i][k].get<double>()))
        bad(path, fmt::format("training row {}, feature {} is not a finite number", i, k));
      m.x(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(k)) = rows[i][k].get<double>();
    }
  }
  return m;
}

}  // namespace kforge::kmodel
