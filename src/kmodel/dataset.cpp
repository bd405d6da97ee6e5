// Reading a labelled CSV file for the kernel models: numbers only, the label last.
#include <charconv>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kforge/error.hpp"
#include "kforge/kmodel.hpp"

namespace kforge::kmodel {
namespace {

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    std::string f = line.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const auto first = f.find_first_not_of(" \t\r"), last = f.find_last_not_of(" \t\r");
    out.push_back(first == std::string::npos ? "" : f.substr(first, last - first + 1));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

bool parse_number(const std::string& s, double& v) {
  if (s.empty()) return false;
  const char* begin = s.data() + (s[0] == '+' ? 1 : 0);
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size() && std::isfinite(v);  // nan, inf: not data
}

}  // namespace

void check_labels(const Eigen::VectorXd& y, const std::string& what) {
  int pos = 0, neg = 0;
  for (Eigen::Index i = 0; i < y.size(); ++i) {
    if (y[i] == 1) ++pos;
    else if (y[i] == -1) ++neg;
    else throw UsageError(fmt::format("{}: label {} in row {} is not -1/+1 or 0/1", what, y[i], i + 1));
  }
  if (pos == 0 || neg == 0)
    throw UsageError(fmt::format("{}: only one class ({} rows, all labelled {}); a classifier needs both "
                                 "classes, -1/+1 or 0/1, in the last column", what, y.size(), pos ? "+1" : "-1"));
}

namespace {

// The numbers of a CSV file, every row of one width; `option` names the file in errors.
std::vector<std::vector<double>> read_table(const std::string& path, const std::string& option) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{} {}: cannot open the file (a CSV file of numbers)", option, path));
  std::vector<std::vector<double>> rows;
  std::string line;
  std::size_t width = 0;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = split_fields(line);
    std::vector<double> row(fields.size());
    for (std::size_t j = 0; j < fields.size(); ++j) {
      if (parse_number(fields[j], row[j])) continue;
      if (rows.empty() && j == 0) { row.clear(); break; }  // a header line
      throw UsageError(fmt::format("{} {}: line {}, field {}: '{}' is not a finite number", option, path, line_no,
                                   j + 1, fields[j]));
    }
    if (row.empty()) continue;
    if (width == 0) width = row.size();
    if (row.size() != width)
      throw UsageError(fmt::format("{} {}: line {} has {} fields, the first row {}; every row needs the same "
                                   "columns", option, path, line_no, row.size(), width));
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw UsageError(fmt::format("{} {}: no rows of numbers", option, path));
  return rows;
}

// The last column as labels: 0/1 become -1/+1 when no -1 appears.
Eigen::VectorXd labels_of(const std::vector<std::vector<double>>& rows) {
  bool zero_one = true;
  for (const auto& r : rows) zero_one = zero_one && (r.back() == 0 || r.back() == 1);
  Eigen::VectorXd y(static_cast<Eigen::Index>(rows.size()));
  for (std::size_t i = 0; i < rows.size(); ++i) y[i] = zero_one && rows[i].back() == 0 ? -1 : rows[i].back();
  return y;
}

Eigen::MatrixXd features_of(const std::vector<std::vector<double>>& rows, std::size_t columns) {
  Eigen::MatrixXd x(static_cast<Eigen::Index>(rows.size()), static_cast<Eigen::Index>(columns));
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (std::size_t j = 0; j < columns; ++j) x(i, j) = rows[i][j];
  return x;
}

}  // namespace

Dataset read_csv(const std::string& path) {
  const auto rows = read_table(path, "--data");
  const std::size_t width = rows.front().size();
  if (width < 2) throw UsageError(fmt::format("--data {}: one column; need features and the label last", path));
  Dataset d{features_of(rows, width - 1), labels_of(rows)};
  check_labels(d.y, "--data " + path);
  return d;
}

Eigen::MatrixXd read_rows_to_score(const std::string& path, Eigen::Index features, Eigen::VectorXd* labels) {
  const auto rows = read_table(path, "--data");
  const auto width = static_cast<Eigen::Index>(rows.front().size());
  if (width != features && width != features + 1)
    throw UsageError(fmt::format("--data {}: {} columns; the model has {} features: give {} (features) or {} "
                                 "(features, then the label)", path, width, features, features, features + 1));
  if (width == features + 1 && labels) {
    *labels = labels_of(rows);
    for (Eigen::Index i = 0; i < labels->size(); ++i)
      if ((*labels)[i] != 1 && (*labels)[i] != -1)
        throw UsageError(fmt::format("--data {}: label {} in row {} is not -1/+1 or 0/1", path, (*labels)[i], i + 1));
  }
  return features_of(rows, static_cast<std::size_t>(features));
}

}  // namespace kforge::kmodel
