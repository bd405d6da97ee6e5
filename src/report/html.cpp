// The HTML report: one self-contained page (the roofline inline), the machine, the suite
// figures and a table of every result.
#include <fmt/format.h>

#include "kforge/report.hpp"

namespace kforge {
namespace {

std::string context_html(const nlohmann::json& c) {
  if (!c.is_object()) return {};
  std::string s = "<table class=\"context\">\n";
  for (const char* key : {"date", "host_name", "cpu_model", "num_cpus", "os", "kforge_version"})
    if (c.contains(key))
      s += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", key,
                       xml_escape(c[key].is_string() ? c[key].get<std::string>() : c[key].dump()));
  return s + "</table>\n";
}

std::string summary_html(const nlohmann::json& sm) {
  if (!sm.is_object()) return {};
  std::string s = "<h2>Suite figures</h2>\n<table class=\"summary\">\n";
  for (auto it = sm.begin(); it != sm.end(); ++it)
    s += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", xml_escape(it.key()),
                     it->is_number_float() ? fmt::format("{:.3f}", it->get<double>())
                                           : xml_escape(it->dump()));
  return s + "</table>\n";
}

std::string now_percent(const ReportPoint& p) {
  return p.sol_now ? fmt::format("{:.1f}", 100 * *p.sol_now) : "-";
}

}  // namespace

std::string report_html(const ReportData& d) {
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  s += fmt::format("<title>{}</title>\n", xml_escape(d.title));
  s += "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;"
       "text-align:right}th{background:#f4f4f4}td.l,th.l{text-align:left}</style>\n";
  s += "</head>\n<body>\n";
  s += fmt::format("<h1>{}</h1>\n", xml_escape(d.title));
  s += context_html(d.context);
  s += summary_html(d.summary);
  s += "<h2>Roofline</h2>\n<p>Each point is one result; the lines are this machine's ceilings "
       "as <code>kforge ceilings</code> measured them (bandwidth slopes, compute roofs per "
       "dtype). Hollow points did not pass verification.</p>\n";
  s += roofline_svg(d);
  s += "<h2>Results</h2>\n<table class=\"results\">\n<tr><th>#</th><th class=\"l\">result</th>"
       "<th class=\"l\">sizes</th><th class=\"l\">status</th><th>time ms</th><th>GFLOP/s</th>"
       "<th>FLOP/B</th><th>SOL %</th><th>SOL now %</th><th class=\"l\">bound</th><th>speedup</th><th>score</th></tr>\n";
  int i = 0;
  for (const auto& p : d.points)
    s += fmt::format(
        "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>"
        "<td>{:.3f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td><td class=\"l\">{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        ++i, xml_escape(p.label), xml_escape(p.sizes), xml_escape(p.disposition),
        p.median_s * 1e3, p.gflops, p.arithmetic_intensity, 100 * p.sol_fraction, now_percent(p),
        xml_escape(p.bound), p.speedup > 0 ? fmt::format("{:.2f}x", p.speedup) : "-",
        p.score ? fmt::format("{:.3f}", *p.score) : "-");
  s += "</table>\n";
  s += "<p>SOL % = max(FLOPs / peak FLOP/s, bytes / peak bandwidth) / time; SOL now % the same "
       "against the memory roof measured right before and after the run (<code>--roof-now</code>). Score = "
       "SOL-ExecBench's 1 / (1 + (T - T_sol) / (T_base - T_sol)): 0.5 at the baseline, 1 at "
       "the speed of light.</p>\n";
  s += "</body>\n</html>\n";
  return s;
}

std::string report_markdown(const ReportData& d, const std::string& svg_file) {
  std::string s = fmt::format("# {}\n\n", d.title);
  if (d.context.is_object())
    s += fmt::format("Machine: {} ({} CPUs), {}\n\n", d.context.value("cpu_model", "?"),
                     d.context.value("num_cpus", 0), d.context.value("date", ""));
  if (d.summary.is_object()) {
    s += "| figure | value |\n|---|---:|\n";
    for (auto it = d.summary.begin(); it != d.summary.end(); ++it)
      s += fmt::format("| {} | {} |\n", it.key(),
                       it->is_number_float() ? fmt::format("{:.3f}", it->get<double>()) : it->dump());
    s += "\n";
  }
  s += fmt::format("![roofline]({})\n\n", svg_file);
  s += "| # | result | sizes | status | time ms | GFLOP/s | FLOP/B | SOL % | SOL now % | bound | speedup | score |\n"
       "|---:|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|\n";
  int i = 0;
  for (const auto& p : d.points)
    s += fmt::format("| {} | {} | {} | {} | {:.3f} | {:.1f} | {:.1f} | {:.1f} | {} | {} | {} | {} |\n",
                     ++i, p.label, p.sizes, p.disposition, p.median_s * 1e3, p.gflops,
                     p.arithmetic_intensity, 100 * p.sol_fraction, now_percent(p), p.bound,
                     p.speedup > 0 ? fmt::format("{:.2f}x", p.speedup) : "-",
                     p.score ? fmt::format("{:.3f}", *p.score) : "-");
  return s;
}

}  // namespace kforge
