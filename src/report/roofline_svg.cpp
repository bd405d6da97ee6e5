// The roofline plot as SVG: log-log axes (arithmetic intensity in FLOP/byte against GFLOP/s),
// per backend a bandwidth slope (DRAM solid, last-level cache dashed) and a compute roof per
// dtype, and one labelled point per result (class "point", its numbers in a <title>).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kforge/report.hpp"

namespace kforge {
namespace {

constexpr double kWidth = 760, kHeight = 500;
constexpr double kLeft = 80, kRight = 150, kTop = 30, kBottom = 60;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"};

struct Axes {
  double x0, x1, y0, y1;  // decades (log10) shown
  [[nodiscard]] double x(double ai) const {
    return kLeft + (std::log10(ai) - x0) / (x1 - x0) * (kWidth - kLeft - kRight);
  }
  [[nodiscard]] double y(double gflops) const {
    return kHeight - kBottom - (std::log10(gflops) - y0) / (y1 - y0) * (kHeight - kTop - kBottom);
  }
};

Axes fit(const ReportData& d) {
  double ai_lo = 1e30, ai_hi = 0, g_lo = 1e30, g_hi = 0;
  auto see_x = [&](double v) {
    if (v > 0) ai_lo = std::min(ai_lo, v), ai_hi = std::max(ai_hi, v);
  };
  auto see_y = [&](double v) {
    if (v > 0) g_lo = std::min(g_lo, v), g_hi = std::max(g_hi, v);
  };
  for (const auto& p : d.points) see_x(p.arithmetic_intensity), see_y(p.gflops);
  for (const auto& r : d.roofs)
    for (const auto& [t, peak] : r.peaks_GFLOPs) {
      see_y(peak);
      if (r.dram_GBs > 0) see_x(peak / r.dram_GBs);  // the ridge points
    }
  if (ai_hi == 0) ai_lo = 0.1, ai_hi = 100;
  if (g_hi == 0) g_lo = 1, g_hi = 1000;
  Axes a;
  a.x0 = std::floor(std::log10(ai_lo) - 0.5);
  a.x1 = std::ceil(std::log10(ai_hi) + 0.5);
  a.y1 = std::ceil(std::log10(g_hi) + 0.1);
  double slope_lo = g_lo;  // keep the bandwidth slope visible at the left edge
  for (const auto& r : d.roofs)
    if (r.dram_GBs > 0) slope_lo = std::min(slope_lo, r.dram_GBs * std::pow(10.0, a.x0));
  a.y0 = std::floor(std::log10(std::max(slope_lo, g_hi * 1e-6)) - 0.3);
  if (a.y1 - a.y0 < 2) a.y0 = a.y1 - 2;
  return a;
}

void axes_svg(std::string& s, const Axes& a) {
  for (int e = static_cast<int>(a.x0); e <= static_cast<int>(a.x1); ++e) {
    const double x = a.x(std::pow(10.0, e));
    s += fmt::format(R"svg(<line class="grid" x1="{:.1f}" y1="{}" x2="{:.1f}" y2="{}"/>)svg" "\n", x,
                     kTop, x, kHeight - kBottom);
    s += fmt::format(R"svg(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)svg" "\n", x,
                     kHeight - kBottom + 18, format_si(std::pow(10.0, e)));
  }
  for (int e = static_cast<int>(a.y0); e <= static_cast<int>(a.y1); ++e) {
    const double y = a.y(std::pow(10.0, e));
    s += fmt::format(R"svg(<line class="grid" x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}"/>)svg" "\n", kLeft,
                     y, kWidth - kRight, y);
    s += fmt::format(R"svg(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)svg" "\n", kLeft - 6,
                     y + 4, format_si(std::pow(10.0, e)));
  }
  s += fmt::format(R"svg(<rect class="frame" x="{}" y="{}" width="{}" height="{}"/>)svg" "\n", kLeft,
                   kTop, kWidth - kLeft - kRight, kHeight - kTop - kBottom);
  s += fmt::format(R"svg(<text x="{}" y="{}" text-anchor="middle">arithmetic intensity (FLOP/byte)</text>)svg" "\n",
                   (kLeft + kWidth - kRight) / 2, kHeight - 18);
  s += fmt::format(R"svg(<text x="18" y="{}" text-anchor="middle" transform="rotate(-90 18 {})">GFLOP/s</text>)svg" "\n",
                   (kTop + kHeight - kBottom) / 2, (kTop + kHeight - kBottom) / 2);
}

void roofs_svg(std::string& s, const Axes& a, const RoofSet& r, const char* color) {
  const double xl = std::pow(10.0, a.x0), xr = std::pow(10.0, a.x1);
  double top = 0;
  for (const auto& [t, peak] : r.peaks_GFLOPs) top = std::max(top, peak);
  auto slope = [&](double bw, const char* cls, const char* name, double label_at) {
    if (bw <= 0 || top <= 0) return;
    const double ridge = top / bw, x_start = std::max(xl, std::pow(10.0, a.y0) / bw);
    s += fmt::format(R"svg(<line class="{}" stroke="{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)svg" "\n",
                     cls, color, a.x(x_start), a.y(bw * x_start), a.x(std::min(ridge, xr)),
                     a.y(bw * std::min(ridge, xr)));
    const double lx = std::max(x_start * 1.5, std::min(ridge, xr) / label_at);
    s += fmt::format(R"svg(<text class="roof-label" fill="{}" x="{:.1f}" y="{:.1f}">{} {} {} GB/s</text>)svg" "\n",
                     color, a.x(lx) + 4, a.y(bw * lx) - 6, xml_escape(r.backend), name,
                     format_si(bw));
  };
  slope(r.dram_GBs, "roof", "DRAM", 30);
  if (r.llc_GBs > r.dram_GBs * 1.05) slope(r.llc_GBs, "roof llc", "LLC", 4);
  for (const auto& [t, peak] : r.peaks_GFLOPs) {
    const double ridge = r.dram_GBs > 0 ? std::max(xl, std::min(peak / r.dram_GBs, xr)) : xl;
    s += fmt::format(R"svg(<line class="roof" stroke="{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"/>)svg" "\n",
                     color, a.x(ridge), a.y(peak), a.x(xr), a.y(peak));
    s += fmt::format(R"svg(<text class="roof-label" fill="{}" x="{:.1f}" y="{:.1f}">{} {} {} {}/s</text>)svg" "\n",
                     color, kWidth - kRight + 4, a.y(peak) + 4, xml_escape(r.backend), t,
                     format_si(peak), t == "int8" ? "GOP" : "GFLOP");
  }
}

}  // namespace

std::string roofline_svg(const ReportData& d) {
  const Axes a = fit(d);
  std::string s = fmt::format(
      R"svg(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="sans-serif" font-size="11">)svg"
      "\n",
      kWidth, kHeight, kWidth, kHeight);
  s += "<style>.grid{stroke:#ddd;stroke-width:1}.frame{fill:none;stroke:#444}"
       ".roof{stroke-width:2;fill:none}.llc{stroke-dasharray:6 4;stroke-width:1.5}"
       ".point{stroke:#000;stroke-width:1}.point-label{font-size:10px}</style>\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += fmt::format(R"svg(<text x="{}" y="18" text-anchor="middle" font-size="13">{}</text>)svg" "\n",
                   (kLeft + kWidth - kRight) / 2, xml_escape("roofline: " + d.title));
  axes_svg(s, a);
  auto color_of = [&](const std::string& backend) {
    for (std::size_t i = 0; i < d.roofs.size(); ++i)
      if (d.roofs[i].backend == backend) return kColors[i % 5];
    return kColors[(d.roofs.size()) % 5];
  };
  for (const auto& r : d.roofs) roofs_svg(s, a, r, color_of(r.backend));
  int index = 0;
  for (const auto& p : d.points) {
    ++index;
    const double ai = std::max(p.arithmetic_intensity, std::pow(10.0, a.x0));
    const double g = std::max(p.gflops, std::pow(10.0, a.y0));
    const double cx = a.x(ai), cy = a.y(g);
    s += fmt::format(
        R"svg(<circle class="point" cx="{:.1f}" cy="{:.1f}" r="5" fill="{}"><title>{}: {} GFLOP/s, {} FLOP/B, SOL {:.1f}%</title></circle>)svg"
        "\n",
        cx, cy, p.correct ? color_of(p.backend) : "#ffffff", xml_escape(p.label),
        format_si(p.gflops), format_si(p.arithmetic_intensity), 100 * p.sol_fraction);
    s += fmt::format(R"svg(<text class="point-label" x="{:.1f}" y="{:.1f}">{} {}</text>)svg" "\n",
                     cx + 7, cy + 12 + 11 * ((index - 1) % 3), index, xml_escape(p.label));
  }
  s += "</svg>\n";
  return s;
}

}  // namespace kforge
