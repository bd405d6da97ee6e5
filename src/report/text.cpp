// Text helpers for the report writers, and writing the report's files.
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "kforge/report.hpp"
#include "kforge/util.hpp"

namespace kforge {

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string format_si(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return "0";
  static const char* kPrefix[] = {"p", "n", "µ", "m", "", "k", "M", "G", "T", "P"};
  int e = static_cast<int>(std::floor(std::log10(std::fabs(v)) / 3));
  e = std::clamp(e, -4, 5);
  const double scaled = v / std::pow(1000.0, e);
  const int before = scaled >= 100 ? 3 : scaled >= 10 ? 2 : 1;
  return fmt::format("{:.{}f}{}", scaled, std::max(0, digits - before), kPrefix[e + 4]);
}

void write_report(const ReportData& d, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::filesystem::path root(dir);
  write_file_atomic(root / "roofline.svg", roofline_svg(d));
  write_file_atomic(root / "report.html", report_html(d));
  write_file_atomic(root / "report.md", report_markdown(d, "roofline.svg"));
}

}  // namespace kforge
