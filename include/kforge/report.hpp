#pragma once
// Reports of a run: the results of `kforge suite`, `bench` or `tune` (their JSON output) as
// an HTML page and a Markdown page, each with a roofline plot (SVG): the machine's ceilings
// and one labelled point per result, so a reader sees at a glance how far each kernel is from
// its roof. Reads only JSON; knows nothing of backends.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// One backend's roofs, from its ceilings JSON (`kforge ceilings --json`).
struct RoofSet {
  std::string backend, device;
  double dram_GBs = 0, llc_GBs = 0;
  std::vector<std::pair<std::string, double>> peaks_GFLOPs;  // dtype -> peak, > 0 only
};

// One result: a kernel on a backend at some sizes.
struct ReportPoint {
  std::string label, problem, kernel, backend, dtype, sizes, disposition;
  bool correct = false;
  double median_s = 0, gflops = 0, arithmetic_intensity = 0, sol_fraction = 0, speedup = 0;
  std::optional<double> sol_now;  // against the roof measured around the run (--roof-now)
  std::optional<double> score;
  std::string bound;
};

struct ReportData {
  std::string title = "kforge report";
  std::string source;           // "suite", "bench" or "tune"
  nlohmann::json context;       // machine info, when the input has it
  nlohmann::json summary;       // suite figures, when the input has them
  std::vector<RoofSet> roofs;
  std::vector<ReportPoint> points;
};

// Every result entry of a suite / bench / tune document, as EvalResult-shaped JSON objects
// (tune: each backend's best). Throws UsageError for a document of none of these shapes.
[[nodiscard]] std::vector<nlohmann::json> result_entries(const nlohmann::json& doc);
// The report's data; `ceilings` (an array of ceilings JSON) supplies roofs the document lacks.
[[nodiscard]] ReportData report_data(const nlohmann::json& doc,
                                     const nlohmann::json& ceilings = nlohmann::json::array());
[[nodiscard]] RoofSet roof_set(const nlohmann::json& ceilings);

[[nodiscard]] std::string roofline_svg(const ReportData& d);
[[nodiscard]] std::string report_html(const ReportData& d);
[[nodiscard]] std::string report_markdown(const ReportData& d, const std::string& svg_file);

// Writes report.html, report.md and roofline.svg into `dir` (created if needed).
void write_report(const ReportData& d, const std::string& dir);

// Text helpers shared by the writers.
[[nodiscard]] std::string xml_escape(const std::string& s);
[[nodiscard]] std::string format_si(double v, int digits = 3);  // 1234.5 -> "1.23k"

}  // namespace kforge
